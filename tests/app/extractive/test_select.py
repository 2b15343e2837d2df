"""The extractive answer's choice: a trial's result sentence, the conclusion elsewhere, no studies let in by a
generic concept, no section labels, the best-matching study first and the others strongest design and
most recent first, concepts kept by fallbacks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.answer import Answerer, build_evidence_context
from app.extractive import NOT_ADDRESSED, extractive_answer
from app.settings import AnswerSettings
from retrieval.evidence import EvidenceDoc
from tests._evidence import TODAY, make_doc
from tests._fakes import ScriptedLLM

TRIAL = ("Randomized Controlled Trial",)


def answer(
    docs: Sequence[EvidenceDoc], question: str, concepts: tuple[str, ...] = ()
) -> tuple[str, tuple[str, ...]]:
    return extractive_answer(
        build_evidence_context(docs), 3, question=question, studies=5, current_year=2026, concepts=concepts
    )


def test_a_trials_chosen_sentence_is_its_result_not_the_arms_it_restates() -> None:
    trial = make_doc(
        "1",
        "Sutherlandia leaf powder capsules are a traditional remedy taken twice daily. Twelve participants "
        "randomized to a treatment arm consumed 400 mg capsules of Sutherlandia leaf powder twice daily "
        "(800 mg/d). Thirteen participants received placebo capsules twice daily. Sutherlandia leaf powder "
        "capsules (800 mg/d) were given for 3 months. However, participants consuming Sutherlandia reported "
        "improved appetite compared to those in the placebo group (p = 0.01).",
        types=TRIAL,
    )
    text, cited = answer(
        [trial],
        "For appetite, is 400 mg capsules of Sutherlandia leaf powder twice daily (800 mg/d) better or worse "
        "than a placebo (dummy treatment)?",
    )
    assert cited == ("1",)
    # Four sentences share more of the question's words; the finding is the one quoted all the same.
    assert "reported improved appetite compared to those in the placebo group (p = 0.01)." in text
    assert text.count(". ") == 3  # three sentences: the best-matching study's share


def test_outside_trials_the_conclusion_is_preferred_over_a_statistic() -> None:
    cohort = make_doc(
        "2",
        "BACKGROUND: Low albumin may predict outcome in gastric cancer.\nRESULTS: In gastric cancer, low "
        "albumin was found in 40% (95% CI 30-50%). Low albumin in gastric cancer had a hazard ratio of 1.8 "
        "(p = 0.01). Gastric cancer with low albumin had 12 vs 20 months survival (p = 0.02). Low albumin "
        "in gastric cancer was seen in 30% of women (p = 0.3).\nCONCLUSIONS: Low albumin concentrations are "
        "associated with poorer survival in patients with gastric cancer.",
        types=("Cohort Studies",),
    )
    text, _ = answer([cohort], "my father has gastric cancer and low albumin. will he do worse?")
    assert (
        "Low albumin concentrations are associated with poorer survival in patients with gastric cancer."
        in text
    )
    assert "BACKGROUND" not in text and "CONCLUSIONS" not in text


def test_a_comparator_concept_alone_does_not_admit_trials_of_other_drugs() -> None:
    on_point = make_doc(
        "10", "Etoricoxib reduced pain compared with placebo in arthritis (p < 0.001).", types=TRIAL
    )
    others = [
        make_doc(
            str(11 + i), f"Drug{i}x reduced pain compared with placebo in arthritis (p < 0.01).", types=TRIAL
        )
        for i in range(4)
    ]
    question = "Does etoricoxib reduce pain compared with a placebo?"
    _text, cited = answer([on_point, *others], question, concepts=("placebo", "etoricoxib"))
    assert cited == ("10",)  # "placebo" alone no longer makes another drug's trial an answer
    # With only the comparator concept, nothing tells the trials apart: all of them stay.
    _text, everyone = answer([on_point, *others], question, concepts=("placebo",))
    assert set(everyone) == {"10", "11", "12", "13", "14"}


def test_the_best_matching_study_leads_the_others_strongest_design_first_then_most_recent() -> None:
    docs = [
        make_doc(
            "21", "RESULTS: Exercise reduced fatigue in chemotherapy (p = 0.02).", year=2010, types=TRIAL
        ),
        make_doc(
            "22",
            "Exercise reduced chemotherapy fatigue overall. CONCLUSIONS: Exercise reduced fatigue "
            "in chemotherapy.",
            year=2015,
            types=("Meta-Analysis",),
        ),
        make_doc(
            "23", "RESULTS: Exercise reduced fatigue during chemotherapy (p = 0.04).", year=2020, types=TRIAL
        ),
        make_doc(
            "24", "RESULTS: Exercise reduced fatigue in chemotherapy (p = 0.03).", year=2018, types=TRIAL
        ),
    ]
    text, cited = answer(docs, "Does exercise reduce fatigue during chemotherapy?")
    lines = text.splitlines()
    # 23 matches best ("during"): it leads; then the meta-analysis, then the trials, most recent first.
    assert [line.rsplit("[PMID:", 1)[1].rstrip("]") for line in lines] == ["23", "22", "24", "21"]
    assert lines[0].startswith("2020 randomised trial") and lines[1].startswith("2015 meta-analysis")
    assert lines[2].startswith("2018 randomised trial") and lines[3].startswith("2010 randomised trial")
    assert "CONCLUSIONS" not in text and "RESULTS" not in text  # a label in mid-line is cut too
    assert set(cited) == {"21", "22", "23", "24"}


def test_the_best_matching_study_quotes_one_sentence_more_than_the_others() -> None:
    best = make_doc(
        "31",
        "RESULTS: Exercise reduced fatigue during chemotherapy (p = 0.01). Exercise reduced chemotherapy "
        "fatigue at 6 months. Exercise reduced fatigue after chemotherapy at 12 months. Exercise was safe "
        "during chemotherapy for fatigue.",
        types=TRIAL,
    )
    other = make_doc(
        "32",
        "RESULTS: Yoga reduced fatigue during chemotherapy. Yoga reduced chemotherapy fatigue at 6 months. "
        "Yoga reduced fatigue after chemotherapy.",
        types=TRIAL,
    )
    text, _ = answer([best, other], "Does exercise reduce fatigue during chemotherapy?")
    first, second = text.splitlines()
    # ". " ends each quoted sentence (the last one before its citation).
    assert first.count(". ") == 3 and "[PMID:31]" in first
    assert second.count(". ") == 2 and "[PMID:32]" in second


def test_nothing_matching_says_not_addressed() -> None:
    doc = make_doc("41", "Gastric sleeve revision surgery was studied in 30 patients.")
    assert answer([doc], "Does exercise reduce fatigue during chemotherapy?") == (NOT_ADDRESSED, ())


@pytest.mark.parametrize("reply", ["<think>hmm</think>  ", "{}"])
async def test_every_extractive_fallback_keeps_the_questions_concepts(reply: str) -> None:
    # The walking study shares the question's everyday words but none of its concepts: without the
    # concepts a fallback would quote it.
    docs = [
        make_doc("51", "Exercise reduced fatigue during chemotherapy in breast cancer (p = 0.01)."),
        make_doc("52", "Walking during holidays reduced tiredness and fatigue in office workers."),
    ]
    llm = ScriptedLLM(lambda _p: reply)
    answerer = Answerer(llm, AnswerSettings(), today=TODAY)
    question = "Does walking reduce fatigue during chemotherapy?"
    concepts = ("chemotherapy Drug Therapy",)
    garbage = await answerer.answer(question, docs, concepts=concepts)
    assert garbage.mode == "extractive" and [c.pmid for c in garbage.citations] == ["51"]
    offline = Answerer(None, AnswerSettings(), today=TODAY)
    choice = await offline.answer(question, docs, options={"A": "yes", "B": "no"}, concepts=concepts)
    assert choice.mode == "extractive" and [c.pmid for c in choice.citations] == ["51"]
    unconcerned = await offline.answer(question, docs)
    assert {c.pmid for c in unconcerned.citations} == {"51", "52"}


def test_a_study_naming_only_the_shared_disease_concept_still_answers() -> None:
    # Only comparator concepts are set aside: the disease every study shares is the question's topic.
    on_point = make_doc(
        "61",
        "CONCLUSIONS: Aromatase inhibitors before surgery shrank breast cancer tumours more than tamoxifen.",
    )
    others = [
        make_doc(str(62 + i), f"Breast cancer surgery type {i} was studied in {20 + i} women.")
        for i in range(4)
    ]
    concepts = ("breast cancer Breast Neoplasms", "surgery Surgical Procedures, Operative")
    _text, cited = answer(
        [on_point, *others], "do aromatase inhibitors help with breast cancer before surgery?", concepts
    )
    assert "61" in cited
