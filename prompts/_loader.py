"""Versioned prompt files: ``<name>.v<version>.md`` inside this package.

File layout::

    ---
    name: rewrite_query
    version: 1
    description: one line
    variables: [question, current_year]
    ---
    ## system
    ...text...
    ## user
    ...text with {question}...

Templating is plain :meth:`str.format` (no Jinja, no logic): ``{name}`` is a variable, a literal brace is
written ``{{`` / ``}}``. Only the template is parsed, never the values, so a value containing braces (or
anything else) is inserted verbatim. Field access and conversions (``{a.b}``, ``{a!r}``, ``{a:>3}``) are
refused at load time so that a prompt file can never reach into the objects it is rendered with.

The ``variables`` list in the front matter is the contract: a template that uses an undeclared variable,
or declares one it never uses, fails to load; rendering with a missing or unknown variable raises
:class:`PromptError`.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable

from core import CometaError

__all__ = ["PromptError", "PromptTemplate", "available_prompts", "load_prompt"]

_FILE_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)\.v(?P<version>[0-9]+)\.md$")
_SECTION_RE = re.compile(r"^## (system|user)[ \t]*$", re.MULTILINE)
_ROLES = ("system", "user")


class PromptError(CometaError, ValueError):
    """A prompt file that cannot be loaded, or a render call with missing/unknown variables."""


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    name: str
    version: int
    description: str
    variables: tuple[str, ...]
    # (role, template) in file order; roles are "system" and/or "user".
    sections: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str:
        """Stable identifier recorded next to every LLM result, e.g. ``rewrite_query@1``."""
        return f"{self.name}@{self.version}"

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages (``[{"role": ..., "content": ...}]``) with every variable filled in."""
        missing = sorted(set(self.variables) - values.keys())
        unknown = sorted(values.keys() - set(self.variables))
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown {', '.join(unknown)}")
            raise PromptError(f"prompt {self.id}: {'; '.join(parts)} (declared: {', '.join(self.variables)})")
        text_values = {key: str(value) for key, value in values.items()}
        return [{"role": role, "content": body.format_map(text_values)} for role, body in self.sections]


def available_prompts() -> dict[str, list[int]]:
    """Every prompt name in the package with its versions, ascending."""
    found: dict[str, list[int]] = {}
    for entry in _package_dir().iterdir():
        match = _FILE_RE.match(entry.name)
        if match:
            found.setdefault(match["name"], []).append(int(match["version"]))
    return {name: sorted(versions) for name, versions in sorted(found.items())}


def load_prompt(name: str, version: int | None = None) -> PromptTemplate:
    """The prompt ``name`` at ``version`` (the highest version when ``None``)."""
    versions = available_prompts().get(name)
    if not versions:
        raise PromptError(f"no prompt named {name!r}")
    if version is None:
        version = versions[-1]
    elif version not in versions:
        raise PromptError(f"prompt {name!r} has no version {version} (available: {versions})")
    return _load(name, version)


def _package_dir() -> Traversable:
    return files(__package__ or "prompts")


@cache
def _load(name: str, version: int) -> PromptTemplate:
    filename = f"{name}.v{version}.md"
    text = _package_dir().joinpath(filename).read_text(encoding="utf-8")
    return _parse(text, filename=filename, name=name, version=version)


def _parse(text: str, *, filename: str, name: str, version: int) -> PromptTemplate:
    meta, body = _split_front_matter(text, filename)
    if meta.get("name") != name or meta.get("version") != str(version):
        raise PromptError(f"{filename}: front matter name/version must be {name!r}/{version}")
    declared = _parse_list(meta.get("variables", ""))

    markers = list(_SECTION_RE.finditer(body))
    if not markers:
        raise PromptError(f"{filename}: needs a '## system' and/or '## user' section")
    if body[: markers[0].start()].strip():
        raise PromptError(f"{filename}: text before the first section")
    sections: list[tuple[str, str]] = []
    for i, marker in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(body)
        sections.append((marker.group(1), body[marker.end() : end].strip("\n")))
    roles = [role for role, _ in sections]
    if len(set(roles)) != len(roles):
        raise PromptError(f"{filename}: duplicate section")

    used: set[str] = set()
    for role, template in sections:
        used |= _fields(template, f"{filename} ({role})")
    if used != set(declared):
        raise PromptError(
            f"{filename}: variables used {sorted(used)} differ from declared {sorted(declared)}"
        )
    return PromptTemplate(
        name=name,
        version=version,
        description=meta.get("description", ""),
        variables=tuple(declared),
        sections=tuple(sections),
    )


def _split_front_matter(text: str, filename: str) -> tuple[dict[str, str], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise PromptError(f"{filename}: must start with a '---' front matter block")
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise PromptError(f"{filename}: unterminated front matter")
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise PromptError(f"{filename}: bad front matter line {line.strip()!r}")
        meta[key.strip()] = value.strip()
    return meta, "".join(lines[end + 1 :])


def _parse_list(value: str) -> list[str]:
    inner = value.strip().removeprefix("[").removesuffix("]")
    return [item.strip() for item in inner.split(",") if item.strip()]


def _fields(template: str, where: str) -> set[str]:
    names: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:  # a lone "{" or "}" — the author forgot to double it
        raise PromptError(f"{where}: {exc}") from exc
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise PromptError(f"{where}: only plain {{name}} fields are allowed, got {{{field}}}")
        names.add(field)
    return names
