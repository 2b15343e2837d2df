"""OpenAI Chat Completions over the :class:`~app.asker.Asker`: the request model, the conversation turned
into one question, the answer rendered as markdown with PubMed/PMC links, completion objects and chunks.

The web layer (``app.api``) only parses, authorises and maps failures; everything a completion says is
decided here, so the HTTP route and the tests share one implementation.

Follow-ups: the last message must be the user's; up to :data:`CONTEXT_TURNS` earlier *user* turns travel
with it as context (our own earlier answers do not: retrieval would chase them). The combined text is the
question the Asker gets, so the PHI policy (the rewriter's scrub for NCBI, :class:`~app.privacy.PhiPolicy`
for every prompt) applies to every turn it carries. System messages are ignored: the answer prompt is ours
and versioned, and a frontend's persona must not change what the evidence is allowed to say.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.asker import Asker, Done, Evidence, Token
from app.schemas import MAX_QUESTION_CHARS, AskRequest, AskResponse
from retrieval.evidence import pubmed_url

from ._markup import literature_url, markdown_text
from ._present import ask_response

__all__ = [
    "CONTEXT_TURNS",
    "MODEL_ID",
    "ChatMessage",
    "ChatOptions",
    "ChatRequest",
    "ChatRequestError",
    "chat_completion",
    "chat_question",
    "list_models",
    "pmc_url",
    "render_markdown",
    "stream_chat",
]

MODEL_ID = "cometa"
CONTEXT_TURNS = 3  # earlier user turns carried into a follow-up question
_CREATED = 1_767_225_600  # 2026-01-01: a stable "created" for the one model

_CITE_RE = re.compile(r"\[\s*PMID\s*:?\s*(\d+(?:\s*[,;]\s*(?:PMID\s*:?\s*)?\d+)*)\s*\]", re.IGNORECASE)
_ID_RE = re.compile(r"\d+")
_HOLD_MAX = 64  # longest "[PMID: ...]" held back while streaming before it is let through as text
_LAST_WORD = re.compile(r"\S*\Z")


class ChatRequestError(ValueError):
    """The chat request cannot be answered as sent (HTTP 400/404 in OpenAI's error shape)."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.param = param
        self.code = code
        self.status = status


class ChatMessage(BaseModel):
    """One turn. ``content``: a string or a list of ``{"type": "text", "text": ...}`` parts."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        parts = []
        for part in self.content:
            if part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ChatRequestError(
                    f"only text content is supported, got a {part.get('type')!r} part", param="messages"
                )
            parts.append(part["text"])
        return "\n".join(parts)


class ChatOptions(BaseModel):
    """CoMeta's own knobs, sent as ``"cometa": {...}`` (the openai client: ``extra_body``)."""

    model_config = ConfigDict(extra="forbid")

    max_documents: int = Field(default=10, ge=1, le=50)
    judge: bool = False
    mindate: str | None = None
    maxdate: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``. Sampling parameters (temperature, max_tokens, ...) are accepted and
    ignored: the answer settings are the service's, so every caller gets the same checked answer."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=200)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1)
    cometa: ChatOptions = Field(default_factory=ChatOptions)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return value.strip()


def list_models() -> dict[str, Any]:
    """``GET /v1/models``: the one model, CoMeta's checked answer."""
    return {
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "created": _CREATED, "owned_by": "cometa"}],
    }


def chat_question(messages: Sequence[ChatMessage]) -> str:
    """The question the Asker gets: the last user message, with up to :data:`CONTEXT_TURNS` earlier user
    turns before it as context (most recent kept when the budget of ``MAX_QUESTION_CHARS`` runs out)."""
    if messages[-1].role != "user":
        raise ChatRequestError("the last message must have role 'user'", param="messages")
    last = messages[-1].text().strip()
    if not last:
        raise ChatRequestError("the last user message is empty", param="messages")
    if len(last) > MAX_QUESTION_CHARS:
        raise ChatRequestError(
            f"the last user message exceeds {MAX_QUESTION_CHARS} characters", param="messages"
        )
    earlier = [m.text().strip() for m in messages[:-1] if m.role == "user"]
    earlier = [t for t in earlier if t][-CONTEXT_TURNS:]
    if not earlier:
        return last
    framing = "Earlier in this conversation: \nFollow-up question: "
    budget = MAX_QUESTION_CHARS - len(last) - len(framing)
    kept: list[str] = []
    for turn in reversed(earlier):  # the most recent context matters most
        if len(turn) + 3 > budget:
            break
        kept.insert(0, turn)
        budget -= len(turn) + 3
    if not kept:
        return last
    return f"Earlier in this conversation: {' | '.join(kept)}\nFollow-up question: {last}"


