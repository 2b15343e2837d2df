"""Bounded soak test of the ``/ask`` service under injected faults, loopback only. Prints markdown.

    .venv/bin/python bench/soak.py [--duration 600] [--concurrency 6] [--seed 1]

Starts three processes on 127.0.0.1:

* a scripted OpenAI-compatible LLM (``bench/soak.py llm-server``): per request, by seeded chance, a fine
  answer (schema-valid JSON, or text citing a PMID from the prompt; streamed when asked), a reply slower
  than the service's LLM timeout, garbage (non-JSON content, a broken body, a torn stream) or HTTP 500;
* the real service, ``cometa serve --offline`` (the bundled corpus behind the in-process local
  E-utilities server), with E-utilities faults from ``COMETA_LOCAL_SERVER__*``: 429 above the server's rate
  while our client is allowed more, 5xx, HTML pages, truncated XML, rate-limit bodies with HTTP 200, stalls
  past the client timeout, 20-100 ms latency; and the LLM above (timeout 4 s, one retry);
* this process: ``--concurrency`` clients sending a weighted mix of valid requests (``/ask``,
  ``/ask/stream``, ``/search``, ``/judge``, health/readiness/metrics) and invalid ones (malformed JSON,
  oversize bodies, missing fields, bad options and dates, wrong method, unknown route), plus ``--light``
  clients sending only the cheap ones every 0.2 s, for ``--duration`` seconds; requests in flight at the
  end are waited for, never dropped.

Reports requests sent and answered, status codes by class per kind, 5xx split into honest dependency
failures (503 with a reason) and failures of our code (any other 5xx, or 503 without a reason), lost
requests (sent − answered: transport errors and client timeouts), unexpected statuses, failed-request
exceptions in the server log, and the server's RSS at start, after warm-up and at the end. Exit status 1
when our code answered a 5xx or a request was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import (
    free_port,
    load_average,
    load_questions,
    machine_line,
    markdown_table,
    rss_bytes,
    start_server,
)

LLM_TIMEOUT_S = 4.0
LIGHT_PAUSE_S = 0.2
HEAVY = {"ask", "ask (options)", "ask/stream", "search", "judge"}  # kinds that run the pipeline or the LLM


# --- the scripted LLM ---------------------------------------------------------------------------------


def schema_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A minimal instance of a JSON schema (enough for the schemas our prompts send)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return schema_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return schema_instance(options[0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {
            name: schema_instance(props[name], defs) for name in schema.get("required", []) if name in props
        }
    if kind == "array":
        return [schema_instance(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def fine_content(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    text = json.dumps(body.get("messages", []))
    schema = (fmt.get("json_schema") or {}).get("schema")
    if schema is not None:
        value = schema_instance(schema)
        if isinstance(value, dict) and "ladder" in value:
            value["ladder"] = ['"neoplasms"[mh] AND "therapeutics"[mh]', "cancer[tiab] AND treatment[tiab]"]
            value["corrected_question"] = "cancer treatment"
        return json.dumps(value)
    if fmt:  # json_object without a schema: not our first rung, answer something plausible
        return json.dumps({"answer_choice": "A", "step_by_step_thinking": "x"})
    pmid = re.search(r"PMID:?\s*(\d+)", text)
    cite = f" [PMID:{pmid.group(1)}]" if pmid else ""
    return f"The studies found suggest a modest benefit{cite}. Ask your care team how this applies to you."


def llm_app(seed: int, timeout_s: float) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    rng = random.Random(seed)

    def envelope(content: str, model: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-soak",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }

    def chunk(delta: dict[str, Any], model: str, finish: str | None = None) -> bytes:
        payload = {
            "id": "chatcmpl-soak",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload)}\n\n".encode()

    async def completions(request: Request) -> Response:
        body = await request.json()
        model = str(body.get("model", "scripted"))
        draw = rng.random()
        if draw < 0.15:  # slower than the service's budget: LLMTimeout, then the extractive fallback
            await asyncio.sleep(timeout_s + 2)
        elif draw < 0.25:
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error"}}, status_code=500)
        elif draw < 0.40:
            garbage = rng.choice(["not json at all", '{"answer_choice": ', "[]", "<html>oops</html>"])
            if rng.random() < 0.3:
                return Response(b'{"choices": [{"message": ', media_type="application/json")
            content = garbage
        else:
            content = fine_content(body)
        if not body.get("stream"):
            return JSONResponse(envelope(content, model))

        async def events() -> Any:
            yield chunk({"role": "assistant", "content": ""}, model)
            words = content.split(" ")
            torn = draw >= 0.25 and draw < 0.40 and rng.random() < 0.5
            for i, word in enumerate(words):
                if torn and i == len(words) // 2:
                    yield b"data: {not json\n\n"  # a torn stream
                    return
                yield chunk({"content": word + (" " if i < len(words) - 1 else "")}, model)
                await asyncio.sleep(0)
            yield chunk({}, model, "stop")
            usage = {"prompt_tokens": 100, "completion_tokens": len(words), "total_tokens": 100 + len(words)}
            last = {"id": "chatcmpl-soak", "object": "chat.completion.chunk", "created": 0, "model": model}
            yield f"data: {json.dumps({**last, 'choices': [], 'usage': usage})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/models", models),
            Route("/health", health),
        ]
    )


def serve_llm(port: int, seed: int) -> None:
    import uvicorn

    uvicorn.run(llm_app(seed, LLM_TIMEOUT_S), host="127.0.0.1", port=port, log_level="warning")


# --- the request mix ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    name: str
    weight: int
    expected: frozenset[int]  # statuses that are a correct answer to this request
    build: Callable[[random.Random, list[str]], dict[str, Any]]


def _ask(rng: random.Random, qs: list[str]) -> dict[str, Any]:
    return {"method": "POST", "url": "/ask", "json": {"question": rng.choice(qs)}}


def _ask_choice(rng: random.Random, qs: list[str]) -> dict[str, Any]:
    options = {"A": "yes", "B": "no", "C": "maybe"}
    return {"method": "POST", "url": "/ask", "json": {"question": rng.choice(qs), "options": options}}


def _stream(rng: random.Random, qs: list[str]) -> dict[str, Any]:
    return {"method": "POST", "url": "/ask/stream", "json": {"question": rng.choice(qs)}}


def _search(rng: random.Random, qs: list[str]) -> dict[str, Any]:
    return {"method": "POST", "url": "/search", "json": {"question": rng.choice(qs)}}


def _judge(rng: random.Random, qs: list[str]) -> dict[str, Any]:
    answers = [
        {"source_id": "a", "text": "Surgery improves survival in early disease."},
        {"source_id": "b", "text": "Surgery did not change survival in this cohort."},
    ]
    return {"method": "POST", "url": "/judge", "json": {"question": rng.choice(qs), "answers": answers}}


def _raw(body: bytes) -> Callable[[random.Random, list[str]], dict[str, Any]]:
    def build(rng: random.Random, qs: list[str]) -> dict[str, Any]:
        return {
            "method": "POST",
            "url": "/ask",
            "content": body,
            "headers": {"content-type": "application/json"},
        }

    return build


def _json(payload: dict[str, Any], url: str = "/ask") -> Callable[[random.Random, list[str]], dict[str, Any]]:
    def build(rng: random.Random, qs: list[str]) -> dict[str, Any]:
        return {"method": "POST", "url": url, "json": payload}

    return build


def _get(url: str, method: str = "GET") -> Callable[[random.Random, list[str]], dict[str, Any]]:
    def build(rng: random.Random, qs: list[str]) -> dict[str, Any]:
        return {"method": method, "url": url}

    return build


OK = frozenset({200})
# An honest dependency failure (NCBI or LLM gave up within the budget) is a correct answer too.
OK_OR_DEP = frozenset({200, 503})
KINDS = [
    Kind("ask", 30, OK_OR_DEP, _ask),
    Kind("ask (options)", 6, OK_OR_DEP, _ask_choice),
    Kind("ask/stream", 6, OK, _stream),  # failures arrive as an `error` event inside a 200 stream
    Kind("search", 6, OK_OR_DEP, _search),
    Kind("judge", 4, OK_OR_DEP, _judge),
    Kind(
        "healthz/readyz/metrics",
        6,
        OK_OR_DEP,
        lambda r, q: _get(r.choice(["/healthz", "/readyz", "/metrics"]))(r, q),
    ),
    Kind("bad JSON", 6, frozenset({422}), _raw(b'{"question": "my dad has lung cancer",')),
    Kind("not an object", 3, frozenset({422}), _raw(b'["a question"]')),
    Kind("oversize body", 4, frozenset({413}), _json({"question": "x" * 300_000})),
    Kind("missing question", 5, frozenset({422}), _json({"options": {"A": "yes"}})),
    Kind("question too long", 3, frozenset({422}), _json({"question": "cancer " * 700})),
    Kind("blank question", 3, frozenset({422}), _json({"question": "   "})),
    Kind("bad options", 4, frozenset({422}), _json({"question": "is chemo useful?", "options": {"A": ""}})),
    Kind(
        "bad max_documents", 3, frozenset({422}), _json({"question": "is chemo useful?", "max_documents": 0})
    ),
    Kind("mindate without maxdate", 3, frozenset({422}), _json({"question": "chemo?", "mindate": "2015"})),
    Kind(
        "bad date", 3, frozenset({422}), _json({"question": "chemo?", "mindate": "20x5", "maxdate": "2020"})
    ),
    Kind(
        "judge, one answer",
        3,
        frozenset({422}),
        _json({"question": "q", "answers": [{"source_id": "a", "text": "t"}]}, "/judge"),
    ),
    Kind("GET /ask", 2, frozenset({405}), _get("/ask")),
    Kind("unknown route", 2, frozenset({404}), _get("/nope", "POST")),
]


# --- the run ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str
    status: int | None  # None: no HTTP answer (lost)
    reason: str | None
    error: str | None
    stream_end: str | None


async def send(http: httpx.AsyncClient, kind: Kind, rng: random.Random, qs: list[str]) -> Outcome:
    spec = kind.build(rng, qs)
    try:
        if spec["url"] == "/ask/stream":
            async with http.stream(spec["method"], spec["url"], json=spec.get("json")) as r:
                text = (await r.aread()).decode(errors="replace")
            events = re.findall(r"^event: (\w+)", text, flags=re.M)
            end = events[-1] if events else "none"
            reason = None
            if end == "error":
                data = re.findall(r"^data: (.*)$", text, flags=re.M)
                reason = json.loads(data[-1]).get("error") if data else None
            return Outcome(kind.name, r.status_code, reason, None, end)
        r = await http.request(
            spec["method"],
            spec["url"],
            json=spec.get("json"),
            content=spec.get("content"),
            headers=spec.get("headers"),
        )
    except httpx.HTTPError as exc:
        return Outcome(kind.name, None, None, type(exc).__name__, None)
    return Outcome(kind.name, r.status_code, failure_reason(r), None, None)


def failure_reason(r: httpx.Response) -> str | None:
    """Why a 5xx happened, as the body says: ``{"error", "reason"}``, or /readyz's failing checks."""
    if r.status_code < 500:
        return None
    try:
        body = r.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if body.get("reason"):
        return f"{body.get('error')}: {body['reason']}"
    checks = body.get("checks")
    if isinstance(checks, dict):  # /readyz: not ready because a named dependency failed its probe
        failed = [
            f"{name} {c.get('reason')}"
            for name, c in checks.items()
            if isinstance(c, dict) and not c.get("ok")
        ]
        if failed and all(not f.endswith(" None") for f in failed):
            return "not ready: " + ", ".join(failed)
    return None


