"""The relevance decision per study (issue 29): a study is evidence only when it is about the question."""

from __future__ import annotations

from app.trust import (
    EvidenceSignals,
    GateSettings,
    StudyRelevance,
    certainty,
    judge_relevance,
    question_focus,
    relevance_of_texts,
    weigh_evidence,
)
from retrieval.evidence import EvidenceDoc
from retrieval.understand import Concept, QueryPlan
from tests._evidence import make_doc


def plan(question: str, concepts: list[Concept], ladder: list[str]) -> QueryPlan:
    return QueryPlan(
        original_question=question,
        corrected_question=question,
        concepts=concepts,
        ladder=ladder,
        source="deterministic",
    )


LEUKEMIA = plan(
    "my daughter has leukemia, what are her chances of being cured",
    [
        Concept(text="leukemia", mesh="Leukemia", role="population"),
        Concept(text="prognosis", mesh="Prognosis", role="outcome"),
    ],
    [
        '("Leukemia"[mh] OR "leukemia"[tiab]) AND ("Prognosis"[mh] OR "prognosis"[tiab])',
        '("Leukemia"[mh] OR "leukemia"[tiab] OR "leukaemia"[tiab]) AND ("Prognosis"[mh] OR "outlook"[tiab])',
        '"leukemia"[tiab] OR "prognosis"[tiab]',
    ],
)
LUNG = plan(
    "stage 4 lung cancer, immunotherapy or chemo",
    [
        Concept(text="lung cancer", mesh="Lung Neoplasms", role="population"),
        Concept(text="immunotherapy", mesh="Immunotherapy", role="intervention"),
        Concept(text="chemotherapy", mesh="Drug Therapy", role="comparison", surface="chemo"),
    ],
    [
        '("Lung Neoplasms"[mh] OR "lung cancer"[tiab]) AND ("Immunotherapy"[mh] OR "immunotherapy"[tiab] '
        'OR "checkpoint inhibitor"[tiab]) AND ("Drug Therapy"[mh] OR "chemotherapy"[tiab])',
        '"lung cancer"[tiab] AND "immunotherapy"[tiab]',
        '"lung cancer"[tiab]',
    ],
)


def test_a_study_must_name_the_condition_asked_about() -> None:
    focus = question_focus(LEUKEMIA)
    docs = [
        make_doc(
            "1", "Fournier's gangrene: mortality and prognosis in 60 patients.", title="Fournier's gangrene"
        ),
        make_doc(
            "2", "Is breast cancer prognosis inherited? A registry study.", title="Breast cancer prognosis"
        ),
        make_doc(
            "3", "Event-free survival of children with acute leukaemia treated on protocol.", title="ALL"
        ),
    ]
    decided = judge_relevance(focus, docs)
    assert [r.addresses for r in decided] == [False, False, True]  # "leukaemia": a synonym the plan searched
    assert decided[0].missing == ("leukemia",)
    assert decided[0].reason() == "does not mention leukemia"
    assert "leukemia" in decided[2].reason()


def test_a_record_indexed_under_a_narrower_heading_names_the_broader_one() -> None:
    focus = question_focus(LEUKEMIA)
    doc = make_doc(
        "4", "Outcomes of induction therapy.", mesh=("Precursor Cell Lymphoblastic Leukemia-Lymphoma",)
    )
    assert not judge_relevance(focus, [doc])[0].addresses
    narrower = {"leukemia": frozenset({"Precursor Cell Lymphoblastic Leukemia-Lymphoma"})}
    assert judge_relevance(focus, [doc], expand=lambda h: narrower.get(h, frozenset()))[0].addresses


STOMACH = plan(
    "My grandfather has advanced stomach cancer, is capecitabine pill chemo good for him?",
    [Concept(text="stomach cancer", mesh="Stomach Neoplasms", role="population")],
    ['("Stomach Neoplasms"[mh] OR "stomach cancer"[tiab])'],
)


