"""In-memory PubMed-like search engine over :class:`PubmedRecord` (backs the local ESearch).

Inverted, positional index per *zone* (title, abstract, keywords, MeSH text, publication types, journal);
search fields are unions of zones, so a phrase never spans two zones. Structured fields (MeSH descriptors,
publication types, languages, authors, journals, filters, dates) have their own exact-key indexes.

Semantics (faithful to PubMed where it matters; see ``retrieval/query/_query.py`` for the syntax):

* Tokens: NFKD, accents stripped, lower-cased runs of letters/digits. No stemming.
* Untagged terms get Automatic Term Mapping: a run of words is segmented greedily (longest phrase first)
  against the MeSH vocabulary; a mapped segment becomes
  ``"<descriptor>"[MeSH Terms] OR <descriptor words>[All Fields] OR <term words>[All Fields] [OR plural]``
  (the esearch2/esearch5 shape, lexical variants like ``cancer's`` left out); an unmapped word is searched
  in All Fields. Quoted and truncated terms skip ATM. A query made only of known PMIDs is a UID list.
* ``[mh]``/``[majr]`` accept entry terms and explode down the C04 tree; ``:noexp`` does not explode.
* Dates: a record's date is year/month/day with a missing month or day taken as 1 (seasons map to their
  first month); records with no year never match a date limit. Entry/modification dates = publication date.
* Sorting: default descending PMID (what NCBI returns without ``sort``); ``pub_date`` newest first;
  ``relevance`` BM25 over title+abstract of the non-negated terms; ``author``/``journal`` ascending.
  Every tie is broken by descending PMID. An unknown ``sort`` is ignored, like NCBI does.
* A user term with no postings is reported in ``phrases_not_found`` (``quoted_phrases_not_found`` when
  quoted) and echoed raw in the translation; a zero-hit translation is parenthesised (esearch8.xml).
"""

from __future__ import annotations

import bisect
import datetime
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core import words as tokenize  # renamed: the engine's own variables called ``words`` are word lists
from retrieval.query import (
    DATE_FIELDS,
    FIELD_NAMES,
    And,
    Node,
    Not,
    QuerySyntaxError,
    Range,
    Term,
    normalise_field,
    parse_date_bounds,
    parse_query,
)
from retrieval.vocab import MeshVocabulary

from ._models import PubmedRecord

__all__ = ["LiteratureIndex", "SearchHits"]

MAX_WILDCARD_EXPANSIONS = 600  # PubMed's documented cap on truncation variants

_ZONES = ("ti", "ab", "kw", "mh", "pt", "jour")
_FIELD_ZONES: dict[str, tuple[str, ...]] = {
    "ti": ("ti",),
    "ab": ("ab",),
    "tiab": ("ti", "ab", "kw"),  # PubMed's [tiab] also covers author keywords
    "all": _ZONES,
    "tw": ("ti", "ab", "kw", "mh", "pt"),
}
_ZONE_GAP = 64  # position jump between sections/headings: phrases and proximity never bridge them
_SEASONS = {"spring": 4, "summer": 7, "fall": 10, "autumn": 10, "winter": 1}
_LANGUAGES = {
    "english": "eng",
    "french": "fre",
    "german": "ger",
    "spanish": "spa",
    "italian": "ita",
    "japanese": "jpn",
    "chinese": "chi",
    "russian": "rus",
    "portuguese": "por",
    "dutch": "dut",
    "polish": "pol",
    "korean": "kor",
    "swedish": "swe",
    "danish": "dan",
    "norwegian": "nor",
    "czech": "cze",
    "turkish": "tur",
    "hungarian": "hun",
    "finnish": "fin",
    "greek": "gre",
    "hebrew": "heb",
    "arabic": "ara",
}
_DATETYPES = {"pdat": "dp", "dp": "dp", "edat": "edat", "mdat": "mdat", "crdt": "crdt"}
_SORTS = {
    "pub_date": "pub_date",
    "pubdate": "pub_date",
    "date": "pub_date",
    "most_recent": "pub_date",
    "relevance": "relevance",
    "best_match": "relevance",
    "bestmatch": "relevance",
    "author": "author",
    "first_author": "author",
    "firstauthor": "author",
    "journal": "journal",
    "journalname": "journal",
    "journal_name": "journal",
}
# PubMed's stopword list, not core.STOPWORDS: PubMed drops exactly these from untagged, unquoted, unmapped
# words (reported as PhraseIgnored), and the local engine must search what PubMed would search.
_PUBMED_STOPWORDS = frozenset(
    """a about again all almost also although always among an and another any are as at be because been
    before being between both but by can could did do does done due during each either enough especially etc
    for found from further had has have having here how however i if in into is it its itself just kg km made
    mainly make may mg might ml mm most mostly must nearly neither no nor obtained of often on our overall
    perhaps pmid quite rather really regarding seem seen several should show showed shown shows significantly
    since so some such than that the their theirs them then there therefore these they this those through thus
    to upon use used using various very was we were what when which while with within without would""".split()
)
_BM25_K1, _BM25_B = 1.2, 0.75
_LAST = "\uffff"  # sorts records without author/journal after all others


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _name_key(text: str) -> str:
    """Author/journal key: punctuation dropped, so ``'Proc. Natl.'`` == ``'proc natl'``."""
    return " ".join(tokenize(text))


