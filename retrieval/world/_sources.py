"""Readers of the shared data sets the world is built from; each fails with a clear :class:`WorldInputError`.

Every reader returns plain data in a stable order (sorted by name or PMID) and registers the bytes it read
in an :class:`Inputs` ledger, so the manifest can list each input with its SHA-256.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import CometaError

__all__ = [
    "REQUIRED_INPUTS",
    "Inputs",
    "WorldInputError",
    "read_cohen",
    "read_hoc",
    "read_medline_samples",
    "read_mesh_2015",
    "read_pubmedqa",
    "read_retractions",
    "read_trials",
]

PUBMEDQA = "pubmedqa/ori_pqal.json"
MESH_C04 = "mesh/mesh_c04_neoplasms.json"
MESH_2015_NAMES = "mesh/all_descriptors_2015/descriptor_names.tsv"
MESH_2015_TREES = "mesh/all_descriptors_2015/tree_numbers.tsv.gz"
RETRACTIONS = "retractions/pubmed_retractions.tsv"
TRIALS_TAR = "evidence_inference/pmc_xml_files.tar.gz"
HOC_TAR = "hallmarks_of_cancer/hoc_text_labels.tar.gz"
COHEN_ONLINE = "cohen2006/online"
COHEN_RAW = "cohen2006/raw"
MEDLINE = "medline_samples"
REQUIRED_INPUTS = (
    PUBMEDQA,
    MESH_C04,
    MESH_2015_NAMES,
    MESH_2015_TREES,
    RETRACTIONS,
    TRIALS_TAR,
    HOC_TAR,
    COHEN_ONLINE,
    COHEN_RAW,
    MEDLINE,
)

_PMID_RE = re.compile(rb"<PMID[^>]*>\s*(\d+)\s*</PMID>")
_ARTICLE_RE = re.compile(rb"<PubmedArticle[\s>].*?</PubmedArticle>", re.DOTALL)
_CITATION_RE = re.compile(rb"<MedlineCitation[\s>].*?</MedlineCitation>", re.DOTALL)
# Removed from every record by NLM in 2018 (pubmed_180101.dtd on); without it 2016 records validate.
_DATE_CREATED_RE = re.compile(rb"<DateCreated>.*?</DateCreated>\s*", re.DOTALL)


class WorldInputError(CometaError):
    """An input folder of the world build is missing, incomplete or malformed."""


@dataclass
class Inputs:
    """The data folder and a ledger of every file read from it (relative path -> sha256, bytes)."""

    root: Path
    files: dict[str, tuple[str, int]] = field(default_factory=dict)

    def check(self) -> None:
        if not self.root.is_dir():
            raise WorldInputError(f"input folder not found: {self.root}")
        missing = [rel for rel in REQUIRED_INPUTS if not (self.root / rel).exists()]
        if missing:
            raise WorldInputError(f"{self.root} lacks {', '.join(missing)} (is it the shared data folder?)")

    def read(self, rel: str) -> bytes:
        path = self.root / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WorldInputError(f"cannot read {path}: {exc}") from exc
        self.files[rel] = (hashlib.sha256(data).hexdigest(), len(data))
        return data

    def listing(self, rel: str, suffix: str) -> list[str]:
        folder = self.root / rel
        names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.endswith(suffix))
        if not names:
            raise WorldInputError(f"{folder} holds no *{suffix} file")
        return [f"{rel}/{n}" for n in names]


def _gunzip(data: bytes, rel: str) -> bytes:
    try:
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    except (OSError, EOFError) as exc:
        raise WorldInputError(f"{rel}: not a readable gzip file ({exc})") from exc


def _json(data: bytes, rel: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise WorldInputError(f"{rel}: not valid JSON ({exc})") from exc


def read_pubmedqa(inputs: Inputs) -> dict[str, dict[str, Any]]:
    items = _json(inputs.read(PUBMEDQA), PUBMEDQA)
    if not isinstance(items, dict) or not all(str(k).isdigit() for k in items):
        raise WorldInputError(f"{PUBMEDQA}: expected an object keyed by PMID")
    return {k: items[k] for k in sorted(items, key=int)}


def read_c04(inputs: Inputs) -> bytes:
    data = inputs.read(MESH_C04)
    if "descriptors" not in _json(data, MESH_C04):
        raise WorldInputError(f"{MESH_C04}: no 'descriptors' list")
    return data


def read_mesh_2015(inputs: Inputs) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """MeSH 2015: descriptor name -> UI, and UI -> tree numbers."""
    names: dict[str, str] = {}
    text = inputs.read(MESH_2015_NAMES).decode("utf-8")
    for row in _tsv(text, MESH_2015_NAMES, ("mesh_id", "mesh_name")):
        names.setdefault(row["mesh_name"], row["mesh_id"])
    trees: dict[str, list[str]] = {}
    text = _gunzip(inputs.read(MESH_2015_TREES), MESH_2015_TREES).decode("utf-8")
    for row in _tsv(text, MESH_2015_TREES, ("mesh_id", "mesh_tree_number")):
        trees.setdefault(row["mesh_id"], []).append(row["mesh_tree_number"])
    return names, {ui: tuple(sorted(t)) for ui, t in sorted(trees.items())}


def _tsv(text: str, rel: str, columns: tuple[str, ...]) -> Iterator[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    if not reader.fieldnames or not set(columns) <= set(reader.fieldnames):
        raise WorldInputError(f"{rel}: expected columns {', '.join(columns)}, got {reader.fieldnames}")
    yield from reader


def read_retractions(inputs: Inputs) -> frozenset[str]:
    lines = [ln.strip() for ln in inputs.read(RETRACTIONS).decode("utf-8").splitlines() if ln.strip()]
    bad = [ln for ln in lines if not ln.isdigit()]
    if bad:
        raise WorldInputError(f"{RETRACTIONS}: expected one PMID a line, got {bad[0]!r}")
    return frozenset(lines)


def _csv_rows(data: bytes, rel: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 24)  # some abstracts exceed the default 128 KiB field limit
    reader = csv.DictReader(io.StringIO(_gunzip(data, rel).decode("utf-8")))
    if not reader.fieldnames or not set(columns) <= set(reader.fieldnames):
        raise WorldInputError(f"{rel}: expected columns {', '.join(columns)}, got {reader.fieldnames}")
    try:
        return list(reader)
    except csv.Error as exc:
        raise WorldInputError(f"{rel}: malformed CSV ({exc})") from exc


@dataclass(frozen=True)
class CohenData:
    rows: dict[str, dict[str, str]]  # PMID -> online row (title, abstract, authors, year)
    mesh: dict[str, tuple[str, ...]]  # PMID -> MeSH descriptor names (raw 'keywords')
    reviews: dict[str, tuple[str, ...]]  # PMID -> reviews (topics) that screened it


def read_cohen(inputs: Inputs) -> CohenData:
    """The ASReview Cohen 2006 tables: ``online`` for text and year, ``raw`` for MeSH names."""
    rows: dict[str, dict[str, str]] = {}
    reviews: dict[str, list[str]] = {}
    for rel in inputs.listing(COHEN_ONLINE, ".csv.gz"):
        topic = Path(rel).name.removesuffix(".csv.gz")
        for row in _csv_rows(inputs.read(rel), rel, ("pubmedID", "title", "abstract", "year", "authors")):
            pmid = (row.get("pubmedID") or "").strip()
            if not pmid.isdigit():
                continue  # rows whose PubMed record could not be retrieved upstream
            rows.setdefault(pmid, row)
            reviews.setdefault(pmid, []).append(topic)
    mesh: dict[str, tuple[str, ...]] = {}
    for rel in inputs.listing(COHEN_RAW, ".csv.gz"):
        for row in _csv_rows(inputs.read(rel), rel, ("pubmedID", "keywords")):
            pmid = (row.get("pubmedID") or "").strip()
            names = tuple(n.strip() for n in (row.get("keywords") or "").split(";") if n.strip())
            if pmid.isdigit() and names:
                mesh.setdefault(pmid, names)
    ordered = sorted(rows, key=int)
    return CohenData(
        rows={p: rows[p] for p in ordered},
        mesh={p: mesh[p] for p in sorted(mesh, key=int)},
        reviews={p: tuple(sorted(set(reviews[p]))) for p in ordered},
    )


def _tar_members(data: bytes, rel: str, prefix: str, suffix: str) -> list[tuple[str, bytes]]:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            out = []
            for m in tar.getmembers():
                if m.isfile() and m.name.startswith(prefix) and m.name.endswith(suffix):
                    f = tar.extractfile(m)
                    if f is not None:
                        out.append((Path(m.name).name, f.read()))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise WorldInputError(f"{rel}: not a readable tar archive ({exc})") from exc
    if not out:
        raise WorldInputError(f"{rel}: no {prefix}*{suffix} member")
    return sorted(out)


def read_trials(inputs: Inputs) -> list[tuple[str, bytes]]:
    """The Evidence Inference PMC articles: (file name, JATS bytes), sorted by name."""
    return _tar_members(inputs.read(TRIALS_TAR), TRIALS_TAR, "xml_files/", ".nxml")


def read_hoc(inputs: Inputs) -> dict[str, tuple[str, ...]]:
    """Hallmarks of Cancer: PMID -> the abstract's sentences (the text/ members)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, data in _tar_members(inputs.read(HOC_TAR), HOC_TAR, "text/", ".txt"):
        pmid = name.removesuffix(".txt")
        if pmid.isdigit():
            out[pmid] = tuple(ln for ln in data.decode("utf-8").splitlines() if ln.strip())
    return {p: out[p] for p in sorted(out, key=int)}


