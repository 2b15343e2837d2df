"""CoMeta service layer: settings, CLI, orchestration and (later) the FastAPI app."""

__version__ = "0.1.0"
