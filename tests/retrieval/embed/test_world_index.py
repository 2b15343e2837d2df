"""The dense index of a corpus folder (a world): built on first use, cached by content and encoder,
resumable, rebuilt when the corpus changes; seeded from a prebuilt index when one fits (the bundled
corpus's ships in the package), never from a stale one."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from core import OnProgress
from retrieval.embed import (
    BUNDLED_MINILM_NAME,
    DenseSettings,
    FaissIndex,
    SentenceTransformerEncoder,
    bundled_index_dir,
    corpus_fingerprint,
    ensure_bundled_index,
    open_retriever,
    prebuilt_index_dir,
    verify_index_vectors,
)
from retrieval.ncbi import BUNDLED_CORPUS_DIR, clear_corpus_cache, load_corpus
from tests._fakes import VectorEncoder


class BagEncoder(VectorEncoder):
    """Hashes words into 16 buckets: documents sharing words with a query score higher."""

    name = "fake:bag"

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(self.dim, np.float32)
        for word in text.lower().split():
            v[sum(map(ord, word)) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)


class FailingEncoder(BagEncoder):
    """Raises on the ``fail_at``-th document batch: an interrupted build."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> npt.NDArray[np.float32]:
        if self.doc_calls + 1 == self.fail_at:
            raise KeyboardInterrupt
        return super().encode_documents(docs, batch_size, on_progress)


def write_world(root: Path, n: int, *, skip: int = 0, manifest: str | None = "v1") -> Path:
    """``n`` records of the bundled corpus (after ``skip``) in the ``pubmed/`` layout load_corpus reads."""
    raw = load_corpus().raw
    pmids = sorted(raw)[skip : skip + n]
    (root / "pubmed").mkdir(parents=True, exist_ok=True)
    body = b"\n".join(raw[p] for p in pmids)
    (root / "pubmed" / "world.xml").write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<PubmedArticleSet>\n' + body + b"\n</PubmedArticleSet>\n"
    )
    if manifest is not None:
        (root / "MANIFEST.json").write_text(json.dumps({"version": manifest, "records": n}))
    clear_corpus_cache()
    return root


@pytest.fixture(autouse=True)
def _fresh_corpus_cache() -> Iterator[None]:
    yield
    clear_corpus_cache()


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default index root moved under tmp_path the way a user moves it: ``XDG_CACHE_HOME``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "cometa" / "index"


def test_world_index_builds_with_progress_then_loads_from_cache(tmp_path: Path, cache_root: Path) -> None:
    world = write_world(tmp_path / "world", 40)
    enc = BagEncoder()
    calls: list[tuple[int, int]] = []
    index = ensure_bundled_index(
        DenseSettings(encode_batch_size=4),
        enc,
        corpus_dir=world,
        on_progress=lambda d, t: calls.append((d, t)),
    )
    assert len(index) == 40 and enc.doc_texts == 40
    assert calls[-1] == (40, 40) and len(calls) == 2  # blocks of 8 * batch size
    (where,) = [p.parent for p in cache_root.rglob("meta.json")]
    assert where.parent.parent == cache_root / "corpus"
    assert where.parent.name.startswith("world-") and where.name.startswith("fake_bag-")
    assert FaissIndex.read_meta(where).build["complete"] is True

    # A restart: the cached index is loaded, nothing is encoded again.
    clear_corpus_cache()
    again = BagEncoder()
    retriever = open_retriever(DenseSettings(), bundled=True, corpus_dir=world, encoder=again)
    assert again.doc_texts == 0 and len(retriever.index) == 40
    record = next(iter(load_corpus(world).records.values()))
    assert retriever.search(f"{record.title} {record.abstract_text}", 1)[0].pmid == record.pmid


def test_world_change_gets_its_own_index_and_bundled_stays_apart(tmp_path: Path, cache_root: Path) -> None:
    world = write_world(tmp_path / "world", 20)
    enc = BagEncoder()
    first = ensure_bundled_index(DenseSettings(), enc, corpus_dir=world)
    assert enc.doc_texts == 20
    write_world(world, 25, skip=10, manifest="v2")  # a rebuilt world: new records, new MANIFEST
    second = ensure_bundled_index(DenseSettings(), enc, corpus_dir=world)
    assert enc.doc_texts == 45 and len(second) == 25
    assert set(second.contains(sorted(load_corpus(world).records)).tolist()) == {True}
    assert len(first) == 20  # the old version's index is left as it was (a cache keyed by content)
    assert len(list(cache_root.glob("corpus/*/*/meta.json"))) == 2


def test_edit_without_new_manifest_still_rebuilds(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 12)
    settings = DenseSettings(index_dir=tmp_path / "idx")  # one fixed location: rebuilt in place
    enc = BagEncoder()
    ensure_bundled_index(settings, enc, corpus_dir=world)
    write_world(world, 14)  # same MANIFEST, different pubmed/ file size
    index = ensure_bundled_index(settings, enc, corpus_dir=world)
    assert len(index) == 14 and enc.doc_texts == 26


def test_interrupted_build_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 40)
    settings = DenseSettings(index_dir=tmp_path / "idx", encode_batch_size=2)  # blocks of 16 records
    with pytest.raises(KeyboardInterrupt):
        ensure_bundled_index(settings, FailingEncoder(fail_at=3), corpus_dir=world, checkpoint_every=16)
    assert FaissIndex.read_meta(tmp_path / "idx").build["complete"] is False
    enc = BagEncoder()
    index = ensure_bundled_index(settings, enc, corpus_dir=world, checkpoint_every=16)
    assert len(index) == 40 and enc.doc_texts == 8  # 32 were checkpointed; only the rest is encoded
    assert FaissIndex.read_meta(tmp_path / "idx").build["complete"] is True


