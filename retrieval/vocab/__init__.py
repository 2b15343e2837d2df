"""Vocabularies: MeSH descriptors with entry terms and tree numbers, and the lay-to-clinical lexicon."""

from ._lexicon import KINDS, SKIP_TOKENS, Kind, LayLexicon, normalize_token, normalize_tokens, token_spans
from ._mesh import MESH_DIR, MeshVocabulary

__all__ = [
    "KINDS",
    "MESH_DIR",
    "SKIP_TOKENS",
    "Kind",
    "LayLexicon",
    "MeshVocabulary",
    "normalize_token",
    "normalize_tokens",
    "token_spans",
]
