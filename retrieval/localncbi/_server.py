"""NCBI-compatible local E-utilities server (Starlette) over a corpus on disk.

Serves ``/entrez/eutils/{einfo,esearch,esummary,efetch,elink,epost,espell}.fcgi`` and ``ecitmatch.cgi`` for
``db=pubmed`` and ``db=pmc``, GET and form-encoded POST alike (and the ESummary v2 DTDs under
``/eutils/dtd/``), so a client switches between live NCBI and this server by base URL alone (or in-process
through :func:`eutils_transport`). Bodies come from the protocol's writers in :mod:`retrieval.ncbi`
(E-utilities envelopes, ESummary, PubMed, PMC).

Behaviours NCBI does not document, as decided here (no recorded sample fixes them):

* A query our parser rejects -> ESearch ``<ERROR>`` body (JSON ``"ERROR"``) with **HTTP 200**, like an
  invalid db: the client maps ``ERROR`` payloads to ``BadRequest`` and never retries them.
* An unsupported db (anything but pubmed/pmc) is answered like an invalid one, each endpoint with its own
  recorded envelope and wording (§13 E1-E4), HTTP 200.
* EFetch with no ``id`` and no ``query_key`` -> ``<eFetchResult><ERROR>Empty id list - nothing
  todo</ERROR></eFetchResult>``; EFetch whose ids are all unknown -> an *empty* ``PubmedArticleSet`` /
  ``pmc-articleset`` (HTTP 200). EFetch has no JSON: ``retmode=json`` (or text) returns the XML, except
  ``rettype=uilist`` (plain-text ids), ``medline``/``abstract`` (text) and ``docsum`` (ESummary v1 XML).
* ESummary/EFetch ``retstart`` is 0-based for id lists and history sets (a missing one = first record).
* ELink links only to records the local databases hold: ``pubmed_pmc`` (same article, from PubMed
  ArticleIds and JATS article-ids), ``pubmed_pmc_refs`` (held PMC articles citing the PMID), and back
  ``pmc_pubmed`` / ``pmc_refs_pubmed``. ``cmd=neighbor`` and ``neighbor_history`` are served, and
  ``neighbor_score`` for pubmed -> pubmed (similar articles, from the injected provider); other commands get
  an ``<ERROR>``.
* EFetch ``rettype=medline`` / ``abstract`` (``retmode=text`` or none) answer NCBI's plain-text formats.
* ESpell corrects with the injected speller; ECitMatch matches journal (MedlineTA, ISO abbreviation or
  title), year, volume, first page and author over the held records.
* ``mindate``/``maxdate`` are applied only when both are given; a non-numeric ``reldate`` is ignored.
* The History server is in memory: at most 1,000 WebEnvs (least recently used evicted), 100 query keys
  each; an unknown WebEnv or query_key gives an ``<ERROR>`` in the endpoint's envelope.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl

import httpx
from cachetools import FIFOCache, LRUCache
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core import KeyedWindows
from retrieval.ncbi import (
    ESUMMARY_V2_DTD_DATE,
    Corpus,
    DocSum,
    ESearchResult,
    LinkSetData,
    LinkSetDbData,
    PubmedRecord,
    docsum_from_jats,
    docsum_from_pubmed,
    efetch_error_xml,
    einfo_dbinfo_json,
    einfo_dbinfo_xml,
    einfo_dblist_json,
    einfo_dblist_xml,
    einfo_error_json,
    einfo_error_xml,
    elink_error_json,
    elink_error_xml,
    elink_json,
    elink_xml,
    epost_error_xml,
    epost_xml,
    esearch_count_json,
    esearch_count_xml,
    esearch_error_json,
    esearch_error_xml,
    esearch_json,
    esearch_xml,
    espell_xml,
    esummary_error_json,
    esummary_error_xml,
    esummary_v1_xml,
    esummary_v2_dtd,
    esummary_v2_json,
    esummary_v2_xml,
    load_corpus,
    pmc_articleset,
    pmfetch_html,
    pubmed_abstract_text,
    pubmed_articleset,
    pubmed_medline_text,
    ratelimit_json,
    restrict_pmc_article,
    server_error_html,
)
from retrieval.query import And, Node, Not, Or, QuerySyntaxError, Term, parse_query

from ._config import LocalServerSettings

__all__ = [
    "ENDPOINTS",
    "HistoryServer",
    "RequestRecord",
    "SimilarArticles",
    "Speller",
    "create_eutils_app",
    "eutils_transport",
]

ENDPOINTS = ("einfo", "esearch", "esummary", "efetch", "elink", "epost", "espell", "ecitmatch")
# What the caller injects (the server sits below the speller and the dense index in the layers):
Speller = Callable[[str], str]
"""ESpell: the query with its misspelled words corrected (unchanged when nothing is misspelled)."""
SimilarArticles = Callable[[PubmedRecord, int], Awaitable[Sequence[tuple[str, float]]]]
"""ELink ``cmd=neighbor_score``: up to ``n`` (PMID, similarity in 0..1) for a record, best first."""
# NCBI's pubmed_pubmed lists the source record itself first, scored with the largest 32-bit integer.
SELF_SCORE = 2_147_483_647
NEIGHBOURS = 100
DATABASES = ("pubmed", "pmc")
MAX_RETMAX = 10_000
REQUEST_LOG_SIZE = 10_000

XML = "text/xml; charset=UTF-8"
JSON = "application/json; charset=UTF-8"
HTML = "text/html; charset=UTF-8"
TEXT = "text/plain; charset=UTF-8"

_V2_DTDS = {f"esummary_{db}.dtd": db for db in DATABASES}
_HISTORY_REF = re.compile(r"#(\d+)")
_ID_RE = re.compile(r"^(?:PMC)?(\d+)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it: server-side ``time.monotonic()``, endpoint, rate-limit key."""

    time: float
    endpoint: str
    key: str
    method: str


