"""The optional ONNX Runtime int8 document path of sentence-transformers encoders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from retrieval.embed import (
    DenseSettings,
    EncoderUnavailable,
    FaissIndex,
    SentenceTransformerEncoder,
    build_from_records,
    load_encoder,
)
from retrieval.ncbi import AbstractSection, PubmedRecord

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

WORDS = [f"w{i}" for i in range(60)]
DOCS = [(f"w{i} w{i + 1}", " ".join(WORDS[i : i + 5 + 3 * i])) for i in range(12)] + [
    ("", "w7 w8"),
    ("w9", ""),
]


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT saved as a sentence-transformers model: transformer, mean pooling, Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    root = tmp_path_factory.mktemp("tiny-st")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(root / "bert")
    BertTokenizerFast(vocab_file=str(vocab), model_max_length=512).save_pretrained(root / "bert")
    transformer = Transformer(str(root / "bert"), max_seq_length=64)
    pooling = Pooling(32, pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, Normalize()]).save(str(root / "st"))
    return root / "st"


def test_onnx_int8_documents_match_torch_and_keep_the_order(tiny_st: Path) -> None:
    plain = SentenceTransformerEncoder(tiny_st, max_length=64, device="cpu", doc_runtime="torch")
    fast = SentenceTransformerEncoder(tiny_st, max_length=64, device="cpu", doc_runtime="onnx-int8")
    assert plain.document_runtime == "torch" and fast.document_runtime == "onnx-int8"
    assert fast.name == plain.name  # one vector space: indexes and queries are shared
    ref = plain.encode_documents(DOCS)
    seen: list[tuple[int, int]] = []
    got = fast.encode_documents_bulk(DOCS, batch_size=4, on_progress=lambda d, t: seen.append((d, t)))
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = np.sum(got * ref, axis=1)
    assert cos.min() > 0.97, cos  # int8 weights: close to fp32, in the caller's order
    assert seen == [(4, 14), (8, 14), (12, 14), (14, 14)]
    # Queries and per-call documents (passages, SEOS) stay on torch, exactly.
    np.testing.assert_array_equal(fast.encode_queries(["w1 w2"]), plain.encode_queries(["w1 w2"]))
    np.testing.assert_array_equal(fast.encode_documents(DOCS), ref)
    np.testing.assert_array_equal(plain.encode_documents_bulk(DOCS), ref)
    # The export is cached: a second encoder loads it instead of exporting again.
    again = SentenceTransformerEncoder(tiny_st, max_length=64, device="cpu", doc_runtime="onnx-int8")
    np.testing.assert_array_equal(again.encode_documents_bulk(DOCS, batch_size=4), got)
    # Activations are quantised per batch: other batch mates move a vector only in the 4th decimal.
    np.testing.assert_allclose(again.encode_documents_bulk(DOCS, batch_size=32), got, atol=1e-3)


def test_auto_uses_onnx_on_cpu_and_explicit_onnx_fails_clearly_without_it(
    tiny_st: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        SentenceTransformerEncoder(tiny_st, device="cpu", doc_runtime="auto").document_runtime == "onnx-int8"
    )
    import retrieval.embed._encoders as encoders

    monkeypatch.setattr(encoders, "onnx_runtime_available", lambda: False)
    assert SentenceTransformerEncoder(tiny_st, device="cpu", doc_runtime="auto").document_runtime == "torch"
    with pytest.raises(EncoderUnavailable, match="cometa\\[onnx\\]"):
        SentenceTransformerEncoder(tiny_st, device="cpu", doc_runtime="onnx-int8")


@pytest.mark.slow
def test_bundled_minilm_int8_vectors_stay_close_to_torch() -> None:
    from retrieval.ncbi import load_corpus

    records = [r for r in load_corpus().records.values() if r.abstract_text][:48]
    docs = [(r.title, r.abstract_text) for r in records]
    settings = DenseSettings(encoder="sentence-transformers", device="cpu", st_doc_runtime="torch")
    ref = load_encoder(settings).encode_documents(docs)
    fast = load_encoder(settings.model_copy(update={"st_doc_runtime": "onnx-int8"}))
    assert isinstance(fast, SentenceTransformerEncoder)
    got = fast.encode_documents_bulk(docs)
    cos = np.sum(ref * got, axis=1)
    assert cos.min() > 0.985 and cos.mean() > 0.992, (cos.min(), cos.mean())


def test_index_builds_take_the_bulk_path_and_record_it(tiny_st: Path) -> None:
    fast = SentenceTransformerEncoder(tiny_st, max_length=64, device="cpu", doc_runtime="onnx-int8")
    records = [
        PubmedRecord(pmid=str(i + 1), title=t, abstract=(AbstractSection(text=a),))
        for i, (t, a) in enumerate(DOCS[:12])
    ]
    index = FaissIndex(fast.name, fast.dim, kind="flat")
    build_from_records(records, fast, index, batch_size=4)
    assert index.meta.build["document_runtime"] == "onnx-int8"
    expected = fast.encode_documents_bulk([(r.title, r.abstract_text) for r in records], batch_size=4)
    hits = index.search(expected[:1], 1)[0]
    assert hits[0][0] == "1" and hits[0][1] == pytest.approx(1.0, abs=1e-4)
