"""Institutional collections: ingest (PDF/HTML/Markdown/JATS), the store, HERO-QA retrieval, the CLI.

The four synthetic handbooks (tests/fixtures/handbooks) disagree on travel after transplant on purpose:
A (Northbridge, Markdown) 3 months, B (Riverside, HTML) 6 months, C (Lakeshore, PDF rendered here) 12
months, D (Hillcrest, JATS) says nothing about travel. Retrieval runs the real MiniLM encoder offline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from core import Encoder, FloatArray, OnProgress, light_stem
from retrieval import CometaError
from retrieval.collections import (
    Collection,
    CollectionError,
    CollectionMeta,
    CollectionNotFound,
    CollectionRetriever,
    CollectionSearchSettings,
    CollectionStore,
    InstDocument,
    InstEvidence,
    InvalidCollectionName,
    parse_document,
    parse_html,
    parse_markdown,
)
from retrieval.embed import BiEncoderReranker, DenseSettings, load_encoder
from tests.fixtures.handbooks.make_pdf import HANDBOOKS, build_handbooks, write_pdf

TRAVEL_Q = "when can I travel abroad after my transplant?"
DOC_IDS = {
    "northbridge": "northbridge-kidney",
    "riverside": "riverside-liver",
    "lakeshore": "lakeshore-transplant",
    "hillcrest": "hillcrest-liver",
}
LOW = CollectionSearchSettings(whole_doc_max_chars=1000)  # every handbook takes the retrieval route

LEAFLET = """TITLE: Wound Care After Surgery
HEADER: Northbridge University Hospital - Patient Information Leaflet 12
# Wound Care After Surgery
This leaflet explains how to look after your surgical wound at home during the first two weeks.
# KEEPING THE WOUND CLEAN
Keep the dressing dry and in place for forty-eight hours.
After that you may remove it and leave the wound open to the air if it is dry.
<<PAGEBREAK>>
# When can I shower?
You can shower after forty-eight hours.
Let the water run over the wound but do not scrub it, and pat it dry with a clean towel.
Do not take a bath or go swimming until the wound has fully healed, usually after two weeks.
<<PAGEBREAK>>
Avoid perfumed soaps, talcum powder and creams on or around the wound until it has healed.
# Stitches and clips
Stitches and clips are removed by the practice nurse ten to fourteen days after surgery.
"""


# --------------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def handbooks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_handbooks(tmp_path_factory.mktemp("handbooks"))


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return load_encoder(DenseSettings(encoder="sentence-transformers", device="cpu"))


@pytest.fixture(scope="module")
def combined(handbooks: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Collection:
    """All four handbooks in one stored collection (one index build for the whole module)."""
    store = CollectionStore(tmp_path_factory.mktemp("store"))
    report = store.add("transplant", list(handbooks.values()), CollectionMeta(name="transplant"))
    assert sorted(report.added) == sorted(DOC_IDS.values())
    return store.get("transplant")


def _search(
    retriever: CollectionRetriever, question: str, *, top_docs: int = 3, doc_id: str | None = None
) -> list[InstEvidence]:
    flt = None if doc_id is None else (lambda d: d.doc_id == doc_id)
    return asyncio.run(retriever.search(question, top_docs=top_docs, doc_filter=flt))


def _one(combined: Collection, encoder: Encoder, institution: str, **settings: Any) -> InstEvidence:
    params = LOW.model_copy(update=settings)
    retriever = CollectionRetriever(combined, encoder, None, params)
    (ev,) = _search(retriever, TRAVEL_Q, top_docs=1, doc_id=DOC_IDS[institution])
    return ev


# --------------------------------------------------------------------------------------------------
# Ingest: each format
# --------------------------------------------------------------------------------------------------


def _headings(doc: InstDocument) -> list[str]:
    return [s.heading for s in doc.sections]


def test_markdown_handbook_sections(handbooks: dict[str, Path]) -> None:
    doc = parse_document(handbooks["northbridge"], "a")
    assert (doc.doc_id, doc.format, doc.title) == (
        "northbridge-kidney",
        "markdown",
        "Living Well After Your Kidney Transplant",
    )
    heads = _headings(doc)
    assert len(heads) == 19
    # The H1 titles the preamble; H2 and H3 each start a section, in reading order.
    assert heads[:3] == [
        "Living Well After Your Kidney Transplant",
        "Your transplant team and how to reach us",
        "The first weeks at home",
    ]
    assert heads.index("Missed doses") == heads.index("Taking your medicines on time") + 1
    travel = next(s for s in doc.sections if s.heading == "Travel after your transplant")
    assert "first 3 months" in travel.body and "## " not in travel.body
    assert travel.section_id == f"{travel.order:03d}-travel-after-your-transplant"
    assert all(s.page_start is None and s.page_end is None for s in doc.sections)
    assert [s.order for s in doc.sections] == list(range(19))
    assert doc.text.startswith("Living Well After Your Kidney Transplant\nNorthbridge University Hospital")


def test_html_handbook_sections(handbooks: dict[str, Path]) -> None:
    doc = parse_document(handbooks["riverside"], "b")
    assert doc.format == "html"
    assert doc.title == "After Your Liver Transplant: A Guide for Patients and Families"
    heads = _headings(doc)
    assert heads[1:5] == [
        "Welcome home",
        "Your medications",
        "Rules for taking your medications",
        "If you miss a dose",
    ]
    assert "Travel" in heads
    text = doc.text
    # Navigation, scripts, styles and the footer are site furniture, not handbook text.
    for junk in ("analytics", "font-family", "Home |", "education only", "\u00a9"):
        assert junk not in text
    rules = next(s for s in doc.sections if s.heading == "Rules for taking your medications")
    # <li><p>...</p></li> contributes once, one paragraph per item.
    assert rules.body.count("Take tacrolimus every 12 hours") == 1
    assert len(rules.body.split("\n")) == 4
    travel = next(s for s in doc.sections if s.heading == "Travel")
    assert "at least 6 months" in travel.body


def test_pdf_handbook_sections_and_pages(handbooks: dict[str, Path]) -> None:
    doc = parse_document(handbooks["lakeshore"], "c")
    assert doc.format == "pdf"
    assert doc.title == "Lakeshore Medical Center Transplant Handbook"
    pages = {s.heading: (s.page_start, s.page_end) for s in doc.sections}
    assert pages == {
        "Lakeshore Medical Center Transplant Handbook": (1, 1),
        "1. Your Care Team": (1, 1),
        "2. Medications": (1, 1),
        "3. Infection Prevention": (1, 1),
        "4. Travel Guidance": (2, 2),
        "5. Nutrition": (2, 2),
        "6. Physical Activity": (3, 3),
        "7. Follow-up Visits": (3, 3),
        "8. When to Call": (3, 3),
    }
    travel = next(s for s in doc.sections if s.heading == "4. Travel Guidance")
    assert "during the first 12 months after transplant" in travel.body
    # Running header and page-number footer are dropped from every body.
    assert "Transplant Handbook" not in "".join(s.body for s in doc.sections[1:])
    assert "Page " not in doc.text


def test_pdf_multi_page_leaflet_headings_and_page_span(tmp_path: Path) -> None:
    pdf = write_pdf(LEAFLET, tmp_path / "wound_care.pdf")
    doc = parse_document(pdf, "leaflets")
    assert doc.title == "Wound Care After Surgery"
    got = [(s.heading, s.page_start, s.page_end) for s in doc.sections]
    assert got == [
        ("Wound Care After Surgery", 1, 1),
        ("KEEPING THE WOUND CLEAN", 1, 1),  # all-caps heading
        ("When can I shower?", 2, 3),  # a question heading; its body runs onto page 3
        ("Stitches and clips", 3, 3),
    ]
    shower = doc.sections[2]
    assert shower.body.endswith("until it has healed.")
    assert "Leaflet 12" not in doc.text and "Page 2" not in doc.text
    # A word processor's file-name /Title is ignored: the first heading titles the document.
    junk = LEAFLET.replace("TITLE: Wound Care After Surgery", "TITLE: Microsoft Word - wound_v3.docx")
    assert (
        parse_document(write_pdf(junk, tmp_path / "junk.pdf"), "leaflets").title == "Wound Care After Surgery"
    )


def test_jats_handbook_sections(handbooks: dict[str, Path]) -> None:
    doc = parse_document(handbooks["hillcrest"], "d")
    assert (doc.format, doc.title) == ("jats", "Caring for Yourself After Liver Transplantation")
    assert _headings(doc) == [
        "Abstract",
        "Introduction",
        "Building up your strength",  # nested <sec>s flatten; the wrapper "Diet and nutrition" has no text
        "Food safety",
        "Your medicines",
        "Recognising infection and rejection",
        "Driving",
        "Follow-up care",
        "Emotional wellbeing",
    ]
    medicines = next(s for s in doc.sections if s.heading == "Your medicines")
    assert "Never take two doses together" in medicines.body  # list items kept
    assert "nursing team" not in doc.text  # <back> is not body text
    assert "travel" not in doc.text.lower()


def test_markdown_parser_edge_cases() -> None:
    text = (
        "Intro before any heading.\n\n## Care\nline one\nline two\n\n"
        "```\n# not a heading\n```\n### Empty\n## Next ##\nbody"
    )
    title, sections = parse_markdown(text, default_title="Leaflet")
    assert title == "Leaflet"
    assert [(s.heading, s.body) for s in sections] == [
        ("Leaflet", "Intro before any heading."),
        ("Care", "line one line two\n# not a heading"),
        ("Next", "body"),  # "Empty" has no body and is dropped; closing #s are stripped
    ]


def test_html_without_h1_uses_title_element() -> None:
    title, sections = parse_html(
        b"<html><head><title>Diet sheet</title></head><body><p>Eat well.</p></body></html>"
    )
    assert title == "Diet sheet"
    assert [(s.heading, s.body) for s in sections] == [("Diet sheet", "Eat well.")]


def test_document_json_round_trip(handbooks: dict[str, Path]) -> None:
    doc = parse_document(handbooks["lakeshore"], "c", attributes={"department": "transplant"})
    assert InstDocument.from_json(json.loads(json.dumps(doc.to_json()))) == doc


def test_light_stem_conflates_inflections() -> None:
    assert {light_stem(w) for w in ("travel", "travels", "travelling", "traveled")} == {"travel"}
    assert light_stem("medications") == light_stem("medication")
    assert light_stem("holidays") == light_stem("holiday")
    assert light_stem("this") == "this"


# --------------------------------------------------------------------------------------------------
# Store: idempotent re-ingest, metadata, errors
# --------------------------------------------------------------------------------------------------


def test_reingest_is_idempotent_and_detects_updates(handbooks: dict[str, Path], tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    md = Path(shutil.copy(handbooks["northbridge"], src / "northbridge_kidney.md"))
    (src / "notes.txt").write_text("not a handbook")  # unsupported: skipped in a directory walk
    store = CollectionStore(tmp_path / "store")

    calls: list[tuple[int, int]] = []
    first = store.add("northbridge", [src], on_progress=lambda done, total: calls.append((done, total)))
    assert (first.added, first.unchanged, first.updated, first.failed) == (["northbridge-kidney"], [], [], {})
    assert calls == [(1, 1)]  # one supported file in the walk
    again = store.add("northbridge", [src])
    assert (again.added, again.unchanged, again.updated) == ([], ["northbridge-kidney"], [])

    md.write_text(md.read_text() + "\n## Pets\n\nWash your hands after handling pets.\n")
    changed = store.add("northbridge", [md])
    assert (changed.added, changed.unchanged, changed.updated) == ([], [], ["northbridge-kidney"])
    doc = store.get("northbridge").document("northbridge-kidney")
    assert doc is not None and doc.sections[-1].heading == "Pets"

    # Same bytes under another name: recognised by content, not added twice.
    dup = Path(shutil.copy(md, src / "copy_of_handbook.md"))
    assert store.add("northbridge", [dup]).unchanged == ["northbridge-kidney"]

    html = Path(shutil.copy(handbooks["riverside"], src / "riverside_liver.html"))
    mixed = store.add("northbridge", [html, src / "notes.txt", src / "missing.pdf"])
    assert mixed.added == ["riverside-liver"]
    assert set(mixed.failed) == {str(src / "notes.txt"), str(src / "missing.pdf")}
    assert "unsupported file type '.txt'" in mixed.failed[str(src / "notes.txt")]
    assert sorted(d.doc_id for d in store.get("northbridge").documents) == [
        "northbridge-kidney",
        "riverside-liver",
    ]


def test_same_stem_different_format_are_two_documents(handbooks: dict[str, Path], tmp_path: Path) -> None:
    a = Path(shutil.copy(handbooks["northbridge"], tmp_path / "guide.md"))
    b = Path(shutil.copy(handbooks["riverside"], tmp_path / "guide.html"))
    report = CollectionStore(tmp_path / "s").add("x", [a, b])
    assert report.added == ["guide", "guide-html"]


def test_attributes_set_and_changed(handbooks: dict[str, Path], tmp_path: Path) -> None:
    store = CollectionStore(tmp_path)
    store.add("b", [handbooks["riverside"]], attributes={"department": "hepatology"})
    assert store.add("b", [handbooks["riverside"]]).unchanged == ["riverside-liver"]
    report = store.add(
        "b", [handbooks["riverside"]], attributes={"department": "hepatology", "audience": "patients"}
    )
    assert report.updated == ["riverside-liver"]
    doc = store.get("b").documents[0]
    assert dict(doc.attributes) == {"department": "hepatology", "audience": "patients"}


def test_metadata_round_trip_and_errors(handbooks: dict[str, Path], tmp_path: Path) -> None:
    store = CollectionStore(tmp_path)
    meta = CollectionMeta(
        name="stmarys-kidney_2025",
        institution="Northbridge University Hospital",
        topic="kidney transplant",
        care_phase="post-transplant",
        version_date="2025-03-01",
        private=True,
        description="Adult kidney transplant handbook",
    )
    store.add(meta.name, [handbooks["northbridge"]], meta)
    assert store.list() == [meta]
    assert store.get(meta.name).meta == meta
    # Re-adding without metadata keeps it; reading it back from a fresh store object gives it whole.
    store.add(meta.name, [handbooks["northbridge"]])
    assert CollectionStore(tmp_path).get(meta.name).meta == meta
    on_disk = json.loads((tmp_path / meta.name / "collection.json").read_text())
    assert on_disk["version_date"] == "2025-03-01" and on_disk["private"] is True

    with pytest.raises(ValidationError, match="ISO date"):
        CollectionMeta(name="x", version_date="March 2025")
    with pytest.raises(ValidationError):
        CollectionMeta(name="Bad Name")
    with pytest.raises(InvalidCollectionName):
        store.add("../escape", [handbooks["northbridge"]])
    with pytest.raises(CollectionNotFound) as info:
        store.get("nope")
    assert isinstance(info.value, CometaError)
    (tmp_path / meta.name / "documents" / "northbridge-kidney.json").write_text("{not json")
    with pytest.raises(CollectionError, match=r"damaged document file northbridge-kidney\.json"):
        store.get(meta.name)
    store.remove(meta.name)
    assert store.list() == []
    with pytest.raises(CollectionNotFound):
        store.remove(meta.name)


# --------------------------------------------------------------------------------------------------
# Retrieval routes
# --------------------------------------------------------------------------------------------------


def test_short_document_goes_whole(combined: Collection, encoder: Encoder) -> None:
    retriever = CollectionRetriever(combined, encoder, None, CollectionSearchSettings())  # 80k threshold
    (ev,) = _search(retriever, TRAVEL_Q, top_docs=1, doc_id="northbridge-kidney")
    doc = combined.document("northbridge-kidney")
    assert doc is not None
    assert ev.route == "whole" and ev.sections == ()
    assert ev.sufficient is True
    assert all(s.heading in ev.text and s.body in ev.text for s in doc.sections)
    assert "<= 80,000" in ev.reason
    assert ev.cite() == "[DOC:transplant/northbridge-kidney]"


def test_travel_section_of_a_found_by_chunk_route(combined: Collection, encoder: Encoder) -> None:
    ev = _one(combined, encoder, "northbridge")
    assert ev.route == "chunks"
    assert ev.sections[0].heading == "Travel after your transplant"
    assert ev.sections[0].section_id == "014-travel-after-your-transplant"
    assert "do not travel abroad for the first 3 months" in ev.text
    assert len(ev.sections) <= LOW.top_chunks
    assert ev.cite() == "[DOC:transplant/northbridge-kidney \u00a7Travel after your transplant]"
    assert ev.coverage is not None and ev.coverage >= LOW.min_coverage
    assert ev.sufficient and ev.score >= LOW.weak_score_bi_encoder


def test_travel_section_of_pdf_records_its_page(combined: Collection, encoder: Encoder) -> None:
    ev = _one(combined, encoder, "lakeshore")
    assert ev.route == "chunks"
    top = ev.sections[0]
    assert (top.heading, top.page_start, top.page_end) == ("4. Travel Guidance", 2, 2)
    assert ev.cite() == "[DOC:transplant/lakeshore-transplant \u00a74. Travel Guidance p.2]"
    assert "## 4. Travel Guidance (p.2)\n" in ev.text and "first 12 months" in ev.text


def test_handbook_silent_on_travel_falls_back_to_whole_document(
    combined: Collection, encoder: Encoder
) -> None:
    ev = _one(combined, encoder, "hillcrest")
    doc = combined.document("hillcrest-liver")
    assert doc is not None
    assert ev.route == "whole_fallback" and ev.sections == () and ev.sufficient is False
    assert ev.coverage is not None and ev.coverage < LOW.min_coverage
    assert "weak evidence" in ev.reason and "term coverage" in ev.reason
    assert all(s.body in ev.text for s in doc.sections)


def test_fallback_longer_than_its_limit_keeps_the_best_chunks_never_a_cut_copy(
    combined: Collection, encoder: Encoder
) -> None:
    ev = _one(combined, encoder, "hillcrest", fallback_max_chars=1000)
    assert ev.route == "chunks" and ev.sufficient is False and ev.sections
    assert "too long to read whole" in ev.reason and "weak evidence" in ev.reason


def test_collection_ranks_documents_and_puts_the_silent_one_last(
    combined: Collection, encoder: Encoder
) -> None:
    retriever = CollectionRetriever(combined, encoder, BiEncoderReranker(encoder), LOW)
    evidence = _search(retriever, TRAVEL_Q, top_docs=4)
    assert [e.doc_id for e in evidence][-1] == "hillcrest-liver"
    answered = evidence[:3]
    assert {e.doc_id for e in answered} == {"northbridge-kidney", "riverside-liver", "lakeshore-transplant"}
    assert all(e.route == "chunks" and "travel" in e.sections[0].heading.lower() for e in answered)
    guidance = {e.doc_id: e.text for e in answered}
    assert "3 months" in guidance["northbridge-kidney"]
    assert "6 months" in guidance["riverside-liver"]
    assert "12 months" in guidance["lakeshore-transplant"]
    assert all(e.reranker.startswith("bi-encoder:") for e in evidence)
    # top_docs limits, doc_filter restricts, bad input is refused.
    assert len(_search(retriever, TRAVEL_Q, top_docs=2)) == 2
    assert _search(retriever, TRAVEL_Q, top_docs=0) == []
    with pytest.raises(ValueError):
        _search(retriever, "   ")


def test_long_section_contributes_only_the_hit_chunk(combined: Collection, encoder: Encoder) -> None:
    # Budget 500 chars: the 1,163-char travel section is over half of it, so only the hit window (no
    # neighbours asked for) goes in, marked as cut, and the budget leaves no room for another section.
    ev = _one(combined, encoder, "northbridge", context_max_chars=500, expand_neighbours=0)
    doc = combined.document("northbridge-kidney")
    assert doc is not None
    travel = next(s for s in doc.sections if s.heading == "Travel after your transplant")
    assert ev.route == "chunks" and [s.section_id for s in ev.sections] == [travel.section_id]
    body = ev.text.split("\n", 1)[1].strip("\u2026 ")
    assert "\u2026" in ev.text and body in travel.body and len(body) < len(travel.body)
    assert len(body.split()) <= LOW.window_words


def test_heading_arm_alone_navigates_by_title(combined: Collection, encoder: Encoder) -> None:
    only_headings = {"dense_weight": 0.0, "bm25_chunk_weight": 0.0, "bm25_section_weight": 0.0}
    ev = _one_q(combined, encoder, "hillcrest", "driving", **only_headings)
    assert ev.sections[0].heading == "Driving"
    ev = _one_q(combined, encoder, "riverside", "dental care", **only_headings)
    assert ev.sections[0].heading == "Dental care"


def _one_q(combined: Collection, encoder: Encoder, institution: str, q: str, **settings: Any) -> InstEvidence:
    retriever = CollectionRetriever(combined, encoder, None, LOW.model_copy(update=settings))
    (ev,) = _search(retriever, q, top_docs=1, doc_id=DOC_IDS[institution])
    return ev


class _Counting:
    """The real encoder, counting document encodings (to see the chunk-vector cache work)."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.documents = 0

    name = property(lambda self: self.inner.name)
    dim = property(lambda self: self.inner.dim)
    query_max_length = property(lambda self: self.inner.query_max_length)
    doc_max_length = property(lambda self: self.inner.doc_max_length)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> FloatArray:
        return self.inner.encode_queries(texts, batch_size)

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        self.documents += len(docs)
        return self.inner.encode_documents(docs, batch_size, on_progress)


