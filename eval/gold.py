"""Gold sets of the offline world (issue 14): Cohen topics and narratives, Evidence Inference, unanswerable.

    cometa eval build-gold [--from ../shared/data] [--out var/eval/gold] [--seed 0] [--ei-items 300]
    python -m eval.gold [--from DIR] [--out DIR] [--seed 0] [--ei-items 300]

The committed fixtures in ``eval/data/gold/`` hold only what was written here (questions, narratives) and
the ids they point to; titles, abstracts, prompts and evidence spans stay in ``../shared/data`` and are
joined at build time into ``--out`` (not committed). The build is deterministic: the same fixtures, shared
data and seed give byte-identical files. ``eval/data/gold/README.md`` documents every set. Sets:

* ``cohen-topic``: one patient-style question per Cohen 2006 review; gold = the review's final includes.
* ``cohen-narrative``: patient narratives each about one included study; gold = that PMID. Each item
  carries its content-word overlap with the gold title (:func:`title_overlap`), which the build checks
  against :data:`MAX_TITLE_SHARE` / :data:`MAX_TITLE_JACCARD`.
* ``ei``: one Evidence Inference prompt per article, as a templated patient question ("does I compared
  with C change O?"); gold = the article (PMID, PMCID), the evidence span located verbatim in the parsed
  full text (:func:`ei_units`) and the effect direction.
* ``unanswerable``: out-of-world topics (checked absent from every world source) and off-topic input.

Every item has a stable ``id`` and a seeded ``split`` (``dev`` / ``test``); :func:`load_gold` reads them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
import tarfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import CometaError, OnProgress, content_words, light_stem
from retrieval.ncbi import PmcArticle, parse_pmc_articles

from ._runner import EvalInputError

__all__ = [
    "EI_FLAGGED_PROMPTS",
    "FIXTURE_DIR",
    "GOLD_SETS",
    "MAX_TITLE_JACCARD",
    "MAX_TITLE_SHARE",
    "GoldBuildError",
    "GoldSummary",
    "assign_splits",
    "build_gold",
    "default_gold_dir",
    "ei_question",
    "ei_units",
    "find_shared_data",
    "load_gold",
    "main",
    "shared_data_candidates",
    "title_overlap",
    "unanswerable_set",
]

_REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIR = Path(__file__).resolve().parent / "data" / "gold"
GOLD_SETS: tuple[str, ...] = ("cohen-topic", "cohen-narrative", "ei", "unanswerable")
SPLITS = ("dev", "test")
DEV_SHARE = 1 / 3  # dev is for tuning and calibration (issue 15), test for the reported numbers

# A narrative may share at most this much of its gold title's (stemmed) content words: drug names and the
# condition are often unavoidable in a patient's words, the rest of the title is not.
MAX_TITLE_SHARE = 0.34
MAX_TITLE_JACCARD = 0.25

# Evidence Inference prompts the upstream annotation README flags as incorrect, questionable or somewhat
# malformed (ANNOTATIONS_README.md, "Caveat"): never used.
EI_FLAGGED_PROMPTS: frozenset[str] = frozenset(
    """911 912 1262 1261 3044 3248 3111 3620 4308 4490 4491 4324 4325 4492 4824 5000 5001 5002 5046 5047
    4948 5639 5710 5752 5775 5782 5841 5843 5861 5862 5863 5964 5965 5966 5975 4807 5776 5777 5778 5779
    5780 5781 6034 6065 6066 6666 6667 6668 6669 7040 7042 7944 8590 8605 8606 8639 8640 8745 8747 8749
    8877 8878 8593 8631 8635 8884 8886 8773 10032 10035 8876 8875 8885 8917 8921 8118 10885 10886 10887
    10888 10889 10890 7811 7812 7813 7814 7815 8197 8198 8199 8200 8201 9429 9430 9431 8536 9432 3514 346
    5037 4715 8767 9295 9297 8870 9862""".split()
)
_EI_LABELS = {
    "significantly increased": "increased",
    "significantly increase": "increased",  # the upstream spelling of part of the rows
    "significantly decreased": "decreased",
    "no significant difference": "no_difference",
}
EI_MAX_WORDS = (
    12  # longer I/C/O strings are protocol prose ("... at a dose of 7.5 ml/kg before ..."), not a question
)

# "does I compared with C change O?" in several phrasings; {i}, {c}, {o} are the prompt's strings.
_EI_TEMPLATES: tuple[str, ...] = (
    "Does {i} compared with {c} change {o}?",
    "I was offered {i} instead of {c}. Does that make any difference to {o}?",
    "Is {o} any different with {i} than with {c}?",
    "My doctor suggests {i}. Compared to {c}, will it affect {o}?",
    "For {o}, is {i} better or worse than {c}?",
    "Would {i} rather than {c} change {o}?",
)
# Plain words for common trial jargon, applied whole-word and case-insensitively ("where simple"); a bare
# "placebo" arm reads as a dummy treatment (inside a longer string it stays: "placebo drink" is plain enough).
_LAY_WHOLE = {"placebo": "a placebo (dummy treatment)", "placebo group": "a placebo (dummy treatment)"}
_LAY: tuple[tuple[str, str], ...] = (
    ("myocardial infarction", "heart attack"),
    ("adverse events", "side effects"),
    ("adverse effects", "side effects"),
    ("postoperative", "after-surgery"),
    ("hypertension", "high blood pressure"),
    ("mortality", "death rate"),
    ("analgesia", "pain relief"),
    ("pruritus", "itching"),
    ("emesis", "vomiting"),
    ("efficacy", "effectiveness"),
    ("incidence", "rate"),
)
_LAY_RE = [(a, re.compile(rf"\b{re.escape(a)}\b", re.IGNORECASE), b) for a, b in _LAY]

_OFF_TOPIC_KINDS = frozenset({"gibberish", "non_medical", "chit_chat", "prompt_injection"})


class GoldBuildError(EvalInputError):
    """A gold-set input is missing or malformed, or a built set breaks one of its own rules."""


@dataclass
class GoldSummary:
    out_dir: Path
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # set -> split -> items
    overlap: dict[str, float] = field(default_factory=dict)  # cohen-narrative title-overlap statistics
    unanswerable_kinds: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> split -> n
    world_hits: dict[str, int] = field(default_factory=dict)  # out-of-world item id -> hits (want none)
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256


# --- paths ---------------------------------------------------------------------------------------------


def shared_data_candidates(*parts: str) -> list[Path]:
    """Where a shared data set may lie, in the order to try: ``$COMETA_SHARED_DIR/data/PARTS`` (when set),
    then ``../shared/data/PARTS`` next to the repository. The one resolver of the shared data folder."""
    env = os.environ.get("COMETA_SHARED_DIR")
    roots = [Path(env) / "data"] if env else []
    roots.append(_REPO_ROOT.parent / "shared" / "data")
    return [root.joinpath(*parts) for root in roots]


def find_shared_data(explicit: Path | None = None) -> Path | None:
    """``--from`` (only it, when given), else ``$COMETA_SHARED_DIR/data``, else ``../shared/data``."""
    candidates = [explicit] if explicit is not None else shared_data_candidates()
    return next((path for path in candidates if (path / "cohen2006").is_dir()), None)


def default_gold_dir() -> Path:
    """Where built sets live: ``$COMETA_GOLD_DIR``, else ``var/eval/gold`` (ignored by git)."""
    return Path(os.environ.get("COMETA_GOLD_DIR") or _REPO_ROOT / "var" / "eval" / "gold")


# --- shared helpers ------------------------------------------------------------------------------------


def _stems(text: str) -> set[str]:
    return {light_stem(w) for w in content_words(text)}


def title_overlap(text: str, title: str) -> tuple[float, float]:
    """(share of the title's content words present in ``text``, content-word Jaccard), both on
    :func:`core.content_words` with :func:`core.light_stem`, so "releases"/"released" count as a copy."""
    t, n = _stems(title), _stems(text)
    if not t:
        return 0.0, 0.0
    common = len(t & n)
    return common / len(t), common / len(t | n)


def assign_splits(
    ids: Sequence[str], *, seed: int, salt: str, dev_share: float = DEV_SHARE
) -> dict[str, str]:
    """id -> ``dev``/``test``: ``round(n * dev_share)`` ids (at least one of two or more) drawn with
    ``random.Random(f"{salt}:{seed}")`` from the sorted ids: the split depends on the set, not its order."""
    ordered = sorted(set(ids))
    n_dev = round(len(ordered) * dev_share)
    if len(ordered) >= 2:
        n_dev = min(max(n_dev, 1), len(ordered) - 1)
    dev = set(random.Random(f"{salt}:{seed}").sample(ordered, n_dev))
    return {i: ("dev" if i in dev else "test") for i in ordered}


def _stratified_splits(groups: Mapping[str, Sequence[str]], *, seed: int, salt: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in sorted(groups):
        out.update(assign_splits(groups[key], seed=seed, salt=f"{salt}:{key}"))
    return out


def _read_fixture(name: str, fixture_dir: Path) -> list[dict[str, Any]]:
    path = fixture_dir / name
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise GoldBuildError(f"gold fixture {path}: {exc}") from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _need(path: Path) -> Path:
    if not path.exists():
        raise GoldBuildError(f"missing gold-set input {path} (is --from the shared data folder?)")
    return path


# --- Cohen 2006 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CohenRecord:
    pmid: str
    title: str
    included: bool


def _read_cohen(shared: Path) -> dict[str, list[_CohenRecord]]:
    """review -> records of ``cohen2006/online/<review>.csv.gz`` (``label_included`` = final include)."""
    folder = _need(shared / "cohen2006" / "online")
    csv.field_size_limit(1 << 30)
    reviews: dict[str, list[_CohenRecord]] = {}
    for path in sorted(folder.glob("*.csv.gz")):
        try:
            with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
                rows = [
                    _CohenRecord(r["pubmedID"].strip(), r["title"] or "", r["label_included"].strip() == "1")
                    for r in csv.DictReader(fh)
                ]
        except (OSError, KeyError, csv.Error, EOFError) as exc:
            raise GoldBuildError(
                f"{path}: not a Cohen 2006 review file ({type(exc).__name__}: {exc})"
            ) from exc
        reviews[path.name.split(".")[0]] = rows
    if not reviews:
        raise GoldBuildError(f"{folder}: no review files (*.csv.gz)")
    return reviews


def _cohen_topics(
    reviews: Mapping[str, list[_CohenRecord]], fixture_dir: Path, seed: int
) -> list[dict[str, Any]]:
    rows = _read_fixture("cohen_topics.jsonl", fixture_dir)
    splits = assign_splits([r["id"] for r in rows], seed=seed, salt="cohen-topic")
    items = []
    for r in rows:
        if r["review"] not in reviews:
            raise GoldBuildError(f"cohen topic {r['id']}: no review {r['review']!r} in cohen2006/online")
        includes = sorted({rec.pmid for rec in reviews[r["review"]] if rec.included}, key=int)
        items.append(
            {
                "id": r["id"],
                "split": splits[r["id"]],
                "review": r["review"],
                "question": r["question"],
                "pmids": includes,
                "written_by": r["written_by"],
            }
        )
    return items


def _cohen_narratives(
    reviews: Mapping[str, list[_CohenRecord]], fixture_dir: Path, seed: int
) -> list[dict[str, Any]]:
    rows = _read_fixture("cohen_narratives.jsonl", fixture_dir)
    included = {(rev, rec.pmid): rec for rev, recs in reviews.items() for rec in recs if rec.included}
    by_review: dict[str, list[str]] = {}
    for r in rows:
        by_review.setdefault(r["review"], []).append(r["id"])
    splits = _stratified_splits(by_review, seed=seed, salt="cohen-narrative")
    items = []
    for r in rows:
        rec = included.get((r["review"], str(r["pmid"])))
        if rec is None:
            raise GoldBuildError(
                f"narrative {r['id']}: PMID {r['pmid']} is not a final include of {r['review']}"
            )
        share, jaccard = title_overlap(r["narrative"], rec.title)
        if share > MAX_TITLE_SHARE or jaccard > MAX_TITLE_JACCARD:
            raise GoldBuildError(
                f"narrative {r['id']} copies its gold title: {share:.2f} of the title's content words "
                f"(max {MAX_TITLE_SHARE}), Jaccard {jaccard:.2f} (max {MAX_TITLE_JACCARD})"
            )
        items.append(
            {
                "id": r["id"],
                "split": splits[r["id"]],
                "review": r["review"],
                "question": r["narrative"],
                "pmids": [rec.pmid],
                "title_share": round(share, 4),
                "title_jaccard": round(jaccard, 4),
                "written_by": r["written_by"],
            }
        )
    return items


def _overlap_stats(items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    shares = sorted(float(i["title_share"]) for i in items)
    jaccards = sorted(float(i["title_jaccard"]) for i in items)
    if not shares:
        return {}
    return {
        "n": float(len(shares)),
        "title_share_mean": round(sum(shares) / len(shares), 4),
        "title_share_median": round(shares[len(shares) // 2], 4),
        "title_share_max": round(shares[-1], 4),
        "title_share_zero": float(sum(1 for s in shares if s == 0.0)),
        "jaccard_mean": round(sum(jaccards) / len(jaccards), 4),
        "jaccard_max": round(jaccards[-1], 4),
        "max_share_allowed": MAX_TITLE_SHARE,
        "max_jaccard_allowed": MAX_TITLE_JACCARD,
    }


# --- Evidence Inference --------------------------------------------------------------------------------


def ei_units(article: PmcArticle) -> list[tuple[str | int, str, str]]:
    """(unit, heading, text) of a parsed article as the gold offsets count them: ``"abstract"`` (the
    abstract text), then each body section by its index in ``PmcArticle.sections`` (as ``eval.chunking``).
    The article's full text is these texts joined by a blank line; ``fulltext_start`` counts in it."""
    units: list[tuple[str | int, str, str]] = [("abstract", "Abstract", article.abstract_text)]
    units += [(i, s.heading, s.text) for i, s in enumerate(article.sections)]
    return units


def _lay(text: str) -> tuple[str, list[str]]:
    used: list[str] = []
    for jargon, pattern, plain in _LAY_RE:
        if pattern.search(text):
            text = pattern.sub(plain, text)
            used.append(jargon)
    return text, used


def _phrase(text: str) -> str:
    text = " ".join(text.split()).strip(" .;,:")
    # Lower-case a capitalised first word ("Pain" -> "pain") but keep acronyms ("HbA1c", "IL-6").
    first = text.split(" ", 1)[0]
    if len(first) > 1 and first[0].isupper() and first[1:].isalpha() and first[1:].islower():
        text = text[0].lower() + text[1:]
    return text


def ei_question(intervention: str, comparator: str, outcome: str, template: int) -> tuple[str, list[str]]:
    """The patient-style question for one ICO prompt and the lay substitutions made in it."""
    parts, used = [], []
    for text in (intervention, comparator, outcome):
        phrase = _phrase(text)
        whole = _LAY_WHOLE.get(phrase.lower())
        plain, subs = (whole, ["placebo"]) if whole else _lay(phrase)
        parts.append(plain)
        used += subs
    i, c, o = parts
    question = _EI_TEMPLATES[template % len(_EI_TEMPLATES)].format(i=i, c=c, o=o)
    return question[0].upper() + question[1:], sorted(set(used))


def _read_csv(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 30)
    try:
        with _need(path).open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise GoldBuildError(f"{path}: {type(exc).__name__}: {exc}") from exc


def _iter_tar_articles(path: Path, wanted: set[str] | None) -> Iterator[tuple[str, bytes]]:
    """(PMC digits, JATS bytes) of ``pmc_xml_files.tar.gz`` members, only ``wanted`` ones when given."""
    try:
        with tarfile.open(_need(path), "r:gz") as tf:
            for member in tf:
                name = member.name.rsplit("/", 1)[-1]
                if not (member.isfile() and name.startswith("PMC") and name.endswith(".nxml")):
                    continue
                digits = name[3:-5]
                if wanted is not None and digits not in wanted:
                    continue
                fh = tf.extractfile(member)
                if fh is not None:
                    yield digits, fh.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise GoldBuildError(f"{path}: unreadable article archive ({type(exc).__name__}: {exc})") from exc


def _ei_candidates(shared: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, str]]]:
    """PMC digits -> usable prompts (with their valid annotations); PromptID -> prompt row."""
    folder = shared / "evidence_inference"
    prompts = {r["PromptID"]: r for r in _read_csv(folder / "prompts_merged.csv")}
    by_prompt: dict[str, list[dict[str, str]]] = {}
    for a in _read_csv(folder / "v2_annotations.csv"):
        if a.get("Valid Label") == "True" and a.get("Valid Reasoning") == "True" and a["Label"] in _EI_LABELS:
            by_prompt.setdefault(a["PromptID"], []).append(a)
    by_article: dict[str, list[dict[str, Any]]] = {}
    for pid, anns in by_prompt.items():
        prompt = prompts.get(pid)
        if prompt is None or pid in EI_FLAGGED_PROMPTS:
            continue
        labels = {_EI_LABELS[a["Label"]] for a in anns}
        ico = [prompt["Intervention"], prompt["Comparator"], prompt["Outcome"]]
        if len(labels) != 1 or not all(s.strip() and len(s.split()) <= EI_MAX_WORDS for s in ico):
            continue  # annotators disagree on the direction, or a string too long to ask about
        by_article.setdefault(prompt["PMCID"], []).append(
            {"prompt": prompt, "label": labels.pop(), "annotations": anns}
        )
    return by_article, prompts


