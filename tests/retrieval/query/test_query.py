"""PubMed query parser: AST shapes, precedence, field tags, errors with positions, rendering, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.query import (
    And,
    Node,
    Not,
    Or,
    QuerySyntaxError,
    Range,
    Term,
    normalise_field,
    parse_date_bounds,
    parse_query,
    render,
    validate_query,
)


def T(text: str, field: str | None = None, quoted: bool = False, wildcard: bool = False) -> Term:
    return Term(text, field, quoted, wildcard)


# --- structure -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cancer", T("cancer")),
        ("  cancer  ", T("cancer")),
        ("breast cancer", T("breast cancer")),  # one run = one term (ATM decides later)
        ('"breast cancer"', T("breast cancer", quoted=True)),
        ('"  breast   cancer "', T("breast cancer", quoted=True)),
        ("breast cancer[tiab]", T("breast cancer", "tiab")),  # the tag applies to the whole run
        ('"breast neoplasms"[MeSH Terms]', T("breast neoplasms", "mh", quoted=True)),
        ("cancer [ti]", T("cancer", "ti")),
        ("a AND b", And((T("a"), T("b")))),
        ("a AND b AND c", And((T("a"), T("b"), T("c")))),
        ("a OR b OR c", Or((T("a"), T("b"), T("c")))),
        ("a NOT b", Not(T("a"), T("b"))),
        ("a NOT b NOT c", Not(Not(T("a"), T("b")), T("c"))),  # left-associative
        ("a OR b AND c", And((Or((T("a"), T("b"))), T("c")))),  # strictly left to right
        ("a AND b OR c", Or((And((T("a"), T("b"))), T("c")))),
        ("a OR (b AND c)", Or((T("a"), And((T("b"), T("c")))))),
        ("(a)", T("a")),
        ("((a OR b))", Or((T("a"), T("b")))),
        ("(a AND b) AND c", And((T("a"), T("b"), T("c")))),  # associative chains flatten
        ("a (b OR c)", And((T("a"), Or((T("b"), T("c")))))),  # adjacency = AND
        ('cancer "lung"', And((T("cancer"), T("lung", quoted=True)))),
        ("cancer[ti] therapy", And((T("cancer", "ti"), T("therapy")))),
        ("(a OR b) NOT c", Not(Or((T("a"), T("b"))), T("c"))),
        ("cancer and therapy", T("cancer and therapy")),  # lower-case operators are words
        ("cancer or not therapy", T("cancer or not therapy")),
        ("And OR Not", Or((T("And"), T("Not")))),
        ("canc*", T("canc", wildcard=True)),
        ("canc* therapy", And((T("canc", wildcard=True), T("therapy")))),  # truncation ends a run
        ("breast canc*[tiab]", T("breast canc", "tiab", wildcard=True)),
        ('"breast canc*"', T("breast canc", quoted=True, wildcard=True)),
        ("2010:2015[dp]", Range("2010", "2015", "dp")),
        ("2010/01/01:2012/06/30[pdat]", Range("2010/01/01", "2012/06/30", "dp")),
        ("2010 : 2015[Date - Publication]", Range("2010", "2015", "dp")),
        ("2015[dp]", T("2015", "dp")),
        ("2015/06[edat]", T("2015/06", "edat")),
        ("cancer[all] OR cancer[All Fields]", Or((T("cancer", "all"), T("cancer", "all")))),
        ("12345[pmid] OR 12345[uid]", Or((T("12345", "pmid"), T("12345", "pmid")))),
        ("(1:2)", T("1:2")),  # a colon outside a date field is just text
    ],
)
def test_parse_structure(query: str, expected: Node) -> None:
    assert parse_query(query) == expected


@pytest.mark.parametrize(
    ("tag", "code"),
    [
        ("tiab", "tiab"),
        ("Title/Abstract", "tiab"),
        ("TI", "ti"),
        ("Title", "ti"),
        ("ab", "ab"),
        ("Abstract", "ab"),
        ("mh", "mh"),
        ("MeSH Terms", "mh"),
        ("MESH TERMS", "mh"),
        ("mh:noexp", "mh:noexp"),
        ("MeSH Terms:noexp", "mh:noexp"),
        ("majr", "majr"),
        ("MeSH Major Topic", "majr"),
        ("pt", "pt"),
        ("Publication Type", "pt"),
        ("la", "la"),
        ("Language", "la"),
        ("pmid", "pmid"),
        ("uid", "pmid"),
        ("all", "all"),
        ("All Fields", "all"),
        ("tw", "tw"),
        ("Text Word", "tw"),
        ("au", "au"),
        ("Author", "au"),
        ("ta", "ta"),
        ("Journal", "ta"),
        ("sb", "sb"),
        ("Filter", "sb"),
        ("filter", "sb"),
        ("  mesh   terms ", "mh"),
    ],
)
def test_field_tags_short_and_long(tag: str, code: str) -> None:
    assert normalise_field(tag) == code
    node = parse_query(f"x[{tag}]")
    assert isinstance(node, Term) and node.field == code and node.tag == tag.strip()


@pytest.mark.parametrize(
    ("tag", "code"),
    [("dp", "dp"), ("pdat", "dp"), ("Date - Publication", "dp"), ("edat", "edat"), ("Date - Entry", "edat")],
)
def test_date_tags(tag: str, code: str) -> None:
    assert parse_query(f"2012[{tag}]") == T("2012", code)
    assert parse_query(f"2010:2012[{tag}]") == Range("2010", "2012", code)


def test_proximity_tag() -> None:
    node = parse_query('"asthma treatment"[Title:~3]')
    assert node == Term("asthma treatment", "ti", True, False, 3)
    assert render(node) == '"asthma treatment"[Title:~3]'
    assert parse_query('"a b"[tiab:~0]') == Term("a b", "tiab", True, False, 0)


def test_injection_like_text_is_just_terms() -> None:
    q = "__import__('os').system('rm -rf /') OR {{7+7}}; DROP TABLE x; --"
    node = parse_query(q)
    assert isinstance(node, Or)
    leaves = _leaves(node)
    assert all(isinstance(t, Term) and t.field is None for t in leaves)
    assert Term("{{7+7}}; DROP TABLE x; --") in leaves


def _leaves(node: Node) -> list[Node]:
    if isinstance(node, Term | Range):
        return [node]
    if isinstance(node, Not):
        return _leaves(node.left) + _leaves(node.right)
    return [leaf for c in node.children for leaf in _leaves(c)]


# --- errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "position", "fragment"),
    [
        ("", 0, "empty query"),
        ("   ", 0, "empty query"),
        ("(cancer", 0, "unmatched '('"),
        ("a AND (b OR (c)", 6, "unmatched '('"),
        ("cancer)", 6, "unmatched ')'"),
        (")", 0, "unmatched ')'"),
        ("cancer AND", 7, "no right operand"),
        ("AND cancer", 0, "no left operand"),
        ("cancer AND OR lung", 7, "no right operand"),
        ("cancer NOT", 7, "no right operand"),
        ("(cancer AND) lung", 8, "no right operand"),
        ("()", 0, "empty parentheses"),
        ("a AND ( )", 6, "empty parentheses"),
        ("cancer[foo]", 6, "unknown field tag"),
        ("cancer[]", 6, "unknown field tag"),
        ("cancer[ti", 6, "unterminated field tag"),
        ('"breast cancer', 0, "unterminated quote"),
        ('a "b" "c', 6, "unterminated quote"),
        ('""', 0, "empty quoted phrase"),
        ("can*", 0, "at least 4"),
        ("lung ca*", 5, "at least 4"),
        ("*", 0, "at least 4"),
        ("ca*ncer", 2, "only allowed at the end"),
        ("[ti]", 0, "field tag without a term"),
        ("a AND [ti]", 6, "field tag without a term"),
        ("cancer[ti][ab]", 10, "field tag without a term"),
        ("(a OR b)[ti]", 8, "cannot follow ')'"),
        ("cancer]", 6, "unmatched ']'"),
        ("2015/13[dp]", 0, "invalid date"),
        ("2015/02/30[dp]", 0, "invalid date"),
        ("cancer[dp]", 0, "invalid date"),
        ("2010:20x[dp]", 0, "invalid date range"),
        ("(" * 200 + "a" + ")" * 200, 100, "nested too deeply"),
    ],
)
def test_syntax_errors_with_positions(query: str, position: int, fragment: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(query)
    assert fragment in str(info.value)
    assert info.value.position == position
    assert info.value.query == query
    with pytest.raises(ValueError):  # QuerySyntaxError is also a ValueError
        validate_query(query)


def test_validate_query_accepts_valid() -> None:
    validate_query('"neoplasms"[MeSH Terms] AND 2010:2015[dp] NOT review[pt]')  # does not raise


def test_parse_date_bounds() -> None:
    assert parse_date_bounds("2015") == (20150101, 20151231)
    assert parse_date_bounds("2015/6") == (20150601, 20150630)
    assert parse_date_bounds("2016/02") == (20160201, 20160229)  # leap year
    assert parse_date_bounds("2016/02/29") == (20160229, 20160229)
    assert parse_date_bounds("2015-06-01") == (20150601, 20150601)
    for bad in ("15", "2015/0", "2015/13", "2015/04/31", "2015/02/29", "x", "2015/01/01/01"):
        assert parse_date_bounds(bad) is None


# --- rendering -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "rendered"),
    [
        ("neoplasms[mh] AND 2010:2015[dp]", '"neoplasms"[MeSH Terms] AND 2010:2015[Date - Publication]'),
        ("cancer", "cancer"),
        ('"breast cancer"', '"breast cancer"'),
        ("a OR b AND c", "(a OR b) AND c"),
        ("a NOT b NOT c", "a NOT b NOT c"),
        ("a AND (b NOT c)", "a AND (b NOT c)"),
        ("canc*[tiab] OR tumor[mh:noexp]", '"canc*"[Title/Abstract] OR "tumor"[MeSH Terms:noexp]'),
        (
            "review[pt] OR eng[la] OR smith j[au] OR lancet[ta]",
            '"review"[Publication Type] OR "eng"[Language] OR "smith j"[Author] OR "lancet"[Journal]',
        ),
        ("hasabstract[sb] NOT 1[pmid]", '"hasabstract"[Filter] NOT "1"[UID]'),
        (
            "x[majr] x[tw] x[ab] x[ti] 2015[edat]",
            '"x"[MeSH Major Topic] AND "x"[Text Word] AND "x"[Abstract] AND "x"[Title] AND '
            '"2015"[Date - Entry]',
        ),
    ],
)
def test_render(query: str, rendered: str) -> None:
    assert render(parse_query(query)) == rendered


ROUND_TRIP = [
    "cancer",
    "breast cancer",
    '"breast cancer" OR lung',
    "a OR b AND c NOT d",
    "(a OR (b AND (c NOT d))) e",
    "neoplasms[mh] AND 2010/01:2012/06/30[pdat] NOT review[pt]",
    'canc* OR breast canc*[tiab] OR "lung canc*"',
    '"asthma treatment"[tiab:~2] AND x[mh:noexp]',
    "a NOT (b NOT c) NOT d",
]


@pytest.mark.parametrize("query", ROUND_TRIP)
def test_render_round_trip(query: str) -> None:
    once = render(parse_query(query))
    assert render(parse_query(once)) == once  # rendering is a fixpoint
    if "[" not in query:  # untagged queries keep even the quoted flag
        assert parse_query(once) == parse_query(query)


def _strip_quoted(node: Node) -> Node:
    if isinstance(node, Term):
        return Term(node.text, node.field, node.quoted and node.field is None, node.wildcard, node.proximity)
    if isinstance(node, Range):
        return node
    if isinstance(node, Not):
        return Not(_strip_quoted(node.left), _strip_quoted(node.right))
    return type(node)(tuple(_strip_quoted(c) for c in node.children))


@pytest.mark.parametrize("query", ROUND_TRIP)
def test_render_round_trip_structure(query: str) -> None:
    # Tagged terms come back quoted; apart from that flag the AST is identical.
    assert _strip_quoted(parse_query(render(parse_query(query)))) == _strip_quoted(parse_query(query))


# --- fuzzing -------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_fuzz_arbitrary_text_only_raises_query_syntax_error(q: str) -> None:
    try:
        parse_query(q)
    except QuerySyntaxError as exc:
        assert exc.position is None or 0 <= exc.position <= len(q)


_PIECES = st.sampled_from(
    ["cancer", "lung", "canc*", "ab*", '"breast cancer"', '"', "(", ")", "[", "]", "[ti]", "[mh]", "[dp]",
     "[foo]", "AND", "OR", "NOT", "and", "2010:2015", "2015", ":", "*", " ", "  ", "x", "[tiab:~2]"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map(" ".join))
def test_fuzz_query_like_text_parses_or_fails_cleanly(q: str) -> None:
    try:
        node = parse_query(q)
    except QuerySyntaxError as exc:
        assert exc.position is not None and 0 <= exc.position <= len(q)
        return
    once = render(node)
    assert render(parse_query(once)) == once
