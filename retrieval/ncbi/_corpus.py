"""The literature corpus behind the local E-utilities server and the dense index.

A corpus folder holds ``pubmed/`` (PubMed baseline/update files, ``*.xml`` or ``*.xml.gz``) and ``pmc/``
(JATS articles, ``*.xml`` or ``*.nxml``, bare or in a ``pmc-articleset``). The bundled one is built by
``scripts/build_corpus.py``; users may drop more files into either folder.

Raw bytes are kept next to the typed records, so EFetch returns real records byte for byte instead of a
re-serialisation. Files are read in name order and a later record with the same PMID replaces an earlier
one; ``<DeleteCitation>`` entries remove PMIDs — the semantics of PubMed's baseline + update files.
"""

from __future__ import annotations

import datetime
import functools
import gc
import gzip
import hashlib
import io
import os
import pickle
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from lxml import etree

from retrieval.vocab import MeshVocabulary

from ._index import LiteratureIndex
from ._models import AbstractSection, PmcArticle, PubDate, PubmedRecord, normalise_pmcid
from ._pmc import JatsFront, parse_pmc_articles, read_jats_front
from ._pubmed import iter_pubmed_articles, pubmed_article_xml, real_medline_ta

__all__ = [
    "BUNDLED_CORPUS_DIR",
    "Citation",
    "Corpus",
    "clear_corpus_cache",
    "load_corpus",
    "pmc_index_record",
]

# Path(__file__) rather than importlib.resources: the server needs real files (mtime, gzip streams), and
# setuptools installs package data as plain files next to the module.
BUNDLED_CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus"

_PUBMED_ARTICLE_RE = re.compile(rb"<PubmedArticle[\s>].*?</PubmedArticle>", re.DOTALL)
_DELETE_RE = re.compile(rb"<DeleteCitation[\s>].*?</DeleteCitation>", re.DOTALL)
_PMID_RE = re.compile(rb"<PMID[^>]*>\s*(\d+)\s*</PMID>")
_JATS_ARTICLE_RE = re.compile(rb"<article[\s>].*?</article>", re.DOTALL)
_ARTICLE_ID_RE = re.compile(
    rb'<article-id\b[^>]*?\spub-id-type="(pmc|pmcid|pmid)"[^>]*>\s*(?:PMC)?(\d+)\s*</article-id>'
)


class _LazyArticles(Mapping[str, PmcArticle]):
    """PMCID -> article, parsed from its raw JATS on first access: a world's thousands of full texts would
    otherwise cost most of the load time, while a request touches a handful of them."""

    def __init__(self, raw: Mapping[str, bytes], parsed: dict[str, PmcArticle]) -> None:
        self._raw = raw
        self._parsed = parsed  # eagerly parsed ones (multi-article files) and the cache

    def __getitem__(self, pmcid: str) -> PmcArticle:
        article = self._parsed.get(pmcid)
        if article is None:
            article = self._parsed[pmcid] = parse_pmc_articles(self._raw[pmcid])[0]
        return article

    def __contains__(self, pmcid: object) -> bool:
        return pmcid in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class _JatsFronts(Mapping[str, tuple[str, ...]]):
    """PMCID -> PMIDs its reference list cites (``pmc_refs``), from the front matter; each article's front
    matter is read once, on first access, and kept for its summary too (:meth:`front`)."""

    def __init__(self, raw: Mapping[str, bytes], known: dict[str, JatsFront]) -> None:
        self._raw = raw
        self._known = known

    def front(self, pmcid: str) -> JatsFront:
        front = self._known.get(pmcid)
        if front is None:
            front = self._known[pmcid] = read_jats_front(self._raw[pmcid])
        return front

    def __getitem__(self, pmcid: str) -> tuple[str, ...]:
        return self.front(pmcid).ref_pmids

    def __contains__(self, pmcid: object) -> bool:
        return pmcid in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@dataclass(frozen=True, eq=False)
