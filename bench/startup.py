"""Cold start: from ``cometa serve --offline`` with an empty cache to ``/readyz`` ready and the first answer.

    .venv/bin/python bench/startup.py [--runs 1] [--warm] [--keep-cache] [--log] [--corpus-dir WORLD]

Each run starts the real command line (``python -m app.cli serve --offline``) on loopback with
``XDG_CACHE_HOME`` pointing at a fresh temporary folder, so every cache (the bundled dense index, the ONNX
export, the gate's calibration) starts empty, as on a fresh machine; ``--warm`` runs once more on the same
cache afterwards (a restart). A client waits for the port, then sends one ``POST /ask`` at once (the first
user does not wait for readiness) while it polls ``/readyz``. Reported, in seconds from the spawn: the
port open, ``/readyz`` 200, the first ``/ask`` 200, and the time stamps of the service's own log lines
about the index (``--log`` prints the log). The question is fixed and never logged. ``--corpus-dir`` serves
a world instead (``COMETA_LOCAL_SERVER__CORPUS_DIR``): its index is built at start-up, never prebuilt, so a
copy of ``retrieval/corpus`` there measures the build path the bundled corpus no longer takes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import REPO, free_port, load_average, machine_line, markdown_table, stop_process

QUESTION = "Does exercise help with knee osteoarthritis pain?"
DEADLINE_S = 600.0


@dataclass
class ColdStart:
    listening_s: float = float("nan")
    ready_s: float = float("nan")
    answered_s: float = float("nan")
    ask_status: int = 0
    mode: str = ""
    log: list[tuple[float, str]] = field(default_factory=list)  # (seconds from spawn, line)


def _pump(stream: object, start: float, out: list[tuple[float, str]]) -> None:
    for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
        out.append((time.monotonic() - start, raw.decode(errors="replace").rstrip()))


def cold_start(cache: Path, port: int, corpus_dir: Path | None = None) -> ColdStart:
    """One start of the service on ``cache``: spawn, wait for the port, ask once, poll readiness."""
    world = {"COMETA_LOCAL_SERVER__CORPUS_DIR": str(corpus_dir)} if corpus_dir else {}
    env = {
        **world,
        **os.environ,
        "XDG_CACHE_HOME": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
    }
    result = ColdStart()
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--offline", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    # Read the log as it comes (a full pipe would stall the server), time-stamped on arrival.
    pump = threading.Thread(target=_pump, args=(proc.stdout, start, result.log), daemon=True)
    pump.start()
    base = f"http://127.0.0.1:{port}"
    try:
        while time.monotonic() - start < DEADLINE_S and proc.poll() is None:
            try:
                httpx.get(base + "/healthz", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        result.listening_s = time.monotonic() - start

        def ask() -> None:
            r = httpx.post(base + "/ask", json={"question": QUESTION}, timeout=DEADLINE_S)
            result.answered_s = time.monotonic() - start
            result.ask_status = r.status_code
            if r.status_code == 200:
                result.mode = str(r.json().get("mode", ""))

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        while time.monotonic() - start < DEADLINE_S and proc.poll() is None:
            try:
                if httpx.get(base + "/readyz", timeout=5).status_code == 200:
                    result.ready_s = time.monotonic() - start
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        asker.join(max(0.0, DEADLINE_S - (time.monotonic() - start)))
    finally:
        stop_process(proc)
        pump.join(timeout=5)
    return result


def _index_lines(log: list[tuple[float, str]]) -> list[str]:
    keys = ("dense index", "index", "calibration", "Uvicorn running", "passage store")
    return [f"{t:6.1f} s  {line[:160]}" for t, line in log if any(k in line for k in keys)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1, help="cold starts, each on its own empty cache")
    parser.add_argument("--warm", action="store_true", help="then one restart on the last run's cache")
    parser.add_argument("--keep-cache", action="store_true", help="leave the temporary caches in place")
    parser.add_argument("--log", action="store_true", help="print each run's full service log")
    parser.add_argument("--corpus-dir", type=Path, help="serve this world instead of the bundled corpus")
    args = parser.parse_args(argv)

    print(machine_line())
    rows = []
    with tempfile.TemporaryDirectory(prefix="cometa-startup-") as tmp:
        caches = [Path(tmp) / f"cache{i}" for i in range(args.runs)]
        plan = [("cold", c) for c in caches] + ([("warm", caches[-1])] if args.warm and caches else [])
        for kind, cache in plan:
            load = load_average()
            run = cold_start(cache, free_port(), args.corpus_dir)
            rows.append(
                [
                    kind,
                    f"{run.listening_s:.1f}",
                    f"{run.ready_s:.1f}",
                    f"{run.answered_s:.1f}",
                    f"{run.ask_status} {run.mode}",
                    load,
                ]
            )
            print(f"\n{kind} start on {cache}:")
            for line in [f"{t:6.1f} s  {x}" for t, x in run.log] if args.log else _index_lines(run.log):
                print("  " + line)
        if args.keep_cache:
            kept = Path(tempfile.mkdtemp(prefix="cometa-startup-kept-"))
            subprocess.run(["cp", "-a", tmp + "/.", str(kept)], check=True)
            print(f"caches kept in {kept}")
    print()
    print(
        markdown_table(
            ["start", "port open (s)", "/readyz 200 (s)", "first /ask 200 (s)", "/ask", "load avg 1/5/15"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
