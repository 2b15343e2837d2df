"""Study grading: what a study was (its design from publication types or the abstract's wording, its year
and its number of patients), beside the evidence classifier that picks how deep to read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._evidence import EvidenceDoc

__all__ = ["DESIGN_RANK", "StudyGrade", "grade_study"]

# Strength of design, strongest first (the order the extractive answer and tie-breaks use).
DESIGN_RANK: dict[str, int] = {
    "meta-analysis": 0,
    "systematic review": 1,
    "randomised trial": 2,
    "clinical trial": 3,
    "guideline": 3,
    "cohort study": 4,
    "case-control study": 5,
    "cross-sectional study": 6,
    "review": 6,
    "study": 7,
    "case report": 8,
}
_PT_DESIGN: tuple[tuple[str, str], ...] = (
    ("meta-analysis", "meta-analysis"),
    ("systematic review", "systematic review"),
    ("randomized controlled trial", "randomised trial"),
    ("practice guideline", "guideline"),
    ("guideline", "guideline"),
    ("clinical trial", "clinical trial"),
    ("observational study", "cohort study"),
    ("case reports", "case report"),
    ("review", "review"),
)
_TEXT_DESIGN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bmeta-?analys[ie]s\b", re.I), "meta-analysis"),
    (re.compile(r"\bsystematic(ally)? review", re.I), "systematic review"),
    (
        re.compile(
            r"\brandomi[sz]ed\b.{0,60}\b(trial|study)\b|\b(trial|patients) were randomi[sz]ed\b|"
            r"\brandomly (assigned|allocated)\b",
            re.I,
        ),
        "randomised trial",
    ),
    (re.compile(r"\bcohort\b", re.I), "cohort study"),
    (re.compile(r"\bcase-control\b|\bcase control study\b", re.I), "case-control study"),
    (re.compile(r"\bcross-sectional\b", re.I), "cross-sectional study"),
    (
        re.compile(r"\bcase report\b|\bwe (report|describe|present) (a|an|the) (case|patient)\b", re.I),
        "case report",
    ),
)
_PATIENTS = re.compile(
    r"\b(\d{1,3}(?:,\d{3})+|\d{2,6})\s+(?:consecutive\s+|eligible\s+|adult\s+|pediatric\s+|paediatric\s+|"
    r"newly diagnosed\s+|healthy\s+|pregnant\s+)?(patients|participants|subjects|women|men|children|adults|"
    r"infants|individuals|people|persons|cases|volunteers|mothers|neonates|smokers)\b",
    re.I,
)
_N_EQUALS = re.compile(r"\b[nN]\s*=\s*(\d{2,6})\b")


@dataclass(frozen=True, slots=True)
class StudyGrade:
    """What a study was: its design (from publication types, else the abstract's wording), year and size."""

    design: str
    rank: int  # DESIGN_RANK: 0 = strongest
    year: int | None
    patients: int | None  # the first sample size the abstract states, when it states one

    def age(self, current_year: int) -> int | None:
        return current_year - self.year if self.year is not None else None

    def describe(self) -> str:
        """``"2019 randomised trial, 344 patients"`` / ``"study, year unknown"``."""
        head = f"{self.year} {self.design}" if self.year is not None else f"{self.design}, year unknown"
        return f"{head}, {self.patients:,} patients" if self.patients else head


def grade_study(doc: EvidenceDoc) -> StudyGrade:
    """The study's design (real publication types first, then cues in the title and abstract), its year and
    the number of patients when the abstract states it."""
    design = None
    types = " | ".join(doc.publication_types).lower()
    for needle, name in _PT_DESIGN:
        if needle in types:
            design = name
            break
    text = " ".join([doc.title, *(u.text for u in doc.text_units if u.kind == "abstract")])
    if design is None or design in ("review", "clinical trial"):
        for pattern, name in _TEXT_DESIGN:
            if pattern.search(text):
                if design is None or DESIGN_RANK[name] < DESIGN_RANK[design]:
                    design = name
                break
    design = design or "study"
    patients = None
    m = _PATIENTS.search(text) or _N_EQUALS.search(text)
    if m is not None:
        value = int(m.group(1).replace(",", ""))
        if not 1900 <= value <= 2100 or m.re is _N_EQUALS:  # "in 2012 patients ..." is a year, not a size
            patients = value
    return StudyGrade(design, DESIGN_RANK[design], doc.year, patients)
