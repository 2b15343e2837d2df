"""Untrusted text in markup: corpus, node and model text inert in markdown and HTML; literature links only.

Every text a frontend shows in markdown (chat completions, ``cometa ask``) goes through
:func:`markdown_text` once, at the edge: titles, abstracts and passages come from a corpus anyone can
publish to, answers from a model that quotes them, so a title like ``[x](javascript:...)`` or
``<img onerror=...>`` must read as text, never become a link, an image or a tag. The characters that
start markdown or HTML syntax become character references (``&#91;``): CommonMark shows them as the
character and never parses them as syntax, HTML shows them as text, and, having no backslash, they survive
a JSON string unchanged. Links are CoMeta's own, and only to PubMed or PMC (:func:`literature_url`).
:func:`inert_json` writes the same characters as JSON escapes, for a text that must stay the JSON it was.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["inert_json", "literature_url", "markdown_text"]

# What starts a link, an image, a tag, an entity, code or emphasis; "\" first so it is never doubled.
_SPECIAL = "\\&<>[]`*_~|"
_REFERENCE = {c: f"&#{ord(c)};" for c in _SPECIAL} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_TABLE = str.maketrans(_REFERENCE)
# What renderers turn into links by themselves (GFM autolinks, linkify): "scheme://", "www.", "a@b".
_AUTOLINK = re.compile(r":(?=//)|(?<=www)\.|@", re.IGNORECASE)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_ESCAPES = {c: f"\\u{ord(c):04x}" for c in (*_SPECIAL.replace("\\", ""), ":", "@", "(", ")", "!")}
# PubMed and PMC over https, with nothing a markdown link destination or an HTML attribute could end at.
_LITERATURE = re.compile(
    r"https://(?:pubmed\.ncbi\.nlm\.nih\.gov|pmc\.ncbi\.nlm\.nih\.gov|www\.ncbi\.nlm\.nih\.gov/pmc)"
    r"/[A-Za-z0-9._/-]*"
)


def markdown_text(text: str) -> str:
    """``text`` as markdown (and HTML) that shows exactly that text: no link, image, tag or emphasis.

    Local to each run of non-space characters, so a stream escaped word by word reads as the whole."""
    return _AUTOLINK.sub(lambda m: f"&#{ord(m.group())};", text.translate(_TABLE))


def literature_url(url: str | None) -> str | None:
    """``url`` when it is a PubMed or PMC page over https, else None: the only links CoMeta writes."""
    return url if url is not None and _LITERATURE.fullmatch(url) else None


def inert_json(data: Any) -> str:
    """``data`` as JSON that parses back to ``data`` but, shown as markdown or HTML, holds no syntax: the
    characters :func:`markdown_text` replaces are ``\\u`` escapes inside strings."""
    text = json.dumps(data, ensure_ascii=False, indent=2)

    def escape(match: re.Match[str]) -> str:
        return "".join(_JSON_ESCAPES.get(c, c) for c in match.group())

    return _JSON_STRING.sub(escape, text)