def test_bundled_corpus_keeps_its_own_location(tmp_path: Path, cache_root: Path) -> None:
    enc = BagEncoder()
    assert bundled_index_dir(DenseSettings(), enc).parent == cache_root / "bundled"
    assert bundled_index_dir(DenseSettings(), enc, BUNDLED_CORPUS_DIR).parent == cache_root / "bundled"
    assert bundled_index_dir(DenseSettings(index_dir=tmp_path / "x"), enc, tmp_path) == tmp_path / "x"


def test_builds_are_serialised_between_threads(tmp_path: Path, cache_root: Path) -> None:
    world = write_world(tmp_path / "world", 16)
    encs = [BagEncoder(), BagEncoder()]
    out: list[int] = []

    def build(enc: BagEncoder) -> None:
        out.append(len(ensure_bundled_index(DenseSettings(), enc, corpus_dir=world)))

    threads = [threading.Thread(target=build, args=(e,)) for e in encs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [16, 16] and sum(e.doc_texts for e in encs) == 16  # one built, the other loaded


class ShiftedEncoder(BagEncoder):
    """Same name as :class:`BagEncoder`, other weights: words land one bucket over."""

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        return np.roll(super()._vec(text), 1)


def _prebuilt(tmp_path: Path, world: Path, enc: BagEncoder) -> Path:
    """A prebuilt index of ``world`` by ``enc``, as scripts/build_prebuilt_index.py leaves it."""
    out = tmp_path / "prebuilt" / "x"
    ensure_bundled_index(DenseSettings(), enc, corpus_dir=world, directory=out, prebuilt=tmp_path / "none")
    (out / ".build.lock").unlink()
    return out


def test_a_fitting_prebuilt_index_is_copied_not_built(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 40)
    source = _prebuilt(tmp_path, world, BagEncoder())
    enc = BagEncoder()
    settings = DenseSettings(index_dir=tmp_path / "idx")
    index = ensure_bundled_index(settings, enc, corpus_dir=world, prebuilt=source)
    assert len(index) == 40 and enc.doc_texts == 4  # only the probes were encoded, not the 40 documents
    assert FaissIndex.read_meta(tmp_path / "idx").build["complete"] is True
    record = load_corpus(world).records[sorted(load_corpus(world).records)[7]]
    hits = index.search(enc.encode_queries([f"{record.title} {record.abstract_text}"]), 1)
    assert hits[0][0][0] == record.pmid
    # A restart finds the copy current in the cache: nothing encoded, not even the probes.
    again = BagEncoder()
    assert len(ensure_bundled_index(settings, again, corpus_dir=world, prebuilt=source)) == 40
    assert again.doc_texts == 0


def test_a_prebuilt_index_of_another_corpus_version_is_not_used(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 20)
    source = _prebuilt(tmp_path, world, BagEncoder())
    write_world(world, 22, manifest="v2")  # the corpus moved on; the prebuilt index did not
    enc = BagEncoder()
    index = ensure_bundled_index(
        DenseSettings(index_dir=tmp_path / "idx"), enc, corpus_dir=world, prebuilt=source
    )
    assert len(index) == 22 and enc.doc_texts == 22  # built here
    assert index.meta.build["corpus_sha256"] == corpus_fingerprint(world)


def test_a_prebuilt_index_from_other_weights_under_the_same_name_is_rebuilt(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 24)
    source = _prebuilt(tmp_path, world, BagEncoder())
    enc = ShiftedEncoder()
    settings = DenseSettings(index_dir=tmp_path / "idx")
    index = ensure_bundled_index(settings, enc, corpus_dir=world, prebuilt=source)
    assert enc.doc_texts == 4 + 24  # the probes disagreed: everything encoded by this encoder
    assert verify_index_vectors(index, enc, list(load_corpus(world).records.values())) > 0.999
    assert FaissIndex.read_meta(tmp_path / "idx").build["complete"] is True


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder()


def test_the_shipped_index_is_the_bundled_corpus_by_the_offline_encoder(
    minilm: SentenceTransformerEncoder,
) -> None:
    """The package's prebuilt index is current: built from this corpus (its MANIFEST and files) by the
    encoder the offline default loads, with these weights, one vector per indexed record. When this fails,
    run ``python scripts/build_prebuilt_index.py`` (the service would rebuild it at start-up meanwhile)."""
    assert minilm.name == f"st:{BUNDLED_MINILM_NAME}"
    where = prebuilt_index_dir(minilm.name)
    meta = FaissIndex.read_meta(where)
    assert (meta.encoder_name, meta.dim) == (minilm.name, minilm.dim)
    assert meta.build["corpus_sha256"] == corpus_fingerprint(BUNDLED_CORPUS_DIR)
    assert meta.build["complete"] is True and meta.build["source"] == "bundled-corpus"
    records = list(load_corpus().records.values())
    index = FaissIndex.load(where)
    indexed = [r.pmid for r in records if r.title.strip() or r.abstract_text.strip()]
    assert len(index) == len(indexed) and bool(index.contains(indexed).all())
    assert verify_index_vectors(index, minilm, records, probes=16) > 0.9999
    size = sum(f.stat().st_size for f in where.iterdir())
    assert size < 3 * 2**20  # shipped in the wheel: a few MB at most
