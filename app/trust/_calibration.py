"""The gate's calibration: which dense-similarity thresholds are in force, and for which encoder.

The dense thresholds of :class:`GateSettings` (``min_dense``, ``strong_dense``, ...) were measured for the
offline MiniLM-L6 encoder, on its cosine scale. Another encoder (MedCPT: unbounded inner products) scores on
another scale, so ``COMETA_GATE__CALIBRATION`` says where its thresholds come from:

* ``profile`` (the offline profile): as set (the profile's, the defaults', the environment's): right for
  the encoder they were measured for;
* ``auto`` (the default, as the default encoder is MedCPT; MiniLM itself keeps them as set): derived at
  start-up for the configured encoder from the calibration set shipped here (``calibration/bundled.jsonl``:
  questions over the bundled corpus written blind, each with its relevant studies, near misses and,
  borrowed from other questions, unrelated ones). Every pair (question, study) is scored by the encoder,
  and each threshold is moved by quantile matching over the pooled scores: ``t_new = Q_new(F_ref(t))``,
  where ``F_ref`` is the distribution of MiniLM's scores of the same pairs (``calibration/reference.json``,
  rewritten by ``scripts/gate_reference.py``). An encoder whose scores are MiniLM's rescaled (``a*s + b``)
  gets exactly MiniLM's decisions (any monotone transform: up to the 101-percentile grid); the encoder's
  percentiles are cached on disk by its identity (``core.user_cache_dir()/calibration``);
* a path to a JSON file ``{"name": ..., "encoder": ..., "thresholds": {...}}`` (what /readyz shows under
  ``checks.calibration`` has this form, so a derived calibration can be pinned).

In ``auto`` and file mode, a threshold set explicitly (environment, keyword, the profile that asks for
``auto``) wins. Thresholds at -1 or at/above 1 are switches on the cosine scale ("off", "always"); on any
other scale they become -inf / +inf, which keeps their meaning. :class:`Calibration` names what is in force
(``/readyz``, every ``/ask`` response).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from core import CometaError, Encoder, FloatArray, user_cache_dir
from retrieval.ncbi import load_corpus

from ._settings import GateSettings

__all__ = [
    "CALIBRATION_SET",
    "DENSE_THRESHOLDS",
    "Calibration",
    "CalibrationError",
    "CalibrationPair",
    "calibration_pairs",
    "compute_reference",
    "derive_calibration",
    "load_reference",
    "pair_similarities",
    "resolve_calibration",
]

log = logging.getLogger("cometa.trust")

# The thresholds compared with a dense similarity: the only ones that depend on the encoder's scale.
DENSE_THRESHOLDS = (
    "min_dense",
    "min_dense_strict",
    "min_dense_generic",
    "absent_max_dense",
    "strong_dense",
    "absent_phrase_max_dense",
    "absent_technical_max_dense",
)
CALIBRATION_SET = "bundled.jsonl"
_REFERENCE = "reference.json"
_VERSION = "v1"
GRID = np.linspace(0.0, 1.0, 101)  # the percentiles stored and matched


class CalibrationError(CometaError, ValueError):
    """A calibration file that cannot be read, or that was made for another encoder."""


@dataclass(frozen=True, slots=True)
class CalibrationPair:
    """One scored pair of the calibration set: a question and a study (title, abstract) of the corpus."""

    question: str
    study: tuple[str, str]
    kind: Literal["relevant", "near_miss", "unrelated"]


@dataclass(frozen=True)
class Calibration:
    """The dense thresholds in force and where they come from; ``label`` is what /readyz and /ask say."""

    name: str
    source: Literal["profile", "derived", "file"]
    thresholds: Mapping[str, float]
    encoder: str | None = None
    note: str | None = None  # why the wanted calibration could not be used (the profile's stands)
    pinned: tuple[str, ...] = field(default=())  # set explicitly: kept as given

    @property
    def id(self) -> str:
        """A short hash of the thresholds: two processes with the same id decide alike."""
        text = json.dumps({k: self.thresholds[k] for k in sorted(self.thresholds)}, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def label(self) -> str:
        return f"{self.name} [{self.id}]"

    def apply(self, gate: GateSettings) -> GateSettings:
        """``gate`` with these thresholds."""
        return gate.model_copy(update=dict(self.thresholds))

    def public(self) -> dict[str, Any]:
        """The JSON form (/readyz): infinite switches written as strings, since JSON has no infinity."""
        return {
            "name": self.name,
            "id": self.id,
            "source": self.source,
            "encoder": self.encoder,
            "thresholds": {k: _json_number(v) for k, v in self.thresholds.items()},
            "pinned": list(self.pinned),
            "note": self.note,
        }


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def _from_json_number(value: Any) -> float:
    if value in ("+inf", "inf"):
        return math.inf
    if value == "-inf":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalibrationError(f"threshold {value!r} is not a number")
    return float(value)


def _data(name: str) -> str:
    return (resources.files("app.trust") / "calibration" / name).read_text("utf-8")


@lru_cache(maxsize=1)
def _set_digest() -> str:
    return hashlib.sha256(_data(CALIBRATION_SET).encode()).hexdigest()[:12]


def _set_name() -> str:
    return f"bundled set {_VERSION}, {_set_digest()}"


@lru_cache(maxsize=1)
def calibration_pairs() -> tuple[CalibrationPair, ...]:
    """The pairs of the shipped set over the bundled corpus: each answerable question with its relevant
    studies, each near miss with its related studies (the right topic, not the answer), and every question
    with the first study of the next two questions that have one (unrelated). Deterministic."""
    rows = [json.loads(line) for line in _data(CALIBRATION_SET).splitlines() if line.strip()]
    records = load_corpus().records

    def study(pmid: str) -> tuple[str, str]:
        rec = records[pmid]
        return rec.title.strip(), rec.abstract_text.strip()

    own = [list(r.get("pmids", [])) + list(r.get("related_pmids", [])) for r in rows]
    with_studies = [i for i, pmids in enumerate(own) if pmids]
    pairs: list[CalibrationPair] = []
    for i, row in enumerate(rows):
        kind: Literal["relevant", "near_miss"] = "relevant" if row["kind"] == "answerable" else "near_miss"
        pairs.extend(CalibrationPair(row["question"], study(p), kind) for p in own[i])
        later = [j for j in with_studies if j > i] + [j for j in with_studies if j < i]
        borrowed = [own[j][0] for j in later if own[j][0] not in own[i]][:2]
        pairs.extend(CalibrationPair(row["question"], study(p), "unrelated") for p in borrowed)
    return tuple(pairs)


def pair_similarities(encoder: Encoder, pairs: Sequence[CalibrationPair]) -> FloatArray:
    """The encoder's score of each pair, as the dense index scores a question against a study (inner
    product of the query vector and the ``(title, abstract)`` vector)."""
    questions = sorted({p.question for p in pairs})
    studies = sorted({p.study for p in pairs})
    q = encoder.encode_queries(questions)
    d = encoder.encode_documents(studies)
    qi = {text: k for k, text in enumerate(questions)}
    di = {s: k for k, s in enumerate(studies)}
    scores = [float(np.dot(q[qi[p.question]], d[di[p.study]])) for p in pairs]
    return np.asarray(scores, dtype=np.float32)


def _quantiles(scores: FloatArray) -> list[float]:
    return [round(float(x), 5) for x in np.quantile(scores.astype(np.float64), GRID)]


def compute_reference(encoder: Encoder) -> dict[str, Any]:
    """The reference distribution (``calibration/reference.json``) for ``encoder`` (MiniLM-L6)."""
    pairs = calibration_pairs()
    scores = pair_similarities(encoder, pairs)
    kinds = sorted({p.kind for p in pairs})
    return {
        "encoder": encoder.name,
        "set": _set_name(),
        "pairs": {k: sum(p.kind == k for p in pairs) for k in kinds},
        "median": {k: round(float(np.median(scores[[p.kind == k for p in pairs]])), 4) for k in kinds},
        "quantiles": _quantiles(scores),
    }


@lru_cache(maxsize=1)
def load_reference() -> dict[str, Any]:
    """The shipped reference: MiniLM's pair scores' percentiles (101, from 0 to 1)."""
    ref: dict[str, Any] = json.loads(_data(_REFERENCE))
    return ref


def _dense(gate: GateSettings) -> dict[str, float]:
    return {k: float(getattr(gate, k)) for k in DENSE_THRESHOLDS}


def _match(value: float, ref: Sequence[float], new: Sequence[float]) -> float:
    """``value`` on the reference scale moved to the same percentile of the new scores; beyond what the set
    reaches, the same distance past its extremes in the ratio of the two ranges (exact for a rescaling). The
    cosine switches -1 and >= 1 become -inf / +inf."""
    if value <= -1.0:
        return -math.inf
    if value >= 1.0:
        return math.inf
    span = ref[-1] - ref[0]
    ratio = (new[-1] - new[0]) / span if span > 0 else 1.0
    if value > ref[-1]:
        return round(new[-1] + (value - ref[-1]) * ratio, 5)
    if value < ref[0]:
        return round(new[0] - (ref[0] - value) * ratio, 5)
    share = float(np.interp(value, ref, GRID))
    return round(float(np.interp(share, GRID, new)), 5)


def _cached_quantiles(encoder: Encoder, cache_dir: Path | None) -> list[float]:
    key = hashlib.sha256(f"{encoder.name}|{encoder.dim}|{_set_name()}".encode()).hexdigest()[:16]
    path = (cache_dir or user_cache_dir() / "calibration") / f"{key}.json"
    try:
        cached = json.loads(path.read_text("utf-8"))
        if cached.get("encoder") == encoder.name and cached.get("set") == _set_name():
            return [float(x) for x in cached["quantiles"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or unreadable: scored again below
    quantiles = _quantiles(pair_similarities(encoder, calibration_pairs()))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"encoder": encoder.name, "set": _set_name(), "quantiles": quantiles}))
        tmp.replace(path)
    except OSError as exc:  # a read-only cache only costs the scoring at the next start
        log.warning("calibration cache not written (%s)", type(exc).__name__)
    return quantiles


def derive_calibration(
    gate: GateSettings,
    encoder: Encoder,
    *,
    pinned: Collection[str] = (),
    cache_dir: Path | None = None,
    reference: Mapping[str, Any] | None = None,
) -> Calibration:
    """The dense thresholds of ``gate`` moved to ``encoder``'s scale (``pinned`` ones kept). For the
    reference encoder itself they are the thresholds as set: they were measured for it. ``reference``:
    another reference than the shipped one (:func:`compute_reference` of the encoder the thresholds were
    measured for)."""
    ref = load_reference() if reference is None else reference
    thresholds = _dense(gate)
    keep = tuple(k for k in DENSE_THRESHOLDS if k in pinned)
    if encoder.name == ref["encoder"]:
        return Calibration(
            f"as set, measured for {encoder.name}", "profile", thresholds, encoder.name, pinned=keep
        )
    new = _cached_quantiles(encoder, cache_dir)
    moved = {k: v if k in keep else _match(v, ref["quantiles"], new) for k, v in thresholds.items()}
    return Calibration(
        f"derived for {encoder.name} from {_set_name()}", "derived", moved, encoder.name, pinned=keep
    )


def _from_file(gate: GateSettings, path: Path, encoder: str | None, pinned: Collection[str]) -> Calibration:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"calibration file {path}: {exc}") from exc
    given = data.get("thresholds") if isinstance(data, dict) else None
    if not isinstance(given, dict):
        raise CalibrationError(f'calibration file {path}: expected {{"thresholds": {{...}}}}')
    unknown = sorted(set(given) - set(DENSE_THRESHOLDS))
    if unknown:
        raise CalibrationError(f"calibration file {path}: not dense thresholds {unknown}")
    made_for = data.get("encoder")
    if made_for is not None and encoder is not None and made_for != encoder:
        raise CalibrationError(f"calibration file {path} was made for {made_for}, not {encoder}")
    keep = tuple(k for k in DENSE_THRESHOLDS if k in pinned)
    thresholds = _dense(gate)
    thresholds.update({k: _from_json_number(v) for k, v in given.items() if k not in keep})
    name = str(data.get("name") or f"from {path.name}")
    return Calibration(name, "file", thresholds, made_for or encoder, pinned=keep)


def resolve_calibration(
    gate: GateSettings,
    encoder: Encoder | None,
    *,
    profile: str | None = None,
    cache_dir: Path | None = None,
    reference: Mapping[str, Any] | None = None,
) -> Calibration:
    """The calibration ``gate.calibration`` asks for (module docstring). ``encoder``: the configured dense
    encoder, None when there is none (the thresholds as set then: no similarity to compare)."""
    pinned = gate.model_fields_set & set(DENSE_THRESHOLDS)
    mode = gate.calibration
    if mode == "profile" or encoder is None:
        note = None if mode == "profile" else "no dense encoder: nothing to calibrate"
        name = encoder.name if encoder is not None else None
        return Calibration(
            f"as set (profile {profile})" if profile else "as set", "profile", _dense(gate), name, note=note
        )
    if mode == "auto":
        return derive_calibration(gate, encoder, pinned=pinned, cache_dir=cache_dir, reference=reference)
    return _from_file(gate, Path(mode).expanduser(), encoder.name, pinned)