class Corpus:
    """PubMed records and PMC articles by id, their raw XML, the cross links, and two search indexes."""

    records: Mapping[str, PubmedRecord]  # PMID -> record
    raw: Mapping[str, bytes]  # PMID -> <PubmedArticle>…</PubmedArticle>
    pmc: Mapping[str, PmcArticle]  # "PMC<digits>" -> article
    pmc_raw: Mapping[str, bytes]  # "PMC<digits>" -> <article>…</article>
    pmid_to_pmcid: Mapping[
        str, str
    ]  # from PubMed ArticleId pmc and JATS article-ids (may name unheld PMCIDs)
    pmcid_to_pmid: Mapping[str, str]
    pmc_refs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # PMCID -> PMIDs it cites
    path: Path | None = None
    last_update: str = ""  # "YYYY/MM/DD HH:MM" of the newest corpus file (EInfo LastUpdate)

    @cached_property
    def cited_in_pmc(self) -> Mapping[str, tuple[str, ...]]:
        """PMID -> PMCIDs (held articles) whose reference lists cite it: the ``pubmed_pmc_refs`` link."""
        out: dict[str, list[str]] = {}
        for pmcid in sorted(self.pmc_refs, key=_pmc_sort_key):
            for pmid in self.pmc_refs[pmcid]:
                out.setdefault(pmid, []).append(pmcid)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def pubmed_index(self) -> LiteratureIndex:
        # A fresh vocabulary per index: LiteratureIndex registers the corpus' descriptor names into it.
        if self.path is None or len(self.records) < INDEX_CACHE_MIN_RECORDS:
            return LiteratureIndex(self.records.values(), self._vocabulary())
        return _cached_index(self.path, lambda: LiteratureIndex(self.records.values(), self._vocabulary()))

    def _vocabulary(self) -> MeshVocabulary:
        return corpus_vocabulary(self.path)

    @cached_property
    def pmc_index(self) -> LiteratureIndex:
        """Search over PMC articles; ids are PMC UIDs (bare digits), as ESearch db=pmc returns them."""
        return LiteratureIndex((pmc_index_record(a) for a in self.pmc.values()), MeshVocabulary.load())

    @cached_property
    def _fronts(self) -> _JatsFronts:
        # A loaded corpus's pmc_refs already reads the front matter: the same reading serves summaries.
        return self.pmc_refs if isinstance(self.pmc_refs, _JatsFronts) else _JatsFronts(self.pmc_raw, {})

    def jats_front(self, pmcid: str) -> JatsFront:
        """Front matter of a held PMC article (for summaries), parsed once on first use."""
        return self._fronts.front(pmcid)

    @cached_property
    def citations(self) -> tuple[Citation, ...]:
        """Every PubMed record as ECitMatch sees it (journal names, year, volume, first page, authors)."""
        return tuple(_citation(pmid, raw) for pmid, raw in self.raw.items())

    @cached_property
    def _citations_by_journal(self) -> dict[str, list[Citation]]:
        """:attr:`citations` under each of their normalised journal names, in corpus order."""
        out: dict[str, list[Citation]] = {}
        for c in self.citations:
            for j in c.journals:
                out.setdefault(j, []).append(c)
        return out

    def match_citation(
        self, journal: str, year: str = "", volume: str = "", first_page: str = "", author: str = ""
    ) -> str:
        """ECitMatch for one citation: the PMID when exactly one record matches every field given;
        ``NOT_FOUND;INVALID_JOURNAL`` for a journal no record has, ``NOT_FOUND`` for no match, and
        ``AMBIGUOUS (N citations)`` when several match."""
        j, a = _norm(journal), _norm(author)
        same_journal = self._citations_by_journal.get(j) if j else None
        if not same_journal:
            return "NOT_FOUND;INVALID_JOURNAL"
        hits = [
            c.pmid
            for c in same_journal
            if (not year.strip() or c.year == year.strip())
            and (not volume.strip() or c.volume == volume.strip().lower())
            and (not first_page.strip() or c.first_page == first_page.strip().lower())
            and (
                not a
                or any(name == a or name.startswith(a + " ") or name.split(" ")[0] == a for name in c.authors)
            )
        ]
        if not hits:
            return "NOT_FOUND"
        return hits[0] if len(hits) == 1 else f"AMBIGUOUS ({len(hits)} citations)"

    @property
    def pubmed_count(self) -> int:
        return len(self.records)

    @property
    def pmc_count(self) -> int:
        return len(self.pmc)