def test_a_heading_is_named_by_its_entry_terms_and_a_malignancy_by_any_of_its_names() -> None:
    focus = question_focus(STOMACH)
    gastric = make_doc("21", "Capecitabine in elderly patients with advanced gastric carcinoma.", title="AGC")
    colon = make_doc("22", "Capecitabine in elderly patients with advanced colon cancer.", title="CRC")
    entry = {"stomach neoplasms": ("Gastric Neoplasms", "Neoplasms, Gastric", "GC")}
    # Without the vocabulary's entry terms the trial's own words do not name the question's condition.
    assert [r.addresses for r in judge_relevance(focus, [gastric, colon])] == [False, False]
    decided = judge_relevance(focus, [gastric, colon], terms=lambda h: entry.get(h, ()))
    assert [r.addresses for r in decided] == [True, False]


def test_possessives_and_british_spelling_name_the_same_thing() -> None:
    barrett = plan(
        "I have Barrett's esophagus, does acetic acid help find precancer?",
        [Concept(text="barrett esophagus", mesh="Barrett Esophagus", role="population")],
        ['("Barrett Esophagus"[mh] OR "barrett esophagus"[tiab])'],
    )
    focus = question_focus(barrett)
    docs = [
        make_doc("23", "Acetic acid-guided biopsies in Barrett\u2019s oesophagus surveys.", title="ABBA"),
        make_doc("24", "Acetic acid in gastric intestinal metaplasia.", title="GIM"),
    ]
    assert [r.addresses for r in judge_relevance(focus, docs)] == [True, False]


def test_the_treatment_asked_about_is_required_not_only_its_comparison() -> None:
    focus = question_focus(LUNG)
    chemo_only = make_doc("5", "Chemotherapy and survival in advanced lung cancer.", title="Chemo in NSCLC")
    both = make_doc("6", "Checkpoint inhibitor versus chemotherapy in stage IV lung cancer.", title="ICI")
    radiotherapy = make_doc("7", "Palliative radiotherapy in lung cancer.", title="RT")
    decided = judge_relevance(focus, [chemo_only, both, radiotherapy])
    assert [r.addresses for r in decided] == [False, True, False]
    assert decided[0].missing == ("immunotherapy",)
    # The question's own word ("chemo") is the comparison's, not an unrecognised technical term.
    assert all(a.group != "term" for a in focus.anchors)


def test_unrecognised_technical_words_count_and_everyday_ones_do_not() -> None:
    knee = plan(
        "Does exercise help with knee osteoarthritis pain?",
        [
            Concept(text="exercise", mesh="Exercise", role="intervention"),
            Concept(text="pain", mesh="Pain", role="outcome"),
        ],
        ['("Pain"[mh] OR "pain"[tiab]) AND ("Exercise"[mh] OR "exercise"[tiab])'],
    )
    focus = question_focus(knee)
    assert [(a.label, a.group) for a in focus.anchors if a.group == "term"] == [("osteoarthritis", "term")]
    docs = [
        make_doc("8", "Obesity predicts knee pain in women with osteoarthritis.", title="BMI"),
        make_doc("9", "Exercise therapy reduced pain in knee osteoarthritis.", title="Exercise for OA"),
        make_doc("10", "Exercise during pregnancy and postnatal depression.", title="Pregnancy"),
    ]
    assert [r.addresses for r in judge_relevance(focus, docs)] == [False, True, False]


def test_a_question_with_no_clinical_concept_is_not_judged_here() -> None:
    vague = plan("what should I do", [], ['"do"[tiab]'])
    decided = judge_relevance(question_focus(vague), [make_doc("11", "Anything at all.")])
    assert decided[0].addresses and decided[0].judge == "none"


def test_a_study_must_also_use_enough_of_the_questions_rare_words() -> None:
    online = plan(
        "I have heart failure; are online quality of life questionnaires as accurate as paper ones?",
        [Concept(text="quality of life", mesh="Quality of Life", role="outcome")],
        ['("Quality of Life"[mh] OR "quality of life"[tiab])'],
    )
    focus = question_focus(online)
    trial = make_doc(
        "31", "Online versus paper questionnaires of quality of life in heart failure.", title="Web HRQoL"
    )
    other = make_doc("32", "Quality of life questionnaires after breast cancer surgery.", title="QoL")
    # The outcome and the unlisted word let both through; the question's rarer words ("online",
    # "failure", "paper") are the trial's only.
    assert [r.addresses for r in judge_relevance(focus, [trial, other])] == [True, True]
    decided = judge_relevance(focus, [trial, other], min_share=0.5)
    assert [r.addresses for r in decided] == [True, False]
    assert decided[1].share is not None and decided[1].share < 0.5 < (decided[0].share or 0)
    assert decided[1].reason() == "uses too few of the question's words"
    # A question with no clinical concept is judged by its words alone when the share is asked for.
    vague = plan("is the online one as good as paper", [], ['"online"[tiab]'])
    by_words = judge_relevance(question_focus(vague), [trial, other], min_share=0.5)
    assert [(r.addresses, r.judge) for r in by_words] == [(True, "words"), (False, "words")]