async def soak(
    base: str, duration: float, concurrency: int, light: int, seed: int, pid: int, timeout_s: float
) -> dict[str, Any]:
    qs = load_questions()
    rng = random.Random(seed)
    weights = [k.weight for k in KINDS]
    outcomes: list[Outcome] = []
    sent = 0
    rss: dict[str, int] = {"start": rss_bytes(pid)}
    rss_max = rss["start"]
    stop_at = time.monotonic() + duration
    warm_at = time.monotonic() + min(60.0, duration / 3)

    light_kinds = [k for k in KINDS if k.name not in HEAVY]
    light_weights = [k.weight for k in light_kinds]

    async def worker(i: int, http: httpx.AsyncClient) -> None:
        nonlocal sent
        wrng = random.Random(rng.random())
        while time.monotonic() < stop_at:
            kind = wrng.choices(KINDS, weights)[0]
            sent += 1
            outcomes.append(await send(http, kind, wrng, qs))

    async def light_worker(i: int, http: httpx.AsyncClient) -> None:
        # Cheap requests at a steady pace while the mix workers sit in long /ask calls: the service must
        # keep answering them (422/413/404/405, health) promptly under load.
        nonlocal sent
        wrng = random.Random(rng.random())
        while time.monotonic() < stop_at:
            kind = wrng.choices(light_kinds, light_weights)[0]
            sent += 1
            outcomes.append(await send(http, kind, wrng, qs))
            await asyncio.sleep(LIGHT_PAUSE_S)

    async def sampler() -> None:
        nonlocal rss_max
        last_print = time.monotonic()
        while time.monotonic() < stop_at:
            await asyncio.sleep(2)
            now_rss = rss_bytes(pid)
            rss_max = max(rss_max, now_rss)
            if "warm" not in rss and time.monotonic() >= warm_at:
                rss["warm"] = now_rss
            if time.monotonic() - last_print >= 30:
                last_print = time.monotonic()
                left = max(0, stop_at - time.monotonic())
                print(
                    f"  {len(outcomes)} answered, {sent - len(outcomes)} in flight, {left:.0f} s left, "
                    f"RSS {now_rss / 2**20:.0f} MiB, load {load_average()}",
                    flush=True,
                )

    limits = httpx.Limits(max_connections=concurrency + light + 2)
    # No request may hang forever, but a queued /ask on 2 busy cores can take minutes.
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as http:
        await asyncio.gather(
            sampler(),
            *(worker(i, http) for i in range(concurrency)),
            *(light_worker(i, http) for i in range(light)),
        )
    rss["end"] = rss_bytes(pid)
    rss_max = max(rss_max, rss["end"])
    rss.setdefault("warm", rss["end"])
    return {"outcomes": outcomes, "sent": sent, "rss": rss, "rss_max": rss_max}


