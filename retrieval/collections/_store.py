"""Institutional collections on disk: a store of parsed handbooks (:class:`CollectionStore`).

**Store.** ``root/NAME/collection.json`` (the :class:`CollectionMeta`), ``root/NAME/documents/ID.json``
(one parsed :class:`InstDocument` each) and ``root/NAME/index/`` (cached chunk vectors, written by
:mod:`._search`). Re-ingest is idempotent by content: a file whose sha256 is already in the collection is
``unchanged`` (whatever its name, unless new attributes are given for it); a file whose id (its slugged
stem) exists with other bytes is ``updated``; anything else is ``added``. Writes are atomic and serialised
per collection by a lock file.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core import CometaError, OnProgress

from ._config import CollectionSettings
from ._ingest import IngestError, InstDocument, detect_format, iter_files, parse_document, slugify

__all__ = [
    "COLLECTION_NAME_PATTERN",
    "Collection",
    "CollectionError",
    "CollectionMeta",
    "CollectionNotFound",
    "CollectionStore",
    "IngestReport",
    "InvalidCollectionName",
    "default_collections_root",
]

COLLECTION_NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_NAME_RE: Final = re.compile(COLLECTION_NAME_PATTERN)


class CollectionError(CometaError):
    """Base of the collection errors."""


class CollectionNotFound(CollectionError, LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no collection named {name!r}")
        self.name = name


class InvalidCollectionName(CollectionError, ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"invalid collection name {name!r}: lower-case letters, digits, '_' and '-', starting with a "
            "letter or digit, at most 64 characters"
        )
        self.name = name


class CollectionMeta(BaseModel):
    """Per-collection metadata, stored as ``collection.json``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=COLLECTION_NAME_PATTERN)
    institution: str = ""
    topic: str = ""  # organ or topic, e.g. "kidney transplant"
    care_phase: str = ""  # e.g. "post-transplant"
    version_date: str | None = None  # ISO date of the handbook version
    private: bool = False  # private collections are default-deny (policies are enforced by the service)
    description: str = ""

    @field_validator("version_date")
    @classmethod
    def _iso_date(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError as exc:
            raise ValueError(f"version_date must be an ISO date (YYYY-MM-DD), got {value!r}") from exc


@dataclass
class Collection:
    meta: CollectionMeta
    documents: list[InstDocument]
    path: Path | None = None  # its folder in a store; None for an in-memory collection (no index cache)

    @property
    def name(self) -> str:
        return self.meta.name

    def document(self, doc_id: str) -> InstDocument | None:
        return next((d for d in self.documents if d.doc_id == doc_id), None)


@dataclass(frozen=True)
class IngestReport:
    added: list[str] = field(default_factory=list)  # doc ids
    unchanged: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # path -> reason


def default_collections_root(settings: CollectionSettings | None = None) -> Path:
    """``settings.root``, else ``$XDG_DATA_HOME/cometa/collections`` (``~/.local/share/...``)."""
    if settings is not None and settings.root is not None:
        return settings.root.expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cometa" / "collections"


def atomic_write(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file and a rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class CollectionStore:
    """Collections on disk under ``root`` (see the module docstring for the layout and the rules)."""

    def __init__(self, root: Path | None = None, *, max_file_bytes: int = 50_000_000) -> None:
        self.root = Path(root).expanduser() if root is not None else default_collections_root()
        self.max_file_bytes = max_file_bytes

    @classmethod
    def from_settings(cls, settings: CollectionSettings) -> CollectionStore:
        return cls(default_collections_root(settings), max_file_bytes=settings.max_file_bytes)

    def _dir(self, name: str) -> Path:
        if not _NAME_RE.match(name):
            raise InvalidCollectionName(name)
        return self.root / name

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[Path]:
        folder = self._dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield folder
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def exists(self, name: str) -> bool:
        return (self._dir(name) / "collection.json").is_file()

    def add(
        self,
        name: str,
        paths: Sequence[Path],
        meta: CollectionMeta | None = None,
        *,
        attributes: Mapping[str, str] | None = None,
        on_progress: OnProgress | None = None,
    ) -> IngestReport:
        """Ingest ``paths`` (files; directories are walked for supported types) into collection ``name``,
        creating it if needed. ``meta`` replaces the stored metadata when given; ``attributes`` are set on
        every document ingested by this call. ``on_progress(files done, files)`` follows every file."""
        if meta is not None and meta.name != name:
            raise InvalidCollectionName(f"{name} (metadata names {meta.name!r})")
        attrs = {str(k): str(v) for k, v in (attributes or {}).items()}
        report = IngestReport()
        with self._locked(name) as folder:
            stored_meta = self._read_meta(folder)
            new_meta = meta or stored_meta or CollectionMeta(name=name)
            docs = {d.doc_id: d for d in self._read_docs(folder, name)}
            by_sha = {d.sha256: d.doc_id for d in docs.values()}
            changed: dict[str, InstDocument] = {}
            files = list(iter_files([Path(p) for p in paths]))
            for done, (path, explicit) in enumerate(files, start=1):
                doc: InstDocument | str | None = None
                try:
                    doc = self._ingest_one(path, name, docs, by_sha, attrs if attributes else None)
                except IngestError as exc:
                    if explicit or not isinstance(exc, _Unsupported):
                        report.failed[str(path)] = str(exc)
                if on_progress is not None:
                    on_progress(done, len(files))
                if doc is None:
                    continue
                if isinstance(doc, str):  # unchanged: the id it is stored under
                    if doc not in report.unchanged:
                        report.unchanged.append(doc)
                    continue
                (report.updated if doc.doc_id in docs else report.added).append(doc.doc_id)
                docs[doc.doc_id] = doc
                by_sha[doc.sha256] = doc.doc_id
                changed[doc.doc_id] = doc
            for doc in changed.values():
                atomic_write(folder / "documents" / f"{doc.doc_id}.json", json.dumps(doc.to_json()))
            if changed or meta is not None or stored_meta is None:
                atomic_write(folder / "collection.json", new_meta.model_dump_json(indent=2))
        return report

    def _ingest_one(
        self,
        path: Path,
        name: str,
        docs: Mapping[str, InstDocument],
        by_sha: Mapping[str, str],
        attrs: Mapping[str, str] | None,
    ) -> InstDocument | str:
        if not path.exists():
            raise IngestError(f"{path}: no such file or directory", path=str(path))
        try:
            fmt = detect_format(path)
        except IngestError as exc:
            raise _Unsupported(str(exc), path=str(path)) from exc
        try:
            size = path.stat().st_size
            if size > self.max_file_bytes:
                raise IngestError(f"{path.name}: {size:,} bytes exceeds the {self.max_file_bytes:,} limit")
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
        sha = hashlib.sha256(data).hexdigest()
        doc_id = slugify(path.stem) or sha[:12]
        owner = docs.get(doc_id)
        if owner is not None and owner.source_name != path.name:
            doc_id = f"{doc_id}-{fmt}"  # a.md and a.html in one collection: two documents
            owner = docs.get(doc_id)
        known = by_sha.get(sha)
        if known is not None:
            same = docs[known]
            if attrs is None or dict(same.attributes) == dict(attrs):
                return known
            # Same bytes, new attributes: the stored parse stays, only the attributes change.
            return InstDocument(
                same.doc_id, name, same.title, same.source_name, same.format, sha, same.sections, dict(attrs)
            )
        keep = dict(owner.attributes) if owner is not None and attrs is None else dict(attrs or {})
        return parse_document(path, name, doc_id=doc_id, attributes=keep, data=data)

    def list(self) -> list[CollectionMeta]:
        if not self.root.is_dir():
            return []
        out = []
        for folder in sorted(self.root.iterdir()):
            if folder.is_dir() and _NAME_RE.match(folder.name):
                meta = self._read_meta(folder)
                if meta is not None:
                    out.append(meta)
        return out

    def get(self, name: str) -> Collection:
        folder = self._dir(name)
        meta = self._read_meta(folder)
        if meta is None:
            raise CollectionNotFound(name)
        return Collection(meta=meta, documents=self._read_docs(folder, name), path=folder)

    def remove(self, name: str) -> None:
        folder = self._dir(name)
        if not (folder / "collection.json").is_file():
            raise CollectionNotFound(name)
        shutil.rmtree(folder)

    def set_meta(self, meta: CollectionMeta) -> None:
        """Replace an existing collection's metadata."""
        with self._locked(meta.name) as folder:
            if self._read_meta(folder) is None:
                raise CollectionNotFound(meta.name)
            atomic_write(folder / "collection.json", meta.model_dump_json(indent=2))

    @staticmethod
    def _read_meta(folder: Path) -> CollectionMeta | None:
        path = folder / "collection.json"
        if not path.is_file():
            return None
        try:
            return CollectionMeta.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise CollectionError(f"collection {folder.name}: unreadable collection.json: {exc}") from exc

    @staticmethod
    def _read_docs(folder: Path, name: str) -> builtins.list[InstDocument]:
        docs_dir = folder / "documents"
        if not docs_dir.is_dir():
            return []
        docs = []
        for path in sorted(docs_dir.glob("*.json")):
            try:
                doc = InstDocument.from_json(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CollectionError(f"collection {name}: damaged document file {path.name}: {exc}") from exc
            docs.append(doc if doc.collection == name else _rename(doc, name))
        return docs


class _Unsupported(IngestError):
    """A file of an unsupported type: skipped silently during a directory walk."""


def _rename(doc: InstDocument, name: str) -> InstDocument:
    return InstDocument(
        doc.doc_id, name, doc.title, doc.source_name, doc.format, doc.sha256, doc.sections, doc.attributes
    )
