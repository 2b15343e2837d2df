"""core's text normalisation: the one tokenizer, stopword set and light stemmer."""

from __future__ import annotations

from core import STOPWORDS, content_words, fold_accents, light_stem, words


def test_words_are_letter_digit_runs_lower_cased_without_accents() -> None:
    assert words("Sjögren's COVID-19 α_beta") == ["sjogren", "s", "covid", "19", "α", "beta"]
    assert words("T-ALL in Birt-Hogg-Dubé", lower=False) == ["T", "ALL", "in", "Birt", "Hogg", "Dube"]
    assert fold_accents("pâté") == "pate" and fold_accents("plain") == "plain"


def test_content_words_drop_stopwords_and_short_words_in_order() -> None:
    text = "How long can my kidneys wait for a transplant?"
    assert content_words(text) == ["long", "kidneys", "wait", "transplant"]
    assert content_words(text, min_length=5) == ["kidneys", "transplant"]
    assert content_words(text, stopwords=frozenset({"how"})) == [
        "long",
        "can",
        "my",
        "kidneys",
        "wait",
        "for",
        "a",
        "transplant",
    ]
    assert {"my", "when", "please"} <= STOPWORDS  # patient-question fillers, not only Lucene's list


def test_light_stem_is_applied_alike_to_documents_and_queries() -> None:
    stems = [light_stem(w) for w in content_words("Travelling abroad: the traveler travels; travelled")]
    assert stems == ["travel", "abroad", "traveler", "travel", "travel"]
