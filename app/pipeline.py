"""Orchestration: settings -> the stages, wired once, shared by the CLI and (later) the web service."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from llm import LLMClient, build_llm
from retrieval import AdaptE, AdaptEResult, EutilsClient, MeshVocabulary, PubmedRecord
from retrieval._understand import QueryUnderstander, Understanding

from .settings import Settings

__all__ = ["Pipeline", "SearchOutcome"]


@dataclass
class SearchOutcome:
    understanding: Understanding
    adapte: AdaptEResult
    records: list[PubmedRecord]  # the top ``top_k`` PMIDs, fetched, in rank order
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def pmids(self) -> list[str]:
        return list(self.adapte.pmids)

    def to_json(self) -> dict[str, Any]:
        u, a = self.understanding, self.adapte
        return {
            "pmids": list(a.pmids),
            "zero_hit": a.zero_hit,
            "plan": u.plan.model_dump(),
            "rewriter": {
                "path": u.path,
                "fallback_reason": u.fallback_reason,
                "dropped": [{"query": q, "reason": r} for q, r in u.dropped],
                "padded": u.padded,
                "model": u.model,
                "prompt": u.prompt_id,
                "tokens": {"prompt": u.prompt_tokens, "completion": u.completion_tokens},
                "phi_removed": u.phi_counts,
            },
            "tiers": [
                {
                    "tier": t.tier,
                    "kind": t.kind,
                    "query": t.query,
                    "count": t.count,
                    "latency_ms": round(t.latency_ms, 2),
                    "used": t.used,
                    "new_pmids": t.new_pmids,
                    "error": t.error,
                }
                for t in a.tiers
            ],
            "fallback_used": a.fallback_used,
            "date_limits_relaxed": a.date_limits_relaxed,
            "stopped_at": a.stopped_at,
            "records": [
                {
                    "pmid": r.pmid,
                    "title": r.title,
                    "year": r.year,
                    "journal": r.journal,
                    "publication_types": [p.name for p in r.publication_types],
                    "pmcid": r.pmcid,
                }
                for r in self.records
            ],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "question_hash": u.question_hash,
        }


class Pipeline:
    """Owns one E-utilities client and one LLM client for the life of a process (or a CLI call)."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: EutilsClient | None = None,
        llm: LLMClient | None = None,
        use_llm: bool = True,
    ) -> None:
        self.settings = settings
        if client is None:
            if settings.eutils.backend == "local":
                client = EutilsClient.local(settings.local_server, settings.eutils)
            else:
                client = EutilsClient(settings.eutils)
        self.client = client
        if llm is None and use_llm:
            llm = build_llm(settings.llm)
        self.llm = llm if use_llm else None
        self.understander = QueryUnderstander(llm=self.llm, scrub_for_llm=settings.llm.scrub_phi_for_llm)
        a = settings.adapte
        self.adapte = AdaptE(
            client,
            min_hits=a.min_hits,
            retmax=a.retmax,
            sort=a.sort,
            vocabulary=MeshVocabulary.load(),
            speculative=a.speculative,
        )

    async def __aenter__(self) -> Pipeline:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.llm is not None:
            await self.llm.aclose()

    async def search(
        self,
        question: str,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        top_k: int = 10,
        api_key: str | None = None,
    ) -> SearchOutcome:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        understanding = await self.understander.understand(question)
        t1 = time.perf_counter()
        timings["understand"] = (t1 - t0) * 1000
        result = await self.adapte.run(understanding.plan, mindate=mindate, maxdate=maxdate, api_key=api_key)
        t2 = time.perf_counter()
        timings["esearch"] = (t2 - t1) * 1000
        records = (
            await self.client.efetch_pubmed(result.pmids[:top_k], api_key=api_key) if result.pmids else []
        )
        timings["efetch"] = (time.perf_counter() - t2) * 1000
        return SearchOutcome(understanding, result, records, timings)