def _number_variant(word: str) -> str | None:
    """The plural of a singular word or the singular of a plural one (ATM adds it, e.g. cancer/cancers)."""
    if len(word) < 3 or not word.isalpha():
        return None
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def _fmt_date(v: int) -> str:
    return f"{v // 10000:04d}/{v // 100 % 100:02d}/{v % 100:02d}"


def _prefix_slice(keys: Sequence[str], prefix: str) -> list[str]:
    """Sorted keys starting with ``prefix`` (bisect, at most MAX_WILDCARD_EXPANSIONS)."""
    out: list[str] = []
    i = bisect.bisect_left(keys, prefix)
    while i < len(keys) and keys[i].startswith(prefix) and len(out) < MAX_WILDCARD_EXPANSIONS:
        out.append(keys[i])
        i += 1
    return out


@dataclass(frozen=True, slots=True)
class SearchHits:
    """Result of :meth:`LiteratureIndex.search`: every matching id in final order (the server pages them)."""

    ids: tuple[str, ...]
    count: int
    query_translation: str
    translations: tuple[tuple[str, str], ...] = ()
    phrases_not_found: tuple[str, ...] = ()
    quoted_phrases_not_found: tuple[str, ...] = ()
    phrases_ignored: tuple[str, ...] = ()  # stopwords dropped from untagged terms (ESearch PhraseIgnored)


@dataclass(slots=True)
class _Ev:
    """An evaluated sub-query: matching doc numbers and its QueryTranslation text."""

    docs: frozenset[int]
    text: str
    compound: bool = False

    def wrapped(self) -> str:
        return f"({self.text})" if self.compound else self.text


@dataclass(slots=True)
class _Ctx:
    field_override: str | None
    override_tag: str | None
    uid_list: bool = False
    translations: list[tuple[str, str]] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    quoted_not_found: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    positive_tokens: list[str] = field(default_factory=list)

    def translate(self, src: str, dst: str) -> None:
        if (src, dst) not in self.translations:
            self.translations.append((src, dst))


_EMPTY: frozenset[int] = frozenset()


