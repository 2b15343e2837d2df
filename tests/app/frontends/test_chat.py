"""The chat conversion in-process: the conversation turned into one question, citations resolved while
streaming, the checked answer winning over what streamed, and the PHI policy on every turn."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import httpx
import openai
import pytest

from app.answer import Answer, Answerer, Citation
from app.api import create_app
from app.asker import Answered, AskEvent, AskResult, Done, Evidence, Token, user_evidence
from app.container import build_pipeline
from app.frontends import (
    CONTEXT_TURNS,
    ChatMessage,
    ChatRequest,
    ChatRequestError,
    chat_completion,
    chat_question,
    stream_chat,
)
from app.frontends._chat import _CitationFilter, _render_text
from app.schemas import MAX_QUESTION_CHARS, AskRequest, UserDocument
from app.settings import ApiSettings, Settings
from llm import LLMUnavailable
from retrieval.evidence import EvidenceDoc, Notice
from tests._evidence import make_doc
from tests._fakes import Reply, ScriptedLLM
from tests.app.frontends.conftest import rendered


def msgs(*turns: tuple[str, Any]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content) for role, content in turns]  # type: ignore[arg-type]


def test_a_single_question_is_asked_as_typed() -> None:
    assert chat_question(msgs(("system", "be brief"), ("user", "  Is aspirin safe?  "))) == "Is aspirin safe?"


def test_a_follow_up_carries_the_recent_user_turns_only() -> None:
    turns = [("user", f"question {i}") for i in range(5)]
    history = [t for q in turns for t in (q, ("assistant", "an answer [PMID:1]"))]
    question = chat_question(msgs(*history, ("user", "and for children?")))
    assert question.endswith("Follow-up question: and for children?")
    kept = [f"question {i}" for i in range(5 - CONTEXT_TURNS, 5)]
    assert f"Earlier in this conversation: {' | '.join(kept)}" in question
    assert "question 1" not in question and "an answer" not in question


def test_text_parts_join_and_the_budget_keeps_the_latest_turns() -> None:
    parts = [{"type": "text", "text": "Is it"}, {"type": "text", "text": "safe?"}]
    assert chat_question(msgs(("user", parts))) == "Is it\nsafe?"
    long = "x" * (MAX_QUESTION_CHARS - 60)
    question = chat_question(msgs(("user", "older " + long), ("user", "recent"), ("user", "now?")))
    assert "recent" in question and "older" not in question and len(question) <= MAX_QUESTION_CHARS
    AskRequest(question=question)  # the Asker accepts what was built


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([("user", "hi"), ("assistant", "hello")], "last message must have role 'user'"),
        ([("user", "   ")], "empty"),
        ([("user", [{"type": "image_url", "image_url": {"url": "data:,"}}])], "only text content"),
        ([("user", "x" * (MAX_QUESTION_CHARS + 1))], "exceeds"),
    ],
)
def test_unanswerable_conversations_are_refused(turns: list[tuple[str, Any]], message: str) -> None:
    with pytest.raises(ChatRequestError, match=message) as err:
        chat_question(msgs(*turns))
    assert err.value.status == 400 and err.value.param == "messages"


# --- streaming against scripted events ----------------------------------------------------------------

DOCS = tuple(user_evidence([UserDocument(pmid="111", text="t"), UserDocument(pmid="222", text="t")]))


def result(answer: str, cited: list[str]) -> AskResult:
    citations = tuple(Citation(p, "PMC9", f"Trial {p}", 2020, (), "", None) for p in cited)
    checked = Answer(answer, "llm", None, None, citations, 0, None, None, 5, 7, ())
    return AskResult("r1", Answered(answer, "llm", checked, None), warnings=("a warning",))


class EventAsker:
    """The Asker's event stream, scripted: what ``stream_chat`` consumes."""

    def __init__(self, deltas: list[str], final: AskResult) -> None:
        self.deltas, self.final = deltas, final
        self.docs: tuple[EvidenceDoc, ...] = DOCS

    async def events(
        self, req: AskRequest, request_id: str, *, stream_tokens: bool
    ) -> AsyncGenerator[AskEvent]:
        assert stream_tokens
        yield Evidence(self.docs, None)
        for i, d in enumerate(self.deltas):
            yield Token(d, i)
        yield Done(self.final)

    async def ask(self, req: AskRequest, request_id: str) -> AskResult:
        return self.final


async def streamed(asker: EventAsker, **extra: Any) -> tuple[str, list[dict[str, Any]]]:
    req = ChatRequest(model="cometa", messages=msgs(("user", "Does it help?")), stream=True, **extra)
    chunks = [c async for c in stream_chat(asker, req, "r1")]  # type: ignore[arg-type]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]), chunks


