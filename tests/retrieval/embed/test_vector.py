"""Vector indexes: FAISS flat/IVF-PQ, Qdrant local mode, persistence and encoder-identity refusal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from retrieval.embed import (
    DenseSettings,
    FaissIndex,
    IndexCorrupt,
    IndexMismatchError,
    IndexNotFound,
    IndexReadOnly,
    QdrantIndex,
    VectorIndex,
    default_index_dir,
    open_index,
    slug,
)

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Enc:
    name: str
    dim: int


def gaussian(n: int, dim: int, seed: int = 0) -> F32:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def clustered(n: int, dim: int, seed: int = 0, clusters: int = 100) -> F32:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    x = centers[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def pmids(n: int, start: int = 1000) -> list[str]:
    return [str(start + 7 * i) for i in range(n)]


def brute_force(x: F32, ids: list[str], q: F32, k: int) -> list[list[tuple[str, float]]]:
    scores = q @ x.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[(ids[j], float(scores[i, j])) for j in row] for i, row in enumerate(order)]


def assert_same(
    a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]], tol: float = 1e-4
) -> None:
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert [p for p, _ in ra] == [p for p, _ in rb]
        np.testing.assert_allclose([s for _, s in ra], [s for _, s in rb], atol=tol)


def test_flat_is_exact() -> None:
    x, ids = gaussian(800, 48), pmids(800)
    q = gaussian(12, 48, seed=1)
    index = FaissIndex("enc", 48, kind="flat")
    assert index.add(ids, x) == 800
    assert_same(index.search(q, 10), brute_force(x, ids, q, 10))
    assert index.search(q, 0) == [[] for _ in range(12)]
    assert len(index.search(q[:1], 5000)[0]) == 800


def test_add_is_idempotent_first_vector_wins() -> None:
    x, ids = gaussian(50, 8), pmids(50)
    index = FaissIndex("enc", 8, kind="flat")
    assert index.add(ids[:30], x[:30]) == 30
    # Repeats in the batch and PMIDs already present are skipped; the first vector is kept.
    assert index.add([*ids[20:50], ids[40]], np.vstack([x[20:50] * 2, x[0:1]])) == 20
    assert len(index) == 50
    assert index.contains([ids[0], ids[49], "1"]).tolist() == [True, True, False]
    scores = dict(index.search(x[25:26], 50)[0])
    assert scores[ids[25]] == pytest.approx(float(x[25] @ x[25]), rel=1e-5)  # not the doubled vector


def test_bad_input_is_refused() -> None:
    index = FaissIndex("enc", 8, kind="flat")
    with pytest.raises(ValueError, match="PMID"):
        index.add(["PMC123"], gaussian(1, 8))
    with pytest.raises(ValueError, match="PMID"):
        index.add(["0"], gaussian(1, 8))
    with pytest.raises(ValueError, match="shape"):
        index.add(["1"], gaussian(1, 9))
    with pytest.raises(ValueError, match="ids for"):
        index.add(["1", "2"], gaussian(1, 8))


def test_flat_save_load_roundtrip_and_mmap(tmp_path: Path) -> None:
    x, ids = gaussian(300, 16), pmids(300)
    q = gaussian(5, 16, seed=2)
    index = FaissIndex("enc", 16, kind="flat", directory=tmp_path)
    index.add(ids, x)
    index.update_build_info(source="test")
    index.save()
    expected = index.search(q, 10)
    meta = FaissIndex.read_meta(tmp_path)
    assert (meta.encoder_name, meta.dim, meta.metric, meta.kind, meta.count) == ("enc", 16, "ip", "flat", 300)
    assert meta.build["source"] == "test" and meta.created

    mapped = FaissIndex.load(tmp_path)
    assert mapped.read_only and len(mapped) == 300
    assert_same(mapped.search(q, 10), expected, tol=0)
    assert mapped.add(ids[:3], x[:3]) == 0  # nothing new: no write attempted
    with pytest.raises(IndexReadOnly):
        mapped.add(["5"], x[:1])

    writable = FaissIndex.load(tmp_path, writable=True)
    assert writable.add(["5"], x[:1]) == 1
    writable.save()
    assert len(FaissIndex.load(tmp_path)) == 301


def test_ivfpq_recall_mmap_and_resume(tmp_path: Path) -> None:
    dim, n = 64, 12_000
    x, ids = clustered(n, dim), pmids(n)
    rng = np.random.default_rng(3)
    q = x[rng.choice(n, 50, replace=False)] + 0.05 * rng.standard_normal((50, dim)).astype(np.float32)
    exact = brute_force(x, ids, q, 10)

    index = FaissIndex("enc", dim, kind="ivfpq", directory=tmp_path, train_size=8_000, nprobe=16)
    index.add(ids[:5_000], x[:5_000])
    assert not index.meta.build["trained"]  # still buffering: searched exactly from the store
    assert index.search(x[:1], 1)[0][0][0] == ids[0]
    index.save()  # a checkpoint before training keeps the buffered vectors
    index = FaissIndex.load(tmp_path, writable=True)
    assert len(index) == 5_000
    index.add(ids[5_000:], x[5_000:])
    assert index.meta.build["trained"] and index.meta.build["pq_m"] == 8
    index.save()

    mapped = FaissIndex.load(tmp_path)
    assert mapped.read_only and mapped.kind == "ivfpq" and len(mapped) == n
    got = mapped.search(q, 10)
    recall = np.mean(
        [len({p for p, _ in g} & {p for p, _ in e}) / 10 for g, e in zip(got, exact, strict=True)]
    )
    assert recall >= 0.8
    # Re-scored from the float16 store: scores are (nearly) exact inner products.
    for g_row, e_row in zip(got, exact, strict=True):
        if g_row[0][0] == e_row[0][0]:
            assert g_row[0][1] == pytest.approx(e_row[0][1], abs=1e-2)
    mapped.refine_k_factor = 1
    assert len(mapped.search(q[:1], 10)[0]) == 10


def test_ivfpq_too_small_is_refused() -> None:
    index = FaissIndex("enc", 8, kind="ivfpq", train_size=100)
    with pytest.raises(ValueError, match="256"):
        index.add(pmids(100), gaussian(100, 8))


def test_auto_switches_to_ivfpq_at_threshold(tmp_path: Path) -> None:
    x, ids = clustered(3_000, 32), pmids(3_000)
    index = FaissIndex("enc", 32, kind="auto", auto_threshold=2_000, directory=tmp_path)
    index.add(ids[:1_500], x[:1_500])
    assert index.kind == "flat"
    index.add(ids[1_500:], x[1_500:])
    assert index.kind == "ivfpq" and len(index) == 3_000
    index.save()
    loaded = FaissIndex.load(tmp_path)
    assert loaded.kind == "ivfpq" and loaded.search(x[2_999:], 1)[0][0][0] == ids[2_999]


def test_inconsistent_files_are_detected(tmp_path: Path) -> None:
    index = FaissIndex("enc", 8, kind="flat", directory=tmp_path)
    index.add(pmids(10), gaussian(10, 8))
    index.save()
    meta = (tmp_path / "meta.json").read_text()
    (tmp_path / "meta.json").write_text(meta.replace('"count": 10', '"count": 11'))
    with pytest.raises(IndexCorrupt):
        FaissIndex.load(tmp_path)


def test_open_index_refuses_another_encoder(tmp_path: Path) -> None:
    settings = DenseSettings(index_dir=tmp_path, faiss_kind="flat")
    with pytest.raises(IndexNotFound):
        open_index(settings, Enc("st:a", 8))
    index = open_index(settings, Enc("st:a", 8), create=True)
    index.add(pmids(5), gaussian(5, 8))
    index.save()
    assert len(open_index(settings, Enc("st:a", 8))) == 5
    with pytest.raises(IndexMismatchError, match="st:a"):
        open_index(settings, Enc("st:b", 8))  # same dim, other model
    with pytest.raises(IndexMismatchError, match="dim 8"):
        open_index(settings, Enc("st:a", 16), create=True)


def test_default_dir_is_per_encoder() -> None:
    a, b = default_index_dir("st:x/y"), default_index_dir("st:x_y")
    assert a != b and a.name.startswith("st_x_y-") and "/" not in slug("medcpt:a/b|c/d")


def test_qdrant_local_parity_with_faiss_flat() -> None:
    x, ids = gaussian(1_000, 32, seed=5), pmids(1_000)
    q = gaussian(20, 32, seed=6)
    flat = FaissIndex("enc", 32, kind="flat")
    flat.add(ids, x)
    qdrant = QdrantIndex.open(encoder_name="enc", dim=32, collection="t", path=":memory:", create=True)
    try:
        assert qdrant.add(ids, x) == 1_000
        assert qdrant.add(ids[:10], x[:10]) == 0 and len(qdrant) == 1_000
        assert qdrant.contains([ids[3], "42"]).tolist() == [True, False]
        assert_same(qdrant.search(q, 10), flat.search(q, 10), tol=1e-4)
        assert_same(qdrant.search(q, 10), brute_force(x, ids, q, 10), tol=1e-4)
    finally:
        qdrant.close()


def test_qdrant_local_persists_identity_and_refuses_mismatch(tmp_path: Path) -> None:
    settings = DenseSettings(index_backend="qdrant", index_dir=tmp_path, qdrant_collection="c")
    index = open_index(settings, Enc("st:a", 8), create=True)
    assert isinstance(index, QdrantIndex)
    index.add(pmids(4), gaussian(4, 8))
    index.update_build_info(source="test")
    index.save()
    index.close()
    again: VectorIndex = open_index(settings, Enc("st:a", 8))
    assert len(again) == 4 and again.meta.build["source"] == "test" and again.meta.count == 4
    again.reset()
    assert len(again) == 0
    again.close()
    with pytest.raises(IndexMismatchError):
        open_index(settings, Enc("st:b", 8))
    with pytest.raises(IndexMismatchError):
        open_index(settings, Enc("st:a", 16))
    with pytest.raises(IndexNotFound):
        open_index(settings.model_copy(update={"qdrant_collection": "other"}), Enc("st:a", 8))


def test_vectors_give_back_what_was_stored(tmp_path: Path) -> None:
    x, ids = gaussian(50, 8), pmids(50)
    flat = FaissIndex("enc", 8, directory=tmp_path / "flat")
    flat.add(ids, x)
    got = flat.vectors([ids[3], "999999", ids[0], ids[3], "not-a-pmid", "0"])
    assert list(got) == [ids[3], ids[0]]  # held PMIDs only, once each, in the order asked
    assert np.array_equal(got[ids[3]], x[3]) and np.array_equal(got[ids[0]], x[0])  # flat: exact float32
    flat.save()
    mapped = FaissIndex.load(tmp_path / "flat")
    assert mapped.read_only and np.array_equal(mapped.vectors([ids[7]])[ids[7]], x[7])
    # IVF-PQ (still untrained: the float16 store) gives the re-scoring copy back.
    ivf = FaissIndex("enc", 8, kind="ivfpq", train_size=10_000)
    ivf.add(ids[:30], x[:30])
    ivf.add(ids[30:], x[30:])
    back = ivf.vectors([ids[45], ids[2]])
    assert np.allclose(back[ids[45]], x[45], atol=1e-2) and np.allclose(back[ids[2]], x[2], atol=1e-2)
    assert FaissIndex("enc", 8).vectors(ids[:2]) == {}