def test_chunk_vectors_cached_and_rebuilt_when_documents_change(
    handbooks: dict[str, Path], encoder: Encoder, tmp_path: Path
) -> None:
    store = CollectionStore(tmp_path)
    store.add("c", [handbooks["lakeshore"]])
    counting = _Counting(encoder)
    first = _search(CollectionRetriever(store.get("c"), counting, None, LOW), TRAVEL_Q)
    built = counting.documents
    assert built > 0 and any((tmp_path / "c" / "index").rglob("vectors.npy"))
    second = _search(CollectionRetriever(store.get("c"), counting, None, LOW), TRAVEL_Q)
    assert counting.documents == built  # loaded from the cache
    assert second == first
    store.add("c", [handbooks["hillcrest"]])
    _search(CollectionRetriever(store.get("c"), counting, None, LOW), TRAVEL_Q)
    assert counting.documents > 2 * built - 1  # document set changed: rebuilt (both documents encoded)
    # Other chunking settings are another index too.
    before = counting.documents
    _search(
        CollectionRetriever(store.get("c"), counting, None, LOW.model_copy(update={"window_words": 80})),
        TRAVEL_Q,
    )
    assert counting.documents > before


def test_seos_chunker(handbooks: dict[str, Path], encoder: Encoder) -> None:
    doc = parse_document(handbooks["lakeshore"], "c")
    coll = Collection(CollectionMeta(name="c"), [doc])
    retriever = CollectionRetriever(coll, encoder, None, LOW.model_copy(update={"chunker": "seos"}))
    (ev,) = _search(retriever, TRAVEL_Q)
    assert ev.route == "chunks" and ev.sections[0].heading == "4. Travel Guidance"


