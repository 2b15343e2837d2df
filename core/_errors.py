"""The root of the one error tree: every error CoMeta raises on purpose derives from :class:`CometaError`.

Each stage adds its branch in its own package::

    CometaError
    ├── EutilsError                 any failure of an E-utilities call (retrieval.ncbi)
    │   ├── TransportError          connection failed / timed out, after retries
    │   ├── RateLimited             HTTP 429 or NCBI's rate-limit JSON body, after retries
    │   ├── ServerError             HTTP 5xx, after retries
    │   ├── BadRequest              HTTP 4xx or an ``<ERROR>`` payload (invalid db, missing id, ...)
    │   ├── MalformedResponse       HTML instead of XML, truncated XML, invalid JSON, wrong root element
    │   └── LimiterUnavailable      the shared (Redis) E-utilities rate limiter cannot be reached and
    │                               ``limiter_on_error=error`` (retrieval.eutils)
    ├── CacheStoreError             the configured E-utilities cache store cannot be opened (retrieval.eutils)
    ├── QuerySyntaxError            a PubMed query our parser refuses; also a ValueError (retrieval.query)
    ├── EncoderUnavailable, EncodeFailed, RerankerUnavailable, IndexMismatchError, ...  (retrieval.embed)
    ├── LLMError                    (llm)            PromptError (prompts)
    └── AccessError, UnknownSource, RateLimiterUnavailable, ...            (app)
"""

from __future__ import annotations

__all__ = ["CometaError"]


class CometaError(Exception):
    """Root of every error CoMeta raises on purpose."""
