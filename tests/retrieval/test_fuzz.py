"""Fuzzing (hypothesis) of the two parsers that read untrusted text: the PubMed Boolean query parser and the
E-utilities XML parsers. Contract: success or our typed error (``QuerySyntaxError`` / ``MalformedResponse``),
never another exception, never an entity expanded or fetched.

tests/test_query.py and tests/test_parsers.py already fuzz arbitrary text, word soups, random bytes,
truncations and single-site byte overwrites; this file adds grammar-shaped queries (valid by construction:
they must parse and render stably) and their mutations, pathological nesting, and, for XML, structural
mutations of the real recorded samples: tag deletions, multi-site byte flips, element duplication, entity
bombs and external entities. The ``slow`` variants run the same properties with many more examples.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.ncbi import (
    MalformedResponse,
    iter_pubmed_articles,
    parse_einfo,
    parse_elink_pubmed_pmc,
    parse_esearch,
    parse_esummary,
    parse_pmc_articles,
    parse_pubmed_articles,
)
from retrieval.query import Node, QuerySyntaxError, parse_query, render
from tests._paths import BIOPYTHON_SAMPLES, JATS_SAMPLES, KLORTHO_SAMPLES, SAMPLES

FAST = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
DEEP = settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# --- the Boolean query parser ------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    ["cancer", "lung", "breast", "neoplasms", "therapy", "ca19", "whipple", "x", "stage", "iv", "5fu", "and"]
)
_TAGS = st.sampled_from(["ti", "tiab", "ab", "mh", "majr", "pt", "la", "all", "Title/Abstract", "mesh"])


def _term() -> st.SearchStrategy[str]:
    bare = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join)
    quoted = st.lists(_WORDS, min_size=1, max_size=3).map(lambda ws: '"' + " ".join(ws) + '"')
    wildcard = st.sampled_from(["canc", "therap", "neopl", "brea"]).map(lambda w: w + "*")
    tagged = st.tuples(bare | quoted, _TAGS).map(lambda t: f"{t[0]}[{t[1]}]")
    years = st.tuples(st.integers(1950, 2024), st.integers(0, 10)).map(lambda t: f"{t[0]}:{t[0] + t[1]}[dp]")
    proximity = st.tuples(st.lists(_WORDS, min_size=2, max_size=3), st.integers(0, 9)).map(
        lambda t: '"' + " ".join(t[0]) + f'"[tiab:~{t[1]}]'
    )
    return bare | quoted | wildcard | tagged | years | proximity


_QUERIES = st.recursive(
    _term(),
    # A bare space is an implicit AND only between units: "a 2010:2015[dp]" would be one tagged word run.
    lambda inner: (
        st.tuples(inner, st.sampled_from([" AND ", " OR ", " NOT "]), inner).map("".join)
        | st.tuples(inner, inner).map(lambda t: f"({t[0]}) ({t[1]})")
        | inner.map(lambda q: f"({q})")
    ),
    max_leaves=12,
)


def _check_query(q: str) -> Node | None:
    try:
        return parse_query(q)
    except QuerySyntaxError as exc:
        assert exc.position is None or 0 <= exc.position <= len(q)
        return None


@FAST
@given(_QUERIES)
def test_grammar_shaped_queries_parse_and_render_stably(q: str) -> None:
    node = parse_query(q)  # valid by construction: a QuerySyntaxError here is a parser bug
    once = render(node)
    assert render(parse_query(once)) == once


_EDITS = st.sampled_from(["(", ")", '"', "[", "]", "*", ":", " AND ", " NOT ", "[ti", "~", "\\", "\x00", "é"])


@FAST
@given(_QUERIES, st.integers(0, 10**6), st.integers(0, 3), _EDITS)
def test_mutated_queries_raise_only_query_syntax_error(q: str, at: int, drop: int, insert: str) -> None:
    i = at % (len(q) + 1)
    _check_query(q[:i] + insert + q[i + drop :])


@pytest.mark.parametrize("depth", [99, 101, 5000])
def test_deep_nesting_is_a_syntax_error_not_a_recursion_error(depth: int) -> None:
    q = "(" * depth + "cancer" + ")" * depth
    if depth < 100:
        assert render(parse_query(q)) == "cancer"
    else:
        with pytest.raises(QuerySyntaxError, match="nest"):
            parse_query(q)


@pytest.mark.parametrize(
    "q", ["a " * 20_000, "a AND " * 5_000 + "b", '"' + "x" * 100_000 + '"', "NOT " * 1000, "[" * 1000]
)
def test_huge_queries_only_parse_or_raise_query_syntax_error(q: str) -> None:
    _check_query(q)


# --- the XML parsers ---------------------------------------------------------------------------------------

XML_PARSERS: dict[str, Callable[[bytes], Any]] = {
    "pubmed": parse_pubmed_articles,
    "pmc": parse_pmc_articles,
    "esearch": parse_esearch,
    "esummary": parse_esummary,
    "elink": parse_elink_pubmed_pmc,
    "einfo": parse_einfo,
    "iter": lambda b: list(iter_pubmed_articles(io.BytesIO(b))),
}


def _samples() -> list[tuple[str, bytes]]:
    """Real recorded XML responses that parse cleanly, each with the parser that reads it."""
    if not SAMPLES.is_dir():
        return []
    pairs = [
        ("pubmed", BIOPYTHON_SAMPLES / "pubmed1.xml"),
        ("pubmed", BIOPYTHON_SAMPLES / "pubmed4.xml"),
        ("pubmed", KLORTHO_SAMPLES / "efetch.pubmed.xml"),
        ("iter", BIOPYTHON_SAMPLES / "pubmed6.xml"),
        ("pmc", BIOPYTHON_SAMPLES / "efetch_pmc.xml"),
        ("pmc", JATS_SAMPLES / "mds526.nxml"),
        ("esearch", BIOPYTHON_SAMPLES / "esearch2.xml"),
        ("esummary", BIOPYTHON_SAMPLES / "esummary1.xml"),
        ("elink", BIOPYTHON_SAMPLES / "elink1.xml"),
        ("einfo", BIOPYTHON_SAMPLES / "einfo2.xml"),
    ]
    return [(name, Path(path).read_bytes()) for name, path in pairs]


SAMPLE_BODIES = _samples()
needs_samples = pytest.mark.skipif(not SAMPLE_BODIES, reason=f"shared samples not found at {SAMPLES}")


def _check_xml(name: str, body: bytes) -> None:
    try:
        XML_PARSERS[name](body)
    except MalformedResponse as exc:
        assert exc.endpoint, "a MalformedResponse names its endpoint"


def _delete_tag(body: bytes, pick: int) -> bytes:
    starts = [i for i, b in enumerate(body) if b == ord("<")]
    if not starts:
        return body
    i = starts[pick % len(starts)]
    j = body.find(b">", i)
    return body if j < 0 else body[:i] + body[j + 1 :]


def _duplicate_element(body: bytes, pick: int) -> bytes:
    starts = [i for i in range(len(body) - 1) if body[i] == ord("<") and body[i + 1] not in b"/?!"]
    if not starts:
        return body
    i = starts[pick % len(starts)]
    j = body.find(b">", i)
    return body if j < 0 else body[: j + 1] + body[i : j + 1] + body[j + 1 :]


def _flip(body: bytes, sites: list[tuple[int, int]]) -> bytes:
    out = bytearray(body)
    for at, mask in sites:
        out[at % len(out)] ^= mask or 1
    return bytes(out)


_sample = st.sampled_from(SAMPLE_BODIES) if SAMPLE_BODIES else st.nothing()
_mutated = st.one_of(
    st.tuples(_sample, st.lists(st.integers(0, 10**9), min_size=1, max_size=6)).map(
        lambda t: (t[0][0], _fold(_delete_tag, t[0][1], t[1]))
    ),
    st.tuples(
        _sample, st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=8)
    ).map(lambda t: (t[0][0], _flip(t[0][1], t[1]))),
    st.tuples(_sample, st.lists(st.integers(0, 10**9), min_size=1, max_size=4)).map(
        lambda t: (t[0][0], _fold(_duplicate_element, t[0][1], t[1]))
    ),
    st.tuples(_sample, st.floats(0, 1)).map(lambda t: (t[0][0], t[0][1][: int(len(t[0][1]) * t[1])])),
)


def _fold(fn: Callable[[bytes, int], bytes], body: bytes, picks: list[int]) -> bytes:
    for p in picks:
        body = fn(body, p)
    return body


@needs_samples
@FAST
@given(_mutated)
def test_mutated_samples_raise_only_malformed_response(case: tuple[str, bytes]) -> None:
    name, body = case
    _check_xml(name, body)


@needs_samples
@FAST
@given(_mutated, st.sampled_from(sorted(XML_PARSERS)))
def test_any_parser_on_any_mutated_sample_raises_only_malformed_response(
    case: tuple[str, bytes], parser: str
) -> None:
    _check_xml(parser, case[1])


def _with_doctype(body: bytes, subset: bytes, ref: bytes) -> bytes:
    """Replace the prolog's DOCTYPE with one carrying ``subset`` and put ``ref`` inside the root element."""
    start = body.find(b"<!DOCTYPE")
    if start >= 0:
        end = body.find(b">", start)
        body = body[:start] + body[end + 1 :]
    root = body.find(b"<", body.find(b"?>") + 2 if body.startswith(b"<?xml") else 0)
    while body[root + 1 : root + 2] in (b"!", b"?"):
        root = body.find(b"<", root + 1)
    name_end = min(i for i in (body.find(b">", root), body.find(b" ", root)) if i > 0)
    root_name = body[root + 1 : name_end]
    close = body.find(b">", root)
    doctype = b"<!DOCTYPE " + root_name + b" [" + subset + b"]>\n"
    return body[:root] + doctype + body[root : close + 1] + ref + body[close + 1 :]


