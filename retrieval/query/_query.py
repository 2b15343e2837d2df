"""PubMed Boolean query syntax -> typed AST.

Grammar (PubMed evaluates operators strictly left to right; only parentheses group)::

    query  := unit ( [AND|OR|NOT] unit )*         # a missing operator between units is AND
    unit   := '(' query ')' | term
    term   := ( WORD+ | '"' text '"' ) [ '[' tag ']' ]

Rules chosen here (PubMed documents most of them only loosely):

* Only capitalised ``AND``/``OR``/``NOT`` are operators; ``and``/``or``/``not`` are ordinary words.
* A run of bare words forms **one** term, so a field tag applies to the whole run (``breast cancer[tiab]``
  searches the phrase, as PubMed does for tagged terms). An untagged run is left for Automatic Term Mapping,
  which falls back to ANDing its words.
* ``AND``/``OR`` chains are n-ary (``a AND b AND c`` -> one :class:`And`); ``NOT`` is binary and
  left-associative; ``a OR b AND c`` is ``(a OR b) AND c``.
* Wildcard: one trailing ``*`` on the last word, with at least 4 letters/digits before it (PubMed's rule);
  a truncated word ends its run (``canc* therapy`` is ``canc* AND therapy``).
* ``lo:hi`` followed by a date tag is a :class:`Range`; dates are ``YYYY``, ``YYYY/MM`` or ``YYYY/MM/DD``.
* ``[ti:~N]``/``[tiab:~N]`` is a proximity search (all words within N words of each other).
* Errors (always :class:`QuerySyntaxError` with a 0-based ``position``): empty query, unbalanced or empty
  parentheses, dangling operator, unknown/unterminated/misplaced field tag, unterminated or empty quote,
  stray ``]``, bad wildcard, bad date, nesting deeper than 100.

The parser only builds data; nothing in the query is ever evaluated.
"""

from __future__ import annotations

import calendar
import dataclasses
import re
from dataclasses import dataclass
from typing import TypeAlias

from ._errors import QuerySyntaxError

__all__ = [
    "DATE_FIELDS",
    "FIELD_NAMES",
    "And",
    "Node",
    "Not",
    "Or",
    "Range",
    "Term",
    "normalise_field",
    "parse_date_bounds",
    "parse_query",
    "render",
    "validate_query",
]

# Canonical field code -> the long name PubMed prints in QueryTranslation (einfo2.xml FullName).
FIELD_NAMES: dict[str, str] = {
    "all": "All Fields",
    "tiab": "Title/Abstract",
    "ti": "Title",
    "ab": "Abstract",
    "tw": "Text Word",
    "mh": "MeSH Terms",
    "mh:noexp": "MeSH Terms:noexp",
    "majr": "MeSH Major Topic",
    "majr:noexp": "MeSH Major Topic:noexp",
    "pt": "Publication Type",
    "dp": "Date - Publication",
    "edat": "Date - Entry",
    "mdat": "Date - Modification",
    "crdt": "Date - Create",
    "la": "Language",
    "pmid": "UID",
    "au": "Author",
    "ta": "Journal",
    "sb": "Filter",
}
DATE_FIELDS = frozenset({"dp", "edat", "mdat", "crdt"})

# Every accepted spelling (lower-case, single spaces) -> canonical code. Long names are PubMed's FullNames.
_ALIASES: dict[str, str] = {
    **{code: code for code in FIELD_NAMES},
    **{name.lower(): code for code, name in FIELD_NAMES.items()},
    "all fields": "all",
    "title": "ti",
    "abstract": "ab",
    "title/abstract": "tiab",
    "text word": "tw",
    "text words": "tw",
    "mesh": "mh",
    "mesh terms": "mh",
    "mesh:noexp": "mh:noexp",
    "mesh terms:noexp": "mh:noexp",
    "mesh major topic": "majr",
    "mesh major topic:noexp": "majr:noexp",
    "publication type": "pt",
    "pdat": "dp",
    "publication date": "dp",
    "date - publication": "dp",
    "entrez date": "edat",
    "date - entry": "edat",
    "date - modification": "mdat",
    "date - create": "crdt",
    "language": "la",
    "uid": "pmid",
    "author": "au",
    "journal": "ta",
    "filter": "sb",
    "subset": "sb",
}
_PROXIMITY = re.compile(r"^(ti|title|tiab|title/abstract)\s*:\s*~\s*(\d{1,3})$")
_DATE = re.compile(r"^(\d{4})(?:[/-](\d{1,2})(?:[/-](\d{1,2}))?)?$")
_MAX_DEPTH = 100
_OPERATORS = frozenset({"AND", "OR", "NOT"})
_MIN_WILDCARD_STEM = 4


