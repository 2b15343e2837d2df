"""Encoders: MedCPT's loading/pooling/truncation path on a tiny random BERT, and the bundled MiniLM."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer, BertConfig, BertModel, BertTokenizerFast

from core import Encoder
from retrieval.embed import (
    BUNDLED_MINILM_NAME,
    DenseSettings,
    EncoderUnavailable,
    MedCPTEncoder,
    SentenceTransformerEncoder,
    load_encoder,
)

WORDS = [f"w{i}" for i in range(60)]


def _tiny_bert(directory: Path, vocab_file: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(directory)
    BertTokenizerFast(vocab_file=str(vocab_file), model_max_length=512).save_pretrained(directory)
    return directory


def build_tiny_medcpt(root: Path) -> tuple[Path, Path]:
    """A tiny random query and article BERT with MedCPT's file layout (also used by the GPU tests)."""
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return _tiny_bert(root / "query", vocab, 1), _tiny_bert(root / "article", vocab, 2)


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_medcpt(tmp_path_factory.mktemp("tiny-medcpt"))


@pytest.fixture(scope="module")
def tiny(tiny_dirs: tuple[Path, Path]) -> MedCPTEncoder:
    return MedCPTEncoder(*tiny_dirs, device="cpu")


def words(n: int, offset: int = 0) -> str:
    return " ".join(WORDS[(i + offset) % len(WORDS)] for i in range(n))


def test_medcpt_shapes_name_and_protocol(tiny: MedCPTEncoder) -> None:
    assert isinstance(tiny, Encoder)
    assert tiny.name == "medcpt:query|article"  # local folders are named by basename
    assert (tiny.dim, tiny.query_max_length, tiny.doc_max_length) == (32, 64, 512)
    q = tiny.encode_queries([words(3), words(7, 5)])
    d = tiny.encode_documents([(words(4), words(20)), ("", words(5)), (words(2), "")])
    assert q.shape == (2, 32) and q.dtype == np.float32
    assert d.shape == (3, 32) and d.dtype == np.float32
    assert tiny.encode_queries([]).shape == (0, 32)


def test_medcpt_cls_pooling_matches_the_model(tiny: MedCPTEncoder, tiny_dirs: tuple[Path, Path]) -> None:
    qdir, adir = tiny_dirs
    tok, net = AutoTokenizer.from_pretrained(qdir), AutoModel.from_pretrained(qdir).eval()
    with torch.inference_mode():
        expected = net(**tok([words(9)], return_tensors="pt")).last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(tiny.encode_queries([words(9)]), expected, atol=1e-5)
    # Articles go through the *article* model as a [title, abstract] pair.
    tok, net = AutoTokenizer.from_pretrained(adir), AutoModel.from_pretrained(adir).eval()
    with torch.inference_mode():
        enc = tok([words(3)], [words(11, 7)], return_tensors="pt")
        expected = net(**enc).last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(tiny.encode_documents([(words(3), words(11, 7))]), expected, atol=1e-5)
    # Unnormalised: MedCPT scores are raw inner products.
    assert not np.isclose(np.linalg.norm(expected), 1.0)


def test_medcpt_query_truncates_at_64_tokens(tiny: MedCPTEncoder) -> None:
    # Every word is one token: [CLS] + 62 words + [SEP] = 64.
    long, cut, short = tiny.encode_queries([words(200), words(62), words(30)])
    np.testing.assert_allclose(long, cut, atol=1e-5)
    assert not np.allclose(long, short, atol=1e-3)


def test_medcpt_article_pair_truncation(tiny: MedCPTEncoder, tiny_dirs: tuple[Path, Path]) -> None:
    title = words(5, 3)
    # 512: [CLS] title(5) [SEP] abstract(504) [SEP]; the longer abstract is what gets cut.
    full = tiny.encode_documents([(title, words(1000)), (title, words(504))])
    np.testing.assert_allclose(full[0], full[1], atol=1e-5)
    small = MedCPTEncoder(*tiny_dirs, doc_max_length=16, device="cpu")
    got = small.encode_documents([(title, words(50)), (title, words(8)), (title, words(7))])
    np.testing.assert_allclose(got[0], got[1], atol=1e-5)  # 16 = 3 specials + 5 + 8
    assert not np.allclose(got[0], got[2], atol=1e-3)