_BILLION_LAUGHS = b"".join(
    [b'<!ENTITY lol0 "lol">']
    + [b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10) for i in range(1, 10)]
)
_QUADRATIC = b'<!ENTITY big "' + b"A" * 50_000 + b'">'
_EXTERNAL = b'<!ENTITY xxe SYSTEM "file:///etc/passwd">'
_PARAMETER = b'<!ENTITY % ext SYSTEM "http://127.0.0.1:9/evil.dtd"> %ext;'


@needs_samples
@pytest.mark.parametrize(
    ("subset", "ref"),
    [
        (_BILLION_LAUGHS, b"&lol9;"),
        (_QUADRATIC, b"&big;" * 200),
        (_EXTERNAL, b"&xxe;"),
        (_PARAMETER, b""),
    ],
    ids=["billion-laughs", "quadratic-blowup", "external-entity", "external-parameter-entity"],
)
@pytest.mark.parametrize("index", range(len(SAMPLE_BODIES) or 1))
def test_entity_bombs_and_external_entities_are_never_expanded(subset: bytes, ref: bytes, index: int) -> None:
    name, body = SAMPLE_BODIES[index]
    bomb = _with_doctype(body, subset, ref)
    try:
        result = XML_PARSERS[name](bomb)
    except MalformedResponse:
        return
    text = repr(result)
    assert "root:" not in text  # /etc/passwd was not read
    assert "lollollol" not in text and "A" * 1000 not in text  # nothing was expanded


# --- deeper runs (same properties, many more examples) -----------------------------------------------------


@pytest.mark.slow
@DEEP
@given(_QUERIES, st.integers(0, 10**6), st.integers(0, 3), _EDITS)
def test_deep_mutated_queries(q: str, at: int, drop: int, insert: str) -> None:
    i = at % (len(q) + 1)
    _check_query(q[:i] + insert + q[i + drop :])


@pytest.mark.slow
@DEEP
@given(_QUERIES)
def test_deep_grammar_shaped_queries(q: str) -> None:
    once = render(parse_query(q))
    assert render(parse_query(once)) == once


@pytest.mark.slow
@needs_samples
@DEEP
@given(_mutated, st.sampled_from(sorted(XML_PARSERS)))
def test_deep_mutated_samples(case: tuple[str, bytes], parser: str) -> None:
    _check_xml(parser, case[1])
