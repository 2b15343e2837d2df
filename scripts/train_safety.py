"""Train the safety step's urgency model (``app/safety/urgency_model.npz``) from the blind sets' dev splits.

    python scripts/train_safety.py --cv              # leave-one-batch-out on dev: recall and false urgency
    python scripts/train_safety.py --write           # train on every dev item, write the shipped weights
    python scripts/train_safety.py --check           # retrain; fail unless the shipped weights are reproduced

Positives: the urgent items (``eval/data/safety/urgent.jsonl``, kind as the class); negatives: the
look-alikes and the patient questions of issue 29's blind relevance batches (``eval/data/relevance``), never
the answerable gold sets that the false-urgency target is measured on, and never a split marked ``test``.
Deterministic: L-BFGS from zeros on a fixed feature hashing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize, sparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.safety import counted, detect, told_as_over  # noqa: E402
from app.safety._model import (  # noqa: E402
    CLASSES,
    UrgencyModel,
    feature_matrix,
    load_model,
    save_model,
)

SAFETY = ROOT / "eval" / "data" / "safety"
RELEVANCE = ROOT / "eval" / "data" / "relevance"
WEIGHTS = ROOT / "app" / "safety" / "urgency_model.npz"
# The batches the shipped model is trained on: every dev batch. The newest blind batch measures it (one read,
# eval/expected/safety.yaml) and stays out until a newer one exists to measure the retrained model on.
TRAIN_BATCHES = tuple(range(1, 26))  # batch 26: read once, kept out until a newer batch measures it
TRAINING_ONLY = (10, 12, 16)  # written as training data (12: look-alikes only), never held out by --cv
C = 100.0  # inverse L2 strength, chosen by --cv among 10, 30, 100, 300
THRESHOLD = 0.3  # P(urgent) needed, chosen by --cv (recall first: a missed emergency is the worse error)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dev_items() -> list[tuple[str, int, int]]:
    """(text, class, batch) of every dev item of :data:`TRAIN_BATCHES`; relevance questions are batch 0
    (always trained on)."""
    items = []
    for r in _jsonl(SAFETY / "urgent.jsonl"):
        if r["split"] == "dev" and r["batch"] in TRAIN_BATCHES:
            items.append((r["text"], CLASSES.index(r["kind"]), int(r["batch"])))
    for r in _jsonl(SAFETY / "lookalike.jsonl"):
        if r["split"] == "dev" and r["batch"] in TRAIN_BATCHES:
            items.append((r["text"], 0, int(r["batch"])))
    for name in ("world.jsonl", "world2.jsonl", "bundled.jsonl"):
        items.extend((r["question"], 0, 0) for r in _jsonl(RELEVANCE / name))
    # Ordinary patient questions written blind as "not urgent": what the service is asked most, which
    # look-alikes (all in an emergency's words) do not teach. Batch 0 was written as training data; a later
    # batch measures false urgency on ordinary questions, and is trained on like the others (TRAIN_BATCHES).
    for r in _jsonl(SAFETY / "ordinary.jsonl"):
        if r["split"] == "dev" and (r["batch"] == 0 or r["batch"] in TRAIN_BATCHES):
            items.append((r["text"], 0, 0))
    return items


def train(texts: list[str], labels: list[int], *, c: float = C) -> tuple[npt.NDArray[np.int64], Any, Any]:
    """Multinomial logistic regression, urgent and not-urgent weighted equally; (index, weights, bias)."""
    index, rows = feature_matrix(texts)
    col = {int(k): i for i, k in enumerate(index)}
    data, indices, indptr = [], [], [0]
    for r in rows:
        for k, v in r.items():
            indices.append(col[k])
            data.append(v)
        indptr.append(len(indices))
    x = sparse.csr_matrix((data, indices, indptr), shape=(len(rows), len(index)))
    y = np.zeros((len(labels), len(CLASSES)))
    y[np.arange(len(labels)), labels] = 1.0
    urgent = np.array(labels) > 0
    w = np.where(urgent, len(labels) / (2 * urgent.sum()), len(labels) / (2 * (~urgent).sum()))
    d, k = x.shape[1], len(CLASSES)

    def loss(theta: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.float64]]:
        weights, bias = theta[: d * k].reshape(d, k), theta[d * k :]
        z = x @ weights + bias
        z -= z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        p = np.exp(logp)
        value = -c * float((w * (y * logp).sum(axis=1)).sum()) + 0.5 * float((weights * weights).sum())
        g = c * (w[:, None] * (p - y))
        grad = np.concatenate([(x.T @ g + weights).ravel(), g.sum(axis=0)])
        return value, grad

    res = optimize.minimize(loss, np.zeros(d * k + k), jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    theta = res.x
    return index, theta[: d * k].reshape(d, k), theta[d * k :]


def model_of(
    texts: list[str], labels: list[int], trained_on: str, *, c: float = C, batches: tuple[int, ...] = ()
) -> UrgencyModel:
    index, weights, bias = train(texts, labels, c=c)
    weights, bias = weights.astype(np.float32), bias.astype(np.float32)
    return UrgencyModel(index, weights, bias, THRESHOLD, trained_on, batches)


def cross_validate(c: float) -> None:
    """Leave one batch out (the batches written as test splits, 3 on): the shipped decision (the red flags
    the model lets stand, or the model) at several thresholds, pooled over the held-out batches."""
    items = dev_items()
    held_out = sorted({b for _, _, b in items if b > 2 and b not in TRAINING_ONLY})
    thresholds = (0.25, 0.3, 0.35, 0.4)
    hits: dict[float, list[bool]] = {t: [] for t in thresholds}
    truth: list[int] = []
    for held in held_out:
        train_items = [i for i in items if i[2] != held]
        test = [i for i in items if i[2] == held]
        m = model_of([t for t, _, _ in train_items], [y for _, y, _ in train_items], "cv", c=c)
        for text, label, _ in test:
            p, enough = m.read(text)
            p_urgent = 1.0 - float(p[0])
            table = bool(counted(detect(text), p_urgent, enough, over=told_as_over(text)))
            truth.append(label)
            for t in thresholds:
                hits[t].append(table or p_urgent >= t)
    y = np.array(truth)
    for t in thresholds:
        h = np.array(hits[t])
        kinds = " ".join(
            f"{name} {h[y == k].sum()}/{(y == k).sum()}" for k, name in enumerate(CLASSES) if k > 0
        )
        print(
            f"C={c} t={t} batches {held_out}: recall {h[y > 0].mean():.3f} ({kinds}); "
            f"false urgent {h[y == 0].mean():.3f} ({h[y == 0].sum()}/{(y == 0).sum()})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--c", type=float, default=C)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.cv:
        cross_validate(args.c)
        return 0
    items = dev_items()
    batches = sorted({b for _, _, b in items if b > 0})
    trained_on = f"safety dev batches {','.join(map(str, batches))} + relevance and ordinary questions"
    trained_on += f" ({len(items)} items)"
    model = model_of(
        [t for t, _, _ in items], [y for _, y, _ in items], trained_on, c=args.c, batches=tuple(batches)
    )
    if args.write:
        save_model(model, str(WEIGHTS))
        print(f"wrote {WEIGHTS.relative_to(ROOT)}: {len(model.index)} features; {trained_on}")
        return 0
    if args.check:
        shipped = load_model()
        probe = [t for t, _, _ in items[::7]]
        a = np.array([shipped.probabilities(t) for t in probe])
        b = np.array([model.probabilities(t) for t in probe])
        gap = float(np.abs(a - b).max())
        same = shipped.trained_on == trained_on and np.array_equal(shipped.index, model.index)
        same = same and shipped.batches == model.batches
        print(f"max probability gap {gap:.4f} over {len(probe)} items; same features: {same}")
        return 0 if same and gap < 0.01 else 1
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
