"""Which studies the extractive answer keeps and which one leads, by their similarity to the question: a study
retrieval found far less similar than the best one is left out however many of the question's words it
repeats; the one that answers best among the most similar leads (the README's whipple / CA 19-9 example)."""

from __future__ import annotations

import dataclasses

from app.answer import Answerer, build_evidence_context, study_relevance
from app.extractive import close_to_best, extractive_answer, lead_study
from app.settings import AnswerSettings
from retrieval.evidence import EvidenceDoc
from retrieval.passages import Passage, PassageContext
from retrieval.search import BOOLEAN_ARM, DENSE_ARM, Provenance
from tests._evidence import TODAY, make_doc

QUESTION = (
    "my mom has a mass on her pancreas and her CA 19 9 came back really high, is the whipple pointless?"
)
CONCEPTS = (
    "pancreatic cancer Pancreatic Neoplasms",
    "CA 19-9 CA-19-9 Antigen",
    "pancreaticoduodenectomy Pancreaticoduodenectomy",
)


def similar(doc: EvidenceDoc, score: float | None, *, boolean: bool = False) -> EvidenceDoc:
    """``doc`` as retrieval hands it over: its dense-arm similarity (None: not in the dense arm)."""
    provenance = [Provenance(BOOLEAN_ARM, 1, None, 1, "q", "union")] if boolean else []
    if score is not None:
        provenance.append(Provenance(DENSE_ARM, 1, score))
    return dataclasses.replace(doc, provenance=tuple(provenance))


# Modelled on the README example (bundled corpus): the on-point study (dense similarity 0.42) and a pancreas
# retransplantation series (0.31) that shares more of the question's words in its sentences.
ON_POINT = make_doc(
    "19459018",
    "BACKGROUND: Very high serum CA 19-9 levels may contraindicate pancreaticoduodenectomy. RESULTS: "
    "Patients who normalized their CA 19-9 levels after pancreaticoduodenectomy had equivalent survival. "
    "CONCLUSIONS: A high preoperative CA 19-9 level by itself should not preclude surgery.",
    year=2009,
    types=("Journal Article",),
)
LOOSE = make_doc(
    "23222920",
    "RESULTS: Pancreas retransplantation after a first pancreas loss gave survival that was really high "
    "in pancreatic patients with a mass of 19 grafts. CONCLUSIONS: Pancreas retransplantation in pancreatic "
    "disease is safe, pancreas survival is high and should be proposed.",
    year=2013,
    types=("Journal Article",),
)


def answer_text(docs: list[EvidenceDoc], min_relevance: float) -> str:
    text, _cited = extractive_answer(
        build_evidence_context(docs),
        3,
        question=QUESTION,
        studies=5,
        current_year=2026,
        concepts=CONCEPTS,
        min_relevance=min_relevance,
    )
    return text


def studies_cited(docs: list[EvidenceDoc], min_relevance: float) -> list[str]:
    return [line.rsplit("[PMID:", 1)[1].rstrip("]") for line in answer_text(docs, min_relevance).splitlines()]


def test_a_study_far_less_similar_than_the_best_is_left_out_however_many_words_it_shares() -> None:
    docs = [similar(ON_POINT, 0.416, boolean=True), similar(LOOSE, 0.305)]
    assert studies_cited(docs, 0.0) == ["19459018", "23222920"]  # without the rule both are quoted
    assert studies_cited(docs, 0.8) == ["19459018"]  # 0.305 < 0.8 x 0.416
    # A study nearly as similar as the best one stays.
    assert studies_cited([docs[0], similar(LOOSE, 0.36)], 0.8) == ["19459018", "23222920"]


def test_a_study_of_unknown_similarity_is_kept() -> None:
    # Found by the Boolean search only, outside the dense arm and with no scored passage: nothing says it is
    # off the point.
    docs = [similar(ON_POINT, 0.416, boolean=True), similar(LOOSE, None, boolean=True)]
    assert set(studies_cited(docs, 0.8)) == {"19459018", "23222920"}


def test_the_most_similar_study_that_answers_leads_and_quotes_one_sentence_more() -> None:
    # Both are kept (0.36 >= 0.8 x 0.416) but the loose one, though it matches more words, is not within
    # 0.9 of the best similarity: the on-point study leads, with three sentences; the other follows.
    # With no similarity known, the loose study's sentences match more of the question: it leads.
    assert studies_cited([ON_POINT, LOOSE], 0.8) == ["23222920", "19459018"]
    first, second = answer_text([similar(ON_POINT, 0.416), similar(LOOSE, 0.36)], 0.8).splitlines()
    assert first.endswith("[PMID:19459018]") and first.count(". ") == 3
    assert second.endswith("[PMID:23222920]") and second.count(". ") == 2


def test_close_to_best_and_lead_study() -> None:
    relevance = {"a": 0.50, "b": 0.41, "c": 0.39, "d": -0.2}
    assert close_to_best(["c", "a", "b", "d", "x"], relevance, 0.8) == ["a", "b", "x"]  # order kept
    assert close_to_best(["a", "c", "d"], relevance, 0.0) == ["a", "c", "d"]  # 0: off
    # No positive similarity to compare with: nothing is left out.
    assert close_to_best(["d", "x"], relevance, 0.8) == ["d", "x"]
    assert close_to_best(["x", "y"], {}, 0.8) == ["x", "y"]
    # The lead: the first (best-matching) study whose similarity is within 0.9 of the best's.
    assert lead_study(["c", "b", "a"], relevance) == "a"  # 0.39 and 0.41 < 0.45
    assert lead_study(["c", "b", "a"], {**relevance, "b": 0.46}) == "b"
    assert lead_study(["x", "a"], relevance) == "x"  # unknown: not shown to be less similar
    assert lead_study(["c", "b"], {}) == "c"


def test_study_relevance_is_the_dense_arm_score_else_the_best_passage_score() -> None:
    def passage(pmid: str, rank: int, dense: float) -> Passage:
        text = f"Passage {rank} of study {pmid}."
        return Passage(
            f"c{pmid}{rank}", pmid, None, "D1", 1, "abstract", "Abstract", (), 0, 0, len(text), text, 5,
            {"dense": dense, "rerank": 7.5}, rank,
        )  # fmt: skip

    docs = [similar(make_doc("1", "a"), 0.6), make_doc("2", "b"), make_doc("3", "c")]
    context = PassageContext(
        (passage("1", 1, 0.9), passage("2", 2, 0.3), passage("2", 3, 0.5)), None, None, None, 0, 0, 3
    )
    # The dense arm's document score wins over a passage's; the cross-encoder's scale is never mixed in;
    # a document with neither score has no relevance.
    assert study_relevance(docs, context) == {"1": 0.6, "2": 0.5}
    assert study_relevance(docs, None) == {"1": 0.6}


async def test_the_offline_answer_applies_the_setting() -> None:
    docs = [similar(ON_POINT, 0.416, boolean=True), similar(LOOSE, 0.305)]
    default = Answerer(None, AnswerSettings(), today=TODAY)
    assert AnswerSettings().extractive_min_relevance == 0.8
    answer = await default.answer(QUESTION, docs, concepts=CONCEPTS)
    assert answer.mode == "extractive" and [c.pmid for c in answer.citations] == ["19459018"]
    off = Answerer(None, AnswerSettings(extractive_min_relevance=0), today=TODAY)
    answer = await off.answer(QUESTION, docs, concepts=CONCEPTS)
    assert {c.pmid for c in answer.citations} == {"19459018", "23222920"}
