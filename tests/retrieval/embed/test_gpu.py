"""The CUDA paths of the encoders and the cross-encoder, checked against their CPU results.

Skipped without a GPU (CI has none); run on a GPU machine with ``pytest -m gpu tests/retrieval/embed``.
The models are the tiny random BERTs the CPU tests build, so the check is about device placement, dtype and
pooling on CUDA, not about MedCPT's weights (unreachable offline).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from retrieval.embed import CrossEncoderReranker, MedCPTEncoder
from tests.retrieval.embed.test_encoders import build_tiny_medcpt, words
from tests.retrieval.embed.test_rerank import MAX_LENGTH, build_tiny_cross_encoder
from tests.retrieval.embed.test_rerank import words as ce_words

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_medcpt_on_cuda_matches_cpu(tmp_path: Path) -> None:
    tiny_dirs = build_tiny_medcpt(tmp_path)
    cpu = MedCPTEncoder(*tiny_dirs, device="cpu")
    gpu = MedCPTEncoder(*tiny_dirs, device="auto")
    assert gpu.device == "cuda"  # "auto" picks the GPU when one is visible
    queries = [words(3), words(70, 5), words(1)]  # 70 words: the 64-token query cut happens on the GPU too
    docs = [(words(4), words(600)), ("", words(5)), (words(2), "")]
    q_cpu, q_gpu = cpu.encode_queries(queries), gpu.encode_queries(queries)
    d_cpu, d_gpu = cpu.encode_documents(docs), gpu.encode_documents(docs)
    # Vectors come back on the host as float32 numpy, whatever device made them.
    assert isinstance(q_gpu, np.ndarray) and q_gpu.dtype == np.float32 and d_gpu.dtype == np.float32
    np.testing.assert_allclose(q_gpu, q_cpu, atol=1e-4)
    np.testing.assert_allclose(d_gpu, d_cpu, atol=1e-4)


def test_cross_encoder_on_cuda_matches_cpu(tmp_path: Path) -> None:
    tiny_ce = build_tiny_cross_encoder(tmp_path)
    cpu = CrossEncoderReranker(tiny_ce, max_length=MAX_LENGTH, device="cpu", batch_size=2)
    gpu = CrossEncoderReranker(tiny_ce, max_length=MAX_LENGTH, device="cuda", batch_size=2)
    query = ce_words(5)
    texts = [ce_words(3, 1), ce_words(200, 2), ce_words(9, 4)]  # one pair far beyond max_length
    np.testing.assert_allclose(gpu.rerank(query, texts), cpu.rerank(query, texts), rtol=1e-3, atol=1e-4)