@dataclass(frozen=True, slots=True)
class Citation:
    pmid: str
    journals: frozenset[str]  # normalised MedlineTA, ISO abbreviation and full title
    year: str
    volume: str
    first_page: str
    authors: tuple[str, ...]  # "mann bj"


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _citation(pmid: str, raw: bytes) -> Citation:
    root = etree.fromstring(raw.strip(), etree.XMLParser(resolve_entities=False, no_network=True))
    art = root.find("MedlineCitation/Article")
    if art is None:
        art = etree.Element("Article")
    names = (
        real_medline_ta(root.find("MedlineCitation/MedlineJournalInfo")),
        art.findtext("Journal/ISOAbbreviation") or "",
        art.findtext("Journal/Title") or "",
    )
    year = art.findtext("Journal/JournalIssue/PubDate/Year") or ""
    if not year.strip():  # a MedlineDate ("1998 Dec-1999 Jan"): its first year
        year = next(
            iter(re.findall(r"\d{4}", art.findtext("Journal/JournalIssue/PubDate/MedlineDate") or "")), ""
        )
    pages = art.findtext("Pagination/StartPage") or art.findtext("Pagination/MedlinePgn") or ""
    authors = []
    for au in art.findall("AuthorList/Author"):
        last = au.findtext("LastName") or au.findtext("CollectiveName") or ""
        authors.append(_norm(f"{last} {au.findtext('Initials') or ''}"))
    return Citation(
        pmid=pmid,
        # A placeholder journal is no journal, never a match: a world's is marked inferred (real_medline_ta
        # drops it); the bundled corpus predates the mark, its "Unknown" (corpus README) is dropped by name.
        journals=frozenset(n for n in (_norm(x) for x in names) if n and n != "unknown"),
        year=year.strip(),
        volume=(art.findtext("Journal/JournalIssue/Volume") or "").strip().lower(),
        first_page=pages.strip().split("-")[0].strip().lower(),
        authors=tuple(authors),
    )


# Below this many records the index builds in about a second: not worth a file. A world (~22k records)
# takes 8-12 s to index and 1 s to unpickle; its 85 MB of PubMed XML 5 s to parse and 1 s to unpickle.
INDEX_CACHE_MIN_RECORDS = 5_000
RECORDS_CACHE_MIN_BYTES = 20_000_000
INDEX_CACHE_DIR = ".cache"
_INDEX_CODE = ("_index.py", "_models.py", "_corpus.py", "_pubmed.py")


def _index_key(path: Path) -> str:
    """The files the index is built from (name, size, mtime) and the code that builds it."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _INDEX_CODE:
        h.update(hashlib.sha256((here / name).read_bytes()).digest())
    mesh = sorted((path / "mesh").glob("mesh_descriptors*.json")) if (path / "mesh").is_dir() else []
    for f in [*_pubmed_files(path / "pubmed"), *mesh]:
        st = f.stat()
        h.update(f"{f.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:24]


def _cached_index(path: Path, build: Callable[[], LiteratureIndex]) -> LiteratureIndex:
    """The search index of a large corpus, unpickled from ``<corpus>/.cache/`` when its files and the
    index code are unchanged; built and written there (best effort: a read-only folder just rebuilds).
    The pickle lives inside the corpus folder, which is as trusted as the records themselves."""
    return _cached(path, "pubmed-index", build, lambda v: isinstance(v, LiteratureIndex))


_Records = tuple[dict[str, PubmedRecord], dict[str, bytes]]
_T = TypeVar("_T")


def _cached_records(path: Path, files: list[Path]) -> _Records:
    """PubMed records and raw bytes of the corpus' files: parsed, or unpickled like the index."""

    def parse() -> _Records:
        records: dict[str, PubmedRecord] = {}
        raw: dict[str, bytes] = {}
        for f in files:
            _load_pubmed_file(f, records, raw)
        return records, raw

    if sum(f.stat().st_size for f in files) < RECORDS_CACHE_MIN_BYTES:
        return parse()
    return _cached(path, "pubmed-records", parse, lambda v: isinstance(v, tuple) and len(v) == 2)


