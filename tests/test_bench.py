"""The benchmark helpers' pure functions (statistics, bounds, tables, the scripted LLM's answers).

Timings are never asserted: only the arithmetic the benchmark tables are built from.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import _common  # noqa: E402
import soak  # noqa: E402
import throughput  # noqa: E402
import worst_case  # noqa: E402


@pytest.mark.parametrize("p", [0, 5, 50, 90, 95, 99, 100])
@pytest.mark.parametrize("values", [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 2.0, 3.0], list(range(17))])
def test_percentile_matches_numpy_linear(values: list[float], p: float) -> None:
    assert _common.percentile(values, p) == pytest.approx(float(np.percentile(values, p)))


def test_percentile_of_nothing_is_nan() -> None:
    assert math.isnan(_common.percentile([], 50))


@pytest.mark.parametrize(
    ("intervals", "covered"),
    [
        ([], 0.0),
        ([(0.0, 1.0)], 1.0),
        ([(0.0, 1.0), (2.0, 3.5)], 2.5),  # disjoint
        ([(0.0, 2.0), (1.0, 3.0)], 3.0),  # overlapping: counted once
        ([(1.0, 3.0), (0.0, 10.0), (4.0, 5.0)], 10.0),  # nested, unsorted
        ([(0.0, 1.0), (1.0, 2.0)], 2.0),  # touching
    ],
)
def test_interval_union(intervals: list[tuple[float, float]], covered: float) -> None:
    assert _common.interval_union(intervals) == pytest.approx(covered)


def test_rate_limit_bound() -> None:
    assert _common.bound_questions_per_min(3, 4) == pytest.approx(45.0)  # 180 calls/min ÷ 4
    assert _common.bound_questions_per_min(10, 6.25) == pytest.approx(96.0)
    assert _common.bound_questions_per_min(3, 0) == math.inf  # all from cache: no rate ceiling


def test_summarise_spans_separates_eutils_wall_time_from_the_sum() -> None:
    spans = [
        ("eutils:esearch", 0.0, 0.2),
        ("eutils:esearch", 0.1, 0.3),  # concurrent with the first
        ("eutils:efetch", 0.5, 0.6),
        ("segment", 0.6, 1.0),
    ]
    s = _common.summarise_spans(spans)
    assert s["eutils:esearch"] == pytest.approx(400.0)  # summed per name
    assert s["eutils_wall"] == pytest.approx(400.0)  # union: 0-0.3 and 0.5-0.6
    assert s["eutils_calls"] == 3
    assert s["segment"] == pytest.approx(400.0)


def test_markdown_table_escapes_pipes() -> None:
    out = _common.markdown_table(["a", "b"], [[1, "x|y"]])
    assert out.splitlines() == ["| a | b |", "|---|---|", "| 1 | x\\|y |"]


def test_throughput_row_uses_successful_calls_for_the_bound() -> None:
    run = throughput.Run(
        label="CoMeta",
        rate=3,
        questions=10,
        wall_s=30.0,
        calls=52,  # 50 answered + 2 answered with 429
        rate_limited=2,
        other_retries=0,
        cache_hits=5,
        cache_misses=15,
        failed=0,
        load="0",
    )
    row = dict(zip(throughput.HEADER, run.row(), strict=True))
    assert row["questions/min"] == "20.0"
    assert row["E-utility calls/question"] == "5.00"
    assert row["bound q/min"] == "36.0"  # 3 × 60 ÷ 5
    assert row["of bound"] == "56 %"
    assert row["cache hit rate"] == "25 %"


def test_schema_instance_fills_required_fields_refs_and_enums() -> None:
    schema = {
        "$defs": {"C": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        "type": "object",
        "properties": {
            "choice": {"enum": ["B", "C"]},
            "items": {"type": "array", "items": {"$ref": "#/$defs/C"}, "minItems": 2},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 3}]},
            "optional": {"type": "string"},
        },
        "required": ["choice", "items", "maybe"],
    }
    assert soak.schema_instance(schema) == {
        "choice": "B",
        "items": [{"name": "x"}, {"name": "x"}],
        "maybe": 3,
    }


def test_scripted_llm_fine_answers() -> None:
    plan_schema = {
        "type": "object",
        "properties": {
            "corrected_question": {"type": "string"},
            "ladder": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["corrected_question", "ladder"],
    }
    body = {
        "response_format": {"type": "json_schema", "json_schema": {"schema": plan_schema}},
        "messages": [],
    }
    plan = json.loads(soak.fine_content(body))
    assert len(plan["ladder"]) == 2 and all("[" in q for q in plan["ladder"])
    text = soak.fine_content({"messages": [{"role": "user", "content": "[PMID:123456] evidence"}]})
    assert "[PMID:123456]" in text


def test_soak_request_mix_expects_the_documented_statuses() -> None:
    kinds = {k.name: k for k in soak.KINDS}
    assert kinds["oversize body"].expected == {413}
    assert kinds["bad JSON"].expected == {422}
    assert 500 not in set().union(*(k.expected for k in soak.KINDS))  # no kind accepts a 500
    assert soak.status_class(soak.Outcome("ask", None, None, "ReadTimeout", None)) == "lost"
    assert soak.status_class(soak.Outcome("ask", 503, "NCBI unavailable", None, None)) == "5xx"


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (200, {"ok": True}, None),
        (
            503,
            {"error": "NCBI unavailable", "reason": "TransportError: esearch"},
            "NCBI unavailable: TransportError: esearch",
        ),
        (503, {"error": "LLM unavailable", "reason": None}, None),  # no reason: counted against our code
        (500, {"error": "internal error", "reason": None}, None),
        (
            503,
            {
                "ready": False,
                "checks": {"eutils": {"ok": False, "reason": "ServerError"}, "dense": {"ok": True}},
            },
            "not ready: eutils ServerError",
        ),
        (503, {"ready": False, "checks": {"eutils": {"ok": False}}}, None),
        (502, "<html>bad gateway</html>", None),
    ],
)
def test_soak_failure_reason(status: int, body: object, reason: str | None) -> None:
    import httpx

    content = json.dumps(body) if not isinstance(body, str) else body
    r = httpx.Response(status, content=content.encode(), headers={"content-type": "application/json"})
    assert soak.failure_reason(r) == reason


def test_worst_case_inputs_are_valid_requests_at_the_limits() -> None:
    from app.frontends import MODEL_ID, ChatRequest, chat_question
    from app.schemas import MAX_QUESTION_CHARS, AskRequest
    from app.settings import ApiSettings

    todo = worst_case.cases(list(worst_case.SHAPES), list(worst_case.ROUTES), MAX_QUESTION_CHARS)
    assert {c.route for c in todo} == set(worst_case.ROUTES)
    assert len({c.question for c in todo}) > len(worst_case.SHAPES)  # a new text per route: no cache hits
    limit = ApiSettings().max_body_bytes
    for case in todo:
        if case.shape != "baseline narrative":
            assert len(case.question) == MAX_QUESTION_CHARS, case.shape
        body = worst_case.request_for(case)["json"]
        assert len(json.dumps(body).encode()) <= limit, case.label  # the gate would answer 413
        if case.route.startswith("chat"):
            chat = ChatRequest.model_validate(body)
            assert chat.model == MODEL_ID
            AskRequest(question=chat_question(chat.messages))
        elif case.route == "mcp ask":
            AskRequest(**body["params"]["arguments"])
        else:
            AskRequest.model_validate(body)  # raises on anything the API would answer 422
    assert max(len(c.sources) for c in todo) == 8  # the most sources a request may name
    assert max(len(c.documents) for c in todo) == 200  # the most documents
    assert {c.route for c in todo if c.sources or c.documents} == {"ask"}  # /ask/stream: PubMed only


def test_worst_case_result_misses_exactly_the_targets_it_exceeds() -> None:
    case = worst_case.Case("digits", "ask", "1")

    def result(cpu: float, rss: float, lag: float, status: int = 200) -> worst_case.Result:
        return worst_case.Result(case, status, "extractive", cpu, rss, lag, 0.1)

    assert result(1.0, 50.0, 100.0).misses() == []  # the targets are inclusive
    assert result(1.01, 50.0, 100.0).misses() == ["CPU"]
    assert result(0.1, 50.1, 100.5).misses() == ["RSS", "lag"]
    assert result(0.1, 1.0, 1.0, status=500).misses() == ["500"]
    row = dict(zip(worst_case.HEADER, result(1.234, 5.0, 12.0).row(), strict=True))
    assert row["CPU s"] == "1.23" and row["target"] == "CPU"


@pytest.mark.parametrize(
    ("route", "status", "text", "outcome"),
    [
        ("ask", 200, '{"mode": "out_of_scope"}', "out_of_scope"),
        ("ask/stream", 200, "event: stage\ndata: {}\n\nevent: done\ndata: {}\n\n", "stream: done"),
        ("chat (stream)", 200, "data: {}\n\ndata: [DONE]\n\n", "chat stream: done"),
        ("search", 200, '{"evidence": [{}, {}]}', "2 docs"),
        ("mcp ask", 200, '{"result": {"structuredContent": {"mode": "extractive"}}}', "mcp: extractive"),
        ("mcp ask", 200, '{"result": {"isError": true}}', "mcp: error"),
        ("ask", 422, '{"error": "invalid request"}', "invalid request"),
    ],
)
def test_worst_case_outcome(route: str, status: int, text: str, outcome: str) -> None:
    assert worst_case.outcome_of(route, status, text) == outcome
