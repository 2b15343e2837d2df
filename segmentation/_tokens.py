"""Token counting with the target encoder's own tokenizer, and safe splitting of over-long sentences.

Room for special tokens is always reserved: a counter's ``max_length`` is the number of *content* tokens
an input may hold, i.e. the encoder's input limit minus what its tokenizer adds ([CLS] ... [SEP] for
BERT-style single inputs: 2; [CLS] title [SEP] text [SEP] for MedCPT article pairs: 3 plus the title,
see ``reserve``). Counts never include special tokens, so ``count(text) <= max_length`` means the text
is encoded whole, never truncated.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

from core import TokenCounter

from ._types import Sentence

__all__ = [
    "HFTokenCounter",
    "OffsetTokenCounter",
    "WhitespaceTokenCounter",
    "counter_for",
    "split_long_sentence",
    "token_spans",
]

_WORD: Final = re.compile(r"\S+")


@runtime_checkable
class OffsetTokenCounter(TokenCounter, Protocol):
    """A counter that can also say where each token lies (character spans, no special tokens)."""

    def offsets(self, text: str) -> list[tuple[int, int]]: ...


class WhitespaceTokenCounter:
    """One token per whitespace-separated word: deterministic and dependency-free, for tests and wherever no
    encoder tokenizer is given."""

    def __init__(self, max_length: int = 512) -> None:
        if max_length < 1:
            raise ValueError("max_length must be >= 1")
        self._max_length = max_length

    @property
    def max_length(self) -> int:
        return self._max_length

    def count(self, text: str) -> int:
        return sum(1 for _ in _WORD.finditer(text))

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _WORD.finditer(text)]


def _private_copy(tokenizer: Any) -> Any:
    try:
        return copy.deepcopy(tokenizer)
    except Exception:  # an exotic tokenizer that cannot be copied: share it (calls are locked)
        return tokenizer


class HFTokenCounter:
    """Counts with a Hugging Face tokenizer; ``max_length`` = ``model_max_length - special - reserve``.

    ``model_max_length`` is the encoder's input limit *including* special tokens; ``pair`` says whether
    texts go in as the second member of a pair (MedCPT's ``[title, text]``), which adds one more [SEP];
    ``reserve`` keeps room for anything else sharing the input (e.g. a title).
    """

    def __init__(
        self, tokenizer: Any, model_max_length: int, *, pair: bool = False, reserve: int = 0
    ) -> None:
        # A private copy: HF fast tokenizers keep truncation/padding as mutable backend state, so sharing the
        # encoder's instance let an untruncated count race an encode in another thread (ragged batch).
        self._tok = _private_copy(tokenizer)
        self._lock = threading.Lock()
        self.model_max_length = model_max_length
        try:
            special = int(tokenizer.num_special_tokens_to_add(pair=pair))
        except (AttributeError, TypeError):  # not a transformers tokenizer: assume BERT's layout
            special = 3 if pair else 2
        self.special_tokens = special
        self._max_length = model_max_length - special - reserve
        if self._max_length < 1:
            raise ValueError(
                f"no room for text: limit {model_max_length}, {special} special, {reserve} reserved"
            )

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def tokenizer(self) -> Any:
        return self._tok

    def count(self, text: str) -> int:
        # verbose=False: counting long texts is the point, the "longer than max length" warning is noise.
        with self._lock:
            ids = self._tok(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return len(ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Batched :meth:`count` (one tokenizer call: much faster with fast tokenizers)."""
        if not texts:
            return []
        with self._lock:
            enc = self._tok(list(texts), add_special_tokens=False, truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token; a slow tokenizer (no offset mapping) falls back to words."""
        if not getattr(self._tok, "is_fast", False):
            return [m.span() for m in _WORD.finditer(text)]
        with self._lock:
            enc = self._tok(
                text, add_special_tokens=False, truncation=False, verbose=False, return_offsets_mapping=True
            )
        return [(int(s), int(e)) for s, e in enc["offset_mapping"] if e > s]


def counter_for(encoder: Any, *, reserve: int = 0) -> HFTokenCounter:
    """The counter matching how ``encoder`` encodes documents (chunks are encoded as documents).

    * :class:`~retrieval.SentenceTransformerEncoder`: its model's tokenizer, limit ``doc_max_length``
      (the ``max_seq_length`` it was built with), one text: 2 special tokens.
    * :class:`~retrieval.MedCPTEncoder`: the *article* tokenizer (loaded alone, without the ~440 MB
      article model), limit ``doc_max_length``, texts as the second member of a ``[title, text]`` pair:
      3 special tokens; pass ``reserve`` for the title tokens if titles are encoded with chunks.
    * anything else exposing ``document_tokenizer`` (or ``tokenizer``), with ``doc_max_length``.
    """
    limit = int(encoder.doc_max_length)
    tok = getattr(encoder, "document_tokenizer", None) or getattr(encoder, "tokenizer", None)
    if tok is None:
        raise TypeError(f"cannot find a tokenizer for {type(encoder).__name__}; pass a counter explicitly")
    return HFTokenCounter(tok, limit, pair=bool(getattr(encoder, "document_pair", False)), reserve=reserve)


def token_spans(counter: TokenCounter, text: str) -> list[tuple[int, int]]:
    """Token character spans from the counter when it can give them, else whitespace words (an
    approximation: callers must still check the real count of what they build)."""
    if isinstance(counter, OffsetTokenCounter):
        return counter.offsets(text)
    return [m.span() for m in _WORD.finditer(text)]


def count_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    batched = getattr(counter, "count_many", None)
    if batched is not None:
        return list(batched(texts))
    return [counter.count(t) for t in texts]


# Clause punctuation a long sentence may be cut after: ; : , and closing brackets, then whitespace.
_CLAUSE: Final = re.compile(r"(?<=[;:,)\]])\s+")


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _pack(
    text: str, cuts: list[int], start: int, end: int, counter: TokenCounter, limit: int
) -> list[tuple[int, int]]:
    """Greedy: the longest run of pieces between ``cuts`` that fits; a piece too long alone is returned
    as is (the caller splits it finer). Counts are taken on the joined text itself, never summed,
    because subword counts are not additive across a join."""
    bounds = [start, *[c for c in cuts if start < c < end], end]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(bounds) - 1:
        j = i + 1
        while j + 1 < len(bounds):
            s, e = _trim(text, bounds[i], bounds[j + 1])
            if counter.count(text[s:e]) > limit:
                break
            j += 1
        s, e = _trim(text, bounds[i], bounds[j])
        if e > s:
            out.append((s, e))
        i = j
    return out


def _split_chars(text: str, start: int, end: int, counter: TokenCounter, limit: int) -> list[tuple[int, int]]:
    """Longest prefixes that fit (binary search on the end offset): the last resort for a 'word' that is
    longer than the limit on its own (sequences, URLs, formulas without spaces)."""
    out: list[tuple[int, int]] = []
    s = start
    while s < end:
        lo, hi = s + 1, end  # lo always fits: one character is at most a few tokens, limits are larger
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if counter.count(text[s:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        a, b = _trim(text, s, lo)
        if b > a:
            out.append((a, b))
        s = lo
    return out


def split_long_sentence(
    sentence: Sentence, counter: TokenCounter, limit: int | None = None
) -> list[Sentence]:
    """``sentence`` as pieces of at most ``limit`` tokens (default ``counter.max_length``).

    Cuts at clause punctuation first, then between words, then between characters; every piece is an
    exact slice of the original text (offsets keep the sentence's own frame). A sentence that fits is
    returned unchanged.
    """
    limit = counter.max_length if limit is None else limit
    if limit < 1:
        raise ValueError("limit must be >= 1")
    text = sentence.text
    if counter.count(text) <= limit:
        return [sentence]
    pieces: list[tuple[int, int]] = []
    for s, e in _pack(text, [m.start() for m in _CLAUSE.finditer(text)], 0, len(text), counter, limit):
        if counter.count(text[s:e]) <= limit:
            pieces.append((s, e))
            continue
        words = [s + m.start() for m in re.finditer(r"\s+", text[s:e])]
        for a, b in _pack(text, words, s, e, counter, limit):
            if counter.count(text[a:b]) <= limit:
                pieces.append((a, b))
            else:
                pieces.extend(_split_chars(text, a, b, counter, limit))
    base = sentence.start
    return [Sentence(text[s:e], base + s, base + e) for s, e in pieces]