@dataclass(frozen=True)
class MedlineRecord:
    pmid: str
    xml: bytes  # one <PubmedArticle> element
    source: str  # the shared file it came from
    edits: tuple[str, ...]  # what was changed from the source bytes (empty: verbatim)


def read_medline_samples(inputs: Inputs) -> tuple[list[MedlineRecord], dict[str, int]]:
    """The complete MEDLINE sample records as ``<PubmedArticle>`` bytes, and the count skipped per file.

    ``PubmedArticle`` elements are kept verbatim. ``MedlineCitationSet`` files (2014/2016) are wrapped in a
    ``<PubmedArticle>`` with ``DateCreated`` dropped (NLM removed it in 2018); a record that still does not
    fit the 2025 DTD (the 2014 sample's untyped publication types) is skipped and counted.
    """
    from lxml import etree  # lxml is a dependency of retrieval.ncbi; imported here for the DTD check

    out: list[MedlineRecord] = []
    skipped: dict[str, int] = {}
    for rel in inputs.listing(MEDLINE, ".xml.gz"):
        data = _gunzip(inputs.read(rel), rel)
        head = data[:2000]
        items: list[tuple[bytes, tuple[str, ...]]]
        if b"<PubmedArticleSet" in head:
            items = [(m, ()) for m in _ARTICLE_RE.findall(data)]
        elif b"<MedlineCitationSet" in head:
            items = [
                (b"<PubmedArticle>" + _DATE_CREATED_RE.sub(b"", m) + b"</PubmedArticle>", ("DateCreated",))
                for m in _CITATION_RE.findall(data)
            ]
        else:
            raise WorldInputError(f"{rel}: neither a PubmedArticleSet nor a MedlineCitationSet")
        for xml, edits in items:
            pm = _PMID_RE.search(xml)
            if pm is None:
                raise WorldInputError(f"{rel}: a record without a PMID")
            if edits and not _fits_2025(etree, xml):
                skipped[rel] = skipped.get(rel, 0) + 1
                continue
            removed = tuple(f"{e} removed (not in pubmed_250101.dtd)" for e in edits)
            out.append(MedlineRecord(pm.group(1).decode(), xml, rel, removed))
    return out, skipped


def _fits_2025(etree: Any, xml: bytes) -> bool:
    """Cheap structural check standing in for the DTD (not shipped with the package): the 2014 sample's
    PublicationType lacks the UI attribute and its Author elements predate the 2025 content model."""
    el = etree.fromstring(xml)
    pts = el.findall(".//PublicationTypeList/PublicationType")
    return bool(pts) and all(pt.get("UI") is not None for pt in pts)