def _cached(path: Path, stem: str, build: Callable[[], _T], valid: Callable[[object], bool]) -> _T:
    cache = path / INDEX_CACHE_DIR / f"{stem}-{_index_key(path)}.pickle"
    try:
        data = cache.read_bytes()
    except OSError:
        data = b""
    if data:
        gc.disable()  # unpickling millions of small containers: the collector would triple the time
        try:
            value = pickle.loads(data)  # our own cache file, keyed by content and code
            if valid(value):
                return value  # type: ignore[no-any-return]
        except Exception:  # a stale or truncated cache is rebuilt below
            pass
        finally:
            gc.enable()
    value = build()
    try:
        cache.parent.mkdir(exist_ok=True)
        for old in cache.parent.glob(f"{stem}-*.pickle"):
            old.unlink(missing_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, cache)
    except OSError:
        pass
    return value


def pmc_index_record(article: PmcArticle) -> PubmedRecord:
    """A PMC article as an index record: the PMC UID as id, body sections searched as abstract text."""
    body = tuple(AbstractSection(text=s.text, label=s.heading or None) for s in article.sections if s.text)
    return PubmedRecord(
        pmid=article.pmcid.removeprefix("PMC"),
        title=article.title,
        abstract=article.abstract + body,
        journal=article.journal,
        pub_date=PubDate(year=article.year),
        doi=article.doi,
        pmcid=article.pmcid,
    )


def _pmc_sort_key(pmcid: str) -> int:
    digits = pmcid.removeprefix("PMC")
    return int(digits) if digits.isdigit() else 0


def _read_maybe_gzip(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # by magic, not by name: NCBI's .gz files are sometimes served plain
        data = gzip.decompress(data)
    return data


def _pubmed_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.is_file() and p.name.endswith((".xml", ".xml.gz"))]
    return sorted(files, key=lambda p: p.name)


def _pmc_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.is_file() and p.suffix in (".xml", ".nxml")]
    return sorted(files, key=lambda p: p.name)


def _load_pubmed_file(path: Path, records: dict[str, PubmedRecord], raw: dict[str, bytes]) -> None:
    data = _read_maybe_gzip(path)
    slices: dict[str, bytes] = {}
    for match in _PUBMED_ARTICLE_RE.finditer(data):
        pm = _PMID_RE.search(match.group(0))
        if pm is not None:
            slices[pm.group(1).decode()] = match.group(0)
    for rec in iter_pubmed_articles(io.BytesIO(data)):
        records.pop(rec.pmid, None)  # re-insert: a replaced record moves to the end, like a fresh one
        records[rec.pmid] = rec
        # A record the regex could not cut out (exotic markup) is re-serialised rather than dropped.
        raw[rec.pmid] = slices.get(rec.pmid) or pubmed_article_xml(rec)
    for match in _DELETE_RE.finditer(data):
        for pm in _PMID_RE.finditer(match.group(0)):
            records.pop(pm.group(1).decode(), None)
            raw.pop(pm.group(1).decode(), None)


