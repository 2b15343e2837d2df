"""Custom import-linter contract: no module imports another package's private module.

A module path component that starts with ``_`` (``retrieval.ncbi._pmc``) is private to the package that
contains it (``retrieval.ncbi``): only modules inside that package may import it. Everything else imports the
package's ``__init__``, its one public path. Registered in ``pyproject.toml`` ([tool.importlinter]) and run by
``lint-imports`` in CI.
"""

from __future__ import annotations

from typing import Any

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


def private_owner(module: str) -> str | None:
    """The package a module is private to (the parent of its first ``_`` component), or None if public."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def allowed(importer: str, imported: str) -> bool:
    owner = private_owner(imported)
    return owner is None or importer == owner or importer.startswith(owner + ".")


class PrivateModulesContract(Contract):
    """Options: ``packages``, the root packages whose private modules are checked."""

    type_name = "private_modules"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        roots = tuple(str(p) for p in self.packages)  # type: ignore[attr-defined]
        illegal: list[dict[str, Any]] = []
        for importer in sorted(graph.modules):
            if not importer.startswith(roots):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported.split(".")[0] not in {r.split(".")[0] for r in roots} or allowed(
                    importer, imported
                ):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                illegal.append(
                    {"importer": importer, "imported": imported, "lines": [d["line_number"] for d in details]}
                )
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["illegal"]:
            lines = ", ".join(map(str, item["lines"]))
            output.print_error(f"- {item['importer']} -> {item['imported']} (l.{lines})", bold=False)
            output.new_line()
