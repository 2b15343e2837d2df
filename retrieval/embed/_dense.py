"""Dense retrieval: query -> encoder -> vector index -> ranked PMIDs, and the index builders.

Builders are batched, resumable and observable: PMIDs already in the index are skipped before encoding,
the index is checkpointed (saved) every ``checkpoint_every`` added documents, so re-running an interrupted
build continues where the last checkpoint left off. Progress goes to callbacks (``on_progress(done, total)``
after every block, ``on_batch`` with the build's counters); what a build sustained comes back as
:class:`BuildStats`. Drawing bars and printing summaries is the CLI's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core import CometaError, Encoder, FloatArray, OnProgress, SizedLRU
from retrieval.ncbi import BUNDLED_CORPUS_DIR, PubmedRecord, iter_pubmed_articles, load_corpus

from ._config import DenseSettings
from ._encoders import load_encoder
from ._vector import (
    FaissIndex,
    IndexMismatchError,
    VectorIndex,
    check_encoder,
    default_index_root,
    open_index,
    slug,
)

try:  # POSIX advisory lock so two workers starting together do not both build the bundled index
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MEDCPT_ARTICLE_MODEL",
    "BuildProgress",
    "BuildStats",
    "DenseHit",
    "DenseRetriever",
    "build_from_baseline",
    "build_from_records",
    "bundled_index_dir",
    "corpus_fingerprint",
    "ensure_bundled_index",
    "import_medcpt_embeddings",
    "open_retriever",
    "prebuilt_index_dir",
    "verify_index_vectors",
]

log = logging.getLogger("cometa.dense")

MEDCPT_ARTICLE_MODEL = "MedCPT-Article-Encoder"
_CHUNK_RE = re.compile(r"embeds_chunk_(\d+)\.npy$")
# The bundled corpus's indexes that ship prebuilt in the package, one folder per encoder (slug of its name);
# scripts/build_prebuilt_index.py writes them.
PREBUILT_INDEX_ROOT = BUNDLED_CORPUS_DIR / "index"
_PREBUILT_FILES = ("index.faiss", "ids.npy", "meta.json")  # meta.json last: it is what says "complete"
_PROBE_DOCS = 4  # documents re-encoded to check a prebuilt index against the encoder at hand
_PROBE_MIN_COSINE = 0.995  # torch on another CPU drifts ~1e-6; other weights fall far below


@dataclass(frozen=True, slots=True)
class DenseHit:
    pmid: str
    score: float
    rank: int  # 1 = best


@dataclass(frozen=True, slots=True)
class BuildStats:
    added: int
    skipped: int  # already indexed, repeated in the input, or without title and abstract
    seconds: float
    docs_per_s: float  # added / seconds: what encoding + indexing actually sustained
    total: int  # vectors in the index afterwards


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """Passed to ``on_batch`` after every batch; raising from the callback aborts the build."""

    seen: int
    added: int
    skipped: int
    checkpoints: int
    seconds: float


OnBatch = Callable[[BuildProgress], None]


class DenseRetriever:
    """Encode a question and search the index; refuses an index built with another encoder.

    Query vectors are kept in a small LRU bounded by entries and bytes (``query_cache_entries``,
    ``query_cache_max_bytes``): the passage stage scores its passages against the very question the dense
    arm has just encoded (:meth:`query_vector`), and repeated questions skip the encoder. Document vectors
    the index holds are handed out by :meth:`document_vectors`, so abstracts are not encoded twice.
    """

    def __init__(
        self,
        encoder: Encoder,
        index: VectorIndex,
        *,
        query_cache_entries: int = 1024,
        query_cache_max_bytes: int = 16 * 2**20,
    ) -> None:
        check_encoder(index.meta, encoder)
        self.encoder = encoder
        self.index = index
        # One search at a time: torch already uses every core per forward pass, and Qdrant's local mode
        # is not thread-safe; to_thread callers queue here instead of oversubscribing the CPU.
        self._lock = threading.Lock()
        self._queries: SizedLRU[str, FloatArray] = SizedLRU(
            query_cache_entries, query_cache_max_bytes, lambda v: int(v.nbytes)
        )
        self._queries_lock = threading.Lock()
        self.query_hits = self.query_misses = 0

    def _query_vectors(self, queries: Sequence[str]) -> FloatArray:
        """One row per query: cached rows as they are, the others encoded in one call and remembered."""
        with self._queries_lock:
            cached = [self._queries.get(q) for q in queries]
        missing = list(dict.fromkeys(q for q, v in zip(queries, cached, strict=True) if v is None))
        self.query_hits += len(queries) - sum(v is None for v in cached)
        self.query_misses += len(missing)
        fresh: dict[str, FloatArray] = {}
        if missing:
            encoded = self.encoder.encode_queries(missing)
            for q, vec in zip(missing, encoded, strict=True):
                row = np.array(vec, dtype=np.float32, copy=True)
                row.setflags(write=False)  # shared by every caller: nobody may modify it in place
                fresh[q] = row
            with self._queries_lock:
                for q, row in fresh.items():
                    self._queries.put(q, row)
        rows = [v if v is not None else fresh[q] for q, v in zip(queries, cached, strict=True)]
        return np.stack(rows).astype(np.float32, copy=False)

    def query_vector(self, query: str) -> FloatArray:
        """The encoder's query vector of ``query`` (read-only), from the cache when it was asked before."""
        with self._lock:
            vec: FloatArray = self._query_vectors([query])[0]
        return vec

    def document_vectors(self, pmids: Sequence[str]) -> dict[str, FloatArray]:
        """The index's vectors of those ``pmids`` it holds (``[title, abstract]`` as the index encoded them);
        empty when the index cannot give vectors back."""
        with self._lock:
            return self.index.vectors(pmids)

    def cache_stats(self) -> dict[str, int]:
        """The query-vector cache: entries, bytes, their bounds, hits, misses, evictions."""
        with self._queries_lock:
            return {**self._queries.stats(), "hits": self.query_hits, "misses": self.query_misses}

    def search_many(self, queries: Sequence[str], k: int) -> list[list[DenseHit]]:
        if not queries:
            return []
        with self._lock:
            vectors = self._query_vectors(list(queries))
            results = self.index.search(vectors, k)
        return [
            [DenseHit(pmid=p, score=s, rank=r) for r, (p, s) in enumerate(row, start=1)] for row in results
        ]

    def search(self, query: str, k: int) -> list[DenseHit]:
        return self.search_many([query], k)[0]

    async def asearch(self, query: str, k: int) -> list[DenseHit]:
        """:meth:`search` in a worker thread, so the event loop keeps serving while torch/FAISS run."""
        return await asyncio.to_thread(self.search, query, k)


