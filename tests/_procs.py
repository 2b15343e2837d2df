"""Starting our own server processes on loopback for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests._paths import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    args: Sequence[str],
    ready_path: str,
    *,
    port: int,
    env: dict[str, str] | None = None,
    deadline_s: float = 60,
    command: Sequence[str] = (sys.executable, "-m", "app.cli"),
) -> Iterator[str]:
    """Run ``COMMAND ARGS`` (default ``python -m app.cli ARGS``) until ``{base}{ready_path}`` answers 200;
    yield the base URL.

    Output goes to a file, not a pipe: nobody reads a pipe while tests run, and a chatty server would block
    once its buffer filled.
    """
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [*command, *args],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                if httpx.get(base + ready_path, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait(timeout=10)
                log.seek(0)
                pytest.fail(f"server did not start: {log.read().decode(errors='replace')[-3000:]}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextmanager
def serve_in_thread(app: Any, *, timeout_s: float = 30) -> Iterator[str]:
    """An ASGI app served by uvicorn on a free loopback port in a daemon thread; yields its base URL."""
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
