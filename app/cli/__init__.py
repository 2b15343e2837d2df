"""The ``cometa`` command line: serve, ask, search, the local E-utilities server, index builds and
collections; the only place that draws progress bars."""

from ._main import app, main

__all__ = ["app", "main"]