def test_the_questions_words_for_a_named_concept_count_as_used() -> None:
    whipple = plan(
        "is the whipple pointless for my mum's pancreas mass",
        [
            Concept(
                text="pancreatic cancer", mesh="Pancreatic Neoplasms", role="population", surface="pancreas"
            ),
            Concept(
                text="pancreaticoduodenectomy",
                mesh="Pancreaticoduodenectomy",
                role="intervention",
                surface="whipple",
            ),
        ],
        ['("Pancreatic Neoplasms"[mh]) AND ("Pancreaticoduodenectomy"[mh])'],
    )
    focus = question_focus(whipple)
    study = make_doc("41", "Pancreaticoduodenectomy for pancreatic cancer: who benefits?", title="PD")
    # The study says neither "whipple" nor "pancreas" nor "mass"; it names both concepts, so the words the
    # question used for them count: only "mass" and "pointless" are the study's to lack.
    decided = judge_relevance(focus, [study], min_share=0.5)[0]
    assert decided.addresses and decided.share is not None and 0.5 < decided.share < 1.0
    unnamed = make_doc("42", "Pancreatic cancer: who benefits from surgery?", title="PC")
    assert not judge_relevance(focus, [unnamed], min_share=0.5)[0].addresses


def test_texts_of_a_collection_are_judged_alike() -> None:
    focus = question_focus(LEUKEMIA)
    decided = relevance_of_texts(
        focus, [("h/1", "Leukemia: prognosis and follow-up clinic."), ("h/2", "Visiting hours.")]
    )
    assert [r.addresses for r in decided] == [True, False]


def _signals(kept: object) -> EvidenceSignals:
    n = len(kept)  # type: ignore[arg-type]
    return EvidenceSignals(n, 0.9, None, "strict", 1.0)


def test_weighing_keeps_what_addresses_and_abstains_when_nothing_does() -> None:
    gate = GateSettings()
    docs = ["a", "b"]
    none = [
        StudyRelevance("a", False, missing=("leukemia",)),
        StudyRelevance("b", False, missing=("leukemia",)),
    ]
    weighed = weigh_evidence(docs, none, _signals, gate)
    assert weighed.kept == () and weighed.verdict.abstain
    assert weighed.verdict.reasons == (
        "none of the 2 studies found is about the question: they do not mention leukemia",
    )
    one = [StudyRelevance("a", False, missing=("x",)), StudyRelevance("b", True)]
    assert weigh_evidence(docs, one, _signals, gate).kept == ("b",)
    off = gate.model_copy(update={"relevance": False})
    assert weigh_evidence(docs, none, _signals, off).kept == ("a", "b")


def test_the_verdict_is_capped_by_what_the_relevant_studies_are() -> None:
    gate = GateSettings()
    cohort = make_doc(
        "20", "A cohort of 344 patients followed for five years.", year=2009, types=(), title="C"
    )
    rct = make_doc(
        "21", "In this randomized controlled trial 120 patients were randomly assigned.", types=(), title="R"
    )
    rct2 = make_doc(
        "22", "Patients were randomized; 80 patients completed the trial.", types=(), year=2015, title="S"
    )

    def yes(docs: list[EvidenceDoc]) -> list[StudyRelevance]:
        return [StudyRelevance(d.pmid, True) for d in docs]

    one = weigh_evidence([cohort], yes([cohort]), _signals, gate, studies=lambda k: k)
    assert one.verdict.verdict == "weak"
    assert one.verdict.reasons[0] == "low certainty: one cohort study of 344 patients, 2009"
    two = weigh_evidence([rct, rct2], yes([rct, rct2]), _signals, gate, studies=lambda k: k)
    assert two.verdict.verdict == "strong"
    assert (
        two.verdict.reasons[0] == "higher certainty: two randomised trials of 200 patients in all, 2015-2022"
    )
    assert certainty([rct, cohort])[0] == "moderate"