def ask_request(req: ChatRequest) -> AskRequest:
    """The :class:`AskRequest` a chat request stands for; raises :class:`ChatRequestError`."""
    if req.model != MODEL_ID:
        raise ChatRequestError(
            f"the model {req.model!r} does not exist; use {MODEL_ID!r}",
            param="model",
            code="model_not_found",
            status=404,
        )
    question = chat_question(req.messages)
    try:
        return AskRequest(question=question, **req.cometa.model_dump())
    except ValueError as exc:
        raise ChatRequestError(str(exc), param="cometa") from exc


# --- rendering ------------------------------------------------------------------------------------------


def pmc_url(pmcid: str) -> str:
    return f"https://pmc.ncbi.nlm.nih.gov/articles/{pmcid}/"


def _links(ids: Sequence[str], valid: Mapping[str, str]) -> str:
    return ", ".join(f"[PMID {i}]({valid[i]})" for i in dict.fromkeys(ids) if i in valid)


def _render_text(text: str, valid: Mapping[str, str]) -> str:
    """The model's text as markdown: every run between ``[PMID:n]`` markers escaped, markers made links."""
    out: list[str] = []
    last = 0
    for match in _CITE_RE.finditer(text):
        out.append(markdown_text(text[last : match.start()]))
        out.append(_links(_ID_RE.findall(match.group(1)), valid))
        last = match.end()
    out.append(markdown_text(text[last:]))
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", "".join(out))


def _pubmed_link(pmid: str | None, url: str | None) -> str | None:
    """The PubMed page of ``pmid``: the record's own url when it is one, else built; None for no PMID."""
    if not pmid:
        return None
    return literature_url(url) or literature_url(pubmed_url(pmid))


def _sources_block(response: AskResponse) -> str:
    if not response.citations:
        return ""
    lines = ["", "", "**Sources**", ""]
    for n, c in enumerate(response.citations, start=1):
        what = ", ".join(x for x in (str(c.year) if c.year else "", ", ".join(c.publication_types[:2])) if x)
        links = []
        if pubmed := _pubmed_link(c.pmid, c.url):
            links.append(f"[PubMed]({pubmed})")
        if c.pmcid and (pmc := literature_url(pmc_url(c.pmcid))):
            links.append(f"[PMC full text]({pmc})")
        title = c.title or (f"PMID {c.pmid}" if c.pmid else "untitled")
        line = f"{n}. {markdown_text(title)}" + (f" ({markdown_text(what)})" if what else "")
        lines.append(line + (" — " + " · ".join(links) if links else ""))
        # PubMed's notices (concern, correction, newer version, ...) as a list nested under the source.
        indent = " " * len(f"{n}. ")
        lines += [f"{indent}- **Note:** {markdown_text(notice.text)}" for notice in c.notices]
    return "\n".join(lines)


def _valid_links(response: AskResponse) -> dict[str, str]:
    return _link_map((c.pmid, c.url) for c in response.citations)


def _link_map(records: Iterable[tuple[str | None, str | None]]) -> dict[str, str]:
    """PMID -> its PubMed link, for the records that have both: what a ``[PMID:n]`` marker may become."""
    return {pmid: link for pmid, url in records if pmid and (link := _pubmed_link(pmid, url))}


def render_markdown(response: AskResponse) -> str:
    """The answer as a chat message: ``[PMID:n]`` markers become links, then a numbered source list; every
    text from the corpus or the model escaped (:func:`~app.frontends.markdown_text`)."""
    return _render_text(response.answer, _valid_links(response)) + _sources_block(response)


def _extra(response: AskResponse) -> dict[str, Any]:
    """The documented ``cometa`` field: the whole ``/ask`` response, whatever fields it carries."""
    return response.model_dump(mode="json")


