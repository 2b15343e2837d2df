"""Micro-batching of document encoding: concurrent calls from several requests become one model call.

What must be encoded at query time (live full-text chunks with no index vector) arrives from several request
threads at once under load. One model call over their union costs less than separate calls competing for the
same cores (or the same GPU): fewer Python/tokenizer round trips and larger matrix products.
:class:`EncodeBatcher` coalesces them without a thread of its own: the first caller to find no batch being
collected becomes the collector, waits at most ``window_s`` (less once ``max_texts`` are waiting), takes the
waiting calls in arrival order, encodes them in one call and hands every caller its own rows.
The others block on a condition meanwhile.

Failures stay with their request: when a batch of several requests fails, each is encoded again alone, so
one request's bad text does not fail the others. Every failing caller gets its own
:class:`EncodeFailed` (``from`` the encoder's exception), and every caller is released whatever the encoder
did (raised, returned None, returned the wrong number of rows).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core import CometaError, Encoder, FloatArray, OnProgress

__all__ = ["BatchStats", "EncodeBatcher", "EncodeFailed"]


class EncodeFailed(CometaError):
    """Encoding documents failed: the encoder raised or returned no valid rows (the cause is chained)."""


@dataclass
class BatchStats:
    """Counters: ``calls`` asked, ``model_calls`` made for them, ``texts`` encoded, ``largest`` batch."""

    calls: int = 0
    model_calls: int = 0
    texts: int = 0
    largest: int = 0


@dataclass(eq=False)
class _Request:
    docs: list[tuple[str, str]]
    batch_size: int
    taken: bool = False
    done: bool = False
    rows: FloatArray | None = None
    error: BaseException | None = None

    def result(self) -> FloatArray:
        if self.error is not None or self.rows is None:
            # A fresh exception per caller: one exception object raised in several threads would share (and
            # keep growing) one traceback.
            exc = _failed(self.error)
            raise exc from exc.__cause__
        return self.rows


def _failed(cause: BaseException | None) -> EncodeFailed:
    if isinstance(cause, EncodeFailed):
        exc = EncodeFailed(str(cause))
        exc.__cause__ = cause.__cause__ or cause
        return exc
    what = f"{type(cause).__name__}: {cause}" if cause is not None else "no result"
    exc = EncodeFailed(f"document encoding failed ({what})")
    exc.__cause__ = cause  # raised `from` it by the caller
    return exc


def _encode(
    encoder: Encoder, docs: list[tuple[str, str]], batch_size: int, on_progress: OnProgress | None = None
) -> FloatArray:
    """The encoder's rows for ``docs``, checked: one row per text, or :class:`EncodeFailed`."""
    if on_progress is None:
        rows = encoder.encode_documents(docs, batch_size=batch_size)
    else:
        rows = encoder.encode_documents(docs, batch_size=batch_size, on_progress=on_progress)
    if not isinstance(rows, np.ndarray) or rows.ndim != 2 or len(rows) != len(docs):
        got = f"shape {rows.shape}" if isinstance(rows, np.ndarray) else type(rows).__name__
        raise EncodeFailed(f"the encoder returned {got} for {len(docs)} texts; expected one row per text")
    return rows


@dataclass
class EncodeBatcher:
    """``encode_documents`` of ``encoder``, with concurrent calls from different threads coalesced.

    ``window_s`` bounds the wait a call may add (0 = no batching: every call goes straight to the encoder);
    ``max_texts`` bounds a batch (a call with more texts is encoded alone, at once). Results are the
    encoder's rows for each caller's texts, in order: a deterministic encoder gives exactly what unbatched
    calls give (a real one may move the last float32 bits with the batch's padding, as any batch does).
    """

    encoder: Encoder
    window_s: float = 0.005
    max_texts: int = 256
    stats: BatchStats = field(default_factory=BatchStats)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._collecting = False

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        if self.window_s <= 0 or on_progress is not None or not docs or len(docs) >= self.max_texts:
            with self._cond:
                self.stats.calls += 1
                self.stats.model_calls += 1
                self.stats.texts += len(docs)
                self.stats.largest = max(self.stats.largest, len(docs))
            try:
                if not docs:
                    return self.encoder.encode_documents(docs, batch_size=batch_size, on_progress=on_progress)
                # Checked like a batch: a wrong shape must not reach the caller's indexing as rows.
                return _encode(self.encoder, list(docs), batch_size, on_progress)
            except Exception as exc:
                raise _failed(exc) from exc
        request = _Request(list(docs), batch_size)
        with self._cond:
            self.stats.calls += 1
            self._pending.append(request)
            self._cond.notify_all()  # a collector waiting for its window may now have a full batch
        while True:
            with self._cond:
                while not request.done and (self._collecting or request.taken):
                    self._cond.wait()
                if request.done:
                    return request.result()
                batch = self._collect()
            self._run(batch)

    def _collect(self) -> list[_Request]:
        """With the lock held and no other collector: wait out the window, take the batch (FIFO)."""
        self._collecting = True
        try:
            deadline = time.monotonic() + self.window_s
            while self._waiting_texts() < self.max_texts:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch: list[_Request] = []
            size = 0
            for request in self._pending:
                if batch and size + len(request.docs) > self.max_texts:
                    break
                batch.append(request)
                size += len(request.docs)
            del self._pending[: len(batch)]
            for request in batch:
                request.taken = True
            return batch
        finally:
            self._collecting = False
            self._cond.notify_all()  # waiters left behind: one of them collects the next batch

    def _waiting_texts(self) -> int:
        return sum(len(r.docs) for r in self._pending)

    def _run(self, batch: list[_Request]) -> None:
        texts = [d for r in batch for d in r.docs]
        model_calls = 1
        try:
            try:
                rows = _encode(self.encoder, texts, max(r.batch_size for r in batch))
            except Exception as exc:
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    # Which request's text made it fail is unknown: each alone, so only the faulty one fails.
                    for request in batch:
                        model_calls += 1
                        try:
                            request.rows = _encode(self.encoder, request.docs, request.batch_size)
                        except Exception as alone:
                            request.error = alone
            else:
                start = 0
                for request in batch:
                    request.rows = rows[start : start + len(request.docs)]
                    start += len(request.docs)
        except BaseException as exc:  # KeyboardInterrupt and the like: no retry, but nobody is left waiting
            for request in batch:
                if request.rows is None and request.error is None:
                    request.error = exc
            raise
        finally:
            with self._cond:
                self.stats.model_calls += model_calls
                self.stats.texts += len(texts)
                self.stats.largest = max(self.stats.largest, len(texts))
                for request in batch:
                    request.done = True  # always: a waiter must never block on a batch that is over
                self._cond.notify_all()
