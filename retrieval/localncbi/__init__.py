"""The local NCBI-compatible E-utilities server: the Starlette app over a corpus (History server, rate limits,
fault injection) and its settings, for the offline mode, the tests and the benchmarks.

It answers in the wire format of :mod:`retrieval.ncbi` (whose corpus and Boolean engine it serves); the
client side (:mod:`retrieval.eutils`) never imports it, only talks to it by base URL or in-process transport.
"""

from ._config import FaultSettings, LocalServerSettings
from ._server import HistoryServer, SimilarArticles, Speller, create_eutils_app, eutils_transport

__all__ = [
    "FaultSettings",
    "HistoryServer",
    "LocalServerSettings",
    "SimilarArticles",
    "Speller",
    "create_eutils_app",
    "eutils_transport",
]
