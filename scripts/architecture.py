"""Keep the module map in ``docs/architecture.md`` true: one line per module, from its docstring.

    python scripts/architecture.py            # print the map
    python scripts/architecture.py --write    # rewrite the map between the markers in docs/architecture.md
    python scripts/architecture.py --check    # exit 1 when the committed map is stale (tests run this)

Also the size rules of the layout: no folder with more than ``MAX_MODULES`` modules, no module over
``MAX_LINES`` lines (``--check`` reports both).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
START, END = "<!-- module-map:start -->", "<!-- module-map:end -->"
# Layer order, lowest first (the import contract in pyproject.toml enforces it).
PACKAGES = ("core", "segmentation", "llm", "prompts", "retrieval", "app", "eval")
MAX_MODULES = 12
MAX_LINES = 900


def summary(path: Path) -> str:
    """The first sentence-line of a module's docstring (``—`` if it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        return "—"
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence, dot, _ = paragraph.partition(". ")
    return (sentence + dot.strip()).replace("|", "\\|")


def package_dirs() -> list[Path]:
    out: list[Path] = []
    for name in PACKAGES:
        root = REPO / name
        out.extend(sorted(p.parent for p in root.rglob("__init__.py") if "__pycache__" not in p.parts))
    return out


def module_map() -> str:
    lines: list[str] = []
    for pkg in package_dirs():
        dotted = ".".join(pkg.relative_to(REPO).parts)
        lines.append(f"**`{dotted}`** — {summary(pkg / '__init__.py')}")
        lines.append("")
        for mod in sorted(pkg.glob("*.py")):
            if mod.name == "__init__.py":
                continue
            lines.append(f"- `{mod.name}` — {summary(mod)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def size_problems() -> list[str]:
    problems: list[str] = []
    tests = REPO / "tests"
    for folder in [*package_dirs(), tests, *sorted(p for p in tests.rglob("*") if p.is_dir())]:
        if "__pycache__" in folder.parts or "fixtures" in folder.parts:
            continue
        modules = list(folder.glob("*.py"))
        if len(modules) > MAX_MODULES:
            problems.append(f"{folder.relative_to(REPO)}: {len(modules)} modules (> {MAX_MODULES})")
    for pkg in package_dirs():
        for mod in pkg.glob("*.py"):
            n = len(mod.read_text(encoding="utf-8").splitlines())
            if n > MAX_LINES:
                problems.append(f"{mod.relative_to(REPO)}: {n} lines (> {MAX_LINES})")
    return problems


def render(doc: str) -> str:
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n\n{module_map()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not (args.write or args.check):
        sys.stdout.write(module_map())
        return 0
    doc = DOC.read_text(encoding="utf-8")
    if START not in doc or END not in doc:
        print(f"{DOC}: markers {START} / {END} missing", file=sys.stderr)
        return 1
    if args.write:
        DOC.write_text(render(doc), encoding="utf-8")
        return 0
    status = 0
    if render(doc) != doc:
        print(f"{DOC.relative_to(REPO)} is stale: python scripts/architecture.py --write", file=sys.stderr)
        status = 1
    for problem in size_problems():
        print(problem, file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