def open_retriever(
    settings: DenseSettings,
    *,
    bundled: bool = False,
    corpus_dir: Path | None = None,
    encoder: Encoder | None = None,
    on_progress: OnProgress | None = None,
) -> DenseRetriever:
    """``encoder`` (default: the one ``settings`` names) plus its index: the local corpus's (built on first
    use, ``on_progress(documents seen, total)`` while it builds) when ``bundled``, else the prebuilt index at
    the configured location (IndexNotFound if none)."""
    encoder = encoder or load_encoder(settings)
    index = (
        ensure_bundled_index(settings, encoder, corpus_dir=corpus_dir, on_progress=on_progress)
        if bundled
        else open_index(settings, encoder)
    )
    return DenseRetriever(
        encoder,
        index,
        query_cache_entries=settings.query_cache_entries,
        query_cache_max_bytes=settings.query_cache_max_bytes,
    )


# -- building -----------------------------------------------------------------------------------------------


class _Run:
    """Shared bookkeeping of a build: counters, checkpoints, progress callbacks, stats."""

    def __init__(
        self,
        index: VectorIndex,
        *,
        total: int | None,
        checkpoint_every: int,
        on_batch: OnBatch | None,
        on_progress: OnProgress | None,
    ) -> None:
        self.index = index
        self.total = total or 0
        self.checkpoint_every = max(1, checkpoint_every)
        self.on_batch = on_batch
        self.on_progress = on_progress
        self.seen = self.added = self.skipped = self.checkpoints = 0
        self._since_checkpoint = 0
        self.start = time.perf_counter()

    def step(self, seen: int, added: int) -> None:
        self.seen += seen
        self.added += added
        self.skipped += seen - added
        self._since_checkpoint += added
        if self._since_checkpoint >= self.checkpoint_every:
            self.checkpoint()
        elapsed = time.perf_counter() - self.start
        if self.on_progress is not None:
            self.on_progress(self.seen, self.total)
        if self.on_batch is not None:
            self.on_batch(BuildProgress(self.seen, self.added, self.skipped, self.checkpoints, elapsed))

    def checkpoint(self) -> None:
        if self.index.persistent:  # an in-memory index has nothing to checkpoint to
            self.index.save()
        self.checkpoints += 1
        self._since_checkpoint = 0

    def finish(self) -> BuildStats:
        # Only a finished build saves: after an error or Ctrl-C the index may be mid-update, and the last
        # checkpoint is the resume point.
        self.checkpoint()
        seconds = time.perf_counter() - self.start
        return BuildStats(
            added=self.added,
            skipped=self.skipped,
            seconds=seconds,
            docs_per_s=self.added / seconds if seconds > 0 else 0.0,
            total=len(self.index),
        )