# --------------------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------------------


class _Params:
    """Request parameters in arrival order, names lower-cased (NCBI: lowercase except ``WebEnv``)."""

    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self.items = [(k.lower(), v) for k, v in items]

    def get(self, name: str, default: str = "") -> str:
        for k, v in self.items:
            if k == name and v.strip():
                return v.strip()
        return default

    def getall(self, name: str) -> list[str]:
        return [v for k, v in self.items if k == name]

    def int(self, name: str, default: int, *, lo: int = 0, hi: int | None = None) -> int:
        try:
            value = int(self.get(name))
        except ValueError:
            return default
        value = max(lo, value)
        return min(value, hi) if hi is not None else value

    @property
    def json(self) -> bool:
        return self.get("retmode").lower() == "json"


async def _read_params(request: Request) -> _Params:
    items = list(request.query_params.multi_items())
    if request.method == "POST":
        # Form-encoded by hand: Starlette's form parser would pull in python-multipart for nothing.
        body = (await request.body()).decode("utf-8", errors="replace")
        items += parse_qsl(body, keep_blank_values=True)
    return _Params(items)


def _split_ids(values: Sequence[str]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def _uid(value: str, db: str) -> str | None:
    """A UID as the database numbers it: digits; PMC ids also accepted with their ``PMC`` prefix."""
    m = _ID_RE.match(value.strip())
    if m is None or (db == "pubmed" and not value.strip().isdigit()):
        return None
    return m.group(1).lstrip("0") or "0"


# --------------------------------------------------------------------------------------------------------
# History server
# --------------------------------------------------------------------------------------------------------


@dataclass
class _Env:
    # The oldest query keys go first, however recently they were read.
    sets: FIFOCache[int, tuple[str, tuple[str, ...]]]
    next_key: int = 1


class HistoryServer:
    """In-memory WebEnv -> query_key -> (db, ids), bounded in both dimensions (WebEnvs LRU, keys FIFO)."""

    def __init__(self, max_envs: int = 1000, max_keys: int = 100) -> None:
        self._envs: LRUCache[str, _Env] = LRUCache(maxsize=max_envs)
        self.max_envs = max_envs
        self.max_keys = max_keys

    def store(self, db: str, ids: Sequence[str], webenv: str | None = None) -> tuple[str, str]:
        """Append a set to ``webenv`` (a new environment when absent/unknown); returns (query_key, WebEnv)."""
        env = self._envs.get(webenv) if webenv else None  # a hit marks the environment recently used
        if env is None or webenv is None:
            webenv = "MCID_" + secrets.token_hex(12)  # the 2025 form (esearch2.xml, epost1.xml)
            env = self._envs[webenv] = _Env(FIFOCache(maxsize=self.max_keys))
        key = env.next_key
        env.next_key += 1
        env.sets[key] = (db, tuple(ids))
        return str(key), webenv

    def get(self, webenv: str, query_key: str) -> tuple[str, tuple[str, ...]] | None:
        if webenv not in self._envs or not query_key.strip().isdigit():
            return None
        return self._envs[webenv].sets.get(int(query_key))  # reading marks the environment recently used

    def __contains__(self, webenv: object) -> bool:
        return webenv in self._envs


class _HistoryError(Exception):
    pass


# --------------------------------------------------------------------------------------------------------
# Rate limiting (sliding 1-second window per key)
# --------------------------------------------------------------------------------------------------------


class _RateLimiter:
    def __init__(self) -> None:
        # Bounded: a caller sending each request under a new api_key cannot grow memory.
        self._accepted = KeyedWindows()
        self._attempts = KeyedWindows()

    def hit(self, key: str, rate: float, now: float) -> tuple[bool, int, int]:
        """Register one request; returns (allowed, requests seen in the window, remaining)."""
        # ``n`` requests per window of ``max(n / rate, 1)`` seconds: 3/s -> 3 in any 1 s; a fractional rate
        # (2.5/s -> 2 in any 1 s) never lets a second hold more than it, as n / rate alone (0.8 s) would.
        n = max(1, math.floor(rate))
        window = max(n / rate, 1.0)
        accepted = self._accepted.get(key, n, window)
        attempts = self._attempts.get(key, n, window)
        seen = attempts.count(now) + 1
        attempts.add(now)
        if accepted.wait(now) > 0:
            return False, seen, 0
        accepted.add(now)
        return True, seen, n - accepted.count(now)


# --------------------------------------------------------------------------------------------------------
# The application
# --------------------------------------------------------------------------------------------------------


def _xml(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=XML)


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=JSON)


