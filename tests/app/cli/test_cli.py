"""The ``cometa`` CLI: the documented demo search, and ``cometa eutils serve`` as a real process over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from app.cli import app
from retrieval.ncbi import parse_esearch, parse_pmc_articles, parse_pubmed_articles
from tests._paths import REPO
from tests._procs import free_port, serve


def test_offline_search_json_matches_the_corpus() -> None:
    result = CliRunner().invoke(
        app, ["eutils", "search", "--offline", "--json", "neoplasms[mh] AND 2010:2015[dp]"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["count"] >= len(payload["pmids"]) == 10
    assert payload["query_translation"].startswith('"neoplasms"[MeSH Terms] AND 2010/01/01:2015/12/31')
    assert [r["pmid"] for r in payload["records"]] == payload["pmids"]
    assert all(2010 <= r["pub_date"]["year"] <= 2015 for r in payload["records"])


def test_bad_query_exits_cleanly_with_a_message() -> None:
    result = CliRunner().invoke(app, ["eutils", "search", "--offline", "(cancer AND"])
    assert result.exit_code == 2
    assert "BadRequest" in result.output and "Traceback" not in result.output


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    port = free_port()
    for base in serve(["eutils", "serve", "--port", str(port)], "/entrez/eutils/einfo.fcgi", port=port):
        yield base + "/entrez/eutils/"


def test_served_readme_curl_examples(served: str) -> None:
    # The exact requests docs/sources.md shows with curl.
    r = httpx.get(
        served + "esearch.fcgi?db=pubmed&term=neoplasms[mh]+AND+2010:2015[dp]&retmode=json", timeout=5
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    result = parse_esearch(r.content)
    assert result.count == 70 and len(result.ids) == 20
    r = httpx.get(served + "efetch.fcgi?db=pubmed&id=21645374&retmode=xml", timeout=5)
    (record,) = parse_pubmed_articles(r.content)
    assert record.pmid == "21645374" and record.has_abstract
    r = httpx.get(served + "elink.fcgi?dbfrom=pubmed&db=pmc&linkname=pubmed_pmc&id=23149571", timeout=5)
    assert b"<LinkName>pubmed_pmc</LinkName>" in r.content and b"<Id>3574550</Id>" in r.content
    r = httpx.get(served + "efetch.fcgi?db=pmc&id=3574550", timeout=5)
    (article,) = parse_pmc_articles(r.content)
    assert article.pmcid == "PMC3574550" and article.sections


def test_served_post_and_unknown_path(served: str) -> None:
    r = httpx.post(
        served + "esearch.fcgi", data={"db": "pubmed", "term": "cancer", "retmode": "json"}, timeout=5
    )
    assert parse_esearch(r.content).count > 0
    assert httpx.get(served + "nosuch.fcgi", timeout=5).status_code == 404


def test_served_espell_and_ecitmatch(served: str) -> None:
    # `cometa eutils serve` injects the query speller; ECitMatch is NCBI's .cgi path, plain text.
    r = httpx.get(served + "espell.fcgi", params={"db": "pubmed", "term": "brest cancr"}, timeout=30)
    assert b"<CorrectedQuery>breast cancer</CorrectedQuery>" in r.content
    bdata = "br j cancer|2010|103|1755|tsilidis kk|c1|"
    r = httpx.get(served + f"ecitmatch.cgi?db=pubmed&retmode=xml&bdata={bdata}", timeout=30)
    assert r.headers["content-type"].startswith("text/plain") and r.text == f"{bdata}21045829\n"


def test_search_json_runs_the_ladder_and_keeps_phi_out() -> None:
    narrative = (
        "Hi I'm Linda Parker (555-201-7788). My mom has a mass on her pancreas and her CA 19 9 came back "
        "really high, is the whipple pointless?"
    )
    result = CliRunner().invoke(app, ["search", "--offline", "--json", narrative])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["pmids"] and all(p.isdigit() for p in payload["pmids"])
    assert payload["rewriter"]["path"] == "deterministic"
    tiers = payload["tiers"]
    assert tiers and {"query", "count", "latency_ms", "used"} <= set(tiers[0])
    assert payload["evidence"][0]["pmid"] == payload["pmids"][0]
    assert {"class", "depth", "provenance", "url"} <= set(payload["evidence"][0])
    # The top hit is the corpus article on exactly this dilemma.
    assert "19459018" in payload["pmids"][:3]
    for secret in ("Linda", "Parker", "555-201-7788"):
        assert secret not in result.stdout
    assert {"NAME", "PHONE"} <= set(payload["rewriter"]["phi_removed"])


def test_ask_json_is_the_api_answer() -> None:
    narrative = "Hi I'm Linda Parker. My mom has a mass on her pancreas: is the whipple pointless?"
    result = CliRunner().invoke(
        app, ["ask", "--offline", "--no-dense", "--json", "--max-documents", "3", narrative]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["request_id"] == "cli" and payload["mode"] == "extractive"  # offline: no LLM
    assert len(payload["evidence"]) <= 3 and payload["citations"]
    assert {c["pmid"] for c in payload["citations"]} <= {d["pmid"] for d in payload["evidence"]}
    assert payload["query"]["rewriter"]["path"] == "deterministic"
    assert "Linda" not in result.stdout and "Parker" not in result.stdout


ASK = [
    "ask",
    "--offline",
    "--no-dense",
    "--max-documents",
    "3",
    "is the whipple pointless for a pancreas mass?",
]


def test_ask_renders_the_answer_with_pubmed_links_and_plain_notes() -> None:
    result = CliRunner().invoke(app, ASK)
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "Answer" in out and "Sources" in out
    assert "https://pubmed.ncbi.nlm.nih.gov/" in out  # not a terminal: the URLs are printed
    assert "no language model wrote this" in out and "mode: extractive" in out


def test_ask_stream_json_is_the_event_stream_one_line_each() -> None:
    result = CliRunner().invoke(app, [*ASK, "--stream", "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    names = [e["event"] for e in events]
    assert names[0] == "stage" and names[-1] == "result"
    assert names.index("evidence") < names.index("answer") < names.index("result")
    final = events[-1]["data"]
    assert final["request_id"] == "cli" and final["citations"]
    assert events[names.index("answer")]["data"]["answer"] == final["answer"]


def test_ask_stream_shows_stages_then_the_checked_answer() -> None:
    result = CliRunner().invoke(app, [*ASK, "--stream"])
    assert result.exit_code == 0, result.output
    assert "retrieve…" in result.output and "https://pubmed.ncbi.nlm.nih.gov/" in result.stdout


def test_search_rejects_half_a_date_window() -> None:
    result = CliRunner().invoke(app, ["search", "--offline", "--mindate", "2010", "cancer"])
    assert result.exit_code == 2 and "go together" in result.output


def test_index_build_from_baseline_resumes(tmp_path: Path) -> None:
    sample = REPO / "retrieval" / "corpus" / "pubmed" / "ncbi_samples.xml"
    args = ["index", "build", "--offline", "--source", "baseline", "--index-dir", str(tmp_path), str(sample)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "added 13, skipped 0" in first.output and "docs/s" in first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "added 0, skipped 13" in second.output and "index holds 13 vectors" in second.output


def test_index_build_needs_inputs_for_baseline() -> None:
    result = CliRunner().invoke(app, ["index", "build", "--offline", "--source", "baseline"])
    assert result.exit_code == 2 and "needs input PATHS" in result.output


def test_index_build_of_a_world_then_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from app.settings import get_settings
    from tests.retrieval.embed.test_world_index import write_world

    world = write_world(tmp_path / "world", 24)
    monkeypatch.setenv("COMETA_LOCAL_SERVER__CORPUS_DIR", str(world))
    get_settings.cache_clear()  # read the variable above, and forget it afterwards
    request.addfinalizer(get_settings.cache_clear)
    args = ["index", "build", "--offline", "--index-dir", str(tmp_path / "idx")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"index of the corpus in {world} ready: 24 vectors" in first.output.replace("\n", "")
    meta = json.loads((tmp_path / "idx" / "meta.json").read_text())
    assert meta["build"]["complete"] is True and meta["build"]["source"] == "bundled-corpus"
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0 and "ready: 24 vectors" in second.output.replace("\n", "")


@pytest.mark.parametrize(
    ("url", "host", "port", "ours"),
    [
        ("http://localhost:8000/v1", "127.0.0.1", 8000, True),  # the old default, with serve's defaults
        ("http://127.0.0.1:8000/v1", "0.0.0.0", 8000, True),
        ("http://[::1]:8000/v1", "::", 8000, True),
        ("http://0.0.0.0:8000/v1", "localhost", 8000, True),
        ("http://api.internal:8000/v1", "api.internal", 8000, True),
        ("http://localhost/v1", "127.0.0.1", 80, True),  # the scheme's port
        ("http://localhost:8001/v1", "127.0.0.1", 8000, False),  # another port: vLLM beside us
        ("http://vllm:8000/v1", "0.0.0.0", 8000, False),  # compose: another host
        ("http://localhost:8000/v1", "10.0.0.5", 8000, False),  # we listen elsewhere
        ("https://localhost/v1", "127.0.0.1", 80, False),
        (None, "127.0.0.1", 8000, False),
    ],
)
def test_own_address_detection(url: str | None, host: str, port: int, ours: bool) -> None:
    from app.cli._main import _is_own_address

    assert _is_own_address(url, host, port) is ours


@pytest.mark.parametrize(("url", "code"), [("http://localhost:8000/v1", 2), ("http://127.0.0.1:8001/v1", 0)])
def test_serve_refuses_an_llm_url_that_is_its_own_address(
    monkeypatch: pytest.MonkeyPatch, url: str, code: int
) -> None:
    import uvicorn

    from app.settings import get_settings

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(kwargs))
    monkeypatch.setenv("COMETA_LLM__BACKEND", "openai")
    monkeypatch.setenv("COMETA_LLM__BASE_URL", url)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["serve", "--offline", "--port", "8000"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == code, result.output
    if code:
        assert "configuration error" in result.output and "would call itself" in result.output
        assert not started and "Traceback" not in result.output
    else:
        assert len(started) == 1


def _command_paths() -> list[list[str]]:
    """Every command and sub-command of the CLI, as the words a user types."""
    import typer.main

    def walk(group: object, prefix: list[str]) -> Iterator[list[str]]:
        for name, sub in getattr(group, "commands", {}).items():
            yield [*prefix, name]
            yield from walk(sub, [*prefix, name])

    return list(walk(typer.main.get_command(app), []))


def test_every_command_prints_its_help() -> None:
    # Option help is Rich markup: "YYYY[/MM[/DD]]" raised a MarkupError traceback on `search --help`.
    paths = _command_paths()
    assert ["search"] in paths and ["eval", "safety"] in paths
    for words in paths:
        result = CliRunner().invoke(app, [*words, "--help"])
        assert result.exit_code == 0, (words, result.output[-300:])
        assert "Usage:" in result.output, words