async def test_citations_become_links_as_they_complete_and_invented_ones_vanish() -> None:
    deltas = ["It helps [PM", "ID:111", "]. Maybe [PMID: 999] not", " [1] here [PMID:222]."]
    text, chunks = await streamed(
        EventAsker(deltas, result("It helps [PMID:111]. Maybe not [1] here [PMID:222].", ["111", "222"]))
    )
    body = text.split("\n\n**Sources**")[0]
    assert body == (
        "It helps [PMID 111](https://pubmed.ncbi.nlm.nih.gov/111/). Maybe not &#91;1&#93; here "
        "[PMID 222](https://pubmed.ncbi.nlm.nih.gov/222/)."
    )
    assert "999" not in text and "Checked answer" not in text
    assert "1. Trial 111 (2020) — [PubMed](https://pubmed.ncbi.nlm.nih.gov/111/) · [PMC full text]" in text
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    last = chunks[-1]
    assert last["choices"][0]["finish_reason"] == "stop" and last["cometa"]["warnings"] == ["a warning"]
    assert "usage" not in last


async def test_a_checked_answer_that_differs_replaces_what_streamed_in_plain_sight() -> None:
    final = result("Quoted evidence sentence [PMID:111].", ["111"])
    text, chunks = await streamed(
        EventAsker(["The model said something else"], final), stream_options={"include_usage": True}
    )
    assert text.startswith("The model said something else")
    assert "*Checked answer (replaces the text above):*\n\nQuoted evidence sentence [PMID 111](" in text
    # OpenAI's shape: usage on one more chunk without choices, after the finish; null on every other.
    assert chunks[-1]["choices"] == [] and chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"] == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    assert all("usage" in c and c["usage"] is None for c in chunks[:-1])


async def test_without_token_events_the_checked_answer_streams_whole() -> None:
    final = result("No published evidence was found.", [])
    text, _ = await streamed(EventAsker([], final))
    assert text == "No published evidence was found."
    req = ChatRequest(model="cometa", messages=msgs(("user", "q")))
    completion = await chat_completion(EventAsker([], final), req, "r1")  # type: ignore[arg-type]
    assert completion["choices"][0]["message"]["content"] == text
    assert completion["cometa"]["request_id"] == "r1" and completion["id"] == "chatcmpl-r1"


# --- PHI: every turn goes through the one policy ---------------------------------------------------------

PHI_TURN = "I am Linda Parker, MRN 4417823, phone 617-555-0134. My mother has a mass on her pancreas."
NEEDLES = ("Linda", "Parker", "4417823", "555-0134")


def script(prompt: str) -> Reply:
    if "PubMed searching" in prompt:
        return LLMUnavailable("scripted: the deterministic rewriter plans")
    return "Surgery can help [PMID:19459018]."


async def test_phi_in_an_earlier_turn_never_reaches_a_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMETA_LLM__SCRUB_PHI_FOR_LLM", "true")
    settings = Settings().offline()
    llm = ScriptedLLM(script)
    messages = [
        {"role": "user", "content": PHI_TURN},
        {"role": "assistant", "content": "Surgery can help."},
        {"role": "user", "content": "Is the Whipple operation worth it?"},
    ]
    async with build_pipeline(settings, llm=llm, use_dense=False, use_passages=False) as pipeline:  # type: ignore[arg-type]
        app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
        async with app.router.lifespan_context(app):
            http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
            client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="none", http_client=http)
            async with client:
                completion = await client.chat.completions.create(model="cometa", messages=messages)  # type: ignore[arg-type]
                stream = await client.chat.completions.create(model="cometa", messages=messages, stream=True)  # type: ignore[arg-type]
                text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert "[PMID 19459018](https://pubmed.ncbi.nlm.nih.gov/19459018/)" in (
        completion.choices[0].message.content or ""
    )
    assert "[PMID 19459018](" in text
    bodies = [json.dumps(list(m)) for m in llm.seen]
    assert len(bodies) >= 4  # rewrite and answer, twice
    for body in bodies:
        assert not [n for n in NEEDLES if n in body], body[:500]
    answers = [b for v, b in zip(llm.versions, bodies, strict=True) if v.startswith("answer_patient")]
    # Scrubbed, not dropped: the earlier turn's clinical content is there as context.
    assert answers and all("pancreas" in b and "Whipple" in b and "[NAME]" in b for b in answers)


# --- usage: the answer's tokens where an LLM wrote it, never invented zeros (issue 30) ------------------

URGENT_QUESTION = "my husband has crushing chest pain and his left arm is numb, should he take an aspirin?"
LLM_USAGE = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}  # ScriptedLLM's counts