@dataclass(frozen=True, slots=True)
class Term:
    """A term. ``text`` excludes a wildcard's trailing ``*``; ``field`` is a canonical code."""

    text: str
    field: str | None = None
    quoted: bool = False
    wildcard: bool = False
    proximity: int | None = None
    # The tag as typed (``mh``, ``MeSH Terms``); NCBI echoes it in PhraseNotFound. Not part of equality.
    tag: str | None = dataclasses.field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Range:
    """``lo:hi[field]`` on a date field; bounds are normalised ``YYYY[/MM[/DD]]`` strings."""

    lo: str
    hi: str
    field: str = "dp"


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    left: Node
    right: Node


Node: TypeAlias = Term | Range | And | Or | Not


def normalise_field(tag: str) -> str | None:
    """``'MeSH Terms'`` -> ``'mh'``; None for an unknown tag."""
    return _ALIASES.get(" ".join(tag.lower().split()))


def parse_date_bounds(text: str) -> tuple[int, int] | None:
    """``'2015'`` -> (20150101, 20151231); ``'2015/06'`` -> (20150601, 20150630); None when invalid."""
    m = _DATE.match(text.strip())
    if not m:
        return None
    year = int(m.group(1))
    if m.group(2) is None:
        return year * 10000 + 101, year * 10000 + 1231
    month = int(m.group(2))
    if not 1 <= month <= 12:
        return None
    if m.group(3) is None:
        # The real last day, since the bound is echoed back in QueryTranslation.
        last = calendar.monthrange(year, month)[1]
        return year * 10000 + month * 100 + 1, year * 10000 + month * 100 + last
    day = int(m.group(3))
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    v = year * 10000 + month * 100 + day
    return v, v


# --- tokenizer -----------------------------------------------------------------------------------------

