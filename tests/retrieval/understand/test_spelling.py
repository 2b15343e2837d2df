"""The speller leaves real words alone: everyday English, drug names, prefixed words, mixed-case
abbreviations (issue 15: "heal" -> "head", "fosinopril" -> "eosinophil" on the dev gold sets); real typos
are still fixed."""

from __future__ import annotations

import pytest

from core import english_frequencies
from retrieval.understand import spell_correct
from retrieval.understand._spelling import INN_STEMS, Speller, drug_stem

# The damage found on the dev gold sets, each in a sentence like the question it came from.
DAMAGE = [
    "will the ulcer heal on its own",  # heal -> head
    "is a face lift safe at 60",  # lift -> life
    "should we watch and wait",  # watch -> patch
    "can you catch it from a cat",  # catch -> patch
    "do I have to wear the brace",  # wear -> fear
    "we got bitten at the beach",  # beach -> each
    "is a sand flea bite dangerous",  # sand -> hand
    "I ate raw carp last week",  # carp -> care
    "he takes fosinopril for his heart",  # fosinopril -> eosinophil
    "my dog does agility training",  # agility -> ability
    "are the newer pills better for shingles",  # newer -> fewer, shingles -> pringles
    "do erosions in the stomach heal",  # erosions -> emotions
    "hypobaric hypoxia at altitude",  # hypobaric -> hyperbaric
]


@pytest.mark.parametrize("text", DAMAGE)
def test_real_words_are_not_corrected(text: str) -> None:
    assert spell_correct(text) == text


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        ("pancretic", "pancreatic"),
        ("metfromin", "metformin"),
        ("brest", "breast"),  # pyspellchecker lists "brest" only at its floor count: not taken as English
        ("diabeties", "diabetes"),
        ("siezure", "seizure"),
        ("prostrate", "prostate"),  # a real-word error, named in the speller
        ("agian", "again"),  # two letters swapped, not the clinical "avian" one letter away (issue 30)
        ("tumer", "tumor"),  # no swap either way: the clinical word
    ],
)
def test_real_typos_are_still_corrected(wrong: str, right: str) -> None:
    assert spell_correct(f"is it {wrong} or not") == f"is it {right} or not"


@pytest.mark.parametrize(
    "drug",
    [
        "fosinopril",
        "trandolapril",
        "candesartan",
        "rosuvastatin",
        "pembrolizumab",
        "osimertinib",
        "voriconazole",
        "pantoprazole",
        "famotidine",
        "amlodipine",
        "levofloxacin",
        "tenofovir",
        "enoxaparin",
        "apixaban",
        "sitagliptin",
        "empagliflozin",
        "bisoprolol",
    ],
)
def test_drug_names_are_kept(drug: str) -> None:
    assert drug_stem(drug) is not None
    assert spell_correct(f"does {drug} help") == f"does {drug} help"


def test_mixed_case_abbreviations_are_kept() -> None:
    text = "Is the eGFR or sRAGE or tHcy level or the pH what matters?"
    assert spell_correct(text) == text


def test_drug_stem_needs_a_word_before_it() -> None:
    assert drug_stem("fosinopril") == "pril"
    assert drug_stem("candesartan") == "sartan"  # the longest stem, not "tan"-like fragments
    assert drug_stem("tide") is None and drug_stem("mab") is None
    assert INN_STEMS == tuple(sorted(INN_STEMS, key=lambda s: (-len(s), s)))


def _speller(*words: str) -> Speller:
    # A small dictionary of clinical words and no English list: the rules below are the speller's own.
    return Speller(dict.fromkeys(words, 10), frozenset(words), english={})


def test_a_drug_name_is_corrected_only_towards_its_own_stem() -> None:
    speller = _speller("lisinopril", "eosinophil")
    assert speller.correct("lisinipril") == "lisinopril"  # a typo of a drug of the same class
    assert speller.correct("fosinopril") is None  # never into "eosinophil"


def test_distance_two_keeps_the_first_letter() -> None:
    speller = _speller("eosinophil")
    assert speller.correct("eosinofil") == "eosinophil"  # two edits, first letter kept: a typo
    assert speller.correct("aosinophyl") is None  # two edits including the first letter: another word
    assert speller.correct("aosinophil") == "eosinophil"  # one edit may still touch the first letter


