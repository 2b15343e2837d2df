"""Vector indexes keyed by PMID, behind one :class:`VectorIndex` interface.

* :class:`FaissIndex` (embedded default): ``flat`` = exact inner product (``IndexIDMap2(IndexFlatIP)``);
  ``ivfpq`` = ``IVF<nlist>,PQ<m>`` trained on a sample, saved with ``faiss.write_index`` and loaded with
  ``IO_FLAG_MMAP`` so a PubMed-scale index is paged in by the OS instead of read into RAM; ``auto`` starts
  flat and converts itself to IVF-PQ once it holds ``auto_threshold`` (200k) vectors.
* :class:`QdrantIndex` (scale-out): a Qdrant server through qdrant-client, or its local mode (a folder or
  ``":memory:"``) for tests and single-machine use. Distance.DOT, PMIDs as integer point ids.

Every index records the encoder that produced its vectors (name and dimension) beside them — ``meta.json``
for FAISS, the collection metadata for Qdrant — and :func:`open_index` refuses to pair it with any other
encoder (:class:`IndexMismatchError`): vectors from two encoders are not comparable, and querying across
them returns confident nonsense rather than an error.

Adding is idempotent: a PMID already in the index is skipped (its first vector is kept). To change vectors,
rebuild (:meth:`VectorIndex.reset`). That makes interrupted builds resumable by simply running them again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import mmap
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import faiss
import numpy as np
import numpy.typing as npt

from core import CometaError, user_cache_dir

from ._config import DenseSettings

__all__ = [
    "EncoderIdentity",
    "FaissIndex",
    "IndexCorrupt",
    "IndexMeta",
    "IndexMismatchError",
    "IndexNotFound",
    "IndexReadOnly",
    "QdrantIndex",
    "SearchResults",
    "VectorIndex",
    "check_encoder",
    "default_index_dir",
    "default_index_root",
    "open_index",
    "slug",
]


def default_index_root() -> Path:
    """``$XDG_CACHE_HOME/cometa/index`` (``~/.cache/cometa/index``), as the environment says now."""
    return user_cache_dir() / "index"


FORMAT_VERSION = 1
_INDEX_FILE = "index.faiss"
_IDS_FILE = "ids.npy"
_META_FILE = "meta.json"
_ROWS_FILE = "rows.npy"
_STORE_FILE = "vectors.f16"

SearchResults = list[list[tuple[str, float]]]
FaissKind = Literal["auto", "flat", "ivfpq"]


class IndexMismatchError(CometaError):
    """The index was built with another encoder (name or dimension differs); it must not be queried."""


class IndexNotFound(CometaError):
    """No index at the configured location (build one with ``cometa index build``)."""


class IndexCorrupt(CometaError):
    """Index files disagree with each other or with their metadata (an interrupted write): rebuild."""


class IndexReadOnly(CometaError):
    """The index was opened memory-mapped for querying; open it writable to add vectors."""


class EncoderIdentity(Protocol):
    """What an index needs to know of an encoder (any :class:`~retrieval.embed._encoders.Encoder` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).isoformat(timespec="seconds")