def _blocks(items: Iterable[PubmedRecord], size: int) -> Iterator[list[PubmedRecord]]:
    block: list[PubmedRecord] = []
    for item in items:
        block.append(item)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def build_from_records(
    records: Iterable[PubmedRecord],
    encoder: Encoder,
    index: VectorIndex,
    *,
    batch_size: int = 32,
    block_size: int | None = None,
    checkpoint_every: int = 20_000,
    on_batch: OnBatch | None = None,
    on_progress: OnProgress | None = None,
    total: int | None = None,
) -> BuildStats:
    """Encode ``[title, abstract]`` of each record and add it under its PMID.

    Records with neither title nor abstract, PMIDs already indexed and repeats are skipped (the first
    occurrence wins). Documents are encoded ``block_size`` (default ``8 * batch_size``) at a time so the
    encoder can length-sort within a block; the index is saved every ``checkpoint_every`` added documents
    and at the end. ``on_progress(records seen, total)`` follows every block (``total`` 0 when ``records``
    has no length and none is given).
    """
    check_encoder(index.meta, encoder)
    if total is None and isinstance(records, Sized):
        total = len(records)
    size = block_size or batch_size * 8
    run = _Run(
        index, total=total, checkpoint_every=checkpoint_every, on_batch=on_batch, on_progress=on_progress
    )
    for block in _blocks(records, size):
        fresh: dict[str, tuple[str, str]] = {}
        for rec in block:
            title, abstract = rec.title.strip(), rec.abstract_text.strip()
            if (title or abstract) and rec.pmid not in fresh:
                fresh[rec.pmid] = (title, abstract)
        pmids = list(fresh)
        if pmids:
            present = index.contains(pmids)
            pmids = [p for p, have in zip(pmids, present, strict=True) if not have]
        added = 0
        if pmids:
            # An encoder's bulk path (MiniLM on ONNX int8) where it has one: index builds only.
            encode = getattr(encoder, "encode_documents_bulk", encoder.encode_documents)
            vectors = encode([fresh[p] for p in pmids], batch_size=batch_size)
            added = index.add(pmids, vectors)
        run.step(len(block), added)
    runtime = getattr(encoder, "document_runtime", None)  # what encoded the documents (torch / onnx-int8)
    index.update_build_info(
        encoder_batch_size=batch_size, **({"document_runtime": runtime} if runtime else {})
    )
    return run.finish()


def _xml_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.iterdir() if f.name.endswith((".xml", ".xml.gz"))))
        else:
            files.append(p)
    return files


def build_from_baseline(
    paths: Iterable[str | os.PathLike[str]],
    encoder: Encoder,
    index: VectorIndex,
    **kwargs: Any,
) -> BuildStats:
    """:func:`build_from_records` over PubMed baseline/update XML files (``.xml``/``.xml.gz``, or folders
    of them, in name order). A PMID already indexed keeps its first vector: a revised record in a later
    update file is not re-encoded (rebuild to pick revisions up)."""
    files = _xml_files(paths)
    records = (rec for f in files for rec in iter_pubmed_articles(f))
    stats = build_from_records(records, encoder, index, **kwargs)
    index.update_build_info(source="pubmed-baseline", files=[f.name for f in files][-1000:])
    if index.persistent:
        index.save()
    return stats


