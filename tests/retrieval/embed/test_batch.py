"""The encode micro-batcher: concurrent calls share one model call; rows and errors reach each caller."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from core import FloatArray, OnProgress
from retrieval.embed import EncodeBatcher, EncodeFailed


class HashEncoder:
    """Deterministic: a text's vector depends on the text alone, so batching cannot change it. Records calls;
    ``gate`` holds a call until released (to line callers up); ``fail`` makes every call raise."""

    name, dim, query_max_length, doc_max_length = "hash", 8, 64, 256

    def __init__(self, fail: bool = False, poison: str | None = None, returns: object = "rows") -> None:
        self.calls: list[list[tuple[str, str]]] = []
        self.fail = fail
        self.poison = poison  # a call with this text among its texts raises
        self.returns = returns  # "rows", or what to return instead (None, a wrong-length array...)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> FloatArray:
        return self.encode_documents([("", t) for t in texts], batch_size)

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        self.calls.append(list(docs))
        if self.fail or any(b == self.poison for _, b in docs):
            raise RuntimeError("model crashed")
        if not isinstance(self.returns, str):
            return self.returns  # type: ignore[return-value]
        rows = [
            np.frombuffer(hashlib.sha256(f"{a}|{b}".encode()).digest()[:32], dtype=np.float32)
            for a, b in docs
        ]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, self.dim), np.float32)


def run_together(
    batcher: EncodeBatcher, jobs: list[list[tuple[str, str]]]
) -> list[FloatArray | BaseException]:
    """Each job in its own thread, all started at once (a barrier), like request threads under load."""
    out: list[FloatArray | BaseException] = [np.zeros(0, np.float32)] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def work(n: int) -> None:
        barrier.wait()
        try:
            out[n] = batcher.encode_documents(jobs[n])
        except BaseException as exc:
            out[n] = exc

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "a caller hung"
    return out


A = [("", "first chunk of request A"), ("", "second chunk of request A")]
B = [("", "the only chunk of request B")]


def test_two_threads_share_one_encoder_call_with_identical_results() -> None:
    encoder = HashEncoder()
    batcher = EncodeBatcher(encoder, window_s=0.5)  # generous: both threads surely arrive within it
    a, b = run_together(batcher, [A, B])
    assert len(encoder.calls) == 1  # one model call ...
    assert sorted(encoder.calls[0]) == sorted(A + B)  # ... with both requests' texts
    alone = HashEncoder()
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert np.array_equal(a, alone.encode_documents(A)) and np.array_equal(b, alone.encode_documents(B))
    assert batcher.stats.calls == 2 and batcher.stats.model_calls == 1 and batcher.stats.largest == 3


def test_an_encoder_error_reaches_every_waiter_each_its_own() -> None:
    batcher = EncodeBatcher(HashEncoder(fail=True), window_s=0.5)
    results = run_together(batcher, [A, B, A])
    assert all(isinstance(r, EncodeFailed) and isinstance(r.__cause__, RuntimeError) for r in results)
    assert all("model crashed" in str(r) for r in results)
    assert len({id(r) for r in results}) == 3  # a fresh exception per caller, not one shared object
    assert batcher.stats.model_calls == 4  # the batch, then each request alone
    # The batcher is not left stuck: the next call runs (and fails the same honest way).
    with pytest.raises(EncodeFailed):
        batcher.encode_documents(B)


def test_one_bad_request_fails_alone() -> None:
    encoder = HashEncoder(poison="poison")
    batcher = EncodeBatcher(encoder, window_s=0.5)
    bad = [("", "fine"), ("", "poison")]
    a, x, b = run_together(batcher, [A, bad, B])
    assert isinstance(x, EncodeFailed) and isinstance(x.__cause__, RuntimeError)
    assert isinstance(a, np.ndarray) and np.array_equal(a, HashEncoder().encode_documents(A))
    assert isinstance(b, np.ndarray) and np.array_equal(b, HashEncoder().encode_documents(B))


@pytest.mark.parametrize("returns", [None, [[1.0, 2.0]], np.zeros((1, 8), np.float32)])
def test_a_bad_encoder_result_fails_callers_and_hangs_none(returns: object) -> None:
    batcher = EncodeBatcher(HashEncoder(returns=returns), window_s=0.5)
    results = run_together(batcher, [A, B, A])  # run_together asserts that no caller hung
    # B has one text: a one-row array is right for it alone (after the batch of 5 texts failed).
    for job, r in zip([A, B, A], results, strict=True):
        if isinstance(returns, np.ndarray) and len(job) == 1:
            assert isinstance(r, np.ndarray) and r.shape == (1, 8)
        else:
            assert isinstance(r, EncodeFailed), r
            assert "one row per text" in str(r)


def test_batches_are_bounded_and_every_caller_is_served() -> None:
    encoder = HashEncoder()
    batcher = EncodeBatcher(encoder, window_s=0.2, max_texts=4)
    jobs = [[("", f"text {n}-{i}") for i in range(2)] for n in range(5)]  # 10 texts, at most 4 a call
    results = run_together(batcher, jobs)
    assert all(len(c) <= 4 for c in encoder.calls) and sum(len(c) for c in encoder.calls) == 10
    assert len(encoder.calls) >= 3
    for job, got in zip(jobs, results, strict=True):
        assert isinstance(got, np.ndarray) and np.array_equal(got, HashEncoder().encode_documents(job))
    # A call as large as a batch goes straight to the encoder, without waiting.
    big = [("", f"big {i}") for i in range(4)]
    assert np.array_equal(batcher.encode_documents(big), HashEncoder().encode_documents(big))


def test_window_zero_encodes_each_call_alone() -> None:
    encoder = HashEncoder()
    batcher = EncodeBatcher(encoder, window_s=0.0)
    run_together(batcher, [A, B])
    assert len(encoder.calls) == 2


@pytest.mark.parametrize("returns", [None, [[1.0, 2.0]], np.zeros((1, 8), np.float32)])
@pytest.mark.parametrize("how", ["window 0", "max_texts", "on_progress"])
def test_the_unbatched_paths_check_the_encoder_result_too(returns: object, how: str) -> None:
    window = 0.0 if how == "window 0" else 0.5
    batcher = EncodeBatcher(HashEncoder(returns=returns), window, max_texts=2 if how == "max_texts" else 256)
    progress = (lambda done, total: None) if how == "on_progress" else None
    with pytest.raises(EncodeFailed, match="one row per text"):
        batcher.encode_documents(A, on_progress=progress)  # A has two texts