def _find_span(text: str, evidence: str) -> tuple[int, int] | None:
    """(start, end) of ``evidence`` in ``text``: verbatim, else with every whitespace run read as one space
    (the annotators' text and our parse lay out line breaks and spaces differently in a fifth of them)."""
    start = text.find(evidence)
    if start >= 0:
        return start, start + len(evidence)
    target = " ".join(evidence.split())
    if not target:
        return None
    folded: list[str] = []
    origin: list[int] = []  # folded index -> index in text
    for match in re.finditer(r"\S+|\s+", text):
        if match.group().isspace():
            folded.append(" ")
            origin.append(match.start())
        else:
            folded.append(match.group())
            origin.extend(range(match.start(), match.end()))
    hit = "".join(folded).find(target)
    if hit < 0:
        return None
    return origin[hit], origin[hit + len(target) - 1] + 1


def _locate(article: PmcArticle, evidence: str) -> dict[str, Any] | None:
    offset = 0
    for unit, heading, text in ei_units(article):
        found = _find_span(text, evidence)
        if found is not None:
            start, end = found
            return {
                "unit": unit,
                "heading": heading,
                "start": start,
                "end": end,
                "fulltext_start": offset + start,
                "text": text[start:end],  # our parse's wording: the span passages are compared with
            }
        offset += len(text) + 2
    return None