def _medcpt_chunks(directory: Path) -> list[tuple[Path, Path]]:
    pairs: list[tuple[int, Path, Path]] = []
    for npy in directory.iterdir():
        m = _CHUNK_RE.fullmatch(npy.name)
        if m is None:
            continue
        js = directory / f"pmids_chunk_{m.group(1)}.json"
        if not js.is_file():
            raise FileNotFoundError(f"{npy.name} has no matching {js.name} in {directory}")
        pairs.append((int(m.group(1)), npy, js))
    if not pairs:
        raise FileNotFoundError(f"no embeds_chunk_*.npy files in {directory}")
    return [(npy, js) for _, npy, js in sorted(pairs)]


def _is_medcpt_article_space(name: str) -> bool:
    if not name.startswith("medcpt:") or "|" not in name:
        return False
    article = name.split("|", 1)[1].rstrip("/")
    return article.rsplit("/", 1)[-1] == MEDCPT_ARTICLE_MODEL


def import_medcpt_embeddings(
    directory: str | os.PathLike[str],
    index: VectorIndex,
    *,
    block_size: int = 100_000,
    checkpoint_every: int = 1_000_000,
    on_batch: OnBatch | None = None,
    on_progress: OnProgress | None = None,
) -> BuildStats:
    """Load NCBI's published MedCPT PubMed embeddings (``embeds_chunk_<i>.npy``: float32 ``(n, 768)``;
    ``pmids_chunk_<i>.json``: the n PMIDs in the same order) without re-encoding.

    Refused (:class:`IndexMismatchError`) unless the index belongs to the MedCPT article encoder's space
    (dim 768): those vectors are only comparable with MedCPT query embeddings. The ``.npy`` files are
    memory-mapped, so a 3 GB chunk is streamed block by block.
    """
    if not _is_medcpt_article_space(index.encoder_name) or index.dim != 768:
        raise IndexMismatchError(
            f"NCBI's MedCPT embeddings live in the {MEDCPT_ARTICLE_MODEL} space (dim 768); this index "
            f"belongs to {index.encoder_name!r} (dim {index.dim}). Configure encoder=medcpt to import them."
        )
    directory = Path(directory)
    chunks = _medcpt_chunks(directory)
    mapped: list[tuple[np.ndarray[Any, Any], list[str], Path]] = []
    for npy, js in chunks:
        embeds = np.load(npy, mmap_mode="r")
        pmids = [str(p) for p in json.loads(js.read_text(encoding="utf-8"))]
        if embeds.ndim != 2 or embeds.shape[1] != 768 or embeds.shape[0] != len(pmids):
            raise ValueError(f"{npy.name} is {embeds.shape} but {js.name} lists {len(pmids)} PMIDs (dim 768)")
        mapped.append((embeds, pmids, npy))
    total = sum(len(p) for _, p, _ in mapped)
    run = _Run(
        index, total=total, checkpoint_every=checkpoint_every, on_batch=on_batch, on_progress=on_progress
    )
    for embeds, pmids, _ in mapped:
        for start in range(0, len(pmids), block_size):
            ids = pmids[start : start + block_size]
            present = index.contains(ids)
            keep = np.flatnonzero(~present)
            added = 0
            if len(keep):
                vecs = np.asarray(embeds[start : start + block_size], dtype=np.float32)[keep]
                added = index.add([ids[i] for i in keep], vecs)
            run.step(len(ids), added)
    index.update_build_info(source="ncbi-medcpt-embeddings", chunks=[p.name for _, _, p in mapped])
    return run.finish()


# -- the bundled corpus -----------------------------------------------------------------------------------