@dataclass
class IndexMeta:
    """What is stored beside the vectors. ``build`` holds the build configuration and provenance."""

    encoder_name: str
    dim: int
    kind: str  # storage actually used: "flat", "ivfpq" or "qdrant"
    metric: str = "ip"
    count: int = 0
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    build: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexMeta:
        try:
            return cls(
                encoder_name=str(data["encoder_name"]),
                dim=int(data["dim"]),
                kind=str(data["kind"]),
                metric=str(data.get("metric", "ip")),
                count=int(data.get("count", 0)),
                created=str(data.get("created", "")),
                updated=str(data.get("updated", "")),
                build=dict(data.get("build") or {}),
                format_version=int(data.get("format_version", FORMAT_VERSION)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexCorrupt(f"index metadata is incomplete: {exc}") from exc


def slug(name: str) -> str:
    """A folder name for an encoder identity; the hash keeps distinct names that slug alike apart."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:80] or "index"
    return f"{base}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def default_index_dir(encoder_name: str) -> Path:
    return default_index_root() / slug(encoder_name)


def check_encoder(meta: IndexMeta, encoder: EncoderIdentity, where: str = "index") -> None:
    """Raise :class:`IndexMismatchError` unless ``encoder`` produced the vectors ``meta`` describes."""
    if meta.encoder_name != encoder.name or meta.dim != encoder.dim:
        raise IndexMismatchError(
            f"{where} was built with encoder {meta.encoder_name!r} (dim {meta.dim}) but the configured "
            f"encoder is {encoder.name!r} (dim {encoder.dim}); vectors from different encoders are not "
            "comparable. Rebuild the index with this encoder (cometa index build) or configure the "
            "encoder it was built with."
        )


def _pmid_ints(ids: Sequence[str]) -> npt.NDArray[np.int64]:
    out = np.empty(len(ids), dtype=np.int64)
    for i, pmid in enumerate(ids):
        text = str(pmid).strip()
        # PMIDs are positive integers; 0 is reserved (Qdrant's metadata point on old servers).
        if not text.isdigit() or int(text) <= 0 or int(text) >= 2**63:
            raise ValueError(f"not a PMID: {pmid!r}")
        out[i] = int(text)
    return out


def _as_matrix(vectors: npt.ArrayLike, dim: int) -> npt.NDArray[np.float32]:
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValueError(f"expected vectors of shape (n, {dim}), got {arr.shape}")
    return arr


def _first_occurrences(ints: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    _, first = np.unique(ints, return_index=True)
    return np.sort(first)


class VectorIndex(ABC):
    """PMID-keyed inner-product index. Implementations: :class:`FaissIndex`, :class:`QdrantIndex`."""

    meta: IndexMeta

    @property
    def encoder_name(self) -> str:
        return self.meta.encoder_name

    @property
    def dim(self) -> int:
        return self.meta.dim

    @property
    def kind(self) -> str:
        return self.meta.kind

    @abstractmethod
    def add(self, ids: Sequence[str], vectors: npt.ArrayLike) -> int:
        """Add vectors under their PMIDs; PMIDs already present (or repeated) are skipped. Returns the
        number added."""

    @abstractmethod
    def search(self, queries: npt.ArrayLike, k: int) -> SearchResults:
        """Per query row, up to ``k`` ``(pmid, score)`` pairs, best (highest inner product) first."""

    @abstractmethod
    def contains(self, ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Which of ``ids`` are already indexed."""

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors of those ``ids`` the index holds and can give back (float32, one row each);
        an index that cannot return vectors returns none, and callers encode instead."""
        return {}

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Persist vectors and metadata (FAISS: atomically per file; Qdrant: metadata only)."""

    @abstractmethod
    def reset(self) -> None:
        """Drop every vector (keeps the encoder identity): the start of a rebuild."""

    @property
    def persistent(self) -> bool:
        """Whether :meth:`save` has somewhere to write (an in-memory FAISS index has not)."""
        return True

    def close(self) -> None:  # noqa: B027 - optional hook, most indexes hold nothing to release
        """Release files/connections."""

    def update_build_info(self, **info: Any) -> None:
        """Record build configuration/provenance in the metadata (persisted by :meth:`save`)."""
        self.meta.build.update(info)

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _default_pq_m(dim: int) -> int:
    """Subquantizers for ``dim``: 8 dimensions each (48 B/vector at 384-d, 96 B at 768-d) when possible."""
    for m in (dim // 8, dim // 4, dim // 2):
        if m >= 1 and dim % m == 0:
            return m
    return 1


def _map_f16(path: Path, rows: int, dim: int) -> npt.NDArray[np.float16]:
    arr = np.memmap(path, dtype=np.float16, mode="r", shape=(rows, dim))
    mm = getattr(arr, "_mmap", None)
    # Re-scoring reads ~k*refine scattered rows; kernel readahead would pull megabytes around each one.
    if mm is not None and hasattr(mmap, "MADV_RANDOM"):
        mm.madvise(mmap.MADV_RANDOM)
    return arr


def _replace_write(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one


def _write_npy(array: npt.NDArray[Any]) -> Any:
    def write(path: Path) -> None:
        with open(path, "wb") as fh:  # a file object: np.save would append ".npy" to the .tmp name
            np.save(fh, np.asarray(array))

    return write


class FaissIndex(VectorIndex):
    """FAISS index in ``directory``: ``meta.json``, ``index.faiss``, ``ids.npy`` (sorted PMIDs) and, for
    IVF-PQ, ``rows.npy`` (row -> PMID) and ``vectors.f16`` (the vectors, float16, append-only).

    IVF-PQ alone ranks by compressed codes (recall@10 0.29 at 1M clustered 384-d vectors), so the top
    ``k * refine_k_factor`` candidates are re-scored exactly from ``vectors.f16``, memory-mapped like the
    index itself: RAM holds what queries touch, the disk holds ``2 * dim`` bytes per vector (55 GB for
    PubMed at 768-d, half of NCBI's float32 files). Until ``train_size`` vectors have arrived an IVF-PQ
    index is untrained and searched exactly from that store; then it trains on a random sample.
    ``nlist`` defaults to ``4*sqrt(expected_count or n)`` (capped at 65536 and at ``n_train/39``, FAISS's
    minimum points per centroid); ``pq_m`` to ``dim/8`` (8-bit codes).
    """

    def __init__(
        self,
        encoder_name: str,
        dim: int,
        *,
        kind: FaissKind = "auto",
        directory: str | os.PathLike[str] | None = None,
        nprobe: int = 32,
        refine_k_factor: int = 32,
        auto_threshold: int = 200_000,
        train_size: int = 50_000,
        nlist: int | None = None,
        pq_m: int | None = None,
        expected_count: int | None = None,
        seed: int = 0,
    ) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        if pq_m is not None and dim % pq_m:
            raise ValueError(f"pq_m={pq_m} must divide dim={dim}")
        self.directory = Path(directory) if directory is not None else None
        self.read_only = False
        self._requested: FaissKind = kind
        self._nprobe = max(1, nprobe)
        self._k_factor = max(1, refine_k_factor)
        self._auto_threshold = auto_threshold
        self._train_size = train_size
        self._nlist = nlist
        self._pq_m = pq_m
        self._expected = expected_count
        self._seed = seed
        self._sorted_ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        # IVF-PQ row store: row r of the faiss index is PMID rows[r] with vector store[r].
        self._rows: list[npt.NDArray[np.int64]] = []
        self._store_disk: npt.NDArray[np.float16] = np.zeros((0, dim), dtype=np.float16)
        self._store_new: list[npt.NDArray[np.float16]] = []
        self._cache: dict[str, npt.NDArray[Any]] = {}
        self._row_order: npt.NDArray[np.int64] | None = None  # rows sorted by PMID, for vectors()
        storage = "ivfpq" if kind == "ivfpq" else "flat"
        self.meta = IndexMeta(encoder_name=encoder_name, dim=dim, kind=storage)
        self._index: Any = self._new_flat() if storage == "flat" else None
        self.meta.build.update(
            {
                "requested_kind": kind,
                "nprobe": self._nprobe,
                "refine_k_factor": self._k_factor,
                "auto_threshold": auto_threshold,
                "train_size": train_size,
                "trained": storage == "flat",
                "faiss_version": getattr(faiss, "__version__", "unknown"),
            }
        )

    @property
    def persistent(self) -> bool:
        return self.directory is not None

    def _new_flat(self) -> Any:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    @property
    def nprobe(self) -> int:
        return self._nprobe

    @nprobe.setter
    def nprobe(self, value: int) -> None:
        self._nprobe = max(1, int(value))
        self.meta.build["nprobe"] = self._nprobe
        self._apply_nprobe()

    @property
    def refine_k_factor(self) -> int:
        return self._k_factor

    @refine_k_factor.setter
    def refine_k_factor(self, value: int) -> None:
        self._k_factor = max(1, int(value))
        self.meta.build["refine_k_factor"] = self._k_factor

    def _apply_nprobe(self) -> None:
        if self._index is not None and self.meta.kind == "ivfpq":
            faiss.extract_index_ivf(self._index).nprobe = self._nprobe

    # -- membership and the row store --------------------------------------------------------------------

    def _contains_ints(self, ints: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        ids = self._sorted_ids
        if not len(ids) or not len(ints):
            return np.zeros(len(ints), dtype=bool)
        pos = np.minimum(np.searchsorted(ids, ints), len(ids) - 1)
        found: npt.NDArray[np.bool_] = ids[pos] == ints
        return found

    def contains(self, ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        return self._contains_ints(_pmid_ints(ids))

    def __len__(self) -> int:
        return len(self._sorted_ids)

    def _remember(self, ints: npt.NDArray[np.int64]) -> None:
        # A stable sort of two sorted runs is a linear merge (timsort), so this stays cheap at PubMed scale.
        merged = np.concatenate([self._sorted_ids, np.sort(ints)])
        self._sorted_ids = np.sort(merged, kind="stable")

    def _row_pmids(self) -> npt.NDArray[np.int64]:
        if len(self._rows) > 1:
            self._rows = [np.concatenate(self._rows)]
        return self._rows[0] if self._rows else np.zeros(0, dtype=np.int64)

    def _store_rows(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """float32 vectors of ``rows``: saved rows from the mapped file, newer ones from memory."""
        on_disk = len(self._store_disk)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        old = rows < on_disk
        if old.any():
            # Sorted unique reads: sequential-ish page faults on the memory map.
            wanted, inverse = np.unique(rows[old], return_inverse=True)
            out[old] = np.asarray(self._store_disk[wanted], dtype=np.float32)[inverse]
        if (~old).any():
            if len(self._store_new) > 1:
                self._store_new = [np.concatenate(self._store_new)]
            out[~old] = self._store_new[0][rows[~old] - on_disk]
        return out

    def _n_rows(self) -> int:
        return len(self._store_disk) + sum(len(c) for c in self._store_new)

    # -- adding -----------------------------------------------------------------------------------------

    def add(self, ids: Sequence[str], vectors: npt.ArrayLike) -> int:
        if len(ids) == 0:
            return 0
        ints = _pmid_ints(ids)
        vecs = _as_matrix(vectors, self.dim)
        if len(vecs) != len(ints):
            raise ValueError(f"{len(ints)} ids for {len(vecs)} vectors")
        keep = _first_occurrences(ints)
        keep = keep[~self._contains_ints(ints[keep])]
        if not len(keep):
            return 0
        if self.read_only:
            raise IndexReadOnly(f"index {self.directory} is memory-mapped read-only; open it writable to add")
        ints, vecs = ints[keep], vecs[keep]
        if self.meta.kind == "flat":
            self._index.add_with_ids(vecs, ints)
        else:
            start = self._n_rows()
            self._rows.append(ints)
            self._store_new.append(vecs.astype(np.float16))
            if self._index is not None:
                self._index.add_with_ids(vecs, np.arange(start, start + len(ints), dtype=np.int64))
        self._remember(ints)
        if self.meta.kind == "ivfpq" and self._index is None and self._n_rows() >= self._train_size:
            self._train()
        if self._requested == "auto" and self.meta.kind == "flat" and len(self) >= self._auto_threshold:
            self._convert_to_ivfpq()
        return len(ints)

    def _train(self) -> None:
        n = self._n_rows()
        if n < 256:  # 8-bit PQ codebooks have 256 centroids each
            raise ValueError(f"IVF-PQ needs at least 256 vectors to train, got {n}; use kind='flat'")
        rng = np.random.default_rng(self._seed)
        sample_rows = np.sort(rng.choice(n, min(n, self._train_size), replace=False))
        sample = self._store_rows(sample_rows)
        nlist = self._nlist or int(4 * math.sqrt(max(self._expected or 0, n)))
        nlist = max(1, min(nlist, 65_536, len(sample) // 39))
        m = self._pq_m or _default_pq_m(self.dim)
        index = faiss.index_factory(self.dim, f"IVF{nlist},PQ{m}", faiss.METRIC_INNER_PRODUCT)
        ivfpq: Any = faiss.downcast_index(index)
        # Polysemous codes serve Hamming-filtered search, which we never use; training them costs seconds.
        ivfpq.do_polysemous_training = False
        index.train(sample)
        for start in range(0, n, 100_000):
            rows = np.arange(start, min(start + 100_000, n), dtype=np.int64)
            index.add_with_ids(self._store_rows(rows), rows)
        self._index = index
        self.meta.build.update({"nlist": nlist, "pq_m": m, "pq_nbits": 8, "trained_on": len(sample)})
        self.meta.build["trained"] = True
        self._apply_nprobe()

    def _convert_to_ivfpq(self) -> None:
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        flat = faiss.downcast_index(self._index.index)
        vecs = np.asarray(flat.reconstruct_n(0, flat.ntotal), dtype=np.float32)
        self.meta.kind = "ivfpq"
        self._index = None
        self._rows = [ids]
        self._store_disk = np.zeros((0, self.dim), dtype=np.float16)
        self._store_new = [vecs.astype(np.float16)]
        self._train()

    # -- querying ---------------------------------------------------------------------------------------

    def search(self, queries: npt.ArrayLike, k: int) -> SearchResults:
        q = _as_matrix(queries, self.dim)
        if len(self) == 0 or k <= 0:
            return [[] for _ in range(len(q))]
        if self.meta.kind == "flat":
            scores, labels = self._index.search(q, min(k, len(self)))
            return [
                [(str(int(i)), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
                for row_ids, row_scores in zip(labels, scores, strict=True)
            ]
        pmids = self._row_pmids()
        if self._index is None:  # untrained: exact search over the (small) store
            candidates = np.tile(np.arange(self._n_rows(), dtype=np.int64), (len(q), 1))
        else:
            _, candidates = self._index.search(q, min(k * self._k_factor, len(self)))
        out: SearchResults = []
        for qi, rows in enumerate(candidates):
            rows = rows[rows >= 0]
            scores = self._store_rows(rows) @ q[qi]
            best = np.argsort(-scores, kind="stable")[:k]
            out.append([(str(int(pmids[rows[b]])), float(scores[b])) for b in best])
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors by PMID: flat indexes give back the float32 vectors exactly (``IndexIDMap2`` keeps
        the reverse map); IVF-PQ gives its float16 re-scoring copy as float32."""
        wanted = [i for i in dict.fromkeys(ids) if i.isdigit() and 0 < int(i) < 2**63]
        if not wanted or len(self) == 0:
            return {}
        ints = _pmid_ints(wanted)
        present = self._contains_ints(ints)
        out: dict[str, npt.NDArray[np.float32]] = {}
        if self.meta.kind == "flat":
            for pmid, n, have in zip(wanted, ints, present, strict=True):
                if have:
                    out[pmid] = np.asarray(self._index.reconstruct(int(n)), dtype=np.float32)
            return out
        pmids = self._row_pmids()
        if self._row_order is None or len(self._row_order) != len(pmids):
            self._row_order = np.argsort(pmids, kind="stable")  # rows by PMID, kept until rows are added
        order = self._row_order
        pos = np.minimum(np.searchsorted(pmids[order], ints), len(order) - 1)
        found = present & (pmids[order][pos] == ints)
        rows = order[pos[found]]
        vecs = self._store_rows(rows.astype(np.int64))
        for pmid, vec in zip([p for p, f in zip(wanted, found, strict=True) if f], vecs, strict=True):
            out[pmid] = vec
        return out

    # -- persistence ------------------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        target = Path(directory) if directory is not None else self.directory
        if target is None:
            raise ValueError("no directory to save the index to")
        target.mkdir(parents=True, exist_ok=True)
        self.meta.count = len(self)
        self.meta.updated = _now()
        if not (self.read_only and target == self.directory):  # a mapped index cannot have changed
            if self._index is not None:
                index = self._index
                _replace_write(target / _INDEX_FILE, lambda p: faiss.write_index(index, str(p)))
            else:
                (target / _INDEX_FILE).unlink(missing_ok=True)
            _replace_write(target / _IDS_FILE, _write_npy(self._sorted_ids))
            if self.meta.kind == "ivfpq":
                _replace_write(target / _ROWS_FILE, _write_npy(self._row_pmids()))
                self._save_store(target)
        # meta.json last: its count is what load() checks the other files against.
        text = json.dumps(self.meta.to_dict(), indent=2, sort_keys=True)
        _replace_write(target / _META_FILE, lambda p: p.write_text(text, encoding="utf-8"))
        if self.directory is None:
            self.directory = target

    def _save_store(self, target: Path) -> None:
        path = target / _STORE_FILE
        saved = len(self._store_disk) * self.dim * 2
        if target == self.directory and path.is_file() and path.stat().st_size >= saved:
            # Append only what is new: checkpoints of a PubMed-scale build must not rewrite 55 GB each.
            with open(path, "r+b") as fh:
                fh.truncate(saved)  # drop rows an interrupted checkpoint appended
                fh.seek(0, os.SEEK_END)
                for chunk in self._store_new:
                    fh.write(np.ascontiguousarray(chunk).tobytes())
        else:
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as fh:
                for start in range(0, len(self._store_disk), 100_000):
                    fh.write(np.ascontiguousarray(self._store_disk[start : start + 100_000]).tobytes())
                for chunk in self._store_new:
                    fh.write(np.ascontiguousarray(chunk).tobytes())
            os.replace(tmp, path)
        n = self._n_rows()
        self._store_disk = (
            np.memmap(path, dtype=np.float16, mode="r", shape=(n, self.dim)) if n else self._store_disk[:0]
        )
        self._store_new = []

    @staticmethod
    def read_meta(directory: str | os.PathLike[str]) -> IndexMeta:
        path = Path(directory) / _META_FILE
        if not path.is_file():
            raise IndexNotFound(f"no vector index at {directory} (missing {_META_FILE})")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexCorrupt(f"cannot read {path}: {exc}") from exc
        return IndexMeta.from_dict(data)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        writable: bool = False,
        mmap: bool | None = None,
        nprobe: int | None = None,
    ) -> FaissIndex:
        """Open a saved index. Read-only opens are memory-mapped (``IO_FLAG_MMAP``) unless ``mmap=False``;
        a mapped index refuses :meth:`add` (FAISS would abort the process on a write to mapped lists)."""
        directory = Path(directory)
        meta = cls.read_meta(directory)
        use_mmap = (not writable) if mmap is None else mmap
        if writable and use_mmap:
            raise ValueError("a writable index cannot be memory-mapped")
        build = meta.build
        self = cls(
            meta.encoder_name,
            meta.dim,
            kind=build.get("requested_kind", meta.kind),
            directory=directory,
            nprobe=int(nprobe if nprobe is not None else build.get("nprobe", 32)),
            refine_k_factor=int(build.get("refine_k_factor", 32)),
            auto_threshold=int(build.get("auto_threshold", 200_000)),
            train_size=int(build.get("train_size", 50_000)),
            nlist=build.get("nlist"),
            pq_m=build.get("pq_m"),
        )
        self.meta = meta
        mode: Literal["r"] | None = "r" if use_mmap else None
        try:
            if (directory / _INDEX_FILE).is_file():
                # IVF lists map with IO_FLAG_MMAP; flat codes need IO_FLAG_MMAP_IFC (IndexFlatCodes).
                mmap_flag = faiss.IO_FLAG_MMAP if meta.kind == "ivfpq" else faiss.IO_FLAG_MMAP_IFC
                flags = mmap_flag if use_mmap else 0
                self._index = faiss.read_index(str(directory / _INDEX_FILE), flags)
            elif meta.kind == "flat" or build.get("trained"):
                raise IndexCorrupt(f"{directory / _INDEX_FILE} is missing")
            else:
                self._index = None
            self._sorted_ids = np.load(directory / _IDS_FILE, mmap_mode=mode)
            if meta.kind == "ivfpq":
                self._rows = [np.load(directory / _ROWS_FILE, mmap_mode=mode)]
                self._store_disk = cls._map_store(directory / _STORE_FILE, meta, writable)
        except (OSError, RuntimeError, ValueError) as exc:
            raise IndexCorrupt(f"cannot read the index in {directory}: {exc}") from exc
        counts = {len(self._sorted_ids), meta.count}
        if self._index is not None:
            counts.add(self._index.ntotal)
        if meta.kind == "ivfpq":
            counts |= {len(self._row_pmids()), len(self._store_disk)}
        if len(counts) != 1:
            raise IndexCorrupt(
                f"index files in {directory} disagree on the vector count ({sorted(counts)}): an "
                "interrupted write; rebuild the index"
            )
        self.read_only = use_mmap
        self._apply_nprobe()
        return self

    @staticmethod
    def _map_store(path: Path, meta: IndexMeta, writable: bool) -> npt.NDArray[np.float16]:
        if meta.count == 0:
            return np.zeros((0, meta.dim), dtype=np.float16)
        if path.stat().st_size < meta.count * meta.dim * 2:
            raise IndexCorrupt(f"{path} holds fewer than the {meta.count} vectors the metadata promises")
        # Rows beyond meta.count come from an interrupted checkpoint: ignored here, cut off by the next save.
        return _map_f16(path, meta.count, meta.dim)

    def reset(self) -> None:
        if self.read_only:
            raise IndexReadOnly("cannot reset a read-only index")
        self.meta.kind = "ivfpq" if self._requested == "ivfpq" else "flat"
        self._index = self._new_flat() if self.meta.kind == "flat" else None
        self._sorted_ids = np.zeros(0, dtype=np.int64)
        self._rows, self._store_new = [], []
        self._row_order = None
        self._store_disk = np.zeros((0, self.dim), dtype=np.float16)
        for key in ("nlist", "pq_m", "pq_nbits", "trained_on"):
            self.meta.build.pop(key, None)
        self.meta.build["trained"] = self.meta.kind == "flat"


class QdrantIndex(VectorIndex):
    """A Qdrant collection (server at ``url``, or local mode at ``path`` / ``":memory:"``).

    The encoder identity lives in the collection metadata (Qdrant >= 1.16). Older servers drop unknown
    metadata, so then it is kept in the payload of point id 0 (no PMID is 0), which search never returns.
    """

    _META_POINT = 0
    _UPSERT_CHUNK = 1024

    def __init__(self, client: Any, collection: str, meta: IndexMeta, *, meta_point: bool = False) -> None:
        self.client = client
        self.collection = collection
        self.meta = meta
        self._meta_point = meta_point

    @classmethod
    def open(
        cls,
        *,
        encoder_name: str,
        dim: int,
        collection: str,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        create: bool = False,
        client: Any = None,
    ) -> QdrantIndex:
        """Open (or with ``create`` make) ``collection``; checks the stored encoder identity."""
        from qdrant_client import QdrantClient, models

        if client is None:
            if url:
                client = QdrantClient(url=url)
            elif path is None or os.fspath(path) == ":memory:":
                client = QdrantClient(location=":memory:")
            else:
                Path(path).mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=os.fspath(path))
        if client.collection_exists(collection):
            meta, meta_point = cls._read_meta(client, collection)
            check_encoder(meta, _Identity(encoder_name, dim), where=f"Qdrant collection {collection!r}")
            return cls(client, collection, meta, meta_point=meta_point)
        if not create:
            raise IndexNotFound(f"no Qdrant collection {collection!r} (build one with cometa index build)")
        meta = IndexMeta(encoder_name=encoder_name, dim=dim, kind="qdrant")
        client.create_collection(
            collection,
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT),
            metadata={"cometa": meta.to_dict()},
        )
        stored = client.get_collection(collection).config.metadata
        self = cls(client, collection, meta, meta_point=not stored)
        if self._meta_point:
            self._write_meta_point()
        return self

    @classmethod
    def _read_meta(cls, client: Any, collection: str) -> tuple[IndexMeta, bool]:
        stored = client.get_collection(collection).config.metadata or {}
        if "cometa" in stored:
            return IndexMeta.from_dict(dict(stored["cometa"])), False
        points = client.retrieve(collection, ids=[cls._META_POINT], with_payload=True, with_vectors=False)
        if points and points[0].payload and "cometa" in points[0].payload:
            return IndexMeta.from_dict(dict(points[0].payload["cometa"])), True
        raise IndexMismatchError(
            f"Qdrant collection {collection!r} carries no CoMeta encoder metadata; refusing to query it"
        )

    def _write_meta_point(self) -> None:
        from qdrant_client import models

        point = models.PointStruct(
            id=self._META_POINT, vector=[0.0] * self.dim, payload={"cometa": self.meta.to_dict()}
        )
        self.client.upsert(self.collection, points=[point], wait=True)

    def contains(self, ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        ints = _pmid_ints(ids)
        present: set[int] = set()
        for start in range(0, len(ints), self._UPSERT_CHUNK):
            chunk = [int(i) for i in ints[start : start + self._UPSERT_CHUNK]]
            found = self.client.retrieve(self.collection, ids=chunk, with_payload=False, with_vectors=False)
            present.update(int(p.id) for p in found)
        return np.array([int(i) in present for i in ints], dtype=bool)

    def add(self, ids: Sequence[str], vectors: npt.ArrayLike) -> int:
        from qdrant_client import models

        if len(ids) == 0:
            return 0
        ints = _pmid_ints(ids)
        vecs = _as_matrix(vectors, self.dim)
        if len(vecs) != len(ints):
            raise ValueError(f"{len(ints)} ids for {len(vecs)} vectors")
        keep = _first_occurrences(ints)
        keep = keep[~self.contains([str(i) for i in ints[keep]])]
        for start in range(0, len(keep), self._UPSERT_CHUNK):
            rows = keep[start : start + self._UPSERT_CHUNK]
            batch = models.Batch(ids=[int(i) for i in ints[rows]], vectors=vecs[rows].tolist())
            self.client.upsert(self.collection, points=batch, wait=True)
        return len(keep)

    def search(self, queries: npt.ArrayLike, k: int) -> SearchResults:
        from qdrant_client import models

        q = _as_matrix(queries, self.dim)
        if k <= 0 or not len(q):
            return [[] for _ in range(len(q))]
        limit = k + 1 if self._meta_point else k
        requests = [models.QueryRequest(query=row.tolist(), limit=limit, with_payload=False) for row in q]
        responses = self.client.query_batch_points(self.collection, requests=requests)
        return [
            [(str(p.id), float(p.score)) for p in r.points if int(p.id) != self._META_POINT][:k]
            for r in responses
        ]

    def __len__(self) -> int:
        n = int(self.client.count(self.collection, exact=True).count)
        return n - 1 if self._meta_point else n

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        # Points are durable once upserted (wait=True); only the metadata needs writing.
        self.meta.count = len(self)
        self.meta.updated = _now()
        if self._meta_point:
            self._write_meta_point()
        else:
            self.client.update_collection(self.collection, metadata={"cometa": self.meta.to_dict()})

    def reset(self) -> None:
        from qdrant_client import models

        self.client.delete_collection(self.collection)
        self.client.create_collection(
            self.collection,
            vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.DOT),
            metadata={"cometa": self.meta.to_dict()},
        )
        if self._meta_point:
            self._write_meta_point()

    def close(self) -> None:
        self.client.close()

    @classmethod
    def load(cls, directory: str | os.PathLike[str], collection: str = "cometa-pubmed") -> QdrantIndex:
        """Open a local-mode collection stored under ``directory`` with whatever encoder built it."""
        from qdrant_client import QdrantClient

        client = QdrantClient(path=os.fspath(directory))
        if not client.collection_exists(collection):
            client.close()
            raise IndexNotFound(f"no Qdrant collection {collection!r} under {directory}")
        meta, meta_point = cls._read_meta(client, collection)
        return cls(client, collection, meta, meta_point=meta_point)


@dataclass(frozen=True)
class _Identity:
    name: str
    dim: int


def open_index(
    settings: DenseSettings,
    encoder: EncoderIdentity,
    *,
    create: bool = False,
    directory: str | os.PathLike[str] | None = None,
    collection: str | None = None,
    expected_count: int | None = None,
) -> VectorIndex:
    """The index ``settings`` point at, checked against ``encoder`` (:class:`IndexMismatchError`).

    Without ``create`` the index must exist (:class:`IndexNotFound`) and FAISS opens it memory-mapped,
    read-only; with ``create`` it is opened writable, or made empty when missing. ``directory`` overrides
    ``settings.index_dir`` (default ``~/.cache/cometa/index/<slug(encoder.name)>``).
    """
    where = Path(directory or settings.index_dir or default_index_dir(encoder.name)).expanduser()
    if settings.index_backend == "qdrant":
        return QdrantIndex.open(
            encoder_name=encoder.name,
            dim=encoder.dim,
            collection=collection or settings.qdrant_collection,
            url=settings.qdrant_url,
            path=None if settings.qdrant_url else where / "qdrant",
            create=create,
        )
    if (where / _META_FILE).is_file():
        check_encoder(FaissIndex.read_meta(where), encoder, where=f"index {where}")
        return FaissIndex.load(where, writable=create)
    if not create:
        raise IndexNotFound(f"no vector index at {where}; build one with `cometa index build`")
    return FaissIndex(
        encoder.name,
        encoder.dim,
        kind=settings.faiss_kind,
        directory=where,
        expected_count=expected_count,
    )