def _ei_items(
    shared: Path, *, seed: int, n_items: int, on_progress: OnProgress | None
) -> tuple[list[dict[str, Any]], int]:
    """The sampled items and how many articles had a usable prompt before sampling."""
    by_article, _ = _ei_candidates(shared)
    archive = shared / "evidence_inference" / "pmc_xml_files.tar.gz"
    chosen: dict[str, dict[str, Any]] = {}
    wanted = set(by_article)
    for done, (digits, raw) in enumerate(_iter_tar_articles(archive, wanted), start=1):
        if on_progress is not None:
            on_progress(done, len(wanted))
        try:
            article = parse_pmc_articles(raw)[0]
        except CometaError:  # one unparsable article is dropped, never the build
            continue
        if not article.pmid:
            continue
        usable = []
        for cand in sorted(by_article[digits], key=lambda c: int(c["prompt"]["PromptID"])):
            for ann in sorted(cand["annotations"], key=lambda a: (a["UserID"], a["Evidence Start"])):
                evidence = ann["Annotations"].strip()
                span = _locate(article, evidence) if len(evidence) >= 20 else None
                if span is not None:
                    span["upstream_start"] = int(ann["Evidence Start"])
                    span["upstream_end"] = int(ann["Evidence End"])
                    usable.append((cand, span))
                    break
        if usable:
            cand, span = random.Random(f"ei-prompt:{digits}:{seed}").choice(usable)
            chosen[digits] = {"article": article, "cand": cand, "span": span}
    picked = sorted(chosen, key=int)
    usable_articles = len(picked)
    if len(picked) > n_items:
        picked = sorted(random.Random(f"ei:{seed}").sample(picked, n_items), key=int)
    splits = assign_splits(
        [f"ei-{chosen[d]['cand']['prompt']['PromptID']}" for d in picked], seed=seed, salt="ei"
    )
    items = []
    for digits in picked:
        entry = chosen[digits]
        prompt, article = entry["cand"]["prompt"], entry["article"]
        item_id = f"ei-{prompt['PromptID']}"
        template = random.Random(f"ei-template:{item_id}:{seed}").randrange(len(_EI_TEMPLATES))
        question, lay = ei_question(prompt["Intervention"], prompt["Comparator"], prompt["Outcome"], template)
        items.append(
            {
                "id": item_id,
                "split": splits[item_id],
                "question": question,
                "template": template,
                "lay_terms": lay,
                "pmids": [str(article.pmid)],
                "pmcid": f"PMC{digits}",
                "prompt_id": prompt["PromptID"],
                "intervention": prompt["Intervention"],
                "comparator": prompt["Comparator"],
                "outcome": prompt["Outcome"],
                "label": entry["cand"]["label"],
                "evidence": entry["span"],
            }
        )
    return items, usable_articles


