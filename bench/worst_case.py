"""The worst valid request: adversarial but valid inputs through every question route, measured one at a time.

    .venv/bin/python bench/worst_case.py [--shapes all|NAME,...] [--routes all|NAME,...] [--chars 4000]
                                         [--corpus-dir WORLD] [--list]

Each input is a question the API accepts (at most ``MAX_QUESTION_CHARS``, 4,000 characters, by default exactly
that many): one 4,000-letter word, ``"ab" * 2000``, many short words, digits, punctuation, nested brackets
and quotes, Boolean-operator soup and field tags, misspellings, PHI, the scripts the language detector knows
(Cyrillic, CJK, Arabic, Devanagari, Hangul, kana) and Greek, mixed scripts, emoji, long medical narratives,
and the most sources a request may name (8). Each goes through ``/ask``, ``/ask/stream``, ``/search``,
``/v1/chat/completions`` (plain and streamed) and the MCP ``ask`` tool.

The service is the offline default (``create_app(Settings().offline())``: the bundled corpus, or
``--corpus-dir``'s world, behind the in-process local E-utilities server, MiniLM, bi-encoder rerank, no LLM),
served in this process over ``httpx.ASGITransport`` so that every cost is attributable to the one request in
flight: requests run one at a time, after warm-up requests on every route (model loading is not counted).
Per request:

- **CPU s**: this process's CPU time (every thread: the to_thread stages and the local E-utilities server
  included) while the request ran;
- **peak RSS growth, MB**: the kernel's high-water mark, reset before the request (``/proc/self/clear_refs``),
  minus the resident size at the start (sampled every 2 ms where the reset is not allowed);
- **loop lag, ms**: the longest delay of a 5 ms ticker task on the serving event loop while the request ran
  (how long one request kept every other request from being served).

Targets (issue 27): the worst request ≤ 1 s CPU, ≤ 50 MB RSS growth, ≤ 100 ms event-loop lag. Exit status 1
when a request misses one (or answers a 5xx).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import load_average, load_questions, machine_line, markdown_table

from app.schemas import MAX_QUESTION_CHARS

TARGET_CPU_S = 1.0
TARGET_RSS_MB = 50.0
TARGET_LAG_MS = 100.0
TICK_S = 0.005
MAX_SOURCES = 8  # AskRequest.sources: at most eight names

# --- the inputs -----------------------------------------------------------------------------------------


def _fill(unit: str, n: int, rng: random.Random) -> str:
    """``unit`` repeated to exactly ``n`` characters, from a random offset (a new text per route: no cache
    hit from the previous route's request)."""
    start = rng.randrange(len(unit))
    return (unit * (n // len(unit) + 2))[start : start + n]


def _letters(n: int, rng: random.Random, alphabet: str = "abcdefghijklmnopqrstuvwxyz") -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _short_words(n: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    while size <= n:  # the join has one space fewer than counted
        word = _letters(rng.randint(1, 4), rng)
        out.append(word)
        size += len(word) + 1
    return _exactly(" ".join(out), n)


def _nested(n: int, rng: random.Random) -> str:
    depth = n // 2
    return "(" * depth + ")" * (n - depth)


def _nested_mixed(n: int, rng: random.Random) -> str:
    opens, closes = "([{<\"'«“", ")]}>\"'»”"
    half = n // 2
    picks = [rng.randrange(len(opens)) for _ in range(half)]
    return "".join(opens[i] for i in picks) + "".join(closes[i] for i in reversed(picks))[: n - half]


def _narratives(n: int, rng: random.Random) -> str:
    qs = load_questions()
    rng.shuffle(qs)
    return " ".join(qs)[:n].rstrip()


def _typos(n: int, rng: random.Random) -> str:
    words = ["cancr", "chemotherpy", "radiatoin", "metastsis", "oncologst", "lymfoma", "tumour", "biopsey"]
    out: list[str] = []
    size = 0
    while size <= n:  # the join has one space fewer than counted
        w = rng.choice(words)
        i = rng.randrange(len(w))
        w = w[:i] + rng.choice("aeiouxyz") + w[i + 1 :]  # a new misspelling each time
        out.append(w)
        size += len(w) + 1
    return _exactly(" ".join(out), n)


def _exactly(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, a cut that ends in a space ending in a letter instead (the API
    strips nothing, but a question of exactly ``n`` characters should be ``n`` characters of the shape)."""
    text = text[:n]
    return text[:-1] + "a" if text.endswith(" ") else text


Shape = Callable[[int, random.Random], str]


def _unit(text: str) -> Shape:
    return lambda n, rng: _fill(text, n, rng)


SHAPES: dict[str, Shape] = {
    "baseline narrative": lambda n, rng: rng.choice(load_questions()),
    "one word (letters)": lambda n, rng: _letters(n, rng),
    "one word (medical)": _unit("carcinomametastasischemotherapy"),
    "ab * 2000": lambda n, rng: ("ab" * (n // 2 + 1))[:n],
    "many short words": _short_words,
    "medical words repeated": _unit("lung cancer chemotherapy survival breast tumor radiation "),
    "digits": lambda n, rng: "".join(rng.choice("0123456789") for _ in range(n)),
    "punctuation": lambda n, rng: "".join(rng.choice("!?.,;:-_/\\*&^%$#@~`+=|") for _ in range(n)),
    "nested parentheses": _nested,
    "nested brackets and quotes": _nested_mixed,
    "Boolean soup": _unit("cancer AND OR NOT chemo NOT AND OR "),
    "field tags": _unit('(cancer[tiab] AND "neoplasms"[mh] OR chemo[tiab:~3] NOT 2020:2024[dp]) '),
    "misspellings": _typos,
    "PHI": _unit("John Smith DOB 03/04/1961 MRN 44812345 phone 555-201-7788 john@example.com has cancer. "),
    "Cyrillic (ru)": _unit("У моей мамы рак лёгких, поможет ли химиотерапия продлить жизнь? "),
    "Greek": _unit("Η μητέρα μου έχει καρκίνο του πνεύμονα, θα βοηθήσει η χημειοθεραπεία; "),
    "CJK (zh)": _unit("我母亲得了肺癌，化疗能延长她的生命吗？"),
    "Japanese": _unit("母が肺がんと診断されました。化学療法で延命できますか？"),
    "Hangul (ko)": _unit("어머니가 폐암 진단을 받았습니다. 항암 치료가 도움이 될까요? "),
    "Arabic": _unit("أمي مصابة بسرطان الرئة، هل سيساعد العلاج الكيميائي على إطالة حياتها؟ "),
    "Devanagari (hi)": _unit("मेरी माँ को फेफड़ों का कैंसर है, क्या कीमोथेरेपी से मदद मिलेगी? "),
    "Latin accents (es)": _unit("¿La quimioterapia ayudará a mi madre con cáncer de pulmón avanzado? "),
    "mixed scripts": _unit("lung cancer рак 肺癌 سرطان कैंसर καρκίνος 폐암 cáncer "),
    "emoji": _unit("🩺💊🫁🎗️😷👨‍👩‍👧 "),
    "combining marks": _unit("ca\u0301\u0327\u0308ncer\u0336 "),
}

ROUTES = ("ask", "ask/stream", "search", "chat", "chat (stream)", "mcp ask")
# Asked again through /ask naming the most sources (/ask/stream answers PubMed only: 422 with sources).
SOURCES_SHAPES = ("baseline narrative", "medical words repeated")


def question_for(shape: str, n: int, seed: int) -> str:
    """The shape's text, at most ``n`` characters (``n`` exactly, but for the baseline narrative)."""
    text = SHAPES[shape](n, random.Random(seed))
    return text[:n]


def sources_list() -> list[str]:
    """The most sources a request may name: PubMed, local collection names and remote ``node/collection``s
    (none exists offline: each is answered "not available to you", after the same work as a real one)."""
    local = [f"handbook-{i}" for i in range(3)]
    remote = [f"node{i}/collection" for i in range(MAX_SOURCES - 1 - len(local))]
    return ["pubmed", *local, *remote]


@dataclass(frozen=True)
class Case:
    shape: str
    route: str
    question: str
    sources: tuple[str, ...] = ()
    documents: tuple[tuple[str, str], ...] = ()  # (mode, text) of each bring-your-own document
    mode: str = "replace"

    @property
    def label(self) -> str:
        if self.documents:
            chars = sum(len(t) for _, t in self.documents)
            return f"{self.shape} + {len(self.documents)} documents ({chars:,} chars, {self.mode})"
        return self.shape + (f" + {len(self.sources)} sources" if self.sources else "")


def documents_for(count: int, chars: int, seed: int) -> tuple[tuple[str, str], ...]:
    """``count`` bring-your-own documents of ``chars`` characters of medical prose each."""
    text = _narratives(10 * chars, random.Random(seed))
    rng = random.Random(seed)
    return tuple((f"doc {i}", _fill(text, chars, rng)) for i in range(count))


def cases(shapes: list[str], routes: list[str], chars: int, *, documents: bool = True) -> list[Case]:
    out: list[Case] = []
    for i, shape in enumerate(shapes):
        for j, route in enumerate(routes):
            out.append(Case(shape, route, question_for(shape, chars, 1000 * i + j)))
    for i, shape in enumerate(s for s in SOURCES_SHAPES if s in shapes):
        for j, route in enumerate(r for r in routes if r == "ask"):  # /ask/stream: PubMed only
            out.append(
                Case(shape, route, question_for(shape, chars, 7000 + 10 * i + j), tuple(sources_list()))
            )
    if "baseline narrative" in shapes and "ask" in routes and documents:
        # Bring-your-own evidence up to the API's body limit (256 KiB): as few long documents as /ask
        # answers from (max_documents, 50) in place of retrieval, and the most documents (200) beside it.
        for n, (count, size, mode) in enumerate(((50, 4_900, "replace"), (200, 1_200, "augment"))):
            q = question_for("baseline narrative", chars, 9000 + n)
            out.append(
                Case("baseline narrative", "ask", q, documents=documents_for(count, size, n), mode=mode)
            )
    return out


def request_for(case: Case) -> dict[str, Any]:
    """The HTTP request (method, url, json, headers) a case sends."""
    q = case.question
    if case.route in ("ask", "ask/stream"):
        body: dict[str, Any] = {"question": q}
        if case.sources:
            body["sources"] = list(case.sources)
        if case.documents:
            body["documents"] = [{"title": t, "text": text} for t, text in case.documents]
            body["documents_mode"] = case.mode
            body["max_documents"] = 50
        return {"url": "/" + case.route, "json": body}
    if case.route == "search":
        return {"url": "/search", "json": {"question": q}}
    if case.route in ("chat", "chat (stream)"):
        body = {"model": "cometa", "messages": [{"role": "user", "content": q}]}
        if case.route == "chat (stream)":
            body["stream"] = True
        return {"url": "/v1/chat/completions", "json": body}
    if case.route == "mcp ask":
        rpc = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": q}},
        }
        headers = {"accept": "application/json, text/event-stream"}
        return {"url": "/mcp", "json": rpc, "headers": headers}
    raise ValueError(f"unknown route {case.route!r}")


# --- the measurements -----------------------------------------------------------------------------------


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM) to the current RSS; False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@contextmanager
def peak_rss_growth() -> Iterator[dict[str, float]]:
    """``out["mb"]``: the peak resident size while the block ran, minus the size at its start."""
    out: dict[str, float] = {}
    gc.collect()
    start = _status_kb("VmRSS")
    exact = _reset_peak()
    peak = [start]
    stop = threading.Event()

    def sample() -> None:  # only where the high-water mark cannot be reset
        while not stop.wait(0.002):
            peak[0] = max(peak[0], _status_kb("VmRSS"))

    sampler = None if exact else threading.Thread(target=sample, daemon=True)
    if sampler is not None:
        sampler.start()
    try:
        yield out
    finally:
        stop.set()
        if sampler is not None:
            sampler.join()
        top = _status_kb("VmHWM") if exact else max(peak[0], _status_kb("VmRSS"))
        out["mb"] = max(0, top - start) / 1024


class LoopLag:
    """The longest delay of a ``tick_s`` ticker on the running loop: how long the loop served nobody."""

    def __init__(self, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self.max_s = 0.0
        self._since = time.perf_counter()
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            self._since = time.perf_counter()
            await asyncio.sleep(self.tick_s)
            self.max_s = max(self.max_s, time.perf_counter() - self._since - self.tick_s)

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)  # the ticker is running before the request starts
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        # A block that ran to the end of the request never let the ticker wake: count the pending tick too.
        self.max_s = max(self.max_s, time.perf_counter() - self._since - self.tick_s)
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


@dataclass
class Result:
    case: Case
    status: int
    outcome: str  # answer mode, "stream: done", "mcp: error", ...
    cpu_s: float
    rss_mb: float
    lag_ms: float
    wall_s: float

    def misses(self) -> list[str]:
        out = []
        if self.cpu_s > TARGET_CPU_S:
            out.append("CPU")
        if self.rss_mb > TARGET_RSS_MB:
            out.append("RSS")
        if self.lag_ms > TARGET_LAG_MS:
            out.append("lag")
        if self.status >= 500:
            out.append(str(self.status))
        return out

    def row(self) -> list[str]:
        return [
            self.case.label,
            self.case.route,
            str(self.status),
            self.outcome,
            f"{self.cpu_s:.2f}",
            f"{self.rss_mb:.1f}",
            f"{self.lag_ms:.0f}",
            f"{self.wall_s:.2f}",
            ", ".join(self.misses()) or "ok",
        ]


HEADER = [
    "input",
    "route",
    "status",
    "outcome",
    "CPU s",
    "peak RSS growth MB",
    "loop lag ms",
    "wall s",
    "target",
]


def outcome_of(route: str, status: int, text: str) -> str:
    """What the service answered, in a word: the answer mode, the stream's last event, the tool's error."""
    if status != 200:
        try:
            return str(json.loads(text).get("error", "?"))[:40]
        except (ValueError, AttributeError):
            return "?"
    if route == "ask/stream":
        events = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
        return "stream: " + (events[-1] if events else "none")
    if route == "chat (stream)":
        return "chat stream: " + ("done" if "data: [DONE]" in text else "unfinished")
    try:
        body = json.loads(text)
    except ValueError:
        return "not JSON"
    if route == "mcp ask":
        result = body.get("result") or {}
        if result.get("isError") or "error" in body:
            return "mcp: error"
        return "mcp: " + str((result.get("structuredContent") or {}).get("mode", "?"))
    if route == "search":
        return f"{len(body.get('evidence') or body.get('documents') or [])} docs"
    if route == "chat":
        return "chat: " + str(((body.get("cometa") or {}).get("mode")) or "answered")
    return str(body.get("mode", "?"))


async def measure(http: httpx.AsyncClient, case: Case) -> Result:
    spec = request_for(case)
    with peak_rss_growth() as rss:  # its gc.collect() first, outside the lag window
        async with LoopLag() as lag:
            cpu0, t0 = time.process_time(), time.perf_counter()
            r = await http.post(spec["url"], json=spec["json"], headers=spec.get("headers"))
            text = r.text
            cpu1, t1 = time.process_time(), time.perf_counter()
    return Result(
        case,
        r.status_code,
        outcome_of(case.route, r.status_code, text),
        cpu1 - cpu0,
        rss["mb"],
        lag.max_s * 1000,
        t1 - t0,
    )


async def warm_up(http: httpx.AsyncClient, routes: list[str]) -> None:
    """Unmeasured: the models, the speller's index, the language models and each route's first-use costs."""
    for i, q in enumerate([*load_questions(3), "¿Me ayudará la quimioterapia con el cáncer de pulmón?"]):
        for route in routes:
            r = await http.post(**request_for(Case("warm-up", route, q)), timeout=600)
            if r.status_code >= 500:
                raise RuntimeError(f"warm-up {route} answered {r.status_code}: {r.text[:500]}")
        if i == 0:
            print("  warm-up: models loaded", flush=True)


async def run(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if args.corpus_dir:
        os.environ["COMETA_LOCAL_SERVER__CORPUS_DIR"] = args.corpus_dir
    import logging

    from app import Settings, create_app

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    settings = Settings().offline()
    api = settings.api.model_copy(update={"rate_limit_per_minute": 0, "api_keys": []})
    shapes = list(SHAPES) if args.shapes == "all" else [s.strip() for s in args.shapes.split(",")]
    routes = list(ROUTES) if args.routes == "all" else [r.strip() for r in args.routes.split(",")]
    unknown = [s for s in shapes if s not in SHAPES] + [r for r in routes if r not in ROUTES]
    if unknown:
        raise SystemExit(f"unknown shape or route: {unknown}; --list shows them")
    todo = cases(shapes, routes, args.chars, documents=args.documents)
    print(f"machine: {machine_line()}")
    print(f"load average before: {load_average()}")
    print(
        f"{len(todo)} requests: {len(shapes)} inputs × {len(routes)} routes (+ the most sources), "
        f"{args.chars} characters each"
    )
    app = create_app(settings, api_settings=api)
    results: list[Result] = []
    started = time.perf_counter()
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost:8000", timeout=args.timeout
        ) as http:
            await warm_up(http, routes)
            for n, case in enumerate(todo, 1):
                res = await measure(http, case)
                results.append(res)
                print(f"  [{n}/{len(todo)}] " + " | ".join(res.row()), flush=True)
    wall = time.perf_counter() - started
    report(results)
    print(f"\nload average after: {load_average()}; {wall:.0f} s in all")
    return 1 if any(r.misses() for r in results) else 0


def report(results: list[Result]) -> None:
    print("\nPer request (one at a time, after warm-up)\n")
    print(markdown_table(HEADER, [r.row() for r in results]))
    print("\nWorst request per measure, against the targets\n")
    rows = []
    measures: list[tuple[str, Callable[[Result], float], float, str]] = [
        ("CPU", lambda r: r.cpu_s, TARGET_CPU_S, "s"),
        ("peak RSS growth", lambda r: r.rss_mb, TARGET_RSS_MB, "MB"),
        ("event-loop lag", lambda r: r.lag_ms, TARGET_LAG_MS, "ms"),
    ]
    for label, key, target, unit in measures:
        worst = max(results, key=key)
        ok = key(worst) <= target
        rows.append(
            [
                label,
                f"{key(worst):.2f} {unit}",
                f"{worst.case.label} via {worst.case.route}",
                f"≤ {target:g} {unit}",
                "✓" if ok else "✗",
            ]
        )
    print(markdown_table(["measure", "worst", "input", "target", "met"], rows))
    statuses: dict[int, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    print("\nstatuses: " + ", ".join(f"{k} ×{v}" for k, v in sorted(statuses.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="all", help="comma-separated input names (--list), or all")
    ap.add_argument("--routes", default="all", help=f"comma-separated routes of {', '.join(ROUTES)}, or all")
    ap.add_argument(
        "--chars", type=int, default=MAX_QUESTION_CHARS, help="question length (the API's maximum)"
    )
    ap.add_argument(
        "--documents",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the two bring-your-own-documents requests at the body limit",
    )
    ap.add_argument("--corpus-dir", default=None, help="a world built by cometa corpus build")
    ap.add_argument("--timeout", type=float, default=600, help="client timeout per request, s")
    ap.add_argument("--list", action="store_true", help="print the inputs and routes, and stop")
    args = ap.parse_args()
    if args.list:
        print("inputs: " + "; ".join(SHAPES))
        print("routes: " + "; ".join(ROUTES))
        return
    if not 1 <= args.chars <= MAX_QUESTION_CHARS:
        raise SystemExit(f"--chars must be 1..{MAX_QUESTION_CHARS}")
    raise SystemExit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