def status_class(o: Outcome) -> str:
    if o.status is None:
        return "lost"
    return f"{o.status // 100}xx"


def report(result: dict[str, Any], log_text: str, duration: float) -> int:
    outcomes: list[Outcome] = result["outcomes"]
    expected = {k.name: k.expected for k in KINDS}
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    unexpected: Counter[str] = Counter()
    dep_503: Counter[str] = Counter()
    bugs: Counter[str] = Counter()
    stream_ends: Counter[str] = Counter()
    for o in outcomes:
        by_kind[o.kind][status_class(o)] += 1
        if o.status is not None:
            by_kind[o.kind][str(o.status)] += 1
        if o.stream_end:
            stream_ends[f"{o.stream_end}" + (f" ({o.reason})" if o.reason else "")] += 1
        if o.status is None:
            continue
        if o.status == 503 and o.reason:
            dep_503[
                o.reason.split(":")[0] + ": " + o.reason.split(":")[1].strip()
                if ":" in o.reason
                else o.reason
            ] += 1
        elif o.status >= 500:
            bugs[f"{o.kind} -> {o.status}"] += 1
        if o.status not in expected[o.kind]:
            unexpected[f"{o.kind} -> {o.status}"] += 1
    answered = sum(1 for o in outcomes if o.status is not None)
    lost_by = Counter(f"{o.kind}: {o.error}" for o in outcomes if o.status is None)
    lost = result["sent"] - answered
    classes = Counter(status_class(o) for o in outcomes)
    failures = Counter(re.findall(r'"event": "request_failed".*?"exception": "(\w+)"', log_text))

    rows = []
    for k in KINDS:
        c = by_kind.get(k.name, Counter())
        total = sum(v for key, v in c.items() if key.endswith("xx") or key == "lost")
        codes = ", ".join(f"{code} x{n}" for code, n in sorted(c.items()) if code.isdigit())
        rows.append([k.name, total, codes or "-", ", ".join(str(s) for s in sorted(k.expected))])
    print("\nRequests by kind\n")
    print(markdown_table(["kind", "answered", "statuses", "expected"], rows))

    mib = 2**20
    rss = result["rss"]
    summary = [
        ["duration", f"{duration:.0f} s"],
        ["requests sent", result["sent"]],
        ["requests answered", answered],
        ["**lost** (sent − answered)", lost],
        ["lost, by client-side error", ", ".join(f"{k} x{v}" for k, v in lost_by.items()) or "-"],
        ["status classes", ", ".join(f"{k} {v}" for k, v in sorted(classes.items()))],
        ["503 with a reason (honest dependency failure)", sum(dep_503.values())],
        ["**5xx from our code** (other 5xx, or 503 without reason)", sum(bugs.values())],
        ["unexpected statuses", ", ".join(f"{k} x{v}" for k, v in unexpected.items()) or "0"],
        ["/ask/stream endings", ", ".join(f"{k} x{v}" for k, v in stream_ends.items()) or "-"],
        [
            "server log: failed requests by exception",
            ", ".join(f"{k} x{v}" for k, v in failures.items()) or "0",
        ],
        [
            "server RSS start / after warm-up / end / max",
            " / ".join(f"{v / mib:.0f}" for v in (rss["start"], rss["warm"], rss["end"], result["rss_max"]))
            + " MiB",
        ],
        ["RSS growth after warm-up", f"{(rss['end'] - rss['warm']) / mib:+.0f} MiB"],
        ["load average at the end", load_average()],
    ]
    print("\nSoak summary\n")
    print(markdown_table(["", "value"], summary))
    if dep_503:
        print("\n503 reasons: " + "; ".join(f"{k} x{v}" for k, v in dep_503.most_common()))
    if bugs:
        print("\n5xx from our code: " + "; ".join(f"{k} x{v}" for k, v in bugs.most_common()))
    return 1 if bugs or lost else 0