# --- unanswerable --------------------------------------------------------------------------------------


def _world_texts(shared: Path) -> Iterator[str]:
    """Every text of the world's sources, lower-cased: Cohen (titles, abstracts, MeSH keywords), PubMedQA,
    Evidence Inference full texts, Hallmarks of Cancer abstracts, MEDLINE samples."""
    csv.field_size_limit(1 << 30)
    for folder in ("online", "raw"):
        for path in sorted(_need(shared / "cohen2006" / folder).glob("*.csv.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                yield fh.read().lower()
    with _need(shared / "pubmedqa" / "ori_pqal.json").open(encoding="utf-8") as fh:
        yield fh.read().lower()
    for _, raw in _iter_tar_articles(shared / "evidence_inference" / "pmc_xml_files.tar.gz", None):
        yield raw.decode("utf-8", "replace").lower()
    hoc = shared / "hallmarks_of_cancer" / "hoc_text_labels.tar.gz"
    if hoc.exists():
        with tarfile.open(hoc, "r:gz") as tf:
            buf = io.StringIO()
            for member in tf:
                member_fh = tf.extractfile(member) if member.isfile() else None
                if member_fh is not None and "/text/" in f"/{member.name}":
                    buf.write(member_fh.read().decode("utf-8", "replace").lower() + "\n")
            yield buf.getvalue()
    for path in sorted((shared / "medline_samples").glob("*.xml.gz")):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
            yield fh.read().lower()


def _world_hits(shared: Path, terms: Iterable[str]) -> Counter[str]:
    """How often each term occurs (whole words, case-insensitive) in the world's sources."""
    unique = sorted({t.lower() for t in terms if t.strip()}, key=lambda t: (-len(t), t))
    hits: Counter[str] = Counter()
    if not unique:
        return hits
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in unique) + r")\b")
    for text in _world_texts(shared):
        hits.update(pattern.findall(text))
    return hits