def _usage(response: AskResponse) -> dict[str, int] | None:
    """OpenAI's ``usage``: the tokens of the LLM call that wrote the answer, as the LLM reported them; None
    when no LLM wrote it (extractive, urgent guidance, a refusal) or it reported no counts (a server that
    streams without usage): zeros would claim a free answer. The other LLM calls of the flow (rewriter,
    relevance, safety, judge) are not counted."""
    if response.mode != "llm":
        return None
    prompt = response.tokens.get("prompt") or 0
    completion = response.tokens.get("completion") or 0
    if not prompt + completion:
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def chat_completion(asker: Asker, req: ChatRequest, request_id: str) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` object; the ``/ask`` response rides in ``cometa``."""
    response = ask_response(await asker.ask(ask_request(req), request_id))
    usage = _usage(response)
    return {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": render_markdown(response)},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        # Left out, not zeros, when no LLM wrote the answer: the openai client reads it as None.
        **({"usage": usage} if usage else {}),
        "cometa": _extra(response),
    }


def _maybe_marker(held: str) -> bool:
    """Whether ``held`` (starting with ``[``) can still become a ``[PMID:n]`` marker."""
    body = held[1:].lstrip()
    if len(body) < 4:
        return "pmid".startswith(body.lower())
    return (
        body[:4].lower() == "pmid"
        and re.fullmatch(r"[\s:\d,;]*(?:pmid[\s:\d,;]*)*", body[4:].lower()) is not None
    )


class _CitationFilter:
    """Streamed deltas as markdown: ``[PMID:n]`` markers resolved as they complete (ids in the evidence
    become links, others are dropped, as the final citation check drops them; a ``[`` is held back until
    its marker closes or clearly is not one), and the text between them escaped as :func:`_render_text`
    escapes it, each word once it is whole (a word cut between deltas could hide ``http://``)."""

    def __init__(self, valid: Mapping[str, str]) -> None:
        self.valid = valid
        self.held = ""  # a "[" that may still become a marker
        self.text = ""  # model text not escaped yet: the word in progress
        self.dropped = False

    def feed(self, delta: str) -> str:
        out: list[str] = []
        for ch in delta:
            if self.held:
                self.held += ch
                match = _CITE_RE.fullmatch(self.held) if ch == "]" else None
                if match:
                    link = _links(_ID_RE.findall(match.group(1)), self.valid)
                    out += [markdown_text(self.text), link]
                    self.text = self.held = ""
                    self.dropped = not link
                elif ch == "]" or len(self.held) > _HOLD_MAX or not _maybe_marker(self.held):
                    self.text += self.held
                    self.held = ""
                    self.dropped = False
            elif ch == "[":
                self.held = ch
            elif not (self.dropped and ch in " \t"):  # "claim [PMID:bad] more": one space, not two
                self.text += ch
                self.dropped = False
        tail = _LAST_WORD.search(self.text)
        whole = tail.start() if tail else 0
        out.append(markdown_text(self.text[:whole]))
        self.text = self.text[whole:]
        return "".join(out)

    def flush(self) -> str:
        rest, self.text, self.held = self.text + self.held, "", ""
        return markdown_text(rest)


def _squash(text: str) -> str:
    return " ".join(re.sub(r"[ \t]+([.,;:!?])", r"\1", text).split())


async def stream_chat(
    asker: Asker, req: ChatRequest, request_id: str
) -> AsyncGenerator[dict[str, Any], None]:
    """``chat.completion.chunk`` objects: the role, the answer as the model writes it (citations resolved
    against the evidence as they complete), then whatever the checked answer adds or corrects, the source
    list, and a chunk with ``finish_reason`` and the ``cometa`` field. With ``stream_options.include_usage``,
    as OpenAI streams it: every chunk carries ``usage: null`` and one more, with no choices, the usage
    (:func:`_usage`; null there too when no LLM wrote the answer)."""
    ask = ask_request(req)  # ChatRequestError here, before the first byte
    created = int(time.time())
    base: dict[str, Any] = {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
    }

    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    yield chunk({"role": "assistant", "content": ""})
    streamed: list[str] = []
    filt = _CitationFilter({})
    response: AskResponse | None = None
    async with aclosing(asker.events(ask, request_id, stream_tokens=True)) as events:
        async for event in events:
            if isinstance(event, Evidence):
                filt = _CitationFilter(_link_map((d.pmid, d.url) for d in event.docs))
            elif isinstance(event, Token):
                text = filt.feed(event.delta)
                if text:
                    streamed.append(text)
                    yield chunk({"content": text})
            elif isinstance(event, Done):
                response = ask_response(event.result)
    if response is None:  # events() always ends with its result; a broken contract fails loudly
        raise RuntimeError("the answer flow ended without a result")
    if tail := filt.flush():  # the last word, whole now
        streamed.append(tail)
        yield chunk({"content": tail})
    said = "".join(streamed)
    final = _render_text(response.answer, _valid_links(response))
    if not said.strip():
        rest = final
    elif _squash(said) == _squash(final):
        rest = ""
    elif _squash(final).startswith(_squash(said)) and final.startswith(said):
        rest = final[len(said) :]
    else:
        # The checked answer differs from what streamed (a fallback, a removed claim): say so, then give it.
        rest = "\n\n---\n*Checked answer (replaces the text above):*\n\n" + final
    rest += _sources_block(response)
    if rest:
        yield chunk({"content": rest})
    yield chunk({}, "stop", cometa=_extra(response))
    if include_usage:
        yield {**base, "choices": [], "usage": _usage(response)}
