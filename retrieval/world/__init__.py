"""The offline literature world: shared data sets (Cohen 2006, Evidence Inference, HoC, MEDLINE samples,
PubMedQA, MeSH 2015, retractions) as PubMed XML + PMC JATS, with a manifest and a provenance sidecar."""

from ._build import MANIFEST_FILE, PROVENANCE_FILE, WORLD_MESH_FILE, WorldBuildError, build_world
from ._records import (
    JOURNAL_ARTICLE,
    PLACEHOLDER_JOURNAL_ARTICLE,
    RANDOMIZED_CONTROLLED_TRIAL,
    RETRACTED_PUBLICATION,
    c04_uis,
    jats_pubmed_record,
    pubmedqa_record,
)
from ._sources import REQUIRED_INPUTS, WorldInputError

__all__ = [
    "JOURNAL_ARTICLE",
    "MANIFEST_FILE",
    "PLACEHOLDER_JOURNAL_ARTICLE",
    "PROVENANCE_FILE",
    "RANDOMIZED_CONTROLLED_TRIAL",
    "REQUIRED_INPUTS",
    "RETRACTED_PUBLICATION",
    "WORLD_MESH_FILE",
    "WorldBuildError",
    "WorldInputError",
    "build_world",
    "c04_uis",
    "jats_pubmed_record",
    "pubmedqa_record",
]