async def test_the_llm_judge_decides_where_it_answers_and_the_offline_decision_stands_elsewhere() -> None:
    from app.trust import LLMRelevance
    from tests._fakes import ScriptedLLM

    offline = (
        StudyRelevance("1", True, ("leukemia",)),
        StudyRelevance("2", False, (), ("leukemia",)),
        StudyRelevance("3", True, ("leukemia",)),
    )
    studies = [
        ("1", "ALL survival", "Children with ALL."),
        ("2", "Leukaemia", "Cure rates."),
        ("3", "x", "y"),
    ]

    def script(prompt: str) -> dict[str, object]:
        assert "[1] ALL survival" in prompt and "my daughter" in prompt  # the batch in one call
        return {
            "studies": [
                {"id": "1", "addresses": False, "reason": "adults only"},
                {"id": "[2]", "addresses": True, "reason": "cure rates of childhood leukaemia"},
            ]
        }

    llm = ScriptedLLM(script)
    judged = await LLMRelevance(llm, timeout_s=5).judge("my daughter has ALL", studies, offline)
    assert [(r.addresses, r.judge) for r in judged] == [(False, "llm"), (True, "llm"), (True, "concepts")]
    assert judged[0].reason() == "adults only" and judged[0].missing == ("the question's topic",)
    assert len(llm.seen) == 1 and llm.versions == ["study_relevance@1"]

    broken = ScriptedLLM(lambda prompt: "not json")
    assert await LLMRelevance(broken, timeout_s=5).judge("q", studies, offline) == offline


def test_a_technical_word_decides_even_when_no_candidate_names_it() -> None:
    # "Arimoclomol": studies of other drugs for the same disease do not answer a question about it.
    drug = plan(
        "Will arimoclomol slow my ALS?",
        [
            Concept(
                text="amyotrophic lateral sclerosis", mesh="Amyotrophic Lateral Sclerosis", role="population"
            )
        ],
        ['("Amyotrophic Lateral Sclerosis"[mh] OR "als"[tiab])'],
    )
    focus = question_focus(drug)
    assert [a.label for a in focus.anchors if a.group == "term"] == ["arimoclomol"]
    other = make_doc("30", "Riluzole in amyotrophic lateral sclerosis.", title="Riluzole")
    named = make_doc("31", "Arimoclomol in amyotrophic lateral sclerosis.", title="Arimoclomol")
    decided = judge_relevance(focus, [other, named])
    assert [r.addresses for r in decided] == [False, True]
    assert decided[0].reason() == "does not mention arimoclomol"


async def test_the_llm_judge_in_the_flow_sees_the_question_scrubbed_and_decides_what_is_cited() -> None:
    """/ask with a model: the batched relevance call (PHI scrubbed, as every prompt) keeps what it says
    addresses the question and drops what it says does not; the evidence says which and why."""
    from app import Answerer, Asker, AskRequest, PhiPolicy, Settings, ask_response, build_pipeline
    from llm import LLMUnavailable
    from tests._fakes import ScriptedLLM

    question = (
        "I am Linda Parker, phone 617-555-0134. My mom has a mass on her pancreas and her CA 19 9 came back "
        "really high, is the whipple pointless?"
    )
    said: dict[str, bool] = {}

    def script(prompt: str) -> object:
        if "You screen studies" in prompt:
            ids = [line[1 : line.index("]")] for line in prompt.splitlines() if line.startswith("[")]
            said.update({i: i == "19459018" for i in ids})
            return {
                "studies": [{"id": i, "addresses": v, "reason": "model says so"} for i, v in said.items()]
            }
        if "PubMed searching" in prompt:
            return LLMUnavailable("scripted: the deterministic rewriter plans")
        return "A very high CA 19-9 is weighed before surgery [PMID:19459018]."

    settings = (
        Settings()
        .offline()
        .model_copy(update={"llm": Settings().offline().llm.model_copy(update={"scrub_phi_for_llm": True})})
    )
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    async with build_pipeline(settings, llm=llm, use_passages=False) as pipeline:
        phi = PhiPolicy.from_settings(settings.llm)
        asker = Asker(pipeline, Answerer(llm, settings.answer), None, phi=phi)
        response = ask_response(await asker.ask(AskRequest(question=question), "r1"))
    screened = [
        m
        for msgs, v in zip(llm.seen, llm.versions, strict=True)
        if v.startswith("study_relevance")
        for m in msgs
    ]
    body = "\n".join(m["content"] for m in screened)
    assert screened and "Parker" not in body and "555-0134" not in body and "whipple" in body.lower()
    assert said.get("19459018") is True and len(said) > 1
    flags = {d.pmid: (d.addresses_question, d.relevance) for d in response.evidence}
    assert flags["19459018"] == (True, "model says so")
    assert all(not ok for pmid, (ok, _why) in flags.items() if pmid != "19459018")
    assert {c.pmid for c in response.citations} <= {"19459018"}


