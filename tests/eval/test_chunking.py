"""eval.chunking: the hit rule and MRR@5 by hand, the committed query fixture, a tiny harness run."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from eval.chunking import (
    FIXTURE,
    EvalDoc,
    GoldQuery,
    Passage,
    Row,
    build_passages,
    evaluate,
    hit_and_rr,
    is_hit,
    load_eval_corpus,
    load_queries,
    markdown_table,
)
from retrieval.embed import BiEncoderReranker
from retrieval.ncbi import iter_pubmed_articles, parse_pmc_articles
from segmentation import FixedTokenSegmenter, WhitespaceTokenCounter
from tests._fakes import VectorEncoder
from tests._paths import REPO

CORPUS = REPO / "retrieval" / "corpus"
Q = GoldQuery("q", "?", "PMC1", 2, "Results", 100, 200, "x" * 100)


def p(doc: str = "PMC1", unit: int | str = 2, start: int = 0, end: int = 0) -> Passage:
    return Passage(doc, unit, start, end, "", 0)  # type: ignore[arg-type]


def test_hit_rule_needs_half_the_gold_span_in_the_same_unit() -> None:
    assert is_hit(p(start=100, end=200), Q)  # the whole span
    assert is_hit(p(start=150, end=400), Q)  # exactly half (50 of 100 characters)
    assert not is_hit(p(start=151, end=400), Q)  # 49 characters
    assert is_hit(p(start=0, end=150), Q)
    assert not is_hit(p(start=0, end=149), Q)
    assert not is_hit(p(start=200, end=300), Q)  # adjacent, no overlap
    assert not is_hit(p(unit=3, start=100, end=200), Q)  # other section, same offsets
    assert not is_hit(p(doc="PMC2", start=100, end=200), Q)
    assert not is_hit(p(unit="abstract", start=0, end=1000), Q)


def test_mrr_at_5_by_hand() -> None:
    miss, hit = p(start=0, end=10), p(start=100, end=200)
    assert hit_and_rr([hit, miss], Q) == (True, 1.0)
    assert hit_and_rr([miss, miss, hit, hit], Q) == (True, pytest.approx(1 / 3))
    assert hit_and_rr([miss] * 4 + [hit], Q) == (True, pytest.approx(0.2))
    assert hit_and_rr([miss] * 5 + [hit], Q) == (False, 0.0)  # rank 6 is outside @5
    assert hit_and_rr([], Q) == (False, 0.0)


def _unit_texts() -> dict[tuple[str, int | str], str]:
    texts: dict[tuple[str, int | str], str] = {}
    for path in sorted((CORPUS / "pmc").glob("*.xml")):
        for art in parse_pmc_articles(path.read_bytes()):
            texts[(art.pmcid, "abstract")] = art.abstract_text
            for i, s in enumerate(art.sections):
                texts[(art.pmcid, i)] = s.text
    for rec in iter_pubmed_articles(CORPUS / "pubmed" / "pubmedqa_pqal.xml"):
        texts[(f"PMID:{rec.pmid}", "abstract")] = rec.abstract_text
    return texts


def test_fixture_is_well_formed_and_every_gold_span_is_verbatim_at_its_offsets() -> None:
    raw = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = load_queries()
    assert 50 <= len(queries) == len(raw) <= 80
    assert len({q.id for q in queries}) == len(queries)
    assert len({q.question for q in queries}) == len(queries)
    assert all("assistant LLM" in o["generator"] and "verbatim" in o["generator"] for o in raw)
    texts = _unit_texts()
    pmc_docs = {q.doc_id for q in queries if q.doc_id.startswith("PMC")}
    assert len(pmc_docs) == 4
    assert len({q.doc_id for q in queries if q.doc_id.startswith("PMID:")}) >= 10
    for q in queries:
        text = texts[(q.doc_id, q.unit)]
        assert text[q.start : q.end] == q.gold, q.id
        assert q.question.endswith("?") and len(q.gold) >= 20
        # Questions paraphrase: never a copy of the gold sentence.
        assert q.question.rstrip("?").lower() not in q.gold.lower()


class HashEncoder(VectorEncoder):
    """Hashed bag of words, L2-normalised: fast and deterministic stand-in for the dense encoder."""

    name = "hash"
    dim = 512
    query_max_length = 512
    doc_max_length = 512

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v


def test_tiny_harness_run_over_three_queries() -> None:
    queries = [q for q in load_queries() if q.doc_id == "PMC2994229"][:2]
    queries += [next(q for q in load_queries() if q.doc_id.startswith("PMID:"))]
    docs = load_eval_corpus(queries, distractors=("8738894",))
    assert {d.doc_id for d in docs} >= {"PMC2994229", queries[2].doc_id, "PMID:8738894"}
    counter = WhitespaceTokenCounter(512)
    segmenters = {
        "fixed-64-0": FixedTokenSegmenter(counter, 64, 0),
        "fixed-64-16": FixedTokenSegmenter(counter, 64, 16),
    }
    enc = HashEncoder()
    rows = evaluate(segmenters, docs, queries, enc, counter, BiEncoderReranker(enc))  # type: ignore[arg-type]
    assert [(r.segmenter, r.retriever) for r in rows] == [
        (s, r) for s in segmenters for r in ("bm25", "dense", "dense+rerank")
    ]
    for r in rows:
        assert isinstance(r, Row) and r.queries == 3
        assert 0.0 <= r.mrr_at_5 <= r.hit_at_5 <= 1.0
        assert r.section_chunks > 0 and 0 < r.mean_chunk_tokens <= 64
    # The abstract question's passage is the whole abstract: lexical retrieval finds it.
    assert all(r.hit_at_5 >= 1 / 3 for r in rows if r.retriever == "bm25")
    table = markdown_table(rows)
    assert table.splitlines()[0].startswith("| Segmenter | Chunks | Mean tokens | bm25 Hit@5")
    assert len(table.splitlines()) == 2 + len(segmenters)


def test_build_passages_keeps_abstracts_whole_and_offsets_exact() -> None:
    doc = EvalDoc("PMC9", "An abstract. Two sentences.", ())
    counter = WhitespaceTokenCounter(512)
    (only,) = build_passages(FixedTokenSegmenter(counter, 2, 0), [doc], counter)
    assert only.unit == "abstract" and only.text == doc.abstract and (only.start, only.end) == (0, 27)
    docs = load_eval_corpus([], distractors=())
    full = next(d for d in docs if d.doc_id == "PMC2994229")
    for passage in build_passages(FixedTokenSegmenter(counter, 100, 20), [full], counter):
        source = full.abstract if passage.unit == "abstract" else full.sections[int(passage.unit)].text
        assert source[passage.start : passage.end] == passage.text


def test_run_chunking_suite_resumes_per_segmenter(tmp_path: Path) -> None:
    import asyncio

    import eval.chunking as chunking
    from eval import ITEMS_FILE, EvalInputError, RunOptions

    enc = HashEncoder()
    counter = WhitespaceTokenCounter(512)
    loads: list[int] = []

    def fake_models(_params: object) -> tuple[object, object, object]:
        loads.append(1)
        return enc, counter, BiEncoderReranker(enc)  # type: ignore[arg-type]

    opts = RunOptions(out_dir=tmp_path, limit=6, seed=3, subsets=("fixed-512-0", "sentence-window-3"))
    result = asyncio.run(chunking.run_chunking(opts, models=fake_models))  # type: ignore[arg-type]
    rows = result.metrics
    assert set(rows) == {f"{s}/{r}" for s in opts.subsets for r in ("bm25", "dense", "dense+rerank")}
    assert all(r["queries"] == 6 and 0.0 <= r["mrr_at_5"] <= r["hit_at_5"] <= 1.0 for r in rows.values())
    # The bi-encoder reranks with the dense encoder itself: it cannot change the dense ranking's hits.
    for seg in opts.subsets:
        assert rows[f"{seg}/dense+rerank"]["hit_at_5"] == rows[f"{seg}/dense"]["hit_at_5"]
    assert [p.filename for p in result.plots] == ["chunking_hit_at_5.png", "chunking_mrr_at_5.png"]
    assert result.tables[0].header[:3] == ["Segmenter", "Chunks", "Mean tokens"]
    assert [r[0] for r in result.tables[0].rows] == list(opts.subsets)
    lines = (tmp_path / ITEMS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["key"] for x in lines] == list(opts.subsets)
    # Rerun: both segmenters come back from items.jsonl, no model is loaded again, same numbers.
    again = asyncio.run(chunking.run_chunking(opts, models=fake_models))  # type: ignore[arg-type]
    assert len(loads) == 1 and again.metrics == rows
    assert any("read back" in n for n in again.notes)
    with pytest.raises(EvalInputError, match="unknown segmenters"):
        asyncio.run(chunking.run_chunking(RunOptions(out_dir=tmp_path / "x", subsets=("nope",))))


# --- the world's Evidence Inference source (a three-article world and gold set built here) -------------

_TRIALS = {
    "101": (
        "We compared drug A with placebo in adults with migraine. Pain fell more with drug A.",
        [
            ("Methods", "Adults with episodic migraine were randomised to drug A or placebo for 12 weeks."),
            (
                "Results",
                "Headache days fell by 3.1 with drug A versus 1.2 with placebo (P = 0.01). "
                "Nausea was more common with drug A. Sleep quality did not differ between the groups.",
            ),
        ],
    ),
    "202": (
        "Knee surgery patients received a nerve block or standard care. Opioid use was reported.",
        [
            ("Methods", "Patients undergoing knee replacement received a femoral nerve block or none."),
            (
                "Results",
                "Morphine consumption in the first 24 hours was 40% lower after the nerve block "
                "(95% CI 25 to 55). Length of stay was unchanged.",
            ),
        ],
    ),
    "303": (
        "Vitamin D supplements did not change fracture rates in older women over three years.",
        [
            ("Methods", "Women over 70 took vitamin D 800 IU daily or a dummy pill for three years."),
            ("Results", "Falls were as frequent in both arms; bone density rose slightly with vitamin D."),
        ],
    ),
}
# (id, question, pmc digits, evidence text): one span in the abstract, two in the results sections.
_EI = [
    (
        "ei-1",
        "Does drug A compared with placebo change headache days?",
        "101",
        "Headache days fell by 3.1 with drug A versus 1.2 with placebo (P = 0.01).",
    ),
    (
        "ei-2",
        "Would a nerve block rather than standard care change morphine use after knee surgery?",
        "202",
        "Morphine consumption in the first 24 hours was 40% lower after the nerve block",
    ),
    (
        "ei-3",
        "Does vitamin D compared with a dummy pill change fracture rates?",
        "303",
        "Vitamin D supplements did not change fracture rates in older women over three years.",
    ),
]


def _jats(digits: str) -> bytes:
    abstract, sections = _TRIALS[digits]
    body = "".join(f"<sec><title>{h}</title><p>{t}</p></sec>" for h, t in sections)
    return (
        f'<article><front><article-meta><article-id pub-id-type="pmc">{digits}</article-id>'
        f"<title-group><article-title>Trial {digits}</article-title></title-group>"
        f"<abstract><p>{abstract}</p></abstract></article-meta></front><body>{body}</body></article>"
    ).encode()


@pytest.fixture
def ei_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A world folder with the three JATS files and a built-looking ``ei.jsonl`` (spans at real offsets)."""
    from eval.gold import ei_units

    world, gold = tmp_path / "world", tmp_path / "gold"
    (world / "pmc").mkdir(parents=True)
    gold.mkdir()
    lines = []
    for item_id, question, digits, evidence in _EI:
        (world / "pmc" / f"PMC{digits}.nxml").write_bytes(_jats(digits))
        (article,) = parse_pmc_articles(_jats(digits))
        unit, heading, text = next(u for u in ei_units(article) if evidence in u[2])
        start = text.index(evidence)
        span = {
            "unit": unit,
            "heading": heading,
            "start": start,
            "end": start + len(evidence),
            "text": evidence,
        }
        lines.append(
            {
                "id": item_id,
                "split": "test",
                "question": question,
                "pmcid": f"PMC{digits}",
                "pmids": [],
                "evidence": span,
            }
        )
    (gold / "ei.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setenv("COMETA_GOLD_DIR", str(gold))
    monkeypatch.setenv("COMETA_LOCAL_SERVER__CORPUS_DIR", str(world))
    return world


def test_ei_queries_and_world_articles_line_up(ei_world: Path) -> None:
    from eval import EvalInputError
    from eval.chunking import load_ei_queries, load_world_docs

    queries = load_ei_queries("ei@test")
    assert [q.doc_id for q in queries] == ["PMC101", "PMC202", "PMC303"]
    assert [q.unit for q in queries] == [1, 1, "abstract"]
    assert load_ei_queries("ei@dev") == []
    docs = load_world_docs(ei_world, queries)
    assert [d.doc_id for d in docs] == ["PMC101", "PMC202", "PMC303"]
    assert docs[0].sections[1].heading == "Results" and docs[0].sections[1].path == ("Results",)
    moved = [
        GoldQuery(q.id, q.question, q.doc_id, q.unit, q.heading, q.start + 1, q.end + 1, q.gold)
        for q in queries
    ]
    with pytest.raises(EvalInputError, match="not at its offsets"):
        load_world_docs(ei_world, moved)
    (ei_world / "pmc" / "PMC303.nxml").unlink()
    with pytest.raises(EvalInputError, match="PMC303 is not in"):
        load_world_docs(ei_world, queries)
    with pytest.raises(EvalInputError, match="unknown Evidence Inference source"):
        load_ei_queries("ei@train")


def test_run_chunking_on_ei_with_depth_and_scopes(ei_world: Path, tmp_path: Path) -> None:
    import asyncio

    import eval.chunking as chunking
    from eval import EvalInputError, RunOptions

    enc, counter = HashEncoder(), WhitespaceTokenCounter(512)

    def models(_params: object) -> tuple[object, object, object]:
        return enc, counter, BiEncoderReranker(enc)

    params = {"source": "ei@test", "depth": "both"}
    opts = RunOptions(out_dir=tmp_path / "run", subsets=("sentence-window-3",), params=params)
    result = asyncio.run(chunking.run_chunking(opts, models=models))  # type: ignore[arg-type]
    m = result.metrics
    names = [chunking.ABSTRACTS_ONLY, "sentence-window-3"]
    assert set(m) == {
        f"{n}/{r}{s}" for n in names for r in ("bm25", "dense", "dense+rerank") for s in ("", "@article")
    }
    # Abstracts only, within the gold article: one passage per question, a hit exactly when the gold span
    # lies in the abstract (1 of 3), whatever the ranker.
    for r in ("bm25", "dense", "dense+rerank"):
        assert m[f"{chunking.ABSTRACTS_ONLY}/{r}@article"]["hit_at_5"] == pytest.approx(1 / 3, abs=1e-4)
        assert m[f"{chunking.ABSTRACTS_ONLY}/{r}@article"]["section_chunks"] == 0
    # With full text every article has at most 5 passages here: within the article every span is found.
    assert all(m[f"sentence-window-3/{r}@article"]["hit_at_5"] == 1.0 for r in ("bm25", "dense"))
    # Restricting to the gold article can only help: same scores, fewer competitors.
    for key, row in m.items():
        if key.endswith("@article"):
            assert row["hit_at_5"] >= m[key.removesuffix("@article")]["hit_at_5"]
    assert [t.title.split(", ")[1] for t in result.tables] == [
        "over the whole pool (CoMeta Table 3)",
        "within the gold article (CoMeta Table 3)",
    ]
    assert any("1 of 3 gold spans lie in the abstract" in n for n in result.notes)
    bad = [
        {"source": "ei@train"},
        {"depth": "abstracts"},
        {"scope": "corpus"},
        {"nope": 1},
    ]
    for p in bad:
        with pytest.raises(EvalInputError):
            asyncio.run(chunking.run_chunking(RunOptions(out_dir=tmp_path / "bad", params=p), models=models))  # type: ignore[arg-type]


def test_ei_source_needs_a_world(ei_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import eval.chunking as chunking
    from eval import EvalInputError, RunOptions

    monkeypatch.delenv("COMETA_LOCAL_SERVER__CORPUS_DIR")
    enc, counter = HashEncoder(), WhitespaceTokenCounter(512)
    opts = RunOptions(out_dir=tmp_path / "run", params={"source": "ei", "depth": "abstract"})
    with pytest.raises(EvalInputError, match="COMETA_LOCAL_SERVER__CORPUS_DIR"):
        asyncio.run(chunking.run_chunking(opts, models=lambda _p: (enc, counter, None)))


def test_rerank_reuses_the_dense_vectors_only_for_the_bi_encoder_over_that_encoder() -> None:
    from eval.chunking import rerank_rankings

    enc = HashEncoder()
    texts = ["drug A lowers pain", "pain and drug A and more words here", "unrelated text", "drug"]
    passages = [Passage("PMC1", 0, 0, len(t), t, 0) for t in texts]
    questions = ["does drug A lower pain?"]
    qv = enc.encode_queries(questions)
    pv = enc.encode_documents([("", t) for t in texts])
    dense = np.asarray(qv @ pv.T, dtype=np.float64)
    bi = BiEncoderReranker(enc)
    by_vectors = rerank_rankings(bi, passages, questions, dense, k=4, vectors=(qv, pv, enc))
    by_text = rerank_rankings(bi, passages, questions, dense, k=4)
    assert by_vectors == by_text  # the same scores, without encoding the candidates again

    class Longest:
        """A stand-in cross-encoder: it prefers long passages, whatever the dense scores say."""

        kind = "cross-encoder"
        name = "longest"
        note = None
        encoder = enc  # even holding the dense encoder, a cross-encoder must rerank the texts

        def rerank(self, query: str, passages: list[str]) -> list[float]:
            return [float(len(p)) for p in passages]

    ranked = rerank_rankings(Longest(), passages, questions, dense, k=4, vectors=(qv, pv, enc))  # type: ignore[arg-type]
    assert [texts[i] for i in ranked[0]] == sorted(texts, key=len, reverse=True)
    # Within the article scope only the allowed passages are candidates.
    only = rerank_rankings(Longest(), passages, questions, dense, k=4, allowed=[[2, 3]])  # type: ignore[arg-type]
    assert only == [[2, 3]]
