"""The learned half of the offline decision: a multinomial logistic regression over hashed character and
word n-grams of the question, trained on the blind urgent and look-alike sets (``scripts/train_safety.py``).

Why a model as well as the red-flag table: the table, fitted to 100 % on its dev batches, caught 55–62 % of
each fresh blind batch; the wording of an emergency is too varied for hand-written patterns. Character
n-grams carry across the seven languages, misspellings and missing accents without a tokenizer or an
encoder, so the check needs nothing but these weights (a few hundred kB, shipped in the package) and runs
in about a millisecond. It may only add an urgent decision to the table's, never remove one.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

import numpy as np
import numpy.typing as npt

from ._detect import normalise
from ._patterns import Kind

__all__ = ["CLASSES", "FEATURE_DIM", "UrgencyModel", "features", "load_model"]

# Class 0 is "not urgent"; the others are the kinds, in the order the weights' columns hold them.
CLASSES: Final[tuple[str, ...]] = ("none", "emergency", "self_harm", "lethal_means")
FEATURE_DIM: Final = 1 << 20  # hashed feature space: two blocks (characters, words) share it
_CHAR_N: Final = (3, 4, 5)
# The norms of a question of about a dozen words: shorter ones count as that long (see _l2).
_CHAR_FLOOR: Final = 14.0
_WORD_FLOOR: Final = 5.0
# A question whose character n-grams have a smaller norm is too short for the model to overrule a red flag
# ("my 6 week old has a fever of 38.5": 6.7; about eight content words make 10). Chosen leaving one batch out
# (3-9, 11) among 8-14: at 10, 0.7 points less false urgency than at 14 and no urgent item lost.
INFORMED_NORM = 10.0
# Words shorter than this carry style, not content ("her", "and", "hi" made a cancer question about a mother
# look urgent: urgent messages were more often about someone else); bigrams keep them in context ("is
# having", "no fever"), and a few short words that are cues count alone.
_MIN_CHARS: Final = 4
_SHORT_CUES: Final = frozenset(
    "no not now od cpr bp hr ems er icu sat ill die dead kill cut gun iv".split()
    + "ya ahora hoy sin nu nie kein jetzt ora oggi non pas sem hoje".split()
)
# Negation as sentiment models handle it: the next few words of the clause are marked denied.
_NEGATIONS: Final = frozenset(
    "no not never without denies nor none sin ningun ninguna nunca sans pas jamais aucun aucune kein "
    "keine keinen keiner ohne nie nicht nao sem nenhum nenhuma senza mai nessun nessuna geen zonder niet "
    "nooit".split()
)
_NEGATED_SPAN: Final = 3
_CLAUSE_END: Final = re.compile(r"[.!?;:,\n]|\bbut\b|\bpero\b|\bmais\b|\baber\b|\bmaar\b|\bma\b")
_WORD: Final = re.compile(r"\w+(?:'\w+)?")
_WEIGHTS: Final = "urgency_model.npz"
# The model reads at most this much of a question: the cost of a call is bounded whatever the caller sends,
# and the alarming detail of a long question is as likely in its first 2,000 characters as anywhere.
MAX_CHARS: Final = 2000


def _hash(kind: bytes, gram: str) -> int:
    return zlib.crc32(kind + gram.encode("utf-8")) % FEATURE_DIM


def _l2(counts: Counter[int], floor: float) -> dict[int, float]:
    """Counts over their L2 norm, but never over less than ``floor``: a few words are weak evidence (plain
    L2 gave the one word "today" the weight of a whole urgent message, and "hello, how are you today?" the
    emergency guidance)."""
    norm = max(math.sqrt(sum(v * v for v in counts.values())), floor)
    return {k: v / norm for k, v in counts.items()}


def features(question: str) -> dict[int, float]:
    """The question's hashed features: character 3–5-grams of each word (padded with spaces, so word starts
    and ends count) and word uni- and bigrams, each block L2-normalised (with a floor), on the folded
    text."""
    return _features(question)[0]


def informed(question: str) -> bool:
    """Whether the question is long enough for a low probability to mean "not urgent" rather than "too few
    words to say": the norm of its character n-grams reaches :data:`INFORMED_NORM`."""
    return _features(question)[1] >= INFORMED_NORM


