"""Cache stores for E-utilities results: per process (memory), per host (SQLite), shared (Redis).

The client caches parsed results (:class:`~retrieval.ncbi._models.ESearchResult`, PubMed records, PMC
articles, ELink answers). Stores keep an entry ``ttl_s`` fresh and then ``max_stale_s`` longer, so a failed
call can still be answered from an expired entry (stale-if-error); :class:`CacheEntry` says which it is.

Network and disk stores serialise values as JSON of the frozen dataclasses, tagged with their type from a
fixed whitelist; nothing is ever unpickled, so a shared Redis cannot make a replica run code. A store that
fails (Redis down, SQLite locked) counts the error, logs a warning at most once a minute and behaves as a
miss: the cache is an optimisation, never a reason to fail a question.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from core import CometaError, SizedLRU, approx_size, user_cache_dir
from retrieval.ncbi import (
    AbstractSection,
    DbField,
    DbInfo,
    DbLink,
    DocSummary,
    EInfoResult,
    ESearchResult,
    License,
    MeshHeading,
    MeshQualifier,
    PmcArticle,
    PmcSection,
    PubDate,
    PublicationType,
    PubmedRecord,
)

from ._config import CacheSettings

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "CacheEntry",
    "CacheStore",
    "CacheStoreError",
    "LoopBoundRedis",
    "MemoryStore",
    "RedisStore",
    "SqliteStore",
    "StoreStats",
    "decode_value",
    "default_sqlite_path",
    "encode_value",
    "hash_part",
    "open_store",
]

log = logging.getLogger("cometa.eutils.cache")


def default_sqlite_path() -> Path:
    """``$XDG_CACHE_HOME/cometa/eutils-cache.sqlite3`` (``~/.cache/...``), as the environment says now."""
    return user_cache_dir() / "eutils-cache.sqlite3"


FORMAT_VERSION = "v1"  # bump when a cached model changes shape: old entries then simply miss
_COMPRESS_ABOVE = 1024  # bytes of JSON; PMC full texts shrink ~4x, small ESearch results are left readable
_WARN_EVERY_S = 60.0
_RETRY_AFTER_S = 5.0  # after a Redis failure, skip it this long instead of paying a timeout per call

STORE_ERRORS = Counter(
    "cometa_eutils_cache_store_errors_total",
    "E-utilities cache store failures (served as misses)",
    ["backend"],
)

_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        AbstractSection,
        DbField,
        DbInfo,
        DbLink,
        DocSummary,
        EInfoResult,
        ESearchResult,
        License,
        MeshHeading,
        MeshQualifier,
        PmcArticle,
        PmcSection,
        PubDate,
        PublicationType,
        PubmedRecord,
    )
}


class CacheStoreError(CometaError):
    """The configured cache store cannot be opened (bad URL or path); raised at start-up, not per request."""


def hash_part(text: str, length: int = 32) -> str:
    """A stable, opaque key component: keeps query text and API keys out of shared stores."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


# ------------------------------------------------------------------------------------------ serialisation


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    name = type(value).__name__
    if dataclasses.is_dataclass(value) and _TYPES.get(name) is type(value):
        out: dict[str, Any] = {"@t": name}
        for f in dataclasses.fields(value):
            out[f.name] = _encode(getattr(value, f.name))
        return out
    raise TypeError(f"not a cacheable E-utilities value: {type(value).__name__}")


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(_decode(v) for v in data)  # every sequence in the models is a tuple
    if isinstance(data, dict):
        cls = _TYPES.get(str(data.get("@t")))
        if cls is None:
            raise ValueError(f"unknown cached type {data.get('@t')!r}")
        return cls(**{k: _decode(v) for k, v in data.items() if k != "@t"})
    return data


def encode_value(value: Any, stored_at: float) -> bytes:
    """Serialise a cached value with its timestamp: tagged JSON, zlib-compressed when large."""
    raw = json.dumps(
        {"t": stored_at, "v": _encode(value)}, separators=(",", ":"), ensure_ascii=False
    ).encode()
    return b"z" + zlib.compress(raw, 1) if len(raw) > _COMPRESS_ABOVE else b"j" + raw


def decode_value(blob: bytes) -> tuple[Any, float]:
    """Inverse of :func:`encode_value`: ``(value, stored_at)``. Raises ValueError on anything else."""
    if blob[:1] == b"z":
        raw = zlib.decompress(blob[1:])
    elif blob[:1] == b"j":
        raw = blob[1:]
    else:
        raise ValueError("unknown cache entry format")
    payload = json.loads(raw)
    try:
        return _decode(payload["v"]), float(payload["t"])
    except (KeyError, TypeError) as exc:  # a field renamed since the entry was written
        raise ValueError(f"stale cache entry schema: {exc}") from exc


# ------------------------------------------------------------------------------------------------ stores


@dataclass(frozen=True, slots=True)
class CacheEntry:
    value: Any
    stored_at: float
    fresh: bool  # younger than ttl_s; otherwise only for stale-if-error

    def age_s(self, now: float) -> float:
        return max(0.0, now - self.stored_at)


