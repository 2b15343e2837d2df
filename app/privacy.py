"""What of the patient's question a language model may see: one decision for every LLM-bound text.

``COMETA_LLM__SCRUB_PHI_FOR_LLM=true`` replaces PHI (names, dates of birth, record numbers, addresses,
phone numbers, ...) with typed placeholders (``[NAME]``, ``[PHONE]``, ...) before the question reaches any
prompt: the rewrite, the answer, the per-source answers and the judge. Queries to NCBI are PHI-stripped by
the rewriter whatever this says; another institution's node always gets the scrubbed question.

Logs see none of it: :func:`install_log_hygiene` (run by the composition root, so by every entry point)
redacts URL query strings (E-utilities' ``term`` is built from the patient's words, its ``api_key`` is a
secret), credentials and pydantic's ``input_value`` from every log record of every logger, and keeps the
libraries that log request bodies or headers at DEBUG (httpcore, hpack, openai) at WARNING. The service's
own lines carry a question only as its hash.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm import LLMSettings
from retrieval.understand import scrub

__all__ = ["PhiPolicy", "install_log_hygiene"]


@dataclass(frozen=True)
class PhiPolicy:
    scrub_for_llm: bool = False

    @classmethod
    def from_settings(cls, llm: LLMSettings) -> PhiPolicy:
        return cls(scrub_for_llm=llm.scrub_phi_for_llm)

    def for_llm(self, text: str) -> str:
        """``text`` as a language model may see it."""
        return scrub(text).text if self.scrub_for_llm else text


# --- logs --------------------------------------------------------------------------------------------------

_REDACTED = "[redacted]"
_LOG_PATTERNS = (
    # A query string (a URL's, or a bare path's as an access log writes it): E-utilities' term and api_key,
    # a caller's ?question=. Only "?" followed by a key=value pair, so prose questions stay readable.
    (re.compile(r"\?(?=[^\s\"'<>?#]*=)[^\s\"'<>#]+"), "?" + _REDACTED),
    # Credentials written as name=value or "name": "value" (headers, dict reprs, exception messages).
    (
        re.compile(
            r"(?i)\b(api[_-]?key|x-api-key|access[_-]?token|token|secret|password|authorization)"
            r"(['\"]?\s*[:=]\s*['\"]?)(?:bearer\s+)?[^\s'\",&;)}\]]+"
        ),
        r"\1\2" + _REDACTED,
    ),
    (re.compile(r"(?i)\bbearer\s+[\w.~+/=-]+"), "Bearer " + _REDACTED),
    (re.compile(r"\beyJ[\w-]*\.[\w-]+\.[\w-]*"), _REDACTED),  # a JWT wherever it stands
    # pydantic's error text quotes the rejected input ("input_value={'question': 'I am Zofia ...'}").
    (re.compile(r"input_value=(?:.*?(?=, input_type=)|[^\n]*)"), "input_value=" + _REDACTED),
)
# Libraries that write request bodies or headers at DEBUG (httpcore's and hpack's header frames, the
# OpenAI SDK's "Request options" with the prompt): never below WARNING, whatever the service's level.
_QUIET_LOGGERS = ("httpcore", "hpack", "openai")


def redact_log_text(text: str) -> str:
    """``text`` without query strings, credentials or pydantic's quoted inputs."""
    for pattern, replacement in _LOG_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _redacted_arg(value: object) -> object:
    if value is None or isinstance(value, bool | int | float):
        return value  # numbers keep their type: "%d" and formatters that unpack args need them
    try:
        text = str(value)
    except Exception:  # a broken __str__ is the formatter's problem, as it was
        return value
    clean = redact_log_text(text)
    return value if clean == text else clean


def _redact_record(record: logging.LogRecord) -> None:
    # Argument by argument first, so that formatters that unpack them (uvicorn's access log) still can;
    # then the whole message, for what only shows once formatted (a dict's "x-api-key": "...").
    if isinstance(record.msg, str):
        record.msg = redact_log_text(record.msg)
    else:
        record.msg = _redacted_arg(record.msg)
    args: Any = record.args
    if isinstance(args, tuple):
        record.args = tuple(_redacted_arg(a) for a in args)
    elif isinstance(args, Mapping):
        record.args = {k: _redacted_arg(v) for k, v in args.items()}
    if record.args:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it when a handler formats the record
            return
        clean = redact_log_text(message)
        if clean != message:
            record.msg, record.args = clean, None


def install_log_hygiene() -> None:
    """Redact every log record of this process as it is made (:func:`redact_log_text` on its message and
    arguments), whichever logger, level or handler; and keep :data:`_QUIET_LOGGERS` at WARNING or above.
    At the record factory, not a handler: a handler added later (a deployment's, a test's) gets clean
    records too. Idempotent."""
    current = logging.getLogRecordFactory()
    if not getattr(current, "cometa_redacts", False):

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = current(*args, **kwargs)
            _redact_record(record)
            return record

        factory.cometa_redacts = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(factory)
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
