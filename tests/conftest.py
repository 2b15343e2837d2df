"""Shared test fixtures. Nothing here may wait on the network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._paths import SHARED

# A hub lookup hangs ~80 s before failing on these machines; never let one start.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


# --- a real redis-server on loopback (the shared stores and limiters); skipped where none is installed ---


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import shutil
    import subprocess
    import time

    import redis

    from tests._procs import free_port

    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        pytest.skip("redis-server not installed (CI installs it; locally: apt-get install redis-server)")
    port, folder = free_port(), tmp_path_factory.mktemp("redis")
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""]
    with (folder / "redis.log").open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"redis-server did not start: {(folder / 'redis.log').read_text()[-2000:]}")
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """The session's redis-server, emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server)
    client.flushall()
    yield redis_server
    client.close()