def test_two_edits_must_keep_the_words_sound() -> None:
    speller = _speller("protocol", "melanoma", "resistant", "catenin", "eosinophil", "acetaminophen")
    # Two edits that change the consonants make another word: a drug, a peptide, a polyphenol.
    for word in ("propofol", "melanotan", "resistin", "catechin"):
        assert speller.correct(word) is None, word
    # Two edits of vowels, "ph" for "f" or a doubled letter are a misspelling.
    assert speller.correct("eosinofil") == "eosinophil"
    assert speller.correct("acetominiphen") == "acetaminophen"


def test_a_prefix_swap_is_not_a_typo() -> None:
    speller = _speller("hyperbaric", "infiltration", "activated")
    assert speller.correct("hypobaric") is None
    assert speller.correct("filtration") is None
    assert speller.correct("inactivated") is None
    assert speller.correct("hyperbaic") == "hyperbaric"


def test_english_words_are_never_corrected() -> None:
    speller = Speller({"head": 10}, frozenset({"head"}), english={"heal": 22212})
    assert speller.correct("heal") is None
    assert speller.correct("heals") is None  # an inflection of an English word
    assert speller.correct("hexd") == "head"


def test_english_list_is_everyday_english_without_its_floor_words() -> None:
    english = english_frequencies()
    assert len(english) > 50_000
    assert {"heal", "lift", "watch", "catch", "wear", "beach", "sand", "carp", "agility"} <= set(english)
    assert "brest" not in english and "cancr" not in english and "fosinopril" not in english


def test_prepare_builds_the_index_and_the_english_list_before_any_question() -> None:
    # The service's warm-up calls this, so the first question with a typo does not pay ~0.8 s for them.
    speller = Speller({"pancreatic": 10}, frozenset({"pancreatic"}))
    assert speller._index is None and speller._english is None
    speller.prepare()
    assert speller._index is not None and speller._english is not None and "heal" in speller._english
    assert speller.correct("pancretic") == "pancreatic"


def test_a_technical_word_is_neither_english_nor_a_typo_of_it() -> None:
    speller = Speller({"zinc": 10}, frozenset({"zinc"}), english=english_frequencies())
    for word in ("zelmoprazole", "gabapentin", "risperidone", "bexaflexamine"):
        assert speller.is_technical(word), word
    # English, or one edit from it: a typo the speller may not know how to fix, not a term nobody studied.
    for word in ("metallic", "metalic", "engnie", "depossit", "stuffy"):
        assert not speller.is_technical(word), word


def test_everyday_words_are_the_common_ones() -> None:
    speller = Speller({}, frozenset())
    # Words whose everyday sense competes with a clinical one, against terms a person uses for the clinic.
    assert all(speller.is_everyday(w) for w in ("heart", "treat", "tired", "eat", "virus"))
    assert not any(speller.is_everyday(w) for w in ("lymphoma", "biopsy", "whipple", "tamoxifen", "zzxq"))


@pytest.mark.parametrize(
    "word", ["ab" * 1000, "x" * 4000, "pneumonoultramicroscopicsilicovolcanoconiosisxyzzyq" * 20]
)
def test_a_long_word_costs_no_memory_to_check(word: str) -> None:
    """An attacker's one-word question (issue 27, finding 1): the distance-2 deletes of a 2,000-letter word
    were millions of strings (gigabytes, seconds on the event loop). No dictionary word is within two edits
    of it, so it is left as written without building them; and no English word is one edit away."""
    import tracemalloc

    speller = Speller({"pancreatic": 10}, frozenset({"pancreatic"}), english=english_frequencies())
    speller.prepare()
    tracemalloc.start()
    try:
        assert speller.correct(word) is None
        assert speller.is_technical(word)
        assert spell_correct(f"is {word} dangerous") == f"is {word} dangerous"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, peak


def test_words_at_the_edge_of_reach_are_still_corrected() -> None:
    # The bound is exact: a word within two letters of the longest dictionary word is still checked.
    speller = Speller({"pancreatitis": 10}, frozenset({"pancreatitis"}), english={})
    assert speller.correct("pancreatitisz") == "pancreatitis"  # one letter longer
    assert speller.correct("pancreatitiszzz") is None  # three: out of reach