_LP, _RP, _OP, _WORD, _QUOTED, _TAG = "(", ")", "op", "word", "quoted", "tag"
_BREAK = frozenset('()"[]')


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(q: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(q)
    while i < n:
        c = q[i]
        if c.isspace():
            i += 1
        elif c in "()":
            toks.append(_Tok(c, c, i))
            i += 1
        elif c == '"':
            j = q.find('"', i + 1)
            if j < 0:
                raise QuerySyntaxError("unterminated quote", query=q, position=i)
            text = " ".join(q[i + 1 : j].split())
            if not text:
                raise QuerySyntaxError("empty quoted phrase", query=q, position=i)
            toks.append(_Tok(_QUOTED, text, i))
            i = j + 1
        elif c == "[":
            j = q.find("]", i + 1)
            if j < 0 or "[" in q[i + 1 : j]:
                raise QuerySyntaxError("unterminated field tag", query=q, position=i)
            toks.append(_Tok(_TAG, q[i + 1 : j].strip(), i))
            i = j + 1
        elif c == "]":
            raise QuerySyntaxError("unmatched ']'", query=q, position=i)
        else:
            j = i
            while j < n and not q[j].isspace() and q[j] not in _BREAK:
                j += 1
            word = q[i:j]
            toks.append(_Tok(_OP if word in _OPERATORS else _WORD, word, i))
            i = j
    return toks


# --- parser --------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, q: str) -> None:
        self.q = q
        self.toks = _tokenize(q)
        self.i = 0

    def error(self, message: str, pos: int) -> QuerySyntaxError:
        return QuerySyntaxError(message, query=self.q, position=pos)

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def parse(self) -> Node:
        if not self.toks:
            raise self.error("empty query", 0)
        node = self.expr(0, None)
        tok = self.peek()
        if tok is not None:  # only a surplus ')' can stop expr() early at depth 0
            raise self.error("unbalanced parentheses: unmatched ')'", tok.pos)
        return node

    def expr(self, depth: int, open_pos: int | None) -> Node:
        if depth > _MAX_DEPTH:
            raise self.error("parentheses nested too deeply", open_pos or 0)
        node = self.unit(depth)
        while True:
            tok = self.peek()
            if tok is None or tok.kind == _RP:
                return node
            if tok.kind == _OP:
                self.i += 1
                nxt = self.peek()
                if nxt is None or nxt.kind in (_RP, _OP):
                    raise self.error(f"operator {tok.text} has no right operand", tok.pos)
                op = tok.text
            else:
                op = "AND"  # adjacent units are ANDed
            node = _combine(op, node, self.unit(depth))

    def unit(self, depth: int) -> Node:
        tok = self.peek()
        if tok is None:  # callers guarantee a token; kept for type-safety
            raise self.error("unexpected end of query", len(self.q))
        if tok.kind == _LP:
            self.i += 1
            inner = self.peek()
            if inner is None:
                raise self.error("unbalanced parentheses: unmatched '('", tok.pos)
            if inner.kind == _RP:
                raise self.error("empty parentheses", tok.pos)
            node = self.expr(depth + 1, tok.pos)
            close = self.peek()
            if close is None or close.kind != _RP:
                raise self.error("unbalanced parentheses: unmatched '('", tok.pos)
            self.i += 1
            after = self.peek()
            if after is not None and after.kind == _TAG:
                raise self.error("a field tag cannot follow ')'", after.pos)
            return node
        if tok.kind == _OP:
            raise self.error(f"operator {tok.text} has no left operand", tok.pos)
        if tok.kind == _RP:
            raise self.error("unbalanced parentheses: unmatched ')'", tok.pos)
        if tok.kind == _TAG:
            raise self.error("field tag without a term", tok.pos)
        if tok.kind == _QUOTED:
            self.i += 1
            words = [(tok.text, tok.pos + 1)]
            quoted = True
        else:
            words = []
            while (t := self.peek()) is not None and t.kind == _WORD:
                words.append((t.text, t.pos))
                self.i += 1
                if t.text.endswith("*"):
                    break  # truncation ends a run: "canc* therapy" is canc* AND therapy
            quoted = False
        tag_tok = self.peek()
        tag: str | None = None
        tag_pos = 0
        if tag_tok is not None and tag_tok.kind == _TAG:
            self.i += 1
            tag, tag_pos = tag_tok.text, tag_tok.pos
            nxt = self.peek()
            if nxt is not None and nxt.kind == _TAG:
                raise self.error("field tag without a term", nxt.pos)
        return self.term(words, quoted, tag, tag_pos)

    def term(self, words: list[tuple[str, int]], quoted: bool, tag: str | None, tag_pos: int) -> Node:
        text = " ".join(w for w, _ in words)
        code: str | None = None
        proximity: int | None = None
        if tag is not None:
            code = normalise_field(tag)
            if code is None:
                m = _PROXIMITY.match(" ".join(tag.lower().split()))
                if m is None:
                    raise self.error(f"unknown field tag [{tag}]", tag_pos)
                code = "ti" if m.group(1) in ("ti", "title") else "tiab"
                proximity = int(m.group(2))
        if code in DATE_FIELDS:
            compact = "".join(text.split())
            lo, sep, hi = compact.partition(":")
            if sep:
                if parse_date_bounds(lo) is None or parse_date_bounds(hi) is None:
                    raise self.error(f"invalid date range {text!r}", words[0][1])
                return Range(lo.replace("-", "/"), hi.replace("-", "/"), code)
            if parse_date_bounds(compact) is None:
                raise self.error(f"invalid date {text!r}", words[0][1])
            return Term(compact.replace("-", "/"), code, quoted, tag=tag)
        wildcard = False
        if "*" in text:
            last, last_pos = words[-1] if not quoted else (text.split(" ")[-1], words[0][1])
            star = text.index("*")
            if star != len(text) - 1:
                raise self.error("wildcard '*' is only allowed at the end of a term", words[0][1] + star)
            stem = last[:-1] if last.endswith("*") else last
            if sum(ch.isalnum() for ch in stem) < _MIN_WILDCARD_STEM:
                raise self.error(
                    f"wildcard needs at least {_MIN_WILDCARD_STEM} characters before '*'", last_pos
                )
            text = text[:-1]
            wildcard = True
        return Term(text, code, quoted, wildcard, proximity, tag=tag)


def _combine(op: str, left: Node, right: Node) -> Node:
    # AND/OR are associative, so same-operator chains flatten into one n-ary node (also across parentheses).
    if op == "NOT":
        return Not(left, right)
    cls = And if op == "AND" else Or
    lc = left.children if isinstance(left, cls) else (left,)
    rc = right.children if isinstance(right, cls) else (right,)
    return cls((*lc, *rc))


def parse_query(q: str) -> Node:
    """Parse a PubMed query; raises :class:`QuerySyntaxError` (with ``position``) on any invalid input."""
    if not isinstance(q, str):
        raise QuerySyntaxError("query must be a string", query=str(q), position=0)
    return _Parser(q).parse()


def validate_query(q: str) -> None:
    """Raise :class:`QuerySyntaxError` if ``q`` is not a query :func:`parse_query` accepts."""
    parse_query(q)


# --- rendering -----------------------------------------------------------------------------------------


def _render_term(t: Term) -> str:
    text = t.text + ("*" if t.wildcard else "")
    if t.field is None:
        # Untagged terms stay bare so that re-parsing keeps them subject to Automatic Term Mapping.
        return f'"{text}"' if t.quoted else text
    name = FIELD_NAMES[t.field]
    if t.proximity is not None:
        name = f"{name}:~{t.proximity}"
    return f'"{text}"[{name}]'


def _render(node: Node, top: bool) -> str:
    if isinstance(node, Term):
        return _render_term(node)
    if isinstance(node, Range):
        return f"{node.lo}:{node.hi}[{FIELD_NAMES[node.field]}]"
    if isinstance(node, Not):
        # Operators run left to right, so a left-nested NOT chain needs no parentheses.
        left = _render(node.left, True) if isinstance(node.left, Not) else _render(node.left, False)
        s = f"{left} NOT {_render(node.right, False)}"
    else:
        op = " AND " if isinstance(node, And) else " OR "
        s = op.join(_render(c, False) for c in node.children)
    return s if top else f"({s})"


def render(node: Node) -> str:
    """The QueryTranslation form: long field names, quoted tagged terms, compound operands parenthesised."""
    return _render(node, True)