_Listed = Literal["errors", "warnings", "none"]  # where an injected empty ESearch says why (ErrorList...)


def _typed_terms(node: Node, quoted: bool = False) -> Iterator[str]:
    """Every term of a parsed query as it was typed (``text[tag]``, the bare text when untagged), each in
    quotes when ``quoted``."""
    if isinstance(node, Term):
        text = f'"{node.text}"' if quoted else node.text
        yield f"{text}[{node.tag or node.field}]" if node.field else text
    elif isinstance(node, And | Or):
        for child in node.children:
            yield from _typed_terms(child, quoted)
    elif isinstance(node, Not):
        yield from _typed_terms(node.left, quoted)
        yield from _typed_terms(node.right, quoted)


def _limit_int(rate: float) -> int:
    return max(1, math.floor(rate))


class _Eutils:
    """Request handlers; one instance per app, holding the corpus, history, limiter and fault RNG."""

    def __init__(
        self,
        settings: LocalServerSettings,
        corpus: Corpus,
        speller: Speller | None = None,
        similar: SimilarArticles | None = None,
    ) -> None:
        self.settings = settings
        self.corpus = corpus
        self.speller = speller
        self.similar = similar
        self.history = HistoryServer()
        self.limiter = _RateLimiter()
        self.rng = random.Random(settings.faults.seed)
        self.request_log: deque[RequestRecord] = deque(maxlen=REQUEST_LOG_SIZE)
        self.restricted = {_uid(p, "pmc") for p in settings.restricted_pmcids} - {None}
        self.handlers: dict[str, Callable[[_Params], Response | Awaitable[Response]]] = {
            "einfo": self.einfo,
            "esearch": self.esearch,
            "esummary": self.esummary,
            "efetch": self.efetch,
            "elink": self.elink,
            "epost": self.epost,
            "espell": self.espell,
            "ecitmatch": self.ecitmatch,
        }

    # ---- request pipeline: log, rate limit, faults, handler ---------------------------------------------

    async def dispatch(self, request: Request, endpoint: str) -> Response:
        params = await _read_params(request)
        api_key = params.get("api_key")
        key = api_key or (request.client.host if request.client else "unknown")
        now = time.monotonic()
        self.request_log.append(RequestRecord(now, endpoint, key, request.method))

        headers: dict[str, str] = {}
        if self.settings.rate_limit:
            rate = self.settings.rate_with_key if api_key else self.settings.rate_no_key
            allowed, count, remaining = self.limiter.hit(key, rate, now)
            limit = _limit_int(rate)
            headers = {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(remaining)}
            if not allowed:  # E14: 429 + JSON body, no Retry-After
                return Response(ratelimit_json(key, count, limit), 429, headers=headers, media_type=JSON)

        faults = self.settings.faults
        # Three draws on every request (latency, stall, outcome), so one seed gives one fault sequence
        # whatever the rates. The outcome draw falls into consecutive bands, one per fault: each rate is
        # the exact probability of that answer, and their sum (capped at 1) the share of faulty answers.
        latency = self.rng.uniform(faults.latency_ms_min, max(faults.latency_ms_min, faults.latency_ms_max))
        stall, outcome = self.rng.random(), self.rng.random()
        if latency > 0:
            await asyncio.sleep(latency / 1000)
        if stall < faults.stall_rate:
            await asyncio.sleep(faults.stall_s)
        band = faults.error_500_rate
        if outcome < band:
            return Response(server_error_html(), 500, headers=headers, media_type=HTML)
        band += faults.html_rate
        if outcome < band:
            return Response(self._pmfetch_page(params), 200, headers=headers, media_type=HTML)
        band += faults.ratelimit_2xx_rate
        if outcome < band:
            body = ratelimit_json(key, 0, _limit_int(self.settings.rate_no_key))
            return Response(body, 200, headers=headers, media_type=JSON)
        truncate = outcome < band + faults.truncated_rate
        band += faults.truncated_rate
        if endpoint == "esearch" and not truncate:  # the same outcome draw: ESearch-only bands follow
            bands: tuple[tuple[_Listed, float], ...] = (
                ("errors", faults.esearch_not_found_rate),
                ("warnings", faults.esearch_quoted_not_found_rate),
                ("none", faults.esearch_empty_rate),
            )
            for listed, rate in bands:
                band += rate
                if outcome < band:
                    return self._esearch_nothing(params, listed, headers)

        answer = self.handlers[endpoint](params)
        response = answer if isinstance(answer, Response) else await answer
        response.headers.update(headers)
        if truncate:  # a real body cut in half (E13): the client must surface a parse error
            cut = bytes(response.body)[: len(response.body) // 2]
            response = Response(cut, response.status_code, headers=headers, media_type=response.media_type)
        return response

    def _esearch_nothing(self, p: _Params, listed: _Listed, headers: dict[str, str]) -> Response:
        """An injected ESearch that finds nothing. ``listed``: where PubMed says why: ``errors``, it knew none
        of the query's terms (each in ErrorList/PhraseNotFound, as typed); ``warnings``, none of its phrases
        was found (each, quoted, in WarningList/QuotedPhraseNotFound); ``none``, it just matched nothing."""
        try:
            terms = tuple(dict.fromkeys(_typed_terms(parse_query(p.get("term")), listed == "warnings")))
        except QuerySyntaxError:
            terms = ()
        result = ESearchResult(
            count=0,
            phrases_not_found=terms if listed == "errors" else (),
            quoted_phrases_not_found=terms if listed == "warnings" else (),
            output_messages=("No items found.",),
        )
        response = _json(esearch_json(result)) if p.json else _xml(esearch_xml(result))
        response.headers.update(headers)
        return response

    def _pmfetch_page(self, params: _Params) -> bytes:
        ids = [u for u in (_uid(i, "pubmed") for i in _split_ids(params.getall("id"))) if u]
        rec = next((self.corpus.records[i] for i in ids if i in self.corpus.records), None)
        if rec is None:
            rec = next(iter(self.corpus.records.values()), None)
        if rec is None:
            return pmfetch_html("0", "")
        return pmfetch_html(rec.pmid, rec.title, rec.journal_iso or rec.journal or "", rec.year)

    # ---- shared helpers -------------------------------------------------------------------------------

    def _ids_or_history(self, params: _Params, db: str) -> list[str] | None:
        """UIDs from ``id`` (comma lists and repeats flattened, order kept, duplicates dropped) or from
        ``query_key`` + ``WebEnv``; None when neither is given. Raises _HistoryError for a bad reference."""
        raw_ids = _split_ids(params.getall("id"))
        if raw_ids:
            return list(dict.fromkeys(u for u in (_uid(i, db) for i in raw_ids) if u))
        query_key, webenv = params.get("query_key"), params.get("webenv")
        if not query_key and not webenv:
            return None
        stored = self.history.get(webenv, query_key)
        if stored is None:
            raise _HistoryError(
                f"Unable to retrieve query_key {query_key or '(none)'} from WebEnv {webenv!r}"
            )
        return list(stored[1])

    @staticmethod
    def _page(ids: list[str], params: _Params, default_max: int) -> list[str]:
        start = params.int("retstart", 0)
        count = params.int("retmax", default_max, hi=MAX_RETMAX)
        return ids[start : start + count]

    # ---- EInfo ----------------------------------------------------------------------------------------

    def einfo(self, p: _Params) -> Response:
        db = p.get("db")
        if not db:
            return _json(einfo_dblist_json(DATABASES)) if p.json else _xml(einfo_dblist_xml(DATABASES))
        if db not in DATABASES:
            msg = f"Can not retrieve DbInfo for db={db}"
            return _json(einfo_error_json(msg)) if p.json else _xml(einfo_error_xml(msg))
        count = self.corpus.pubmed_count if db == "pubmed" else self.corpus.pmc_count
        last, build = self.corpus.last_update, self._build()
        if p.json:
            return _json(einfo_dbinfo_json(db, count=count, last_update=last, build=build))
        return _xml(einfo_dbinfo_xml(db, count=count, last_update=last, build=build))

    def _build(self) -> str:
        last = self.corpus.last_update
        return "Build-" + (last.replace("/", ".").replace(" ", ".").replace(":", ".") or "local")

    # ---- ESearch --------------------------------------------------------------------------------------

    def esearch(self, p: _Params) -> Response:
        db = p.get("db", "pubmed")

        def error(msg: str) -> Response:
            return _json(esearch_error_json(msg)) if p.json else _xml(esearch_error_xml(msg))

        if db not in DATABASES:
            return error(f"Invalid db name specified: {db}")
        term, query_key, webenv = p.get("term"), p.get("query_key"), p.get("webenv")
        if not term and not query_key:
            return error("Empty term and query_key - nothing todo")
        index = self.corpus.pubmed_index if db == "pubmed" else self.corpus.pmc_index
        stored: tuple[str, ...] | None = None
        if query_key:
            got = self.history.get(webenv, query_key)
            if got is None:
                return error(f"Unable to retrieve query_key {query_key} from WebEnv {webenv!r}")
            stored = got[1]
        try:
            if term:
                term = self._expand_history_refs(term, webenv)
                hits = index.search(
                    term,
                    field=p.get("field") or None,
                    sort=p.get("sort") or None,
                    mindate=p.get("mindate") if p.get("mindate") and p.get("maxdate") else None,
                    maxdate=p.get("maxdate") if p.get("mindate") and p.get("maxdate") else None,
                    datetype=p.get("datetype") or None,
                    reldate=int(p.get("reldate")) if p.get("reldate").isdigit() else None,
                )
                ids = list(hits.ids)
                if stored is not None:  # query_key + term: AND with the stored set, keeping search order
                    keep = set(stored)
                    ids = [i for i in ids if i in keep]
                translation, translations = hits.query_translation, hits.translations
                not_found, quoted_nf = hits.phrases_not_found, hits.quoted_phrases_not_found
            else:
                ids = sorted(stored or (), key=lambda s: (-int(s) if s.isdigit() else 0, s))
                translation, translations, not_found, quoted_nf = f"#{query_key}", (), (), ()
        except QuerySyntaxError as exc:
            return error(str(exc))
        except _HistoryError as exc:
            return error(str(exc))

        if p.get("rettype").lower() == "count":
            return _json(esearch_count_json(len(ids))) if p.json else _xml(esearch_count_xml(len(ids)))
        new_key = new_env = None
        if p.get("usehistory").lower() == "y":
            new_key, new_env = self.history.store(db, ids, webenv or None)
        page = self._page(ids, p, 20)
        result = ESearchResult(
            count=len(ids),
            ids=tuple(page),
            retmax=len(page),
            retstart=p.int("retstart", 0),
            query_translation=translation,
            translations=translations,
            phrases_not_found=not_found,
            quoted_phrases_not_found=quoted_nf,
            output_messages=("No items found.",) if not ids else (),
            query_key=new_key,
            webenv=new_env,
        )
        return _json(esearch_json(result)) if p.json else _xml(esearch_xml(result))

    def _expand_history_refs(self, term: str, webenv: str) -> str:
        """``#1 AND asthma`` -> the stored set as a PMID list the query engine understands."""
        if "#" not in term:
            return term

        def repl(m: re.Match[str]) -> str:
            got = self.history.get(webenv, m.group(1)) if webenv else None
            if got is None:
                raise _HistoryError(f"Unable to retrieve query_key {m.group(1)} from WebEnv {webenv!r}")
            ids = got[1] or ("0",)  # PMID 0 exists nowhere: an empty set stays empty
            return "(" + " OR ".join(f"{i}[pmid]" for i in ids) + ")"

        return _HISTORY_REF.sub(repl, term)

    # ---- ESummary -------------------------------------------------------------------------------------

    def esummary(self, p: _Params) -> Response:
        db = p.get("db", "pubmed")

        def error(msg: str) -> Response:
            return _json(esummary_error_json(msg)) if p.json else _xml(esummary_error_xml(msg))

        if db not in DATABASES:
            return error(f"Invalid db name specified: {db}")
        raw_given = _split_ids(p.getall("id"))
        ids: list[str] | None
        if raw_given:  # unknown or malformed ids still get their per-uid error entry (E10)
            ids = list(dict.fromkeys(_uid(i, db) or i for i in raw_given))
        else:
            try:
                ids = self._ids_or_history(p, db)
            except _HistoryError as exc:
                return error(str(exc))
            if ids is None:
                return error("Neither query_key nor id specified")  # E9, esummary8.xml
        ids = self._page(ids, p, MAX_RETMAX)
        docs = [self._docsum(db, uid) for uid in ids]
        if p.json:
            return _json(esummary_v2_json(docs))
        if p.get("version") == "2.0":
            return _xml(esummary_v2_xml(docs, db=db, build=self._build()))
        return _xml(esummary_v1_xml(docs))

    def _docsum(self, db: str, uid: str) -> DocSum:
        if db == "pubmed":
            rec = self.corpus.records.get(uid)
            if rec is not None:
                refs = len(self.corpus.cited_in_pmc.get(uid, ()))
                return docsum_from_pubmed(rec, self.corpus.raw.get(uid), pmcrefcount=refs)
        elif f"PMC{uid}" in self.corpus.pmc:
            return docsum_from_jats(uid, self.corpus.jats_front(f"PMC{uid}"))
        return DocSum(uid=uid, db=db, error="cannot get document summary")

    # ---- EFetch ---------------------------------------------------------------------------------------

    def efetch(self, p: _Params) -> Response:
        db = p.get("db", "pubmed")
        if db not in DATABASES:
            return _xml(efetch_error_xml(f"Invalid db name specified: {db}"))
        try:
            ids = self._ids_or_history(p, db)
        except _HistoryError as exc:
            return _xml(efetch_error_xml(str(exc)))
        if ids is None:
            return _xml(efetch_error_xml("Empty id list - nothing todo"))
        ids = self._page(ids, p, MAX_RETMAX)
        rettype = p.get("rettype").lower()
        if rettype == "docsum":  # [DOC] "return XML data equivalent to ESummary output"
            return _xml(esummary_v1_xml([self._docsum(db, uid) for uid in ids]))
        if db == "pubmed":
            held = [uid for uid in ids if uid in self.corpus.raw]
            if rettype == "uilist":
                return Response("".join(f"{uid}\n" for uid in held), media_type=TEXT)
            if rettype in ("medline", "abstract") and p.get("retmode", "text").lower() == "text":
                write = pubmed_medline_text if rettype == "medline" else pubmed_abstract_text
                return Response(write(self.corpus.raw[uid] for uid in held), media_type=TEXT)
            return _xml(pubmed_articleset(self.corpus.raw[uid] for uid in held))
        held = [uid for uid in ids if f"PMC{uid}" in self.corpus.pmc_raw]
        if rettype == "uilist":
            return Response("".join(f"{uid}\n" for uid in held), media_type=TEXT)
        articles = [
            restrict_pmc_article(self.corpus.pmc_raw[f"PMC{uid}"])
            if uid in self.restricted
            else self.corpus.pmc_raw[f"PMC{uid}"]
            for uid in held
        ]
        return _xml(pmc_articleset(articles))

    # ---- ELink ----------------------------------------------------------------------------------------

    def _links(self, dbfrom: str, db: str, uid: str) -> dict[str, list[str]]:
        """Link name -> target UIDs for one source id, only towards records this server holds."""
        c = self.corpus
        out: dict[str, list[str]] = {}
        if dbfrom == "pubmed" and db == "pmc":
            pmcid = c.pmid_to_pmcid.get(uid)
            out["pubmed_pmc"] = [pmcid.removeprefix("PMC")] if pmcid and pmcid in c.pmc else []
            out["pubmed_pmc_refs"] = [x.removeprefix("PMC") for x in c.cited_in_pmc.get(uid, ())]
        elif dbfrom == "pmc" and db == "pubmed":
            pmid = c.pmcid_to_pmid.get(f"PMC{uid}") if f"PMC{uid}" in c.pmc else None
            out["pmc_pubmed"] = [pmid] if pmid and pmid in c.records else []
            out["pmc_refs_pubmed"] = [x for x in c.pmc_refs.get(f"PMC{uid}", ()) if x in c.records]
        return out

    async def elink(self, p: _Params) -> Response:
        dbfrom, db = p.get("dbfrom", "pubmed"), p.get("db", "pubmed")

        def error(msg: str) -> Response:
            return _json(elink_error_json(msg)) if p.json else _xml(elink_error_xml(msg))

        for name in (dbfrom, db):
            if name not in DATABASES:
                return error(f"Invalid db name specified: {name}")
        cmd = p.get("cmd", "neighbor").lower()
        if cmd == "neighbor_score" and dbfrom == db == "pubmed":
            return await self._neighbor_score(p)
        if cmd not in ("neighbor", "neighbor_history"):
            return error(f"Command not supported by the local E-utilities server: {cmd}")
        linkname = p.get("linkname")
        # Each id= parameter is one LinkSet (one-to-one); a comma list inside one parameter is a batch.
        groups = [[u for u in (_uid(i, dbfrom) for i in _split_ids([v])) if u] for v in p.getall("id")]
        groups = [g for g in groups if g]
        if not groups:
            try:
                ids = self._ids_or_history(p, dbfrom)
            except _HistoryError as exc:
                return error(str(exc))
            if not ids:
                return error("Empty id list - nothing todo")
            groups = [ids]
        webenv = p.get("webenv") or None
        linksets: list[LinkSetData] = []
        for group in groups:
            merged: dict[str, list[str]] = {}
            for uid in group:
                for name, targets in self._links(dbfrom, db, uid).items():
                    merged.setdefault(name, []).extend(targets)
            dbs: list[LinkSetDbData] = []
            for name, targets in merged.items():
                if (linkname and name != linkname) or not targets:
                    continue  # E16: no LinkSetDb at all when nothing links
                links = tuple(sorted(set(targets), key=int, reverse=True))
                if cmd == "neighbor_history":
                    key, webenv = self.history.store(db, links, webenv)
                    dbs.append(LinkSetDbData(db, name, links, query_key=key))
                else:
                    dbs.append(LinkSetDbData(db, name, links))
            history_env = (
                (webenv or self.history.store(db, (), None)[1]) if cmd == "neighbor_history" else None
            )
            linksets.append(LinkSetData(dbfrom, tuple(group), tuple(dbs), webenv=history_env))
        return _json(elink_json(linksets)) if p.json else _xml(elink_xml(linksets))

    async def _neighbor_score(self, p: _Params) -> Response:
        """Similar articles (``pubmed_pubmed`` with ``<Score>``), from the injected provider: the source
        first at NCBI's self score, then neighbours by similarity x 10^8. No provider, or an id this server
        does not hold: the LinkSet without a LinkSetDb, as NCBI answers when nothing links (E16)."""
        linkname = p.get("linkname")
        linksets: list[LinkSetData] = []
        for value in p.getall("id"):
            group = [u for u in (_uid(i, "pubmed") for i in _split_ids([value])) if u]
            if not group:
                continue
            scored: dict[str, int] = {}
            for uid in group:
                rec = self.corpus.records.get(uid)
                if rec is None or self.similar is None:
                    continue
                scored[uid] = SELF_SCORE
                for pmid, sim in await self.similar(rec, NEIGHBOURS):
                    if pmid != uid and pmid in self.corpus.records:
                        scored[pmid] = max(scored.get(pmid, 0), round(max(0.0, sim) * 1e8))
            ranked = sorted(scored.items(), key=lambda kv: (-kv[1], -int(kv[0])))
            dbs = [
                LinkSetDbData("pubmed", name, tuple(i for i, _ in top), scores=tuple(s for _, s in top))
                for name, top in (("pubmed_pubmed", ranked), ("pubmed_pubmed_five", ranked[:5]))
                if top and (not linkname or linkname == name)
            ]
            linksets.append(LinkSetData("pubmed", tuple(group), tuple(dbs)))
        if not linksets:
            return _xml(elink_error_xml("Empty id list - nothing todo"))
        return _json(elink_json(linksets)) if p.json else _xml(elink_xml(linksets))

    # ---- EPost, ESpell, ECitMatch ---------------------------------------------------------------------

    def epost(self, p: _Params) -> Response:
        db = p.get("db", "pubmed")
        if db not in DATABASES:
            return _xml(epost_error_xml([f"Invalid db name specified: {db}"]))
        raw_ids = _split_ids(p.getall("id"))
        ids = list(dict.fromkeys(u for u in (_uid(i, db) for i in raw_ids) if u))
        if not ids:
            msgs = ["Empty ID list; Nothing to store"]
            if raw_ids:
                msgs.append(
                    "Some IDs have invalid value and were omitted. Maximum ID value 18446744073709551615"
                )
            return _xml(epost_error_xml(msgs))
        key, webenv = self.history.store(db, ids, p.get("webenv") or None)
        return _xml(epost_xml(key, webenv))

    def espell(self, p: _Params) -> Response:
        # Without an injected speller the query comes back as its own correction.
        term = p.get("term")
        corrected = self.speller(term) if self.speller and term else term
        return _xml(espell_xml(p.get("db", "pubmed"), term, corrected))

    def ecitmatch(self, p: _Params) -> Response:
        """``bdata``: citations ``journal|year|volume|first page|author|key|`` separated by CR (or LF);
        each comes back as its own line with the PMID (or NOT_FOUND / AMBIGUOUS) appended, plain text."""
        if p.get("db", "pubmed") != "pubmed":
            return Response(f"Invalid db name specified: {p.get('db')}\n", media_type=TEXT)
        lines: list[str] = []
        for raw in re.split(r"[\r\n]+", p.get("bdata")):
            if not raw.strip():
                continue
            fields = (raw.split("|") + [""] * 6)[:6]
            journal, year, volume, page, author, key = fields
            found = self.corpus.match_citation(journal, year, volume, page, author)
            lines.append("|".join([journal, year, volume, page, author, key, found]))
        return Response("".join(f"{line}\n" for line in lines), media_type=TEXT)


def create_eutils_app(
    settings: LocalServerSettings | None = None,
    corpus: Corpus | None = None,
    *,
    speller: Speller | None = None,
    similar: SimilarArticles | None = None,
) -> Starlette:
    """The local E-utilities ASGI app. ``corpus`` defaults to ``settings.corpus_dir`` (None = bundled).

    ``speller`` answers ESpell and ``similar`` ELink ``cmd=neighbor_score``; the caller injects them (both
    live above this package). Without them ESpell echoes the query and similar articles are an empty
    LinkSet, the shapes NCBI gives when it has nothing to offer.

    ``app.state.request_log`` is a bounded deque of :class:`RequestRecord` (server-side monotonic times),
    ``app.state.history`` the :class:`HistoryServer`.
    """
    settings = settings or LocalServerSettings()
    corpus = corpus if corpus is not None else load_corpus(settings.corpus_dir)
    eutils = _Eutils(settings, corpus, speller, similar)

    def endpoint(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            return await eutils.dispatch(request, name)

        return handle

    routes = [
        Route(
            f"/entrez/eutils/{name}.{'cgi' if name == 'ecitmatch' else 'fcgi'}",
            endpoint(name),
            methods=["GET", "POST"],
            name=name,
        )
        for name in ENDPOINTS
    ]

    async def dtd(request: Request) -> Response:
        # The v2 ESummary DOCTYPE names these; Biopython downloads a DTD it does not bundle from there.
        name = request.path_params["name"]
        if request.path_params["date"] != ESUMMARY_V2_DTD_DATE or name not in _V2_DTDS:
            return Response(b"Not Found", 404, media_type=TEXT)
        return Response(esummary_v2_dtd(_V2_DTDS[name]), media_type="application/xml-dtd")

    routes.append(Route("/eutils/dtd/{date}/{name}", dtd, methods=["GET"], name="dtd"))
    app = Starlette(routes=routes)
    app.state.settings = settings
    app.state.corpus = corpus
    app.state.history = eutils.history
    app.state.request_log = eutils.request_log
    return app


def eutils_transport(app: Starlette) -> httpx.ASGITransport:
    """In-process transport: ``httpx.AsyncClient(transport=eutils_transport(app), base_url=...)``."""
    return httpx.ASGITransport(app=app)
