"""The layout rules hold: the import contract, the module map in docs/architecture.md, the size rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._procs import REPO

sys.path.insert(0, str(REPO))
from scripts.import_contracts import allowed, private_owner

LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
    "lint-imports"
)


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS, "import-linter is a test dependency"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(REPO)])}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_private_module_rule() -> None:
    assert private_owner("retrieval.ncbi._pubmed") == "retrieval.ncbi"
    assert private_owner("retrieval.ncbi") is None and private_owner("app.__init__") is None
    assert allowed("retrieval.ncbi._server", "retrieval.ncbi._pubmed")  # inside the package
    assert allowed("eval.medrgb._suite", "eval._runner")  # a subpackage inside the owner
    assert not allowed("app.asker", "retrieval.ncbi._pubmed")
    assert not allowed("retrieval.ncbi2.x", "retrieval.ncbi._pubmed")  # a prefix is not a parent


def test_the_repository_keeps_its_import_contract() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def test_the_contract_catches_a_private_import_and_a_layer_breach(tmp_path: Path) -> None:
    (tmp_path / "low").mkdir()
    (tmp_path / "low" / "__init__.py").write_text("from ._impl import thing\n")
    (tmp_path / "low" / "_impl.py").write_text("thing = 1\n")
    (tmp_path / "high").mkdir()
    (tmp_path / "high" / "__init__.py").write_text("from low._impl import thing\n")  # private, across
    (tmp_path / "low" / "up.py").write_text("import high\n")  # and a lower layer importing a higher
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_packages =\n    low\n    high\n"
        "contract_types =\n    private_modules: scripts.import_contracts.PrivateModulesContract\n\n"
        "[importlinter:contract:layers]\nname = layers\ntype = layers\nlayers =\n    high\n    low\n\n"
        "[importlinter:contract:private]\nname = private\ntype = private_modules\npackages =\n"
        "    low\n    high\n"
    )
    result = _lint(tmp_path, "--config", str(tmp_path / ".importlinter"))
    assert result.returncode == 1
    assert "high -> low._impl" in result.stdout
    assert "low.up -> high" in result.stdout


def test_module_map_is_current_and_sizes_hold() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "architecture.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["core", "segmentation", "llm", "prompts"])
def test_lower_packages_never_import_the_app(name: str) -> None:
    code = f"import sys, {name}; print([m for m in sys.modules if m.split('.')[0] in ('app', 'eval')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_image_copies_every_first_party_package() -> None:
    """The Dockerfile's build stage copies each top-level package pyproject installs (a missing one, core/,
    made ``pip install .`` fail: issue 30), and nothing it copies is unknown to pyproject."""
    import re
    import tomllib

    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    top = {p.split(".")[0] for p in packages}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (REPO / "Dockerfile").read_text(), flags=re.M))
    assert top - copied == set(), f"packages not copied into the image: {sorted(top - copied)}"
    assert copied - top == set(), f"copied but not installed: {sorted(copied - top)}"


def test_caches_follow_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every rebuildable cache lives under ``$XDG_CACHE_HOME/cometa`` (issue 30), read when used."""
    from core import user_cache_dir
    from retrieval.embed import default_index_dir, default_index_root

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir() == tmp_path / "cometa"
    assert default_index_root() == tmp_path / "cometa" / "index"
    assert default_index_dir("st:m").parent == tmp_path / "cometa" / "index"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid per the spec: ignored
    assert user_cache_dir() == Path.home() / ".cache" / "cometa"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == Path.home() / ".cache" / "cometa"


def _service_names(value: object) -> list[str]:
    """``depends_on`` as a list or a mapping of service names."""
    return list(value) if isinstance(value, (list, dict)) else []


def test_the_compose_file_names_only_what_exists() -> None:
    """deploy/compose.yaml, which no machine here can run: every service it depends on exists (with a
    healthcheck where it waits for health), every named volume is declared, every file it mounts is in
    deploy/, the image it runs is the one it builds from our Dockerfile, nginx proxies to a service's
    exposed port, the indexer runs a real ``cometa`` command, and the image's health check calls a route
    the API serves. (The COMETA_* variables are checked in tests/retrieval/eutils/test_store.py.)"""
    import re

    import yaml
    from typer.testing import CliRunner

    from app.api import create_app
    from app.cli import app as cli

    deploy = REPO / "deploy"
    compose = yaml.safe_load((deploy / "compose.yaml").read_text(encoding="utf-8"))
    services: dict[str, dict[str, Any]] = compose["services"]
    declared = set(compose.get("volumes") or {})
    built = {str(s["image"]) for s in services.values() if "build" in s}
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        if "build" in service:
            build = service["build"]
            assert isinstance(build, dict)
            dockerfile = deploy / str(build["context"]) / str(build["dockerfile"])
            assert dockerfile.resolve() == REPO / "Dockerfile", name
        if str(service.get("image", "")).startswith("cometa:"):
            assert service["image"] in built, f"{name} runs an image nothing here builds"
        needs = service.get("depends_on") or []
        for other in _service_names(needs):
            assert other in services, f"{name} depends on a missing service {other}"
            if isinstance(needs, dict) and needs[other].get("condition") == "service_healthy":
                assert "healthcheck" in services[other], f"{name} waits for {other}'s health: none defined"
        for mount in service.get("volumes") or []:
            source = str(mount).split(":")[0]
            if source.startswith("./"):
                assert (deploy / source).is_file(), f"{name} mounts a missing file {source}"
            elif not source.startswith("$"):
                assert source in declared, f"{name} mounts an undeclared volume {source}"
    upstreams = re.findall(r"^\s*server (\w[\w-]*):(\d+)", (deploy / "nginx.conf").read_text(), flags=re.M)
    assert upstreams
    for host, port in upstreams:
        assert port in [str(p) for p in services[host].get("expose", [])], (host, port)
    entry = [str(a) for a in services["indexer"]["entrypoint"]]
    assert entry[0] == "cometa"
    words = [a for a in entry[1:] if not a.startswith("-") and not a.startswith("/")]
    assert CliRunner().invoke(cli, [*words[:2], "--help"]).exit_code == 0, words
    image = (REPO / "Dockerfile").read_text(encoding="utf-8")
    health = re.search(r"HEALTHCHECK[^\n]*\n[^\n]*http://127\.0\.0\.1:8000(/\w+)", image)
    assert health is not None
    assert health.group(1) in create_app().openapi()["paths"], health.group(1)
