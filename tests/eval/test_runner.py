"""eval._runner: the resumable item log, config hashes, stage timings, seeded limits, the written report."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from eval import (
    ITEMS_FILE,
    EvalInputError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    check_run_dir,
    config_hash,
    parse_param,
    run_metadata,
    select_items,
    write_result,
)
from eval._runner import check_figure_file, figure_files
from eval.cli import eval_app


class Killed(Exception):
    """Stands in for the process dying between two items."""


def _suite(out: Path, keys: list[str], *, resume: bool, die_after: int | None = None) -> list[str]:
    """A minimal suite loop over ItemLog: returns the keys it actually computed."""
    log = ItemLog(out / ITEMS_FILE, resume=resume)
    done = log.done()
    computed: list[str] = []
    for key in keys:
        if key in done:
            continue
        if die_after is not None and len(computed) == die_after:
            raise Killed
        computed.append(key)
        log.append({"key": key, "value": len(key)})
    return computed


def test_killed_run_resumes_with_only_the_missing_items(tmp_path: Path) -> None:
    keys = [f"item-{i}" for i in range(6)]
    with pytest.raises(Killed):
        _suite(tmp_path, keys, resume=True, die_after=4)
    lines = (tmp_path / ITEMS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["key"] for x in lines] == keys[:4]  # flushed per line before the "kill"
    assert _suite(tmp_path, keys, resume=True) == keys[4:]
    assert set(ItemLog(tmp_path / ITEMS_FILE, resume=True).done()) == set(keys)
    assert _suite(tmp_path, keys, resume=True) == []  # a finished run computes nothing


def test_torn_last_line_is_dropped_and_that_item_runs_again(tmp_path: Path) -> None:
    path = tmp_path / ITEMS_FILE
    path.write_text('{"key": "a", "v": 1}\n{"key": "b", "v"', encoding="utf-8")  # killed mid-write
    log = ItemLog(path, resume=True)
    assert list(log.done()) == ["a"]
    log.append({"key": "b", "v": 2})
    assert [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] == [
        {"key": "a", "v": 1},
        {"key": "b", "v": 2},
    ]


def test_no_resume_truncates_and_keys_are_checked(tmp_path: Path) -> None:
    _suite(tmp_path, ["x", "y"], resume=True)
    log = ItemLog(tmp_path / ITEMS_FILE, resume=False)
    assert log.done() == {} and (tmp_path / ITEMS_FILE).read_text(encoding="utf-8") == ""
    log.append({"key": "x"})
    with pytest.raises(ValueError, match="already"):
        log.append({"key": "x"})
    with pytest.raises(ValueError, match="key"):
        log.append({"value": 1})


def test_config_hash_is_canonical_json() -> None:
    expected = hashlib.sha256(b'{"a":1,"b":[1,2],"c":{"x":null}}').hexdigest()[:12]
    assert config_hash({"c": {"x": None}, "b": [1, 2], "a": 1}) == expected
    assert config_hash({"a": 1, "b": [1, 2], "c": {"x": None}}) == expected
    assert config_hash({"a": 1, "b": [2, 1], "c": {"x": None}}) != expected  # list order matters
    assert len(config_hash(Path("/x"))) == 12


def test_run_metadata_hash_ignores_where_but_not_what(tmp_path: Path) -> None:
    base = RunOptions(out_dir=tmp_path / "a", limit=5, params={"B": 1000})
    meta = run_metadata("qa", base)
    again = run_metadata("qa", RunOptions(out_dir=tmp_path / "b", limit=5, params={"B": 1000}, resume=False))
    assert meta["config_hash"] == again["config_hash"]
    assert (
        run_metadata("qa", RunOptions(out_dir=tmp_path, limit=6, params={"B": 1000}))["config_hash"]
        != (meta["config_hash"])
    )
    assert run_metadata("medrgb", base)["config_hash"] != meta["config_hash"]
    assert meta["prompts"]["answer_choice"] == "answer_choice@1"
    assert meta["corpus_snapshot"].startswith("sha256:") and len(meta["corpus_snapshot"]) == 19
    assert meta["seed"] == 0 and meta["limit"] == 5 and meta["cpu_count"] >= 1
    assert meta["models"]["llm"]["backend"] in {"none", "embedded", "openai"}


def test_stage_times_summary_by_hand() -> None:
    st = StageTimes()
    for ms in (40.0, 10.0, 30.0, 20.0):
        st.add("answer", ms, tokens=5)
    st.merge({"understand": 7.0, "answer": {"ms": 50.0, "tokens": 10}})
    other = StageTimes()
    other.add("understand", 3.0)
    st.merge({"samples": other.samples, "tokens": other.tokens})
    summary = st.summary()
    assert summary["answer"] == {
        "count": 5.0,
        "ms_total": 150.0,
        "ms_mean": 30.0,
        "ms_p50": 30.0,
        "ms_p95": 48.0,  # 40 + 0.8 * (50 - 40): linear between closest ranks
        "tokens": 30.0,
    }
    assert summary["understand"]["count"] == 2.0 and summary["understand"]["ms_p50"] == 5.0


def test_select_items_is_seeded_and_keeps_order() -> None:
    items = list(range(100))
    a = select_items(items, 10, seed=1)
    assert a == select_items(items, 10, seed=1) and a == sorted(a) and len(set(a)) == 10
    assert a != select_items(items, 10, seed=2)
    assert select_items(items, None, seed=1) == items and select_items(items, 500, seed=0) == items
    assert select_items(items, 0, seed=0) == []
    with pytest.raises(EvalInputError):
        select_items(items, -1, seed=0)


def test_parse_param() -> None:
    assert parse_param("rho=[0,20,40]") == ("rho", [0, 20, 40])
    assert parse_param("B=1000") == ("B", 1000)
    assert parse_param("judge=gemma") == ("judge", "gemma")
    assert parse_param("empty=") == ("empty", "")
    for bad in ("noequals", "=1"):
        with pytest.raises(EvalInputError):
            parse_param(bad)


def test_check_run_dir_refuses_items_of_another_config(tmp_path: Path) -> None:
    opts = RunOptions(out_dir=tmp_path)
    check_run_dir(opts, {"config_hash": "aaa"})
    (tmp_path / ITEMS_FILE).write_text('{"key": "k"}\n', encoding="utf-8")
    check_run_dir(opts, {"config_hash": "aaa"})  # same config: resume is fine
    with pytest.raises(EvalInputError, match="--no-resume"):
        check_run_dir(opts, {"config_hash": "bbb"})
    check_run_dir(RunOptions(out_dir=tmp_path, resume=False), {"config_hash": "bbb"})
    assert json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))["config_hash"] == "bbb"


def test_write_result_writes_json_report_and_plots(tmp_path: Path) -> None:
    opts = RunOptions(out_dir=tmp_path / "run", limit=2)
    meta = run_metadata("demo", opts)
    st = StageTimes()
    st.add("answer", 12.5, tokens=40)
    result = SuiteResult(
        suite="demo",
        metrics={"acc": 0.5, "nan_free": math.sqrt(0.25)},
        tables=[Table("Accuracy", ["system", "acc"], [["cot", 0.5], ["rag | naive", None]])],
        plots=[
            Plot("acc.png", "Accuracy", "bar", ["medqa", "mmlu"], {"cot": [50.0, 40.0], "rag": [60.0, 0.0]}),
            Plot("lat.png", "Latency", "hist", [], {"answer": [1.0, 2.0, 2.5, 9.0]}),
            Plot("rho.png", "By rho", "line", ["0", "50", "100"], {"acc": [0.2, 0.5, 0.9]}),
        ],
        notes=["a caveat"],
        stage_times=st,
    )
    paths = write_result(result, opts, meta)
    assert [p.name for p in paths] == ["result.json", "report.md", "acc.png", "lat.png", "rho.png"]
    for png in paths[2:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved: dict[str, Any] = json.loads(paths[0].read_text(encoding="utf-8"))
    assert saved["metrics"] == {"acc": 0.5, "nan_free": 0.5}
    assert saved["tables"][0]["rows"] == [["cot", 0.5], ["rag | naive", None]]
    assert saved["metadata"]["config_hash"] == meta["config_hash"]
    assert saved["stage_times"]["answer"]["tokens"] == 40.0
    report = paths[1].read_text(encoding="utf-8")
    assert "| system | acc |\n|---|---|\n| cot | 0.500 |\n| rag \\| naive | n/a |" in report
    assert "- a caveat" in report and "![Accuracy](acc.png)" in report
    assert f"`{meta['config_hash']}`" in report and "answer_choice@1" in report
    assert "| answer | 1 | 12.500 |" in report


async def test_ask_runner_posts_to_a_server_and_reports_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from eval import AskRunner, EvalServerError

    seen: list[tuple[str, str | None, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("X-API-Key"), body))
            status, payload = (
                (200, {"answer_choice": "B", "mode": "llm"})
                if body["question"]
                else (
                    422,
                    {"error": "validation failed"},
                )
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("COMETA_EVAL_API_KEY", "k-123")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        async with AskRunner(RunOptions(out_dir=tmp_path, server_url=url), timeout_s=10) as asker:
            reply = await asker.ask({"question": "q?", "options": {"A": "x", "B": "y"}})
            assert reply == {"answer_choice": "B", "mode": "llm"}
            with pytest.raises(EvalServerError, match="422: validation failed"):
                await asker.ask({"question": ""})
    finally:
        server.shutdown()
        server.server_close()
    assert seen[0] == ("/ask", "k-123", {"question": "q?", "options": {"A": "x", "B": "y"}})


# --- cometa eval expected --check: measured figures are data, the deterministic ones re-run ---------------


def _figures_report(**_: Any) -> dict[str, Any]:
    return {"urgent": {"all": {"recall": 0.98}}, "lookalike": {"rate": 0.05}}


def test_a_check_block_is_compared_within_its_tolerance(tmp_path: Path) -> None:
    path = tmp_path / "fake.yaml"
    path.write_text(
        "check:\n  runner: fake\n  metrics:\n"
        "    urgent.all.recall: [0.979, 0.002]\n    lookalike.rate: [0.04, 0.005]\n    urgent.none: [1, 0]\n",
        encoding="utf-8",
    )
    result = check_figure_file(path, {"fake": _figures_report})
    assert not isinstance(result, str)
    assert [(c.metric, c.ok) for c in result] == [
        ("urgent.all.recall", True),
        ("lookalike.rate", False),  # 0.05 is 0.01 away: outside 0.005
        ("urgent.none", False),  # a path the report lacks never passes
    ]
    assert result[2].actual is None


def test_files_without_a_check_say_why_and_malformed_ones_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("targets: {x: 1}\n", encoding="utf-8")
    assert "no check block" in str(check_figure_file(plain, {}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("check: {runner: nope, metrics: {a: [1, 0]}}\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match="runner"):
        check_figure_file(bad, {"safety": _figures_report})
    bad.write_text("check: {runner: safety, metrics: {a: 1}}\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match=r"\[expected, tolerance\]"):
        check_figure_file(bad, {"safety": _figures_report})


def test_every_figure_file_is_yaml_with_its_command() -> None:
    files = figure_files()
    assert {p.name for p in files} >= {"safety.yaml", "relevance.yaml"}
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict), path.name
        # pyserini style: a figure travels with the command that made it
        assert "command" in data or "commands" in data, path.name


def test_the_scope_check_reproduces_its_dev_figures() -> None:
    """eval/expected/scope.yaml's check block, from the shipped scope check (about a second)."""
    from eval.cli import FIGURE_RUNNERS

    result = check_figure_file(Path(__file__).parents[2] / "eval" / "expected" / "scope.yaml", FIGURE_RUNNERS)
    assert not isinstance(result, str)
    assert [c.metric for c in result] == ["non_medical.rate", "health.rate"]
    assert all(c.ok for c in result), result


@pytest.mark.slow
def test_the_shipped_safety_decision_reproduces_its_figures() -> None:
    result = CliRunner().invoke(eval_app, ["expected", "--check"])
    assert result.exit_code == 0, result.output
    assert "safety.yaml: urgent.all.recall" in result.output and "DIFFERS" not in result.output
    assert "relevance.yaml: not checked" in result.output
