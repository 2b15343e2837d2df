"""README.md and docs/ as tested reference (issue 30).

The README stays short (at most 150 lines); every relative link in the README and under docs/ reaches a file
(and, with ``#anchor``, a heading of it); every ``docs/NAME.md`` the code or the reference docs name exists;
and every shell example marked ``<!-- test: run -->`` (or ``<!-- test: run, slow -->``) on the line before
its fence runs offline and exits 0. Examples that need a network, a server or minutes carry no mark.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._paths import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
MAX_README_LINES = 150

MARK = re.compile(r"<!--\s*test:\s*run(?P<slow>,\s*slow)?\s*-->")
FENCE = re.compile(r"^(`{3,})\s*(?P<lang>[\w-]*)")
RUNNABLE = {"bash", "sh", "console"}
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
DOC_PATH = re.compile(r"(?<![\w./])docs/[\w./-]+\.md\b")  # not ../shared/docs/...
EXTERNAL = ("http://", "https://", "mailto:")
# Where a doc path may be named in prose or code; the dated notes under docs/history/ keep their words.
NAMING = (
    "app",
    "core",
    "llm",
    "retrieval",
    "segmentation",
    "eval",
    "scripts",
    "bench",
    "deploy",
    "prompts",
    "tests",
)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (blank in their place, so numbers still match)."""
    out, fence = [], ""
    for line in text.splitlines():
        match = FENCE.match(line.strip())
        if fence:
            if match and line.strip().startswith(fence) and not match.group("lang"):
                fence = ""
            out.append("")
        elif match:
            fence = match.group(1)
            out.append("")
        else:
            out.append(line)
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = LINK.sub(lambda m: m.group(0)[1 : m.group(0).index("]")], heading)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = _slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(_prose_lines(path.read_text(encoding="utf-8")), 1):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            found.append((number, match.group("target")))
    return found


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for number, target in _links(page):
        if target.startswith(EXTERNAL):
            continue
        name, _, anchor = target.partition("#")
        dest = (page.parent / name).resolve() if name else page
        if not dest.exists():
            broken.append(f"{_rel(page)}:{number}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{_rel(page)}:{number}: {target} (no heading #{anchor} in {_rel(dest)})")
    assert not broken, "\n".join(broken)


def test_named_doc_paths_exist() -> None:
    # A moved or deleted page leaves "see docs/X.md" behind in docstrings, settings and error messages.
    files = [README, REPO / "Dockerfile", *(p for p in DOCS.glob("*.md"))]
    for folder in NAMING:
        files += [
            p for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".md", ".json", ".yaml", ".toml"}
        ]
    missing = sorted(
        f"{_rel(path)}: {name}"
        for path in files
        if path.is_file() and path != Path(__file__).resolve()
        for name in set(DOC_PATH.findall(path.read_text(encoding="utf-8", errors="replace")))
        if not (REPO / name).exists()
    )
    assert not missing, "\n".join(missing)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    script: str
    slow: bool

    @property
    def id(self) -> str:
        return f"{_rel(self.page)}:{self.line}"


STRAY: list[str] = []  # marks not right above a shell fence


def _examples(page: Path) -> list[Example]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    for index, line in enumerate(lines):
        mark = MARK.fullmatch(line.strip())
        if not mark:
            continue
        fence = FENCE.match(lines[index + 1].strip()) if index + 1 < len(lines) else None
        if not fence or fence.group("lang") not in RUNNABLE:
            STRAY.append(f"{_rel(page)}:{index + 1}")
            continue
        body = []
        for inner in lines[index + 2 :]:
            if inner.strip().startswith(fence.group(1)):
                break
            body.append(inner)
        if fence.group("lang") == "console":  # only the prompted lines are commands
            body = [b.strip()[2:] for b in body if b.strip().startswith("$ ")]
        found.append(Example(page, index + 2, "\n".join(body), bool(mark.group("slow"))))
    return found


EXAMPLES = [e for page in PAGES for e in _examples(page)]


def test_marks_sit_on_shell_blocks() -> None:
    # A mark anywhere else would silently test nothing.
    assert not STRAY, f"<!-- test: run --> not right above a bash/sh/console fence: {STRAY}"


def test_the_readme_has_a_runnable_example() -> None:
    assert any(e.page == README for e in EXAMPLES)


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=e.id, marks=[pytest.mark.slow] if e.slow else []) for e in EXAMPLES]
)
def test_marked_examples_run(example: Example, tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "cometa").exists():
        pytest.skip("cometa is not installed in this environment (pip install -e .)")
    # The docs write `.venv/bin/` as a fresh checkout has it; here the venv is the one running the tests.
    script = example.script.replace(".venv/bin/", f"{bin_dir}/")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # This checkout's code, even when the venv's cometa is an editable install of another one.
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
        # Collections an example adds go to a scratch folder, never the user's.
        "COMETA_COLLECTIONS__ROOT": str(tmp_path / "collections"),
    }
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, f"{example.id} exited {out.returncode}\n{script}\n{out.stderr[-3000:]}"
    assert out.stdout.strip(), f"{example.id} printed nothing"