def test_question_text_never_logged(
    combined: Collection, encoder: Encoder, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "my daughter Jane Roe (MRN 445566) wants to travel abroad after her transplant"
    with caplog.at_level(logging.DEBUG):
        _search(CollectionRetriever(combined, encoder, None, LOW), secret, top_docs=1)
    assert "Jane Roe" not in caplog.text and "445566" not in caplog.text


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def test_cli_add_list_show_search(
    handbooks: dict[str, Path], encoder: Encoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.cli import app

    # The CLI loads the configured encoder; hand it the module's MiniLM instead of loading it again.
    monkeypatch.setattr("retrieval.embed._encoders.load_encoder", lambda settings: encoder)
    runner = CliRunner()
    root = ["--root", str(tmp_path)]
    add = [
        "collections", "add", "northbridge", str(handbooks["northbridge"]), str(handbooks["lakeshore"]),
        "--institution", "Northbridge University Hospital", "--topic", "kidney transplant",
        "--care-phase", "post-transplant", "--version-date", "2025-03-01", "--private",
        "--attr", "audience=patients", "--json", *root,
    ]  # fmt: skip
    result = runner.invoke(app, add)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == ["northbridge-kidney", "lakeshore-transplant"]
    again = runner.invoke(app, add)
    assert json.loads(again.stdout)["unchanged"] == ["northbridge-kidney", "lakeshore-transplant"]

    listed = runner.invoke(app, ["collections", "list", "--json", *root])
    assert json.loads(listed.stdout) == [
        {
            "name": "northbridge",
            "institution": "Northbridge University Hospital",
            "topic": "kidney transplant",
            "care_phase": "post-transplant",
            "version_date": "2025-03-01",
            "private": True,
            "description": "",
        }
    ]
    shown = json.loads(runner.invoke(app, ["collections", "show", "northbridge", "--json", *root]).stdout)
    pdf = next(d for d in shown["documents"] if d["format"] == "pdf")
    assert pdf["attributes"] == {"audience": "patients"}
    assert {"heading": "4. Travel Guidance", "page_start": 2, "page_end": 2}.items() <= next(
        s for s in pdf["sections"] if s["heading"] == "4. Travel Guidance"
    ).items()

    search = runner.invoke(
        app,
        ["collections", "search", "northbridge", TRAVEL_Q, "--offline", "--json",
         "--whole-doc-max-chars", "1000", "--top-docs", "2", *root],
    )  # fmt: skip
    assert search.exit_code == 0, search.output
    evidence = json.loads(search.stdout)["evidence"]
    assert [e["route"] for e in evidence] == ["chunks", "chunks"]
    cites = {e["cite"] for e in evidence}
    assert cites == {
        "[DOC:northbridge/northbridge-kidney \u00a7Travel after your transplant]",
        "[DOC:northbridge/lakeshore-transplant \u00a74. Travel Guidance p.2]",
    }
    plain = runner.invoke(app, ["collections", "search", "northbridge", TRAVEL_Q, "--offline", *root])
    assert plain.exit_code == 0 and "route whole" in plain.stdout

    missing = runner.invoke(app, ["collections", "search", "nope", TRAVEL_Q, "--offline", *root])
    assert missing.exit_code == 1 and "no collection named 'nope'" in missing.output
    bad_date = runner.invoke(
        app, ["collections", "add", "x", str(handbooks["northbridge"]), "--version-date", "soon", *root]
    )
    assert bad_date.exit_code == 2 and "ISO date" in bad_date.output
    removed = runner.invoke(app, ["collections", "remove", "northbridge", *root])
    assert removed.exit_code == 0
    assert json.loads(runner.invoke(app, ["collections", "list", "--json", *root]).stdout) == []


def test_fixture_handbooks_cover_the_four_institutions() -> None:
    assert [travel for _, travel in HANDBOOKS.values()] == ["3 months", "6 months", "12 months", None]