async def _over_openai(llm: ScriptedLLM | None, question: str) -> tuple[Any, list[Any], list[Any]]:
    """One question through the official openai client against the ASGI app: the completion, the stream
    with ``include_usage`` and the stream without."""
    settings = Settings().offline()
    messages = [{"role": "user", "content": question}]
    async with build_pipeline(
        settings, llm=llm, use_llm=llm is not None, use_dense=False, use_passages=False
    ) as pipeline:  # type: ignore[arg-type]
        app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
        async with app.router.lifespan_context(app):
            http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
            client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="none", http_client=http)
            async with client:
                create = client.chat.completions.create
                completion = await create(model="cometa", messages=messages)  # type: ignore[arg-type,call-overload]
                with_usage = await create(
                    model="cometa",
                    messages=messages,  # type: ignore[arg-type]
                    stream=True,
                    stream_options={"include_usage": True},
                )
                asked = [c async for c in with_usage]
                plain = [c async for c in await create(model="cometa", messages=messages, stream=True)]  # type: ignore[arg-type,call-overload]
    return completion, asked, plain


def _usage_of(chunks: list[Any]) -> dict[str, int] | None:
    last = chunks[-1]
    assert last.choices == [] and chunks[-2].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks[:-1])
    return None if last.usage is None else last.usage.model_dump(include=set(LLM_USAGE))


async def test_an_llm_answer_reports_the_llms_token_counts() -> None:
    completion, asked, plain = await _over_openai(ScriptedLLM(script), "Is the Whipple operation worth it?")
    assert (completion.model_extra or {})["cometa"]["mode"] == "llm"
    assert completion.usage is not None
    assert completion.usage.model_dump(include=set(LLM_USAGE)) == LLM_USAGE
    assert _usage_of(asked) == LLM_USAGE
    # Not asked for: no usage chunk, and the last chunk is the finish with the /ask response.
    assert all(c.usage is None for c in plain) and plain[-1].choices[0].finish_reason == "stop"
    assert (plain[-1].model_extra or {})["cometa"]["mode"] == "llm"


@pytest.mark.parametrize(
    ("question", "mode"),
    [("Is the Whipple operation worth it with a high CA 19-9?", "extractive"), (URGENT_QUESTION, "urgent")],
)
async def test_without_an_llm_answer_usage_is_left_out_not_zero(question: str, mode: str) -> None:
    completion, asked, _ = await _over_openai(None, question)
    assert (completion.model_extra or {})["cometa"]["mode"] == mode
    assert completion.usage is None and "usage" not in completion.model_dump(exclude_unset=True)
    assert _usage_of(asked) is None  # the usage chunk still comes, as the protocol promises: null


async def test_an_llm_that_reports_no_counts_gets_no_usage() -> None:
    # A server that streams without usage reports zeros; zeros would claim a free answer.
    checked = Answer("It helps.", "llm", None, None, (), 0, "m", None, 0, 0, ())
    final = AskResult("r1", Answered(checked.text, "llm", checked, None))
    req = ChatRequest(model="cometa", messages=msgs(("user", "Does it help?")))
    completion = await chat_completion(EventAsker([], final), req, "r1")  # type: ignore[arg-type]
    assert "usage" not in completion
    _, chunks = await streamed(EventAsker([], final), stream_options={"include_usage": True})
    assert chunks[-1] == {**chunks[-1], "choices": [], "usage": None}


# --- untrusted text: a record, and a model quoting it, reach a markdown renderer as text ----------------

ATTACK = (
    "Exercise and fatigue [Full results here](javascript:alert(document.cookie)) "
    "<img src=x onerror=alert(1)> ![t](http://host/track.png)"
)
LITERATURE = ("https://pubmed.ncbi.nlm.nih.gov/", "https://pmc.ncbi.nlm.nih.gov/")


def assert_inert(markdown: str) -> None:
    html = rendered(markdown)
    assert set(html.tags) <= {"p", "a", "strong", "em", "ol", "li", "hr"}, html.tags  # no img, no script
    assert html.hrefs and all(h.startswith(LITERATURE) for h in html.hrefs), html.hrefs
    # Nothing left for a renderer that links bare URLs itself (GFM autolinks, linkify).
    prose = re.sub(r"\]\(https://[^)\s]+\)", "]", markdown)
    assert "://" not in prose and "www." not in prose
    # The words are still there, as text.
    assert "[Full results here](javascript:alert(document.cookie))" in html.text
    assert "<img src=x onerror=alert(1)>" in html.text and "![t](http://host/track.png)" in html.text