def _load_pmc_file(
    path: Path,
    pmc: dict[str, PmcArticle],
    pmc_raw: dict[str, bytes],
    fronts: dict[str, JatsFront],
    ids: dict[str, str | None],
) -> None:
    data = path.read_bytes()
    slices = _JATS_ARTICLE_RE.findall(data)
    if len(slices) == 1:  # one article: its ids by a scan, the parse deferred (_LazyArticles)
        found: dict[bytes, str] = {}
        for kind, digits in _ARTICLE_ID_RE.findall(slices[0]):
            found.setdefault(kind, digits.decode())
        pmc_digits = found.get(b"pmc") or found.get(b"pmcid")
        if pmc_digits:
            pmcid = f"PMC{pmc_digits}"
            pmc.pop(pmcid, None)
            fronts.pop(pmcid, None)
            pmc_raw[pmcid] = slices[0]
            ids[pmcid] = found.get(b"pmid")
            return
    articles = parse_pmc_articles(data)
    if len(slices) != len(articles):  # cannot pair raw bytes with records safely: keep the file whole
        slices = [data] * len(articles)
    for article, raw in zip(articles, slices, strict=True):
        pmc[article.pmcid] = article
        pmc_raw[article.pmcid] = raw
        fronts[article.pmcid] = read_jats_front(raw)
        ids[article.pmcid] = article.pmid


def _last_update(files: Iterable[Path]) -> str:
    mtimes = [p.stat().st_mtime for p in files]
    if not mtimes:
        return ""
    return datetime.datetime.fromtimestamp(max(mtimes), tz=datetime.UTC).strftime("%Y/%m/%d %H:%M")


def _load(path: Path) -> Corpus:
    pubmed_files = _pubmed_files(path / "pubmed")
    records, raw = _cached_records(path, pubmed_files)
    pmc: dict[str, PmcArticle] = {}
    pmc_raw: dict[str, bytes] = {}
    fronts: dict[str, JatsFront] = {}
    article_pmids: dict[str, str | None] = {}
    pmc_files = _pmc_files(path / "pmc")
    for f in pmc_files:
        _load_pmc_file(f, pmc, pmc_raw, fronts, article_pmids)

    pmid_to_pmcid: dict[str, str] = {}
    pmcid_to_pmid: dict[str, str] = {}
    for rec in records.values():
        if rec.pmcid:
            pmcid = normalise_pmcid(rec.pmcid)
            pmid_to_pmcid[rec.pmid] = pmcid
            pmcid_to_pmid.setdefault(pmcid, rec.pmid)
    for pmcid, article_pmid in article_pmids.items():  # JATS article-ids are authoritative for held articles
        if article_pmid:
            pmid_to_pmcid[article_pmid] = pmcid
            pmcid_to_pmid[pmcid] = article_pmid
    return Corpus(
        records=records,
        raw=raw,
        pmc=_LazyArticles(pmc_raw, pmc),
        pmc_raw=pmc_raw,
        pmid_to_pmcid=pmid_to_pmcid,
        pmcid_to_pmid=pmcid_to_pmid,
        pmc_refs=_JatsFronts(pmc_raw, fronts),
        path=path,
        last_update=_last_update([*pubmed_files, *pmc_files]),
    )


@functools.lru_cache(maxsize=8)
def _load_cached(path: Path) -> Corpus:
    return _load(path)


def corpus_vocabulary(path: Path | None) -> MeshVocabulary:
    """A fresh MeSH vocabulary as the local server's index over the corpus at ``path`` uses it: the bundled
    C04 tree, plus a world's full MeSH under ``mesh/`` (explosion beyond C04) when it ships one."""
    extra = sorted((path / "mesh").glob("mesh_descriptors*.json")) if path else []
    return MeshVocabulary.load(extra=extra)


def load_corpus(path: Path | None = None) -> Corpus:
    """Load the corpus in ``path`` (``None`` = the bundled ``retrieval/corpus``), once per process per
    resolved path. Call :func:`clear_corpus_cache` after changing files under a loaded folder."""
    return _load_cached((path or BUNDLED_CORPUS_DIR).resolve())


def clear_corpus_cache() -> None:
    _load_cached.cache_clear()