def corpus_fingerprint(corpus_dir: Path) -> str:
    """What a corpus index is cached by, cheap for a world of tens of thousands of records (no file is
    read but the MANIFEST): sha256 of MANIFEST.json plus the names and sizes of the ``pubmed/`` files; with
    no MANIFEST, their names, sizes and mtimes.

    Safe because ``cometa corpus build`` writes the MANIFEST from what it wrote (inputs, hashes, counts), so
    any rebuild that changes a record changes it; the names and sizes catch a file added, removed or edited
    by hand without a new MANIFEST. Without a MANIFEST, an edit that keeps a file's size also moves its mtime.
    A false change (a copied folder's new mtimes) costs a rebuild, never a stale index.
    """
    h = hashlib.sha256()
    manifest = corpus_dir / "MANIFEST.json"
    has_manifest = manifest.is_file()
    if has_manifest:
        h.update(hashlib.sha256(manifest.read_bytes()).digest())
    pubmed = corpus_dir / "pubmed"
    for f in sorted(pubmed.iterdir()) if pubmed.is_dir() else []:
        st = f.stat()
        mtime = "" if has_manifest else str(st.st_mtime_ns)
        h.update(f"{f.name}\0{st.st_size}\0{mtime}\n".encode())
    return h.hexdigest()


def bundled_index_dir(settings: DenseSettings, encoder: Encoder, corpus_dir: Path | None = None) -> Path:
    """Where a corpus folder's index lives: ``settings.index_dir`` if set; else, under
    ``$XDG_CACHE_HOME/cometa/index`` (``~/.cache/...``), ``bundled/<slug(encoder.name)>`` for the bundled
    corpus and ``corpus/<folder name>-<fingerprint[:16]>/<slug(encoder.name)>`` for any other (a world):
    keyed by content and encoder, so two worlds (or two versions of one) keep their own indexes side by
    side."""
    if settings.index_dir:
        return Path(settings.index_dir).expanduser()
    corpus = (corpus_dir or BUNDLED_CORPUS_DIR).resolve()
    if corpus == BUNDLED_CORPUS_DIR.resolve():
        return default_index_root() / "bundled" / slug(encoder.name)
    key = f"{slug(corpus.name).rsplit('-', 1)[0][:40]}-{corpus_fingerprint(corpus)[:16]}"
    return default_index_root() / "corpus" / key / slug(encoder.name)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".build.lock", "w") as fh:
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh, fcntl.LOCK_UN)


def prebuilt_index_dir(encoder_name: str) -> Path:
    """Where the package ships the bundled corpus's index for ``encoder_name`` (it may ship none)."""
    return PREBUILT_INDEX_ROOT / slug(encoder_name)


def verify_index_vectors(
    index: VectorIndex, encoder: Encoder, records: Sequence[PubmedRecord], *, probes: int = _PROBE_DOCS
) -> float:
    """The lowest cosine between the index's vectors of the first ``probes`` indexed records (by PMID) and
    ``encoder``'s encoding of them now: about 1 when the index was built by these very weights; -1 when a
    probe is missing. The identity check (name, dimension) cannot see new weights under an old name."""
    chosen = sorted(
        (r for r in records if (r.title.strip() or r.abstract_text.strip())), key=lambda r: int(r.pmid)
    )[:probes]
    if not chosen:
        return 1.0
    stored = index.vectors([r.pmid for r in chosen])
    if len(stored) != len(chosen):
        return -1.0
    fresh = encoder.encode_documents([(r.title.strip(), r.abstract_text.strip()) for r in chosen])
    old = np.stack([stored[r.pmid] for r in chosen]).astype(np.float32)
    new = np.asarray(fresh, dtype=np.float32)
    cos = (old * new).sum(1) / (np.linalg.norm(old, axis=1) * np.linalg.norm(new, axis=1) + 1e-12)
    return float(cos.min())


def _seed_from_prebuilt(source: Path, where: Path, encoder: Encoder, fingerprint: str) -> bool:
    """Copy the prebuilt index in ``source`` to ``where`` when it is complete and was built from this
    corpus (``fingerprint``) by this encoder (name, dimension); False when there is none or it is stale."""
    try:
        meta = FaissIndex.read_meta(source)
    except CometaError:
        return False  # none shipped for this encoder: build
    build = meta.build
    if (
        meta.encoder_name != encoder.name
        or meta.dim != encoder.dim
        or build.get("corpus_sha256") != fingerprint
        or not build.get("complete")
    ):
        log.warning(
            "dense index: the prebuilt index in %s is for another corpus or encoder; building", source
        )
        return False
    where.mkdir(parents=True, exist_ok=True)
    for name in _PREBUILT_FILES:
        tmp = where / f".{name}.tmp"
        shutil.copyfile(source / name, tmp)
        os.replace(tmp, where / name)  # whole files only: a reader never sees half of one
    return True