def _features(question: str) -> tuple[dict[int, float], float]:
    """:func:`features` and the norm of the character block before its floor (what :func:`informed` reads)."""
    text = normalise(question[:MAX_CHARS])
    words: list[str] = []
    denied: list[bool] = []  # said after a negation in the same clause ("no chest pain")
    for clause in _CLAUSE_END.split(text):
        left = 0
        for w in _WORD.findall(clause):
            words.append(w)
            denied.append(left > 0)
            left = _NEGATED_SPAN if w in _NEGATIONS else max(left - 1, 0)
    chars: Counter[int] = Counter()
    tokens: Counter[int] = Counter()
    for word, no in zip(words, denied, strict=True):
        if len(word) < _MIN_CHARS and word not in _SHORT_CUES:
            continue
        kind = b"n" if no else b"c"  # a denied word's n-grams are other features than a said one's
        padded = f" {word} "
        for n in _CHAR_N:
            for i in range(len(padded) - n + 1):
                chars[_hash(kind, padded[i : i + n])] += 1
        tokens[_hash(b"x" if no else b"w", word)] += 1
    tokens.update(_hash(b"b", f"{a} {b}") for a, b in itertools.pairwise(words))
    out = _l2(chars, _CHAR_FLOOR)
    for k, v in _l2(tokens, _WORD_FLOOR).items():
        out[k] = out.get(k, 0.0) + v
    return out, math.sqrt(sum(v * v for v in chars.values()))


@dataclass(frozen=True, slots=True)
class UrgencyModel:
    """Weights of the features seen in training (``index`` sorted; ``weights[i]`` per class), the biases,
    and the decision threshold on P(urgent) = 1 - P(none) chosen by leave-one-batch-out on dev."""

    index: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float32]
    bias: npt.NDArray[np.float32]
    threshold: float
    trained_on: str
    batches: tuple[int, ...] = ()  # the blind sets' batches it was trained on (eval/data/safety)

    def probabilities(self, question: str) -> npt.NDArray[np.float64]:
        """P(class) for :data:`CLASSES`."""
        return self.read(question)[0]

    def read(self, question: str) -> tuple[npt.NDArray[np.float64], bool]:
        """:meth:`probabilities` and :func:`informed`, from one pass over the question."""
        feats, norm = _features(question)
        logits = self.bias.astype(np.float64).copy()
        if feats:
            keys = np.fromiter(feats, dtype=np.int64, count=len(feats))
            vals = np.fromiter(feats.values(), dtype=np.float64, count=len(feats))
            pos = np.searchsorted(self.index, keys)
            pos = np.minimum(pos, len(self.index) - 1)
            known = self.index[pos] == keys
            logits += vals[known] @ self.weights[pos[known]].astype(np.float64)
        logits -= logits.max()
        p = np.exp(logits)
        return np.asarray(p / p.sum(), dtype=np.float64), norm >= INFORMED_NORM

    def urgent_kind(self, p: npt.NDArray[np.float64]) -> Kind | None:
        """Given :meth:`probabilities`: the most likely urgent kind when P(urgent) = 1 - P(none) reaches the
        threshold, else None."""
        if 1.0 - p[0] < self.threshold:
            return None
        kind = CLASSES[1 + int(np.argmax(p[1:]))]
        return kind  # type: ignore[return-value]  # one of Kind's values by construction


def save_model(model: UrgencyModel, path: str) -> None:
    """Write ``model`` as the compressed archive :func:`load_model` reads (used by the training script)."""
    np.savez_compressed(
        path,
        index=model.index.astype(np.int32),
        weights=model.weights.astype(np.float16),
        bias=model.bias.astype(np.float32),
        meta=np.array(
            json.dumps(
                {"threshold": model.threshold, "trained_on": model.trained_on, "batches": model.batches}
            )
        ),
    )


@functools.cache
def load_model() -> UrgencyModel:
    """The shipped model (read once per process)."""
    with resources.files(__package__).joinpath(_WEIGHTS).open("rb") as fh, np.load(fh) as z:
        meta = json.loads(str(z["meta"]))
        return UrgencyModel(
            index=z["index"].astype(np.int64),
            weights=z["weights"].astype(np.float32),
            bias=z["bias"].astype(np.float32),
            threshold=float(meta["threshold"]),
            trained_on=str(meta["trained_on"]),
            batches=tuple(int(b) for b in meta.get("batches", ())),
        )


def feature_matrix(texts: Sequence[str]) -> tuple[npt.NDArray[np.int64], list[dict[int, float]]]:
    """The distinct features of ``texts`` (sorted) and each text's features (for training)."""
    rows = [features(t) for t in texts]
    used: set[int] = set()
    for r in rows:
        used.update(r)
    return np.array(sorted(used), dtype=np.int64), rows