@dataclass
class StoreStats:
    errors: int = 0  # failed reads/writes (each served as a miss / skipped)
    decode_errors: int = 0  # entries that no longer decode (schema drift), treated as misses


class CacheStore(ABC):
    """Key -> value with a fresh window (``ttl_s``) and a stale window (``max_stale_s``) after it."""

    backend = "abstract"

    def __init__(self, *, ttl_s: float, max_stale_s: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self.max_stale_s = max_stale_s
        self.clock = clock  # wall clock: entries are compared across processes and restarts
        self.stats = StoreStats()
        self._warned_at = float("-inf")

    @property
    def retention_s(self) -> float:
        return self.ttl_s + self.max_stale_s

    def _entry(self, value: Any, stored_at: float, now: float) -> CacheEntry | None:
        age = now - stored_at
        if age > self.retention_s:
            return None
        return CacheEntry(value, stored_at, fresh=age <= self.ttl_s)

    def _failed(self, what: str, exc: BaseException) -> None:
        self.stats.errors += 1
        STORE_ERRORS.labels(self.backend).inc()
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning("E-utilities cache (%s) %s failed, serving misses: %s", self.backend, what, exc)

    @abstractmethod
    async def get_many(self, keys: Sequence[str]) -> dict[str, CacheEntry]:
        """Entries still within ``ttl_s + max_stale_s``; absent keys (and store failures) are left out."""

    @abstractmethod
    async def set_many(self, items: Mapping[str, Any]) -> None:
        """Store values stamped now; a failure is counted and logged, never raised."""

    async def get(self, key: str) -> CacheEntry | None:
        return (await self.get_many([key])).get(key)

    async def set(self, key: str, value: Any) -> None:
        await self.set_many({key: value})

    async def aclose(self) -> None:
        return None

    def sizes(self) -> dict[str, int] | None:
        """What the store holds in this process (entries, bytes, bounds, evictions); None for a store whose
        entries live outside it (SQLite, Redis), which ``/metrics`` then leaves out."""
        return None


class MemoryStore(CacheStore):
    """Per-process LRU + TTL (cachetools); values are the frozen dataclasses themselves, not copies."""

    backend = "memory"

    def __init__(
        self,
        *,
        ttl_s: float,
        max_stale_s: float,
        max_entries: int,
        max_bytes: int = 256 * 2**20,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ttl_s=ttl_s, max_stale_s=max_stale_s, clock=clock)
        # Bounded by entries and by bytes (a PMC full text weighs a hundred abstracts); each value is weighed
        # once, when stored. Entries past their retention are never served and age out of the LRU.
        self._data: SizedLRU[str, tuple[Any, float]] = SizedLRU(
            max(max_entries, 1), max(max_bytes, 1), lambda item: approx_size(item[0]) + 120
        )

    async def get_many(self, keys: Sequence[str]) -> dict[str, CacheEntry]:
        now = self.clock()
        out: dict[str, CacheEntry] = {}
        for key in keys:
            item = self._data.get(key)
            if item is not None and (entry := self._entry(item[0], item[1], now)) is not None:
                out[key] = entry
        return out

    async def set_many(self, items: Mapping[str, Any]) -> None:
        now = self.clock()
        for key, value in items.items():
            self._data.put(key, (value, now))

    def __len__(self) -> int:
        return len(self._data)

    def sizes(self) -> dict[str, int]:
        """Entries and bytes held, their bounds, and evictions: what ``/metrics`` reports."""
        return self._data.stats()


class SqliteStore(CacheStore):
    """One SQLite file (WAL): survives restarts, shared by the processes of one host."""

    backend = "sqlite"
    _TRIM_EVERY = 256  # writes between trims of expired and surplus rows
    _MAX_VARS = 500  # SQLite's bound-parameter limit is 999 on old builds

    def __init__(
        self,
        path: Path,
        *,
        ttl_s: float,
        max_stale_s: float,
        max_entries: int,
        timeout_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ttl_s=ttl_s, max_stale_s=max_stale_s, clock=clock)
        self.path = path.expanduser()
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._writes = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread=False: calls run in worker threads, serialised by ``_lock``.
            self._db = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # a lost last write is a cache miss, not corruption
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS eutils_cache "
                "(key TEXT PRIMARY KEY, stored_at REAL NOT NULL, value BLOB NOT NULL)"
            )
            self._db.execute("CREATE INDEX IF NOT EXISTS eutils_cache_age ON eutils_cache (stored_at)")
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise CacheStoreError(f"cannot open the SQLite cache at {self.path}: {exc}") from exc

    def _get_sync(self, keys: Sequence[str], now: float) -> dict[str, CacheEntry]:
        out: dict[str, CacheEntry] = {}
        with self._lock:
            for start in range(0, len(keys), self._MAX_VARS):
                part = list(keys[start : start + self._MAX_VARS])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, value FROM eutils_cache WHERE key IN ({marks}) AND stored_at >= ?",
                    [*part, now - self.retention_s],
                ).fetchall()
                for key, blob in rows:
                    try:
                        value, stored_at = decode_value(bytes(blob))
                    except (ValueError, zlib.error):
                        self.stats.decode_errors += 1
                        continue
                    entry = self._entry(value, stored_at, now)
                    if entry is not None:
                        out[str(key)] = entry
        return out

    def _set_sync(self, rows: list[tuple[str, float, bytes]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO eutils_cache (key, stored_at, value) VALUES (?, ?, ?)", rows
            )
            self._writes += len(rows)
            if self._writes >= self._TRIM_EVERY:
                self._writes = 0
                self._trim(rows[0][1])
            self._db.commit()

    def _trim(self, now: float) -> None:
        self._db.execute("DELETE FROM eutils_cache WHERE stored_at < ?", (now - self.retention_s,))
        self._db.execute(
            "DELETE FROM eutils_cache WHERE key IN "
            "(SELECT key FROM eutils_cache ORDER BY stored_at DESC LIMIT -1 OFFSET ?)",
            (self.max_entries,),
        )

    async def get_many(self, keys: Sequence[str]) -> dict[str, CacheEntry]:
        if not keys:
            return {}
        try:
            return await asyncio.to_thread(self._get_sync, keys, self.clock())
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return {}

    async def set_many(self, items: Mapping[str, Any]) -> None:
        if not items:
            return
        now = self.clock()
        rows = [(key, now, encode_value(value, now)) for key, value in items.items()]
        try:
            await asyncio.to_thread(self._set_sync, rows)
        except sqlite3.Error as exc:
            self._failed("write", exc)

    def trim(self) -> None:
        """Drop expired rows and keep the newest ``max_entries`` (also done every few hundred writes)."""
        with self._lock:
            self._trim(self.clock())
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM eutils_cache").fetchone()[0])

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()


class LoopBoundRedis:
    """A ``redis.asyncio`` client per event loop: its connections belong to the loop that opened them."""

    def __init__(self, url: str, *, timeout_s: float) -> None:
        from redis.asyncio import Redis

        try:
            Redis.from_url(url)  # validates the URL now (start-up), without connecting
        except ValueError as exc:
            raise CacheStoreError(f"invalid Redis URL {url!r}: {exc}") from exc
        self.url = url
        self.timeout_s = timeout_s
        self._client: Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> Redis:
        from redis.asyncio import Redis

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = Redis.from_url(
                self.url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                health_check_interval=30,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


class RedisStore(CacheStore):
    """Shared by every replica: ``SET key value PX retention`` and ``MGET``; Redis expires old entries."""

    backend = "redis"

    def __init__(
        self,
        url: str,
        *,
        ttl_s: float,
        max_stale_s: float,
        timeout_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ttl_s=ttl_s, max_stale_s=max_stale_s, clock=clock)
        self.redis = LoopBoundRedis(url, timeout_s=timeout_s)
        self._down_until = float("-inf")

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _down(self, what: str, exc: BaseException) -> None:
        self._down_until = time.monotonic() + _RETRY_AFTER_S
        self._failed(what, exc)

    async def get_many(self, keys: Sequence[str]) -> dict[str, CacheEntry]:
        from redis.exceptions import RedisError

        if not keys or not self._available():
            return {}
        try:
            blobs = await self.redis.client().mget(list(keys))
        except (RedisError, OSError, TimeoutError) as exc:
            self._down("read", exc)
            return {}
        now = self.clock()
        out: dict[str, CacheEntry] = {}
        for key, blob in zip(keys, blobs, strict=True):
            if blob is None:
                continue
            try:
                value, stored_at = decode_value(blob if isinstance(blob, bytes) else blob.encode())
            except (ValueError, zlib.error):
                self.stats.decode_errors += 1
                continue
            entry = self._entry(value, stored_at, now)
            if entry is not None:
                out[key] = entry
        return out

    async def set_many(self, items: Mapping[str, Any]) -> None:
        from redis.exceptions import RedisError

        if not items or not self._available():
            return
        now = self.clock()
        ttl_ms = max(1, int(self.retention_s * 1000))
        try:
            async with self.redis.client().pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(key, encode_value(value, now), px=ttl_ms)
                await pipe.execute()
        except (RedisError, OSError, TimeoutError) as exc:
            self._down("write", exc)

    async def aclose(self) -> None:
        await self.redis.aclose()


def open_store(settings: CacheSettings, *, clock: Callable[[], float] = time.time) -> CacheStore | None:
    """The configured store, or None when caching is off (``max_entries=0`` or ``ttl_s=0``)."""
    if settings.max_entries <= 0 or settings.ttl_s <= 0:
        return None
    common: dict[str, Any] = {"ttl_s": settings.ttl_s, "max_stale_s": settings.max_stale_s, "clock": clock}
    if settings.backend == "memory":
        return MemoryStore(max_entries=settings.max_entries, max_bytes=settings.max_bytes, **common)
    if settings.backend == "sqlite":
        path = Path(settings.url.removeprefix("sqlite:///")) if settings.url else default_sqlite_path()
        return SqliteStore(path, max_entries=settings.max_entries, timeout_s=settings.timeout_s, **common)
    return RedisStore(settings.url or "redis://localhost:6379/0", timeout_s=settings.timeout_s, **common)