def run(args: argparse.Namespace) -> int:
    llm_port, api_port = free_port(), free_port()
    print(f"machine: {machine_line()}")
    print(
        f"soak: {args.duration:.0f} s, {args.concurrency} mix clients + {args.light} light clients, "
        f"seed {args.seed}",
        flush=True,
    )
    env = {
        "COMETA_LLM__BACKEND": "openai",
        "COMETA_LLM__BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
        "COMETA_LLM__MODEL": "scripted",
        "COMETA_LLM__TIMEOUT_S": str(LLM_TIMEOUT_S),
        "COMETA_LLM__MAX_RETRIES": "1",
        "COMETA_API__RATE_LIMIT_PER_MINUTE": "0",
        # E-utilities: the in-process local server answers 429 above 15 req/s; our client may send 20.
        "COMETA_LOCAL_SERVER__RATE_LIMIT": "true",
        "COMETA_LOCAL_SERVER__RATE_NO_KEY": "15",
        "COMETA_EUTILS__REQUESTS_PER_SECOND": "20",
        "COMETA_EUTILS__TIMEOUT_S": "5",
        "COMETA_EUTILS__CACHE__TTL_S": "3600",
        "COMETA_EUTILS__CACHE__MAX_ENTRIES": "4096",
        "COMETA_LOCAL_SERVER__FAULTS__SEED": str(args.seed),
        "COMETA_LOCAL_SERVER__FAULTS__LATENCY_MS_MIN": "20",
        "COMETA_LOCAL_SERVER__FAULTS__LATENCY_MS_MAX": "100",
        "COMETA_LOCAL_SERVER__FAULTS__ERROR_500_RATE": "0.04",
        "COMETA_LOCAL_SERVER__FAULTS__HTML_RATE": "0.02",
        "COMETA_LOCAL_SERVER__FAULTS__TRUNCATED_RATE": "0.04",
        "COMETA_LOCAL_SERVER__FAULTS__RATELIMIT_2XX_RATE": "0.02",
        "COMETA_LOCAL_SERVER__FAULTS__STALL_RATE": "0.01",
        "COMETA_LOCAL_SERVER__FAULTS__STALL_S": "8",
    }
    if args.debug_log:
        env["COMETA_DEBUG_LOG_QUESTIONS"] = "true"
    llm_args = ["bench/soak.py", "llm-server", "--port", str(llm_port), "--seed", str(args.seed)]
    api_args = ["-m", "app.cli", "serve", "--offline", "--port", str(api_port)]
    with (
        start_server(llm_args, port=llm_port, ready_path="/health"),
        start_server(api_args, port=api_port, ready_path="/healthz", env=env) as api,
    ):
        started = time.monotonic()
        result = asyncio.run(
            soak(api.base_url, args.duration, args.concurrency, args.light, args.seed, api.pid, args.timeout)
        )
        elapsed = time.monotonic() - started
        log_text = api.log_tail(chars=50_000_000)
    code = report(result, log_text, elapsed)
    if args.debug_log:
        for tb in re.findall(r"Traceback \(most recent call last\):.*?\n(?=\S)[^\n]*", log_text, flags=re.S)[
            :3
        ]:
            print("\n```\n" + tb[-3000:] + "\n```")
    return code


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "llm-server":
        ap = argparse.ArgumentParser()
        ap.add_argument("--port", type=int, required=True)
        ap.add_argument("--seed", type=int, default=1)
        a = ap.parse_args(sys.argv[2:])
        serve_llm(a.port, a.seed)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=600, help="seconds of load (in-flight requests finish)")
    ap.add_argument("--concurrency", type=int, default=6, help="clients sending the full mix")
    ap.add_argument("--light", type=int, default=2, help="extra clients sending only cheap requests")
    ap.add_argument("--timeout", type=float, default=600, help="client timeout per request, s (then: lost)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--debug-log",
        action="store_true",
        help="COMETA_DEBUG_LOG_QUESTIONS=true: the server logs tracebacks (and the synthetic questions)",
    )
    sys.exit(run(ap.parse_args()))


if __name__ == "__main__":
    main()