def ensure_bundled_index(
    settings: DenseSettings,
    encoder: Encoder,
    *,
    corpus_dir: Path | None = None,
    directory: Path | None = None,
    on_progress: OnProgress | None = None,
    checkpoint_every: int = 2_000,
    prebuilt: Path | None = None,
) -> VectorIndex:
    """The index of the bundled (or ``corpus_dir``) corpus for ``encoder``: built on first use, reused
    afterwards, rebuilt when the corpus changes (:func:`corpus_fingerprint`, kept in the index metadata).

    First use copies a prebuilt index instead of building when one fits: ``prebuilt`` (default, for the
    bundled corpus: :func:`prebuilt_index_dir`, shipped in the package) if it was built from this corpus's
    fingerprint by this encoder's name and dimension, and a few of its vectors match what ``encoder``
    makes of those documents now (:func:`verify_index_vectors`); anything else is built here.

    The build is resumable: it is saved every ``checkpoint_every`` documents, and a build of the same
    corpus that was interrupted continues from its last checkpoint. ``on_progress(records seen, total)``
    follows every block. Refuses (IndexMismatchError) to overwrite an index at that location that was
    built from anything else.
    """
    corpus = (corpus_dir or BUNDLED_CORPUS_DIR).resolve()
    fingerprint = corpus_fingerprint(corpus)
    where = directory or bundled_index_dir(settings, encoder, corpus)
    collection = f"{settings.qdrant_collection}-bundled"
    if prebuilt is None and corpus == BUNDLED_CORPUS_DIR.resolve():
        prebuilt = prebuilt_index_dir(encoder.name)

    def current(build: dict[str, Any]) -> bool:
        return bool(build.get("complete")) and build.get("corpus_sha256") == fingerprint

    def current_on_disk() -> bool:
        try:
            return current(FaissIndex.read_meta(where).build)
        except CometaError:
            return False

    if settings.index_backend == "faiss" and current_on_disk():
        # Fast path without locking or loading: metadata says the index is complete and current.
        return open_index(settings, encoder, directory=where)
    with _locked(where):
        seeded = (
            settings.index_backend == "faiss"
            and prebuilt is not None
            and not current_on_disk()  # another process may have finished while we waited for the lock
            and _seed_from_prebuilt(prebuilt, where, encoder, fingerprint)
        )
        index = open_index(settings, encoder, create=True, directory=where, collection=collection)
        build = index.meta.build
        records: list[PubmedRecord] | None = None
        if seeded:
            records = list(load_corpus(corpus).records.values())
            cosine = verify_index_vectors(index, encoder, records)
            if cosine >= _PROBE_MIN_COSINE:
                log.info("dense index: %d vectors from the prebuilt index (cosine %.4f)", len(index), cosine)
                return index
            # Same name, other weights (or a damaged copy): never answer from vectors of another model.
            log.warning("dense index: the prebuilt index does not match this encoder (cosine %.3f)", cosine)
            index.reset()
            index.update_build_info(corpus_sha256=None, complete=False)
            index.save()  # at once: a crash before the build must not leave the copy marked complete
            build = index.meta.build
        if len(index) and build.get("source") != "bundled-corpus":
            raise IndexMismatchError(
                f"the index at {where} was built from {build.get('source', 'another source')!r}, not a "
                "corpus folder; point index_dir elsewhere for the bundled corpus"
            )
        if current(build) and len(index):
            return index
        if build.get("corpus_sha256") != fingerprint:
            index.reset()  # the corpus changed: vectors of dropped or revised records must go
        index.update_build_info(
            source="bundled-corpus", corpus_dir=str(corpus), corpus_sha256=fingerprint, complete=False
        )
        if records is None:
            records = list(load_corpus(corpus).records.values())
        build_from_records(
            records,
            encoder,
            index,
            batch_size=settings.encode_batch_size,
            on_progress=on_progress,
            checkpoint_every=checkpoint_every,
        )
        index.update_build_info(complete=True)
        index.save()
        return index