def test_a_study_under_an_expression_of_concern_does_not_raise_the_certainty() -> None:
    import dataclasses

    from retrieval.evidence import Notice

    rct = make_doc(
        "40", "In this randomized controlled trial 120 patients were randomly assigned.", types=(), title="R"
    )
    rct2 = make_doc("41", "Patients were randomized; 80 patients completed the trial.", types=(), title="S")
    assert certainty([rct, rct2])[0] == "strong"
    concern = Notice(
        "expression_of_concern", "99", "An expression of concern was published about this study."
    )
    doubted = dataclasses.replace(rct2, notices=(concern,))
    cap, detail = certainty([rct, doubted])
    assert cap == "moderate" and "1 more under an expression of concern, not counted" in detail


def test_the_verdict_reads_how_many_concepts_a_kept_study_names() -> None:
    gate = GateSettings(min_coverage=0.3, min_coverage_named=0.1)
    docs = ["a", "b"]

    def sparse(kept: object) -> EvidenceSignals:  # a long lay question: few of its words in the abstracts
        return EvidenceSignals(len(kept), 0.9, None, "strict", 0.2)  # type: ignore[arg-type]

    both = [StudyRelevance("a", True, named=("lung cancer", "fatigue")), StudyRelevance("b", True)]
    weighed = weigh_evidence(docs, both, sparse, gate)
    assert weighed.verdict.signals.named_concepts == 2 and not weighed.verdict.abstain
    one = [StudyRelevance("a", True, named=("lung cancer",)), StudyRelevance("b", False, named=("x", "y"))]
    weighed = weigh_evidence(docs, one, sparse, gate)
    assert weighed.verdict.signals.named_concepts == 1 and weighed.verdict.abstain
    # Kept without a judgement (no concept to check against), or with the relevance decision off: no count.
    unjudged = [StudyRelevance("a", True, named=("p", "q"), judge="none"), StudyRelevance("b", True)]
    assert weigh_evidence(docs, unjudged, sparse, gate).verdict.abstain
    off = gate.model_copy(update={"relevance": False})
    assert weigh_evidence(docs, both, sparse, off).verdict.signals.named_concepts == 0


def test_a_drug_searched_by_its_stem_stays_a_technical_word_of_the_question() -> None:
    """The relaxed OR holds the drugs beside the outcome: they are not the outcome's alternatives."""
    golimumab = plan(
        "Simponi for rheumatoid arthritis: does golimumab with methotrexate get me into remission?",
        [
            Concept(text="golimumab", role="other"),
            Concept(text="methotrexate", role="other"),
            Concept(text="remission", mesh="Remission Induction", role="outcome"),
        ],
        [
            '"golimumab"[tiab] AND "methotrexate"[tiab] AND ("Remission Induction"[mh] OR "remission"[tiab])',
            '"golimumab"[tiab] OR "methotrexate"[tiab] OR "remission"[tiab]',
        ],
    )
    focus = question_focus(golimumab)
    terms = [a.label for a in focus.anchors if a.group == "term"]
    assert {"golimumab", "methotrexate"} <= set(terms)
    docs = [
        make_doc("31", "Golimumab plus methotrexate: remission in rheumatoid arthritis.", title="GO-FORWARD"),
        make_doc("32", "Etanercept and remission in rheumatoid arthritis.", title="Other drug"),
    ]
    assert [r.addresses for r in judge_relevance(focus, docs)] == [True, False]
