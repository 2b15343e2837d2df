"""Dense retrieval: retriever, resumable builders, NCBI MedCPT embedding import, bundled-corpus index."""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from core import OnProgress
from retrieval.embed import (
    BuildProgress,
    DenseHit,
    DenseRetriever,
    DenseSettings,
    FaissIndex,
    IndexMismatchError,
    build_from_baseline,
    build_from_records,
    ensure_bundled_index,
    import_medcpt_embeddings,
    open_retriever,
)
from retrieval.ncbi import AbstractSection, PubmedRecord

MEDCPT = "medcpt:ncbi/MedCPT-Query-Encoder|ncbi/MedCPT-Article-Encoder"


class HashEncoder:
    """Deterministic stand-in: a text's vector is seeded by its hash; counts what it encodes."""

    def __init__(self, name: str = "fake:hash", dim: int = 16) -> None:
        self._name, self._dim = name, dim
        self.encoded = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    query_max_length = 64
    doc_max_length = 512

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> npt.NDArray[np.float32]:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self._dim), np.float32)

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> npt.NDArray[np.float32]:
        self.encoded += len(docs)
        return self.encode_queries([t for t, _ in docs])  # query == title finds the document


def record(pmid: int, title: str | None = None, abstract: str = "some abstract") -> PubmedRecord:
    sections = (AbstractSection(text=abstract),) if abstract else ()
    return PubmedRecord(pmid=str(pmid), title=f"title {pmid}" if title is None else title, abstract=sections)


def test_retriever_hits_and_async() -> None:
    enc = HashEncoder()
    index = FaissIndex(enc.name, enc.dim, kind="flat")
    build_from_records([record(i) for i in range(1, 21)], enc, index, checkpoint_every=10**9)
    retriever = DenseRetriever(enc, index)
    hits = retriever.search("title 7", 5)
    assert hits[0] == DenseHit(pmid="7", score=pytest.approx(1.0, abs=1e-5), rank=1)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert retriever.search_many(["title 3", "title 4"], 1)[1][0].pmid == "4"
    with pytest.raises(IndexMismatchError):
        DenseRetriever(HashEncoder(name="fake:other"), index)


async def test_asearch_matches_search() -> None:
    enc = HashEncoder()
    index = FaissIndex(enc.name, enc.dim, kind="flat")
    index.add([str(i) for i in range(1, 6)], enc.encode_queries([f"title {i}" for i in range(1, 6)]))
    retriever = DenseRetriever(enc, index)
    assert await retriever.asearch("title 2", 3) == retriever.search("title 2", 3)


def test_build_skips_empty_and_repeated_records() -> None:
    enc = HashEncoder()
    index = FaissIndex(enc.name, enc.dim, kind="flat")
    records = [record(1), record(2, title="", abstract=""), record(3, title=""), record(1), record(4)]
    calls: list[tuple[int, int]] = []
    stats = build_from_records(
        records,
        enc,
        index,
        block_size=2,
        checkpoint_every=10**9,
        on_progress=lambda d, t: calls.append((d, t)),
    )
    assert (stats.added, stats.skipped, stats.total, len(index)) == (3, 2, 3, 3)
    assert calls == [(2, 5), (4, 5), (5, 5)]  # records seen, after every block
    assert stats.seconds > 0 and stats.docs_per_s > 0


