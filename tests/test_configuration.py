"""docs/configuration.md is the generated page of every setting and profile (scripts/configuration.py)."""

from __future__ import annotations

import sys

from tests._procs import REPO

sys.path.insert(0, str(REPO))
from scripts.configuration import DOC, page


def test_the_configuration_page_is_current() -> None:
    # Stale: python scripts/configuration.py --write
    assert DOC.read_text(encoding="utf-8") == page()


def test_the_page_lists_every_profile_and_the_trees_read_apart() -> None:
    text = page()
    for needle in (
        "`offline`",
        "`medcpt`",
        "`live`",
        "COMETA_LOCAL_SERVER__FAULTS__SEED",
        "COMETA_JUDGE_LLM__",
    ):
        assert needle in text
    assert "COMETA_EVIDENCE__RRF_K" in text and text.count("RRF_K`") == 1
