"""Vocabularies: MeSH descriptors with entry terms and tree numbers, and the lay-to-clinical lexicon."""

from ._lexicon import (
    KINDS,
    LEXICON_DIR,
    SKIP_TOKENS,
    Kind,
    LayLexicon,
    build_word_counts,
    normalize_token,
    normalize_tokens,
    token_spans,
)
from ._mesh import MESH_DIR, MeshVocabulary

__all__ = [
    "KINDS",
    "LEXICON_DIR",
    "MESH_DIR",
    "SKIP_TOKENS",
    "Kind",
    "LayLexicon",
    "MeshVocabulary",
    "build_word_counts",
    "normalize_token",
    "normalize_tokens",
    "token_spans",
]