def test_build_is_resumable_after_interrupt(tmp_path: Path) -> None:
    enc = HashEncoder()
    records = [record(i) for i in range(1, 301)]
    index = FaissIndex(enc.name, enc.dim, kind="flat", directory=tmp_path)

    class Stop(Exception):
        pass

    seen: list[BuildProgress] = []

    def interrupt(p: BuildProgress) -> None:
        seen.append(p)
        if p.checkpoints >= 2:
            raise Stop

    with pytest.raises(Stop):
        build_from_records(
            records, enc, index, batch_size=4, block_size=32, checkpoint_every=64, on_batch=interrupt
        )
    on_disk = FaissIndex.read_meta(tmp_path).count
    assert on_disk == 128 and seen[-1].added == 128  # the interrupting batch had just been checkpointed
    encoded_before = enc.encoded

    resumed = FaissIndex.load(tmp_path, writable=True)
    stats = build_from_records(records, enc, resumed, batch_size=4, checkpoint_every=64)
    assert (stats.added, stats.skipped, stats.total) == (300 - on_disk, on_disk, 300)
    assert enc.encoded - encoded_before == 300 - on_disk  # checkpointed documents are not re-encoded
    final = FaissIndex.load(tmp_path)
    assert len(final) == 300 and len(set(final._sorted_ids.tolist())) == 300


def test_build_from_baseline_files(tmp_path: Path) -> None:
    xml = _pubmed_xml([(11, "Alpha", "first"), (12, "Beta", "second"), (13, "", "")])
    (tmp_path / "b.xml").write_text(xml)
    enc = HashEncoder()
    index = FaissIndex(enc.name, enc.dim, kind="flat", directory=tmp_path / "idx")
    stats = build_from_baseline([tmp_path], enc, index)
    assert (stats.added, stats.skipped) == (2, 1)
    assert FaissIndex.read_meta(tmp_path / "idx").build["source"] == "pubmed-baseline"
    assert DenseRetriever(enc, index).search("Beta", 1)[0].pmid == "12"


def _write_chunks(directory: Path, sizes: list[int], dim: int = 768) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(0)
    all_ids: list[str] = []
    vecs = []
    pmid = 30_000_000
    for i, n in enumerate(sizes):
        v = rng.standard_normal((n, dim)).astype(np.float32)
        ids = [pmid + j for j in range(n)]
        pmid += n
        np.save(directory / f"embeds_chunk_{i}.npy", v)
        (directory / f"pmids_chunk_{i}.json").write_text(json.dumps(ids))
        all_ids += [str(p) for p in ids]
        vecs.append(v)
    return all_ids, np.vstack(vecs)


def test_import_medcpt_embeddings(tmp_path: Path) -> None:
    ids, vecs = _write_chunks(tmp_path, [50, 30])
    index = FaissIndex(MEDCPT, 768, kind="flat", directory=tmp_path / "idx")
    stats = import_medcpt_embeddings(tmp_path, index, block_size=16)
    assert (stats.added, stats.skipped, len(index)) == (80, 0, 80)
    assert index.search(vecs[57:58], 1)[0][0][0] == ids[57]
    again = import_medcpt_embeddings(tmp_path, FaissIndex.load(tmp_path / "idx", writable=True))
    assert (again.added, again.skipped, again.total) == (0, 80, 80)
    assert FaissIndex.read_meta(tmp_path / "idx").build["source"] == "ncbi-medcpt-embeddings"


def test_import_medcpt_refuses_other_spaces_and_bad_files(tmp_path: Path) -> None:
    _write_chunks(tmp_path, [5])
    with pytest.raises(IndexMismatchError, match="MedCPT"):
        import_medcpt_embeddings(tmp_path, FaissIndex("st:sentence-transformers/all-MiniLM-L6-v2", 384))
    with pytest.raises(IndexMismatchError):
        import_medcpt_embeddings(tmp_path, FaissIndex("st:some-768-model", 768))
    (tmp_path / "pmids_chunk_0.json").write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="lists 2 PMIDs"):
        import_medcpt_embeddings(tmp_path, FaissIndex(MEDCPT, 768))
    (tmp_path / "pmids_chunk_0.json").unlink()
    with pytest.raises(FileNotFoundError):
        import_medcpt_embeddings(tmp_path, FaissIndex(MEDCPT, 768))