class LiteratureIndex:
    """Inverted index over PubMed records with PubMed query semantics. Immutable after construction."""

    def __init__(self, records: Iterable[PubmedRecord], vocabulary: MeshVocabulary | None = None) -> None:
        unique: dict[str, PubmedRecord] = {}
        for rec in records:
            unique[rec.pmid] = rec  # a later copy of a PMID replaces the earlier one, like an update
        self._records: list[PubmedRecord] = list(unique.values())
        self._by_pmid = {rec.pmid: i for i, rec in enumerate(self._records)}
        self.vocabulary = vocabulary if vocabulary is not None else MeshVocabulary.load()
        self.vocabulary.add_descriptors(h.descriptor for rec in self._records for h in rec.mesh)

        n = len(self._records)
        self._pmid_num = [int(r.pmid) if r.pmid.isdigit() else -1 for r in self._records]
        order = sorted(range(n), key=lambda d: (-self._pmid_num[d], self._records[d].pmid))
        self._rank = [0] * n
        for pos, d in enumerate(order):
            self._rank[d] = pos

        self._pos: dict[str, dict[str, dict[int, tuple[int, ...]]]] = {z: {} for z in _ZONES}
        self._tiab_len = [0] * n
        self._mesh: dict[str, set[int]] = {}
        self._majr: dict[str, set[int]] = {}
        self._pt: dict[str, set[int]] = {}
        self._la: dict[str, set[int]] = {}
        self._au: dict[str, set[int]] = {}
        self._surname: dict[str, set[int]] = {}
        self._ta: dict[str, set[int]] = {}
        self._filters: dict[str, set[int]] = {"hasabstract": set(), "free full text": set(), "medline": set()}
        self._date: list[int | None] = [None] * n
        self._first_author = [_LAST] * n
        self._journal_key = [_LAST] * n
        for doc, rec in enumerate(self._records):
            self._index_record(doc, rec)

        dated = sorted((v, d) for d, v in enumerate(self._date) if v is not None)
        self._date_values = [v for v, _ in dated]
        self._date_docs = [d for _, d in dated]
        self._avgdl = (sum(self._tiab_len) / n) if n else 1.0
        self._vocab_cache: dict[str, list[str]] = {}
        self._explode_cache: dict[tuple[str, bool, bool], frozenset[int]] = {}

    # --- building ------------------------------------------------------------------------------------

    def _add_zone(self, doc: int, zone: str, texts: Iterable[str]) -> int:
        local: defaultdict[str, list[int]] = defaultdict(list)
        pos = total = 0
        for text in texts:
            toks = tokenize(text)
            for p, tok in enumerate(toks, pos):
                local[tok].append(p)
            pos += len(toks) + _ZONE_GAP
            total += len(toks)
        postings = self._pos[zone]
        for tok, plist in local.items():
            entry = postings.get(tok)
            if entry is None:
                entry = postings[tok] = {}
            entry[doc] = tuple(plist)
        return total

    def _index_record(self, doc: int, rec: PubmedRecord) -> None:
        vocab = self.vocabulary
        ti_len = self._add_zone(doc, "ti", [rec.title])
        ab_len = self._add_zone(doc, "ab", [s.text for s in rec.abstract])
        self._tiab_len[doc] = ti_len + ab_len
        self._add_zone(doc, "kw", rec.keywords)
        self._add_zone(doc, "mh", [h.descriptor for h in rec.mesh])
        real_types = [p for p in rec.publication_types if not p.inferred]  # a placeholder is not indexing
        self._add_zone(doc, "pt", [p.name for p in real_types])
        self._add_zone(doc, "jour", [j for j in (rec.journal, rec.journal_iso) if j])
        for h in rec.mesh:
            # Index under the current descriptor name, so 2019-era names in old records still explode.
            key = _key(vocab.canonical(h.descriptor) or h.descriptor)
            self._mesh.setdefault(key, set()).add(doc)
            if h.is_major:
                self._majr.setdefault(key, set()).add(doc)
        for p in real_types:
            self._pt.setdefault(_key(p.name), set()).add(doc)
        for lang in rec.languages:
            code = _LANGUAGES.get(_key(lang), _key(lang))
            self._la.setdefault(code, set()).add(doc)
        for i, author in enumerate(rec.authors):
            k = _name_key(author)
            if not k:
                continue
            self._au.setdefault(k, set()).add(doc)
            self._surname.setdefault(k.split()[0], set()).add(doc)
            if i == 0:
                self._first_author[doc] = k
        for j in (rec.journal, rec.journal_iso):
            if j and _name_key(j):
                self._ta.setdefault(_name_key(j), set()).add(doc)
        if rec.journal:
            self._journal_key[doc] = _name_key(rec.journal) or _LAST
        if rec.has_abstract:
            self._filters["hasabstract"].add(doc)
        if rec.pmcid:
            self._filters["free full text"].add(doc)
        if (rec.status or "").upper() == "MEDLINE":
            self._filters["medline"].add(doc)
        self._date[doc] = self._record_date(rec)

    @staticmethod
    def _record_date(rec: PubmedRecord) -> int | None:
        pd = rec.pub_date
        year = pd.year
        if year is None and pd.medline_date:
            m = re.search(r"\b(1[89]\d\d|20\d\d)\b", pd.medline_date)
            year = int(m.group(1)) if m else None
        if year is None:
            return None
        month = pd.month or _SEASONS.get((pd.season or "").lower(), 1)
        month = month if 1 <= month <= 12 else 1
        day = pd.day if pd.day and 1 <= pd.day <= 31 else 1
        return year * 10000 + month * 100 + day

    # --- public API ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, pmid: object) -> bool:
        return isinstance(pmid, str) and pmid in self._by_pmid

    def get(self, pmid: str) -> PubmedRecord | None:
        doc = self._by_pmid.get(pmid)
        return None if doc is None else self._records[doc]

    def search(
        self,
        term: str,
        *,
        field: str | None = None,
        sort: str | None = None,
        mindate: str | None = None,
        maxdate: str | None = None,
        datetype: str | None = None,
        reldate: int | None = None,
        today: datetime.date | None = None,
    ) -> SearchHits:
        """Run a PubMed query; :class:`QuerySyntaxError` for bad syntax or bad date/field parameters."""
        ast = parse_query(term)
        override: str | None = None
        if field is not None and field.strip():
            override = normalise_field(field)
            if override is None:
                raise QuerySyntaxError(f"unknown search field {field!r}", query=term, position=None)
        ctx = _Ctx(override, field.strip() if field else None)
        ctx.uid_list = self._is_uid_list(ast)
        ev = self._eval(ast, ctx, negated=False)
        docs, translation = ev.docs, ev.text

        date_code = _DATETYPES.get((datetype or "pdat").strip().lower())
        if date_code is None:
            raise QuerySyntaxError(f"unknown datetype {datetype!r}", query=term, position=None)
        limits: list[tuple[int, int]] = []
        if (mindate is None) != (maxdate is None) and (mindate or maxdate):
            raise QuerySyntaxError("mindate and maxdate must be used together", query=term, position=None)
        if mindate and maxdate:
            lo, hi = parse_date_bounds(mindate), parse_date_bounds(maxdate)
            if lo is None or hi is None:
                raise QuerySyntaxError(f"invalid mindate/maxdate {mindate!r}/{maxdate!r}", query=term)
            limits.append((lo[0], hi[1]))
        if reldate is not None:
            if reldate < 0:
                raise QuerySyntaxError(f"reldate must be >= 0, got {reldate}", query=term)
            end = today or datetime.date.today()
            start = end - datetime.timedelta(days=reldate)
            limits.append((_date_int(start), _date_int(end)))
        if limits:
            parts = [ev.wrapped()]
            for lo_v, hi_v in limits:
                docs = docs & self._date_range(lo_v, hi_v)
                parts.append(f"{_fmt_date(lo_v)}:{_fmt_date(hi_v)}[{FIELD_NAMES[date_code]}]")
            translation = " AND ".join(parts)
        if not docs:
            translation = f"({translation})"  # NCBI's zero-hit form (esearch8.xml)

        ids = tuple(self._records[d].pmid for d in self._sorted(docs, sort, ctx))
        return SearchHits(
            ids=ids,
            count=len(ids),
            query_translation=translation,
            translations=tuple(ctx.translations),
            phrases_not_found=tuple(dict.fromkeys(ctx.not_found)),
            quoted_phrases_not_found=tuple(dict.fromkeys(ctx.quoted_not_found)),
            phrases_ignored=tuple(dict.fromkeys(ctx.ignored)),
        )

    # --- evaluation ----------------------------------------------------------------------------------

    def _is_uid_list(self, ast: Node) -> bool:
        # Entrez: "If the query consists only of a list of UID numbers ... returns the corresponding records".
        if not isinstance(ast, Term) or ast.field or ast.quoted or ast.wildcard:
            return False
        words = ast.text.split()
        return all(w.isdigit() for w in words) and any(w in self._by_pmid for w in words)

    def _eval(self, node: Node, ctx: _Ctx, negated: bool) -> _Ev:
        if isinstance(node, Term):
            return self._eval_term(node, ctx, negated)
        if isinstance(node, Range):
            return self._eval_range(node)
        if isinstance(node, Not):
            left = self._eval(node.left, ctx, negated)
            right = self._eval(node.right, ctx, True)  # NOT operands never count for relevance
            return _Ev(left.docs - right.docs, f"{left.wrapped()} NOT {right.wrapped()}", True)
        evs = [self._eval(c, ctx, negated) for c in node.children]
        if isinstance(node, And):
            docs = evs[0].docs
            for e in evs[1:]:
                docs = docs & e.docs
            return _Ev(docs, " AND ".join(e.wrapped() for e in evs), len(evs) > 1)
        return _Ev(
            frozenset().union(*(e.docs for e in evs)), " OR ".join(e.wrapped() for e in evs), len(evs) > 1
        )

    def _eval_range(self, node: Range) -> _Ev:
        lo, hi = parse_date_bounds(node.lo), parse_date_bounds(node.hi)
        if lo is None or hi is None:  # the parser validates; a hand-built Range may not be
            raise QuerySyntaxError(f"invalid date range {node.lo}:{node.hi}")
        lo_v, hi_v = min(lo[0], hi[0]), max(lo[1], hi[1])  # 2015:2010 means 2010:2015
        return _Ev(
            self._date_range(lo_v, hi_v), f"{_fmt_date(lo_v)}:{_fmt_date(hi_v)}[{FIELD_NAMES[node.field]}]"
        )

    def _date_range(self, lo: int, hi: int) -> frozenset[int]:
        i = bisect.bisect_left(self._date_values, lo)
        j = bisect.bisect_right(self._date_values, hi)
        return frozenset(self._date_docs[i:j])

    def _leaf(self, ctx: _Ctx, t: Term, docs: frozenset[int], text: str, tag: str | None) -> _Ev:
        """A user-level term: report it when it has no postings and echo it raw, as NCBI does."""
        if docs:
            return _Ev(docs, text)
        shown = f'"{t.text}{"*" if t.wildcard else ""}"' if t.quoted else t.text + ("*" if t.wildcard else "")
        if tag:
            (ctx.quoted_not_found if t.quoted else ctx.not_found).append(f"{shown}[{tag}]")
            return _Ev(docs, f"{shown}[{tag}]")
        (ctx.quoted_not_found if t.quoted else ctx.not_found).append(shown)
        return _Ev(docs, f"{shown}[All Fields]")

    def _eval_term(self, t: Term, ctx: _Ctx, negated: bool) -> _Ev:
        code = t.field or ctx.field_override
        tag = t.tag if t.field else ctx.override_tag
        if code is None:
            if ctx.uid_list:
                words = t.text.split()
                docs = frozenset(self._by_pmid[w] for w in words if w in self._by_pmid)
                return _Ev(docs, " OR ".join(f"{w}[UID]" for w in words), len(words) > 1)
            if t.wildcard or t.quoted or t.proximity is not None:
                return self._eval_text(t, ctx, "all", None, negated)
            return self._atm(t, ctx, negated)
        if code in _FIELD_ZONES:
            return self._eval_text(t, ctx, code, tag, negated)
        if code in DATE_FIELDS:
            bounds = parse_date_bounds(t.text)
            if bounds is None:
                raise QuerySyntaxError(f"invalid date {t.text!r}")
            return _Ev(
                self._date_range(*bounds),
                f"{_fmt_date(bounds[0])}:{_fmt_date(bounds[1])}[{FIELD_NAMES[code]}]",
            )
        name = FIELD_NAMES[code]
        key = _key(t.text)
        if code in ("mh", "mh:noexp", "majr", "majr:noexp"):
            major = code.startswith("majr")
            if t.wildcard:
                table = self._majr if major else self._mesh
                docs = frozenset().union(
                    *(table[k] for k in _prefix_slice(self._sorted_keys(code, table), key))
                )
                return self._leaf(ctx, t, docs, f"{key}*[{name}]", tag)
            descriptor = self.vocabulary.lookup(t.text) or t.text
            dkey = _key(descriptor)
            text = f'"{dkey}"[{name}]'
            if dkey != key:
                ctx.translate(f"{t.text}[{tag or code}]", text)
            docs = self._explode(descriptor, noexp=code.endswith(":noexp"), major=major)
            return self._leaf(ctx, t, docs, text, tag)
        if code == "pt":
            return self._leaf(
                ctx, t, self._lookup_keyed(code, self._pt, key, t.wildcard), self._quote(t, key, name), tag
            )
        if code == "la":
            lang = _LANGUAGES.get(key, key)
            return self._leaf(
                ctx, t, self._lookup_keyed(code, self._la, lang, t.wildcard), self._quote(t, key, name), tag
            )
        if code == "pmid":
            doc = self._by_pmid.get(t.text.strip())
            return self._leaf(
                ctx, t, _EMPTY if doc is None else frozenset((doc,)), f"{t.text.strip()}[{name}]", tag
            )
        if code == "au":
            return self._leaf(
                ctx,
                t,
                self._author(_name_key(t.text), t.wildcard),
                self._quote(t, _name_key(t.text), name),
                tag,
            )
        if code == "ta":
            nk = _name_key(t.text)
            return self._leaf(
                ctx, t, self._lookup_keyed(code, self._ta, nk, t.wildcard), self._quote(t, nk, name), tag
            )
        # sb / filter
        fkey = {
            "has abstract": "hasabstract",
            "free fulltext": "free full text",
            "freetext": "free full text",
            "full text": "free full text",
            "fulltext": "free full text",
        }.get(key, key)
        docs = frozenset(self._filters.get(fkey, ()))
        return self._leaf(ctx, t, docs, self._quote(t, key, name), tag)

    @staticmethod
    def _quote(t: Term, key: str, name: str) -> str:
        return f"{key}*[{name}]" if t.wildcard else f'"{key}"[{name}]'

    def _sorted_keys(self, code: str, table: Mapping[str, object]) -> list[str]:
        cached = self._vocab_cache.get(code)
        if cached is None:
            cached = self._vocab_cache[code] = sorted(table)
        return cached

    def _lookup_keyed(
        self, code: str, table: Mapping[str, set[int]], key: str, wildcard: bool
    ) -> frozenset[int]:
        if wildcard:
            return frozenset().union(*(table[k] for k in _prefix_slice(self._sorted_keys(code, table), key)))
        return frozenset(table.get(key, ()))

    def _author(self, key: str, wildcard: bool) -> frozenset[int]:
        if not key:
            return _EMPTY
        if wildcard:
            return self._lookup_keyed("au", self._au, key, True)
        if " " not in key:
            return frozenset(self._surname.get(key, ()))
        # "smith j" also finds "smith ja": initials are matched as a prefix, as PubMed does.
        keys = self._sorted_keys("au", self._au)
        docs: set[int] = set()
        for k in _prefix_slice(keys, key):
            if k == key or (k[len(key)].isalpha() and " " not in k[len(key) :]):
                docs |= self._au[k]
        return frozenset(docs)

    def _explode(self, descriptor: str, *, noexp: bool, major: bool) -> frozenset[int]:
        canonical = self.vocabulary.canonical(descriptor) or descriptor
        ck = (_key(canonical), noexp, major)
        cached = self._explode_cache.get(ck)
        if cached is not None:
            return cached
        table = self._majr if major else self._mesh
        names = {canonical} if noexp else {canonical, *self.vocabulary.descendants(canonical)}
        docs = frozenset().union(*(table.get(_key(n), ()) for n in names))
        self._explode_cache[ck] = docs
        return docs

    # --- text fields ---------------------------------------------------------------------------------

    def _field_vocab(self, code: str) -> list[str]:
        cached = self._vocab_cache.get("text:" + code)
        if cached is None:
            keys: set[str] = set()
            for z in _FIELD_ZONES[code]:
                keys.update(self._pos[z])
            cached = self._vocab_cache["text:" + code] = sorted(keys)
        return cached

    def _token_docs(self, code: str, tok: str) -> frozenset[int]:
        return frozenset().union(*(self._pos[z].get(tok, {}) for z in _FIELD_ZONES[code]))

    def _phrase_docs(self, code: str, toks: Sequence[str]) -> frozenset[int]:
        if not toks:
            return _EMPTY
        if len(toks) == 1:
            return self._token_docs(code, toks[0])
        out: set[int] = set()
        for z in _FIELD_ZONES[code]:
            posts = [self._pos[z].get(tok) for tok in toks]
            if any(p is None for p in posts):
                continue
            plists: list[dict[int, tuple[int, ...]]] = [p for p in posts if p is not None]
            smallest = min(plists, key=len)
            candidates = set(smallest)
            for plist in plists:
                candidates.intersection_update(plist)
            for doc in candidates:
                rest = [set(p[doc]) for p in plists[1:]]
                if any(all(s + i + 1 in r for i, r in enumerate(rest)) for s in plists[0][doc]):
                    out.add(doc)
        return frozenset(out)

    def _proximity_docs(self, code: str, toks: Sequence[str], within: int) -> frozenset[int]:
        distinct = list(dict.fromkeys(toks))
        if len(distinct) < 2:
            return self._phrase_docs(code, distinct)
        out: set[int] = set()
        for z in _FIELD_ZONES[code]:
            posts = [self._pos[z].get(tok) for tok in distinct]
            if any(p is None for p in posts):
                continue
            plists = [p for p in posts if p is not None]
            candidates = set(plists[0]).intersection(*plists[1:])
            for doc in candidates:
                if (
                    _min_gap(sorted((pos, i) for i, p in enumerate(plists) for pos in p[doc]), len(plists))
                    <= within
                ):
                    out.add(doc)
        return frozenset(out)

    def _eval_text(self, t: Term, ctx: _Ctx, code: str, tag: str | None, negated: bool) -> _Ev:
        toks = tokenize(t.text)
        name = FIELD_NAMES[code]
        shown = " ".join(toks)
        if t.wildcard and toks:
            expansions = _prefix_slice(self._field_vocab(code), toks[-1])
            if not negated:
                ctx.positive_tokens.extend([*toks[:-1], *expansions])
            docs: frozenset[int] = frozenset().union(
                *(self._phrase_docs(code, [*toks[:-1], e]) for e in expansions)
            )
            text = f"{shown}*[{name}]" if len(toks) == 1 else f'"{shown}*"[{name}]'
            return self._leaf(ctx, t, docs, text, tag)
        if not negated:
            ctx.positive_tokens.extend(toks)
        if t.proximity is not None:
            docs = self._proximity_docs(code, toks, t.proximity)
            return self._leaf(ctx, t, docs, f'"{shown}"[{name}:~{t.proximity}]', tag)
        return self._leaf(ctx, t, self._phrase_docs(code, toks), f'"{shown}"[{name}]', tag)

    # --- automatic term mapping ----------------------------------------------------------------------

    def _atm(self, t: Term, ctx: _Ctx, negated: bool) -> _Ev:
        if _key(t.text) == "hasabstract":  # PubMed indexes this filter word in All Fields
            return self._leaf(
                ctx, t, frozenset(self._filters["hasabstract"]), "hasabstract[All Fields]", None
            )
        words = [w.strip(".,;:!?'()") for w in t.text.split()]
        words = [w for w in words if tokenize(w)]  # "&", "-" and the like carry nothing searchable
        if not words:
            return self._leaf(ctx, t, _EMPTY, "", None)
        segments: list[_Ev] = []
        maxw = min(self.vocabulary.max_phrase_words, 8)
        # Stopwords are dropped only when something else is left to search (a lone "the" is still searched).
        drop_stopwords = any(w.lower() not in _PUBMED_STOPWORDS for w in words)
        i = 0
        while i < len(words):
            for length in range(min(maxw, len(words) - i), 0, -1):
                phrase = " ".join(words[i : i + length])
                descriptor = self.vocabulary.lookup(phrase)
                if descriptor is not None:
                    segments.append(self._atm_expand(phrase, descriptor, ctx, negated))
                    i += length
                    break
            else:
                if drop_stopwords and words[i].lower() in _PUBMED_STOPWORDS:
                    ctx.ignored.append(words[i])
                    i += 1
                    continue
                word = Term(words[i])
                toks = tokenize(words[i])
                if not negated:
                    ctx.positive_tokens.extend(toks)
                segments.append(
                    self._leaf(
                        ctx, word, self._phrase_docs("all", toks), f'"{" ".join(toks)}"[All Fields]', None
                    )
                )
                i += 1
        if len(segments) == 1:
            return segments[0]
        docs = segments[0].docs
        for s in segments[1:]:
            docs = docs & s.docs
        return _Ev(docs, " AND ".join(s.wrapped() for s in segments), True)

    def _atm_expand(self, phrase: str, descriptor: str, ctx: _Ctx, negated: bool) -> _Ev:
        parts: list[_Ev] = [
            _Ev(self._explode(descriptor, noexp=False, major=False), f'"{_key(descriptor)}"[MeSH Terms]')
        ]
        for text in (descriptor, phrase):
            toks = tokenize(text)
            if len(toks) > 1:
                parts.append(
                    _Ev(
                        frozenset.intersection(*(self._token_docs("all", tok) for tok in toks)),
                        " AND ".join(f'"{tok}"[All Fields]' for tok in toks),
                        True,
                    )
                )
            if toks:
                parts.append(_Ev(self._phrase_docs("all", toks), f'"{" ".join(toks)}"[All Fields]'))
        toks = tokenize(phrase)
        if not negated:
            ctx.positive_tokens.extend(toks)
        variant = _number_variant(toks[0]) if len(toks) == 1 else None
        if variant:
            parts.append(_Ev(self._token_docs("all", variant), f'"{variant}"[All Fields]'))
        unique: dict[str, _Ev] = {}
        for p in parts:
            unique.setdefault(p.text, p)
        evs = list(unique.values())
        to = " OR ".join(e.wrapped() for e in evs)
        ctx.translate(phrase, to)
        docs = frozenset().union(*(e.docs for e in evs))
        if not docs:
            ctx.not_found.append(phrase)
        return _Ev(docs, to, len(evs) > 1)

    # --- ordering ------------------------------------------------------------------------------------

    def _sorted(self, docs: frozenset[int], sort: str | None, ctx: _Ctx) -> list[int]:
        mode = _SORTS.get((sort or "").strip().lower().replace("+", "_").replace(" ", "_"))
        rank = self._rank
        if mode == "pub_date":
            return sorted(docs, key=lambda d: (-(self._date[d] or 0), rank[d]))
        if mode == "author":
            return sorted(docs, key=lambda d: (self._first_author[d], rank[d]))
        if mode == "journal":
            return sorted(docs, key=lambda d: (self._journal_key[d], rank[d]))
        if mode == "relevance":
            scores = self._bm25(docs, ctx.positive_tokens)
            return sorted(docs, key=lambda d: (-scores.get(d, 0.0), rank[d]))
        return sorted(docs, key=rank.__getitem__)

    def _bm25(self, docs: frozenset[int], tokens: Sequence[str]) -> dict[int, float]:
        n = len(self._records)
        scores: dict[int, float] = {}
        ti, ab = self._pos["ti"], self._pos["ab"]
        for tok in dict.fromkeys(tokens):
            ti_p, ab_p = ti.get(tok, {}), ab.get(tok, {})
            df = len(ti_p.keys() | ab_p.keys())
            if not df:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for d in docs & (ti_p.keys() | ab_p.keys()):
                tf = len(ti_p.get(d, ())) + len(ab_p.get(d, ()))
                norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * self._tiab_len[d] / self._avgdl)
                scores[d] = scores.get(d, 0.0) + idf * tf * (_BM25_K1 + 1.0) / (tf + norm)
        return scores


def _date_int(d: datetime.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


def _min_gap(merged: Sequence[tuple[int, int]], k: int) -> int:
    """Smallest number of other words between k distinct terms (positions merged and sorted); big if none."""
    best = 1 << 30
    counts = [0] * k
    have = 0
    left = 0
    for right in range(len(merged)):
        ti = merged[right][1]
        counts[ti] += 1
        if counts[ti] == 1:
            have += 1
        while have == k:
            best = min(best, merged[right][0] - merged[left][0] - (k - 1))
            li = merged[left][1]
            counts[li] -= 1
            if counts[li] == 0:
                have -= 1
            left += 1
    return best
