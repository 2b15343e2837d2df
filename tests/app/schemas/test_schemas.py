"""The wire schema: each model's JSON is byte-for-byte the JSON the API returned before the models existed.

``tests/fixtures/wire/golden.json`` holds, per representative object, the JSON the hand-written serialisers
produced; the models must reproduce its text exactly (key order, ints vs floats and nulls included).
OpenAPI documents the nested payloads, and federation reads back what it writes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.answer import Citation
from app.frontends import (
    across_response,
    evidence_docs_out,
    fused_out,
    judge_report_out,
    passages_out,
    query_out,
    search_out,
    source_evidence_out,
)
from app.judge import JudgeReport, PairJudgement, SourceAnswer
from app.pipeline import SearchOutcome
from app.schemas import (
    AskResponse,
    CollectionEvidenceOut,
)
from app.sources import (
    AcrossOutcome,
    FusedItem,
    SourceOutcome,
    SourceStatus,
    evidence_from_json,
    evidence_in,
    evidence_to_json,
)
from retrieval import AdaptEResult, QueryPlan, TierResult
from retrieval.collections import InstEvidence, SectionRef
from retrieval.embed import DenseHit
from retrieval.evidence import DROP_SUPERSEDED, Dropped, EvidenceDoc, EvidenceSet, Notice, TextUnit
from retrieval.passages import Passage, PassageContext
from retrieval.search import Provenance
from retrieval.understand import Understanding
from tests._paths import REPO

GOLDEN = REPO / "tests" / "fixtures" / "wire" / "golden.json"


def doc(pmid: str, **update: Any) -> EvidenceDoc:
    fields: dict[str, Any] = {
        "pmid": pmid,
        "pmcid": None,
        "title": f"Title {pmid}",
        "year": 2019,
        "journal": "J Med",
        "publication_types": ("Review", "Journal Article"),
        "doc_class": "D1",
        "depth_used": "abstract",
        "depth_fallback_reason": None,
        "license": None,
        "url": f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
        "fused_rank": 1,
        "rrf_score": 0.0327868852459,
        "provenance": (
            Provenance("boolean", 1, None, 2, "q", "ladder"),
            Provenance("dense", 3, 0.41244098544120789),
        ),
        "text_units": (TextUnit("abstract", "Some abstract.", "Abstract", ("Abstract",), "pubmed", 0),),
    }
    return EvidenceDoc(**{**fields, **update})


CONCERN = Notice(
    "expression_of_concern", "999", "An expression of concern was published about this study (PMID 999)."
)
DOCS = [
    doc("111", notices=(CONCERN,)),
    doc(
        "222",
        pmcid="PMC9",
        year=None,
        journal=None,
        publication_types=(),
        doc_class="D3",
        depth_used="fulltext",
        depth_fallback_reason="no PMC licence",
        url="",
        rrf_score=0.0,
        provenance=(Provenance(arm="user", rank=2),),
        text_units=(),
    ),
]


def passage(pmid: str, rank: int, expanded_from: str | None = None) -> Passage:
    return Passage(
        f"{pmid}:{rank}",
        pmid,
        "PMC9" if pmid == "222" else None,
        "D1",
        1,
        "section",
        "Results",
        ("Body", "Results"),
        0,
        5,
        40,
        "Exercise helped \u00e9 patients [1].",
        12,
        {"dense": 0.123456789, "rerank": -1.98765},
        rank,
        expanded_from,
    )


CONTEXT = PassageContext(
    (passage("111", 1), passage("222", 1, "111:1"), passage("222", 2)),
    "bi:minilm",
    "bi-encoder",
    "offline",
    90,
    400,
    7,
)


def outcome(context: PassageContext | None) -> SearchOutcome:
    plan = QueryPlan(
        corrected_question="Does exercise help fatigue?",
        intent="treatment",
        concepts=[{"text": "exercise", "mesh": "Exercise", "role": "intervention"}],
        pico={"population": ["adults"], "intervention": ["exercise"]},
        date_limits={"min_year": 2010, "max_year": 2020},
        ladder=["exercise AND fatigue", "exercise OR fatigue"],
        source="llm",
    )
    understanding = Understanding(
        plan,
        "llm",
        "abc123",
        fallback_reason=None,
        dropped=(("bad[au]", "field not allowed"),),
        padded=1,
        phi_counts={"name": 2},
        model="m",
        prompt_id="rewrite_query@v3",
        prompt_tokens=120,
        completion_tokens=30,
    )
    tiers = (
        TierResult(1, "exercise AND fatigue", 0, 12.345678, True, 0),
        TierResult(2, "exercise OR fatigue", 5, 3.0, True, 5, "fallback", "boom"),
    )
    adapte = AdaptEResult(("111", "333"), tiers, False, True, 2, date_limits_relaxed=True)
    dropped = (Dropped("333", "outside date window"), Dropped("555", DROP_SUPERSEDED, "111"))
    evidence = EvidenceSet(tuple(DOCS), dropped, 3, 2)
    return SearchOutcome(
        understanding,
        adapte,
        [DenseHit("111", 0.412441, 1), DenseHit("444", 0.3, 2)],
        [],
        evidence,
        context,
        ["a warning"],
        {"understand": 1.23456, "esearch": 2.0},
    )


REPORT = JudgeReport(
    question_hash="f00d",
    sources=("PMID:1", "PMID:2", "PMID:3"),
    answers=(
        SourceAnswer("1", "PMID:1", "Stop it.", False, "llm"),
        SourceAnswer("2", "PMID:2", "NOT ADDRESSED", True, "prefix"),
        SourceAnswer("3", "PMID:3", "", False, None, "PMID:3: answer failed", "screen failed"),
    ),
    pairs=(
        PairJudgement("PMID:1", "PMID:2", "ABSENT", None, None, None, "prescreen"),
        PairJudgement("PMID:1", "PMID:3", None, None, None, None, None),
        PairJudgement("PMID:2", "PMID:3", "DIVERGENT", "differ", "timing", "high", "json"),
    ),
    matrix=[[None, "ABSENT", None], ["ABSENT", None, "DIVERGENT"], [None, "DIVERGENT", None]],
    counts={"ABSENT": 1, "CONSISTENT": 0, "COMPLEMENTARY": 0, "DIVERGENT": 1, "CONTRADICTORY": 0},
    r_abs=0.5,
    r_abs_pairs=0.5,
    r_div=1.0,
    r_con=None,
    any_div=True,
    note="Guidance differs.",
    pairs_judged_by_llm=1,
    errors=("PMID:1 vs PMID:3: judge call failed",),
)

SECTIONS = (
    SectionRef("s1", "Travel", 3, 4),
    SectionRef("s2", "Diet", 5, None),
    SectionRef("s3", "", None, None),
)
INST = [
    InstEvidence("northbridge", "hb", "Handbook", "chunks", "Wait 3 months.", SECTIONS, 0.87654321),
    InstEvidence("riverside", "doc-2", "", "whole", "", (), 1.0),
]
FUSED: list[FusedItem[EvidenceDoc | InstEvidence]] = [
    FusedItem("pubmed", 1, 1, 0.0163934426, DOCS[0]),
    FusedItem("northbridge", 1, 2, 0.0163934426, INST[0]),
]
URL = "https://pubmed.ncbi.nlm.nih.gov/111/"
CITATION = Citation("111", None, "Title 111", 2019, ("Review",), URL, "D1", notices=(CONCERN,))


def across() -> AcrossOutcome:
    pubmed = SourceOutcome(
        "pubmed",
        "pubmed",
        SourceStatus("ok", None, 12.5),
        docs=DOCS,
        citations=[CITATION],
        answer=SourceAnswer("pubmed", "pubmed", "Wait [PMID:111].", False, "llm"),
        answer_mode="llm",
    )
    home = SourceOutcome(
        "northbridge",
        "collection",
        SourceStatus("ok", None, 3.0),
        meta={"institution": "Northbridge Hospital", "version_date": "2024-01-01"},
        evidence=INST,
        answer=SourceAnswer("northbridge", "northbridge", "Wait 3 months.", False, None),
        answer_mode="extractive",
    )
    denied = SourceOutcome("nodeb/x", "remote", SourceStatus("denied", "private", None), node="nodeb")
    return AcrossOutcome(
        "qh", [pubmed, home, denied], REPORT, "differs", "text", "llm", FUSED, ["w"], {"retrieve": 1.5}, "m"
    )


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def current() -> dict[str, Any]:
    """Every representative object through the models, as the API serialises them."""
    return {
        "evidence_docs": [d.model_dump(mode="json") for d in evidence_docs_out(DOCS)],
        "passages": [p.model_dump(mode="json") for p in passages_out(CONTEXT)],
        "no_passages": [p.model_dump(mode="json") for p in passages_out(None)],
        "query": query_out(outcome(CONTEXT)).model_dump(mode="json"),
        "search": search_out(outcome(CONTEXT)).model_dump(mode="json"),
        "search_no_context": search_out(outcome(None)).model_dump(mode="json"),
        "judge": judge_report_out(REPORT).model_dump(mode="json"),
        "collection_evidence": [evidence_to_json(e) for e in INST],
        "source_evidence": [
            source_evidence_out(i, e, 5).model_dump(mode="json") for i, e in enumerate(INST, 1)
        ],
        "fused": [fused_out(f).model_dump(mode="json") for f in FUSED],
        "across": across_response(across(), "r1", 6).model_dump(mode="json"),
    }


@pytest.mark.parametrize("name", sorted(json.loads(GOLDEN.read_text())))
def test_models_write_the_json_the_api_always_wrote(name: str) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert dumps(current()[name]) == dumps(golden[name])


def test_federation_reads_what_it_writes() -> None:
    for ev in INST:
        back = evidence_from_json(json.loads(json.dumps(evidence_to_json(ev))))
        assert back.cite() == ev.cite() and back.text == ev.text and back.score == ev.score
    # Another node's odd pages are no pages; missing optional fields take their defaults.
    odd = {
        "collection": "c",
        "doc_id": 5,
        "route": "whole",
        "text": "t",
        "sections": [{"section_id": 7, "heading": "h", "page_start": "3", "page_end": True}],
    }
    back = evidence_from_json(odd)
    assert (back.doc_id, back.title, back.score) == ("5", "", 0.0)
    assert back.sections == (SectionRef("7", "h", None, None),)
    with pytest.raises(ValueError, match="route"):
        evidence_from_json({**odd, "route": "everything"})
    with pytest.raises(ValueError, match="text"):
        evidence_from_json({k: v for k, v in odd.items() if k != "text"})
    assert evidence_in(CollectionEvidenceOut.model_validate(evidence_to_json(INST[0]))) == INST[0]


def test_openapi_documents_the_nested_payloads() -> None:
    from fastapi import FastAPI
    from fastapi.openapi.utils import get_openapi

    app = FastAPI()

    @app.post("/ask", response_model=AskResponse)
    async def ask_route() -> None: ...

    schemas = get_openapi(title="t", version="0", routes=app.routes)["components"]["schemas"]
    ask = schemas["AskResponse"]["properties"]
    assert {"$ref": "#/components/schemas/QueryOut"} in ask["query"]["anyOf"]
    assert {"$ref": "#/components/schemas/JudgeReportOut"} in ask["judge"]["anyOf"]
    assert ask["passages"]["items"] == {"$ref": "#/components/schemas/PassageOut"}
    assert {"class", "provenance", "rrf_score"} <= set(schemas["EvidenceDocOut"]["properties"])
    assert {"rewriter", "tiers", "plan"} <= set(schemas["QueryOut"]["properties"])
    assert {"matrix", "counts", "pairs"} <= set(schemas["JudgeReportOut"]["properties"])
    assert {"cite", "excerpt", "sections"} <= set(schemas["SourceEvidenceOut"]["properties"])


def test_the_service_documents_search_and_judge_bodies() -> None:
    from app.api import create_app
    from app.settings import Settings

    spec = create_app(Settings().offline()).openapi()
    for path, model in (("/search", "SearchResponse"), ("/judge", "JudgeResponse")):
        body = spec["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
        refs = [s["$ref"] for s in body["anyOf"]] if "anyOf" in body else [body["$ref"]]
        # /search: the search, or the safety guidance of an urgent question (issue 28)
        assert refs[0] == f"#/components/schemas/{model}" and refs[1:] in (
            [],
            ["#/components/schemas/UrgentResponse"],
        )
        assert "request_id" in spec["components"]["schemas"][model]["properties"]
    assert {"evidence", "tiers", "context"} <= set(
        spec["components"]["schemas"]["SearchResponse"]["properties"]
    )