def unanswerable_set(
    shared: Path | None = None, *, seed: int = 0, fixture_dir: Path | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The unanswerable items (with their split) and, per out-of-world item, its hits in the world's sources
    (``shared``; without it the world check is skipped and every ``world_hits`` is ``None``)."""
    rows = _read_fixture("unanswerable.jsonl", fixture_dir or FIXTURE_DIR)
    by_kind: dict[str, list[str]] = {}
    for r in rows:
        # A later batch is split on its own, so adding questions never moves an earlier item between splits
        # (a test item that became dev would leak what was held out).
        batch = int(r.get("batch") or 1)
        by_kind.setdefault(r["kind"] if batch == 1 else f"{r['kind']}#batch{batch}", []).append(r["id"])
    splits = _stratified_splits(by_kind, seed=seed, salt="unanswerable")
    terms = (t for r in rows for t in r.get("absent_terms", []))
    hits = _world_hits(shared, terms) if shared is not None else None
    items: list[dict[str, Any]] = []
    per_item: dict[str, int] = {}
    for r in rows:
        category = "off_topic" if r["kind"] in _OFF_TOPIC_KINDS else "out_of_world"
        n_hits = sum(hits[t.lower()] for t in r.get("absent_terms", [])) if hits is not None else None
        if category == "out_of_world":
            if not r.get("absent_terms"):
                raise GoldBuildError(f"unanswerable {r['id']}: an out-of-world item needs absent_terms")
            if n_hits is not None:
                per_item[r["id"]] = n_hits
        items.append(
            {
                "id": r["id"],
                "split": splits[r["id"]],
                "kind": r["kind"],
                "batch": int(r.get("batch") or 1),
                "category": category,
                "question": r["question"],
                "pmids": [],
                "absent_terms": list(r.get("absent_terms", [])),
                "world_hits": n_hits,
                "written_by": r["written_by"],
            }
        )
    return items, per_item


# --- build and load ------------------------------------------------------------------------------------


def _write_jsonl(path: Path, items: Sequence[Mapping[str, Any]]) -> None:
    text = "".join(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n" for item in items)
    path.write_text(text, encoding="utf-8")


def build_gold(
    shared: Path,
    out_dir: Path,
    *,
    seed: int = 0,
    ei_items: int = 300,
    fixture_dir: Path | None = None,
    on_progress: OnProgress | None = None,
) -> GoldSummary:
    """Build every set from ``shared`` (the shared ``data`` folder) and the fixtures into ``out_dir``.

    Writes ``<set>.jsonl`` per set and ``MANIFEST.json`` (inputs' hashes, counts, overlap statistics);
    ``on_progress(done, total)`` while Evidence Inference articles are read (the slow part).
    """
    fixture_dir = fixture_dir or FIXTURE_DIR  # looked up at call time: tests point it elsewhere
    if not (shared / "cohen2006").is_dir():
        raise GoldBuildError(f"{shared}: not the shared data folder (no cohen2006/)")
    reviews = _read_cohen(shared)
    sets: dict[str, list[dict[str, Any]]] = {
        "cohen-topic": _cohen_topics(reviews, fixture_dir, seed),
        "cohen-narrative": _cohen_narratives(reviews, fixture_dir, seed),
    }
    sets["ei"], usable_articles = _ei_items(shared, seed=seed, n_items=ei_items, on_progress=on_progress)
    sets["unanswerable"], world_hits = unanswerable_set(shared, seed=seed, fixture_dir=fixture_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = GoldSummary(out_dir=out_dir, world_hits=world_hits)
    for name, items in sets.items():
        _write_jsonl(out_dir / f"{name}.jsonl", items)
        summary.counts[name] = {s: sum(1 for i in items if i["split"] == s) for s in SPLITS}
        summary.files[f"{name}.jsonl"] = _sha256(out_dir / f"{name}.jsonl")
    summary.overlap = _overlap_stats(sets["cohen-narrative"])
    for item in sets["unanswerable"]:
        summary.unanswerable_kinds.setdefault(item["kind"], {s: 0 for s in SPLITS})[item["split"]] += 1
    inputs = {
        str(p.relative_to(fixture_dir.parent.parent.parent)): _sha256(p)
        for p in sorted(fixture_dir.glob("*.jsonl"))
    }
    manifest = {
        "seed": seed,
        "ei_items": ei_items,
        "ei_usable_articles": usable_articles,
        "fixtures": inputs,
        "shared_inputs": {
            rel: _sha256(shared / rel)
            for rel in (
                "evidence_inference/v2_annotations.csv",
                "evidence_inference/prompts_merged.csv",
                "evidence_inference/pmc_xml_files.tar.gz",
                "pubmedqa/ori_pqal.json",
            )
        },
        "counts": summary.counts,
        "cohen_narrative_title_overlap": summary.overlap,
        "unanswerable_kinds": summary.unanswerable_kinds,
        "out_of_world_items_with_world_hits": sorted(k for k, v in world_hits.items() if v),
        "files": summary.files,
    }
    (out_dir / "MANIFEST.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return summary


def load_gold(name: str, split: str | None = None, gold_dir: Path | None = None) -> list[dict[str, Any]]:
    """The items of one built set (``cohen-topic``, ``cohen-narrative``, ``ei``, ``unanswerable``), all or
    one ``split``. Built sets live in ``gold_dir`` (default :func:`default_gold_dir`); the unanswerable set
    is read from its fixture (seed 0, no world check) when it is not built."""
    if name not in GOLD_SETS:
        raise EvalInputError(f"unknown gold set {name!r}: one of {', '.join(GOLD_SETS)}")
    if split is not None and split not in SPLITS:
        raise EvalInputError(f"unknown split {split!r}: dev or test")
    path = (gold_dir or default_gold_dir()) / f"{name}.jsonl"
    if not path.is_file() and name == "unanswerable":
        # The one set that needs nothing from ../shared: its questions and splits come from the fixture
        # alone (the world check is what a build adds).
        return [i for i in unanswerable_set()[0] if split is None or i["split"] == split]
    if not path.is_file():
        raise EvalInputError(
            f"gold set {name!r} is not built ({path} missing): run `cometa eval build-gold "
            "--from ../shared/data` (or set COMETA_GOLD_DIR to a built folder)"
        )
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [i for i in items if split is None or i["split"] == split]


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin CLI wrapper
    """``python -m eval.gold``: the same build as ``cometa eval build-gold``."""
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from", dest="shared", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ei-items", type=int, default=300)
    args = parser.parse_args(argv)
    shared = find_shared_data(args.shared)
    if shared is None:
        parser.error("no shared data folder: pass --from ../shared/data or set COMETA_SHARED_DIR")
    summary = build_gold(shared, args.out or default_gold_dir(), seed=args.seed, ei_items=args.ei_items)
    print(json.dumps({"counts": summary.counts, "overlap": summary.overlap}, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