def test_medcpt_deterministic_and_batch_invariant(tiny: MedCPTEncoder) -> None:
    docs = [(words(i % 7 + 1, i), words(3 * i + 1, 2 * i)) for i in range(9)]
    a = tiny.encode_documents(docs, batch_size=4)
    b = tiny.encode_documents(docs, batch_size=4)
    c = tiny.encode_documents(docs, batch_size=1)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=1e-5)  # length-sorted, padded batches change nothing


def test_medcpt_reports_progress_per_batch_without_changing_vectors(tiny: MedCPTEncoder) -> None:
    docs = [(words(i % 7 + 1, i), words(3 * i + 1, 2 * i)) for i in range(9)]
    calls: list[tuple[int, int]] = []
    got = tiny.encode_documents(
        docs, batch_size=4, on_progress=lambda done, total: calls.append((done, total))
    )
    assert calls == [(4, 9), (8, 9), (9, 9)]
    np.testing.assert_array_equal(got, tiny.encode_documents(docs, batch_size=4))


def test_load_encoder_medcpt_from_local_dirs(tiny_dirs: tuple[Path, Path]) -> None:
    q, a = tiny_dirs
    settings = DenseSettings(encoder="medcpt", query_model=str(q), article_model=str(a), device="cpu")
    enc = load_encoder(settings)
    assert isinstance(enc, MedCPTEncoder) and enc.dim == 32


def test_unavailable_models_fail_fast(tmp_path: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(EncoderUnavailable, match="HF_HUB_OFFLINE"):
        MedCPTEncoder("ncbi/MedCPT-Query-Encoder", device="cpu")  # not cached; the hub is never asked
    with pytest.raises(EncoderUnavailable, match="no-such-model"):
        SentenceTransformerEncoder("someone/no-such-model", device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EncoderUnavailable, match="empty"):
        MedCPTEncoder(tmp_path / "empty", tmp_path / "empty", device="cpu")
    assert time.perf_counter() - start < 20


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEncoder:
    enc = load_encoder(DenseSettings(encoder="sentence-transformers", st_max_length=128, device="cpu"))
    assert isinstance(enc, SentenceTransformerEncoder)
    return enc


def test_minilm_offline_default(minilm: SentenceTransformerEncoder) -> None:
    assert minilm.name == f"st:{BUNDLED_MINILM_NAME}"
    assert (minilm.dim, minilm.query_max_length, minilm.doc_max_length) == (384, 128, 128)
    assert minilm._model.max_seq_length == 128  # set explicitly, not inherited from the checkpoint
    q = minilm.encode_queries(["chemotherapy side effects in breast cancer"])
    docs = minilm.encode_documents(
        [
            ("Adverse events of adjuvant chemotherapy", "Nausea and neutropenia in breast cancer patients."),
            ("Soil bacteria", "Nitrogen fixation by rhizobia in legume root nodules."),
        ]
    )
    assert q.shape == (1, 384) and docs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    scores = docs @ q[0]
    assert scores[0] > scores[1] + 0.2


def test_minilm_reports_progress_per_batch_without_changing_vectors(
    minilm: SentenceTransformerEncoder,
) -> None:
    docs = [("", words(i % 7 + 1, i)) for i in range(9)]
    calls: list[tuple[int, int]] = []
    got = minilm.encode_documents(
        docs, batch_size=4, on_progress=lambda done, total: calls.append((done, total))
    )
    assert calls == [(4, 9), (8, 9), (9, 9)]
    np.testing.assert_array_equal(got, minilm.encode_documents(docs, batch_size=4))
    minilm.encode_queries(["no progress for queries"])
    assert len(calls) == 3  # the hook went away with the call


def test_minilm_rejects_max_length_beyond_positions() -> None:
    with pytest.raises(EncoderUnavailable, match="position"):
        SentenceTransformerEncoder(max_length=4096, device="cpu")


def test_local_copies_share_the_hub_identity(tmp_path: Path) -> None:
    from retrieval.embed._encoders import _model_label

    (tmp_path / "MedCPT-Query-Encoder").mkdir()
    snapshot = tmp_path / "models--ncbi--MedCPT-Article-Encoder" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (tmp_path / "my-model").mkdir()
    assert _model_label(tmp_path / "MedCPT-Query-Encoder") == "ncbi/MedCPT-Query-Encoder"
    assert _model_label(snapshot) == "ncbi/MedCPT-Article-Encoder"
    assert _model_label(tmp_path / "my-model") == "my-model"
    assert _model_label("org/hub-model") == "org/hub-model"