def _pubmed_xml(rows: list[tuple[int, str, str]]) -> str:
    articles = "".join(
        f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{p}</PMID>'
        f"<Article><Journal><Title>J</Title></Journal><ArticleTitle>{t}</ArticleTitle>"
        + (f"<Abstract><AbstractText>{a}</AbstractText></Abstract>" if a else "")
        + "</Article></MedlineCitation></PubmedArticle>\n"
        for p, t, a in rows
    )
    return f'<?xml version="1.0"?>\n<PubmedArticleSet>\n{articles}</PubmedArticleSet>\n'


def _corpus(root: Path, rows: list[tuple[int, str, str]], version: int) -> Path:
    (root / "pubmed").mkdir(parents=True, exist_ok=True)
    (root / "pubmed" / "a.xml").write_text(_pubmed_xml(rows))
    (root / "MANIFEST.json").write_text(json.dumps({"format_version": version}))
    return root


def test_ensure_bundled_index_builds_once_and_rebuilds_on_manifest_change(tmp_path: Path) -> None:
    from retrieval.ncbi import clear_corpus_cache

    corpus = _corpus(tmp_path / "corpus", [(1, "Alpha", "a"), (2, "Beta", "b"), (3, "Gamma", "c")], 1)
    settings = DenseSettings(index_dir=tmp_path / "idx")
    enc = HashEncoder()
    first = ensure_bundled_index(settings, enc, corpus_dir=corpus)
    assert len(first) == 3 and enc.encoded == 3
    meta = FaissIndex.read_meta(tmp_path / "idx")
    assert meta.build["complete"] and meta.build["source"] == "bundled-corpus"

    start = time.perf_counter()
    second = ensure_bundled_index(settings, enc, corpus_dir=corpus)
    assert enc.encoded == 3 and len(second) == 3  # reused, nothing re-encoded
    assert isinstance(second, FaissIndex) and second.read_only
    assert time.perf_counter() - start < 1.0

    clear_corpus_cache()
    _corpus(corpus, [(1, "Alpha", "a"), (4, "Delta", "d")], 2)  # MANIFEST changed: rebuild from scratch
    third = ensure_bundled_index(settings, enc, corpus_dir=corpus)
    assert sorted(third.contains(["1", "2", "3", "4"]).tolist()) == [False, False, True, True]
    assert len(third) == 2 and enc.encoded == 5
    clear_corpus_cache()


def test_ensure_bundled_index_will_not_overwrite_another_index(tmp_path: Path) -> None:
    enc = HashEncoder()
    other = FaissIndex(enc.name, enc.dim, kind="flat", directory=tmp_path / "idx")
    other.add(["5"], enc.encode_queries(["x"]))
    other.update_build_info(source="pubmed-baseline")
    other.save()
    corpus = _corpus(tmp_path / "corpus", [(1, "Alpha", "a")], 1)
    with pytest.raises(IndexMismatchError, match="pubmed-baseline"):
        ensure_bundled_index(DenseSettings(index_dir=tmp_path / "idx"), enc, corpus_dir=corpus)


def test_ensure_bundled_index_qdrant_local(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus", [(1, "Alpha", "a"), (2, "Beta", "b")], 1)
    settings = DenseSettings(index_backend="qdrant", index_dir=tmp_path / "idx")
    enc = HashEncoder()
    index = ensure_bundled_index(settings, enc, corpus_dir=corpus)
    index.close()
    again = ensure_bundled_index(settings, enc, corpus_dir=corpus)
    assert len(again) == 2 and enc.encoded == 2
    assert DenseRetriever(enc, again).search("Beta", 1)[0].pmid == "2"
    again.close()


@pytest.mark.slow
def test_bundled_corpus_with_minilm_end_to_end(tmp_path: Path) -> None:
    """The offline default for real: MiniLM over the 1,013 bundled abstracts (~1-2 min on 2 cores)."""
    settings = DenseSettings(encoder="sentence-transformers", index_dir=tmp_path / "idx", device="cpu")
    retriever = open_retriever(settings, bundled=True)
    assert len(retriever.index) >= 1_000
    hits = retriever.search("Does aspirin reduce the risk of colorectal cancer?", 10)
    assert len(hits) == 10 and hits[0].score > 0.3
