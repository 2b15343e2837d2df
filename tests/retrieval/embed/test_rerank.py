"""Rerankers: the rerankers cross-encoder path on a tiny locally built BERT, and the bi-encoder fallback."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from core import Reranker
from retrieval.embed import (
    BI_ENCODER,
    BiEncoderReranker,
    CrossEncoderReranker,
    RerankerUnavailable,
    RerankSettings,
    load_reranker,
)
from tests._fakes import VectorEncoder

WORDS = [f"w{i}" for i in range(40)]
POSITIONS = 64  # the tiny model's hard input limit
MAX_LENGTH = 32


def build_tiny_cross_encoder(root: Path) -> Path:
    """A tiny random BERT cross-encoder (one logit) saved like a hub model (also used by the GPU tests)."""
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=POSITIONS,
        num_labels=1,
    )
    model_dir = root / "tiny-ce"
    BertForSequenceClassification(config).save_pretrained(model_dir)
    # No model_max_length saved: like MedCPT's tokenizer, so rerankers alone would not truncate at all.
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(model_dir)
    return model_dir


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def ce(tiny_ce: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(tiny_ce, max_length=MAX_LENGTH, device="cpu", batch_size=2)


def words(n: int, offset: int = 0) -> str:
    return " ".join(WORDS[(i * 3 + offset) % len(WORDS)] for i in range(n))


def reference_logits(model_dir: Path, query: str, texts: Sequence[str]) -> list[float]:
    tok = BertTokenizerFast.from_pretrained(model_dir)
    net = BertForSequenceClassification.from_pretrained(model_dir).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            enc = tok(query, text, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
            out.append(float(net(**enc).logits[0, 0]))
    return out


def test_cross_encoder_scores_match_model_logits(ce: CrossEncoderReranker, tiny_ce: Path) -> None:
    assert isinstance(ce, Reranker)
    assert ce.kind == "cross-encoder" and ce.note is None
    assert ce.name == "cross-encoder:tiny-ce"
    query = words(4)
    texts = [words(5, 1), words(12, 2), words(3, 5), words(200, 7)]  # the last is far beyond max_length
    scores = ce.rerank(query, texts)
    assert len(scores) == len(texts)
    assert all(math.isfinite(s) for s in scores)
    np.testing.assert_allclose(scores, reference_logits(tiny_ce, query, texts), rtol=1e-4, atol=1e-5)
    assert ce.rerank(query, texts) == scores  # deterministic
    # Aligned with the input order, not rerankers' sorted order.
    assert ce.rerank(query, texts[::-1]) == pytest.approx(scores[::-1], rel=1e-4, abs=1e-5)


def test_cross_encoder_truncates_long_pairs_instead_of_failing(ce: CrossEncoderReranker) -> None:
    # 300 words > 64 positions: without the explicit max length the model would raise an index error.
    (score,) = ce.rerank(words(80), [words(300)])
    assert math.isfinite(score)
    assert ce.rerank("q", []) == []


def test_max_length_beyond_positions_is_refused(tiny_ce: Path) -> None:
    with pytest.raises(RerankerUnavailable, match="position embeddings"):
        CrossEncoderReranker(tiny_ce, max_length=POSITIONS + 1, device="cpu")


def test_missing_path_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(RerankerUnavailable):
        CrossEncoderReranker(tmp_path / "nowhere", device="cpu")
    with pytest.raises(RerankerUnavailable):  # an id the offline hub cache does not hold
        CrossEncoderReranker("ncbi/MedCPT-Cross-Encoder", device="cpu")


class FakeEncoder(VectorEncoder):
    """Deterministic bag-of-letters vectors, so inner products are easy to predict."""

    name = "fake"
    dim = 26
    query_max_length = 64
    doc_max_length = 64

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for ch in text.lower():
            if "a" <= ch <= "z":
                v[ord(ch) - 97] += 1
        n = float(np.linalg.norm(v))
        return v / n if n else v


def test_bi_encoder_reranker_scores_by_inner_product() -> None:
    rr = BiEncoderReranker(FakeEncoder())
    assert isinstance(rr, Reranker)
    assert rr.kind == "bi-encoder" and rr.name == "bi-encoder:fake" and rr.note
    scores = rr.rerank("aaa", ["aaa", "bbb", "ab"])
    assert scores[0] == pytest.approx(1.0) and scores[1] == pytest.approx(0.0)
    assert scores[0] > scores[2] > scores[1]
    assert rr.rerank("aaa", []) == []


def test_bi_encoder_cache_is_bounded_by_bytes_without_changing_scores() -> None:
    texts = ["aaa", "bbb", "ab", "abc"]
    ref = BiEncoderReranker(FakeEncoder()).rerank("aab", texts)
    enc = FakeEncoder()
    small = BiEncoderReranker(enc, cache_max_bytes=2 * 26 * 4)  # room for two 26-dimension float32 vectors
    assert small.rerank("aab", texts) == ref == small.rerank("aab", texts)
    assert enc.doc_calls == 2  # each call encodes what is not cached in one batch: all, then the two evicted
    settings = RerankSettings.offline().model_copy(update={"cache_max_bytes": 0})
    uncached = load_reranker(settings, encoder=enc)
    assert uncached.rerank("aab", texts) == ref


def test_load_reranker_choices_and_offline_fallback(tiny_ce: Path) -> None:
    enc = FakeEncoder()
    offline = load_reranker(RerankSettings.offline(), encoder=enc)
    assert offline.kind == "bi-encoder" and RerankSettings.offline().model == BI_ENCODER
    with pytest.raises(RerankerUnavailable):
        load_reranker(RerankSettings.offline())
    # The production default cannot load here (no weights, HF_HUB_OFFLINE): bi-encoder with the reason.
    fallback = load_reranker(RerankSettings(), encoder=enc)
    assert fallback.kind == "bi-encoder"
    assert (
        fallback.note is not None and "offline" in fallback.note and "MedCPT-Cross-Encoder" in fallback.note
    )
    with pytest.raises(RerankerUnavailable):
        load_reranker(RerankSettings(fallback_to_bi_encoder=False), encoder=enc)
    local = load_reranker(
        RerankSettings(model=str(tiny_ce), max_length=MAX_LENGTH, device="cpu"), encoder=enc
    )
    assert local.kind == "cross-encoder"


def test_bi_encoder_score_of_given_vectors_matches_rerank() -> None:
    enc = FakeEncoder()
    rr = BiEncoderReranker(enc)
    assert rr.encoder is enc
    texts = ["aaa", "bbb", "ab", "abc"]
    q = enc.encode_queries(["aab"])[0]
    vectors = list(enc.encode_documents([("", t) for t in texts]))
    assert rr.score(q, vectors) == rr.rerank("aab", texts)  # the same arithmetic, bit for bit
    assert rr.score(q, []) == []
