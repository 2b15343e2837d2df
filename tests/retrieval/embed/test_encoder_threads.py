"""The dense encoder and the SEOS token counter are used from several threads at once by /ask.

Regression: a shared Hugging Face fast tokenizer keeps truncation/padding as mutable state, so an untruncated
count in one thread could leave another thread's encode batch ragged ("Unable to create tensor").
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from retrieval.embed import SentenceTransformerEncoder
from segmentation import counter_for


@pytest.fixture(scope="module")
def encoder() -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(max_length=64)


def test_counter_does_not_share_the_encoders_tokenizer(encoder: SentenceTransformerEncoder) -> None:
    counter = counter_for(encoder)
    assert counter.tokenizer is not encoder.document_tokenizer
    long_text = "tumour " * 300
    assert counter.count(long_text) >= 300  # counting is never truncated
    # ...and counting did not switch the encoder's truncation off: a long batch still encodes.
    vecs = encoder.encode_documents([("t", long_text), ("t", "short")])
    assert vecs.shape == (2, encoder.dim)


def test_concurrent_encode_and_count(encoder: SentenceTransformerEncoder) -> None:
    counter = counter_for(encoder)
    texts = [("title", "carcinoma " * n) for n in (5, 80, 200, 17, 333, 40)]

    def encode(_: int) -> np.ndarray:
        return encoder.encode_documents(texts, batch_size=3)

    def count(_: int) -> list[int]:
        return counter.count_many(["metastasis " * n for n in (300, 1, 150)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        encodes = [pool.submit(encode, i) for i in range(6)]
        counts = [pool.submit(count, i) for i in range(12)]
        results = [f.result() for f in encodes]
        tallies = [f.result() for f in counts]
    reference = encoder.encode_documents(texts, batch_size=3)
    for r in results:
        assert np.allclose(r, reference, atol=1e-5)
    assert all(t[0] >= 300 and t[1] >= 1 for t in tallies)