async def test_corpus_and_model_text_reach_the_chat_as_text_not_links_images_or_tags() -> None:
    question = "Does exercise reduce fatigue during chemotherapy?"
    doc = replace(
        make_doc("111", f"Exercise reduces fatigue during chemotherapy. {ATTACK}."),
        title=ATTACK,
        pmcid="PMC1)![p](http://host/pixel.png",  # a malformed id: no link is built from it
    )
    checked = await Answerer(None).answer(question, [doc])
    assert "[Full results here](javascript:" in checked.text and checked.citations  # quoted from the record
    final = AskResult("r1", Answered(checked.text, "extractive", checked, None), docs=(doc,))
    # The model repeats the attack, cut across deltas, beside a real citation.
    deltas = ["See ", ATTACK[:40], ATTACK[40:75], ATTACK[75:], " [PMID:", "111] and www.host.example/x."]
    asker = EventAsker(deltas, final)
    asker.docs = (doc,)
    streamed_text, _ = await streamed(asker)
    assert "*Checked answer (replaces the text above):*" in streamed_text  # both texts were rendered
    req = ChatRequest(model="cometa", messages=msgs(("user", question)))
    completion = await chat_completion(asker, req, "r1")  # type: ignore[arg-type]
    content = completion["choices"][0]["message"]["content"]
    for markdown in (streamed_text, content):
        assert_inert(markdown)
    assert "[PubMed](https://pubmed.ncbi.nlm.nih.gov/111/)" in content and "PMC full text" not in content
    # The JSON API stays data: the record's title as published.
    assert completion["cometa"]["citations"][0]["title"] == ATTACK


async def test_a_citations_notices_are_listed_under_it_as_text() -> None:
    """PubMed's notices about a cited study reach the chat (and ``cometa ask``, which prints the same
    markdown) nested under its source, as text: a notice's words are corpus text like a title."""
    concern = Notice("expression_of_concern", "999", f"An expression of concern {ATTACK} (PMID 999).")
    newer = Notice("update", "333", "A newer version of this review exists: PMID 333.")
    cited = (Citation("111", None, "Trial 111", 2020, (), "", None, notices=(concern, newer)),)
    checked = Answer("It helps [PMID:111].", "llm", None, None, cited, 0, None, None, 5, 7, ())
    final = AskResult("r1", Answered(checked.text, "llm", checked, None))
    text, _ = await streamed(EventAsker(["It helps [PMID:111]."], final))
    req = ChatRequest(model="cometa", messages=msgs(("user", "Does it help?")))
    completion = await chat_completion(EventAsker([], final), req, "r1")  # type: ignore[arg-type]
    content = completion["choices"][0]["message"]["content"]
    for markdown in (text, content):
        assert (
            "\n1. Trial 111 (2020) — [PubMed](https://pubmed.ncbi.nlm.nih.gov/111/)\n   - **Note:** An "
            in markdown
        )
        html = rendered(markdown)
        assert html.tags.count("li") == 3 and "ul" in html.tags  # the source and, under it, its two notices
        assert "img" not in html.tags and all(h.startswith(LITERATURE) for h in html.hrefs), html.hrefs
        assert f"Note: An expression of concern {ATTACK} (PMID 999)." in html.text
        assert "Note: A newer version of this review exists: PMID 333." in html.text
    notices = completion["cometa"]["citations"][0]["notices"]
    assert notices[1] == {"type": "update", "pmid": "333", "text": newer.text}


def test_the_escape_survives_any_split_of_a_stream() -> None:
    text = "a http://host/x.png b www.e.org <b>c</b> [x](y) user@host d"
    whole = _render_text(text, {})
    assert not [t for t in ("<b>", "http://", "www.", "[x]", "@") if t in whole], whole
    for cut in range(1, len(text)):
        filt = _CitationFilter({})
        assert filt.feed(text[:cut]) + filt.feed(text[cut:]) + filt.flush() == whole, cut


def test_the_follow_up_framing_is_never_searched() -> None:
    """A follow-up with no medical words searches its own words, not the wrapper's ("earlier", "follow"):
    issue 30."""
    from app.frontends import ChatMessage
    from retrieval.understand import DeterministicRewriter

    messages = [
        ChatMessage(role="user", content="thanks, that helps"),
        ChatMessage(role="user", content="what are the options?"),
    ]
    question = chat_question(messages)
    assert question.startswith("Earlier in this conversation:")  # the framing is there ...
    ladder = " ".join(DeterministicRewriter().rewrite(question).ladder).lower()
    assert (
        "earlier" not in ladder and "follow" not in ladder and "conversation" not in ladder
    )  # ... unsearched
    assert "options" in ladder
