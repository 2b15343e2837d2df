"""PHI scrubbing: recall on synthetic narratives, precision on clinical text, and the query gate."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.query import Range, parse_query, validate_query
from retrieval.understand import (
    PHI_KINDS,
    PhiLeakError,
    ScrubResult,
    assert_no_phi,
    hash_text,
    scrub,
    strip_phi_from_query,
)
from retrieval.vocab import LayLexicon
from tests._paths import REPO

FIXTURE = REPO / "tests" / "fixtures" / "phi_synthetic.jsonl"


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = _cases()


def _without_kept(text: str, keep: list[str]) -> str:
    # A PHI word may legitimately survive inside a clinical term ("Mrs. Lynch" vs "Lynch syndrome").
    for k in keep:
        text = text.replace(k, " ")
    return text


def _occurs(needle: str, haystack: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack, re.I) is not None


def test_fixture_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert sum(len(c["phi"]) for c in CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_fixture_phi_removed_and_clinical_terms_kept(case: dict[str, Any]) -> None:
    result = scrub(case["text"])
    for k in case["keep"]:
        assert k in result.text, f"clinical term {k!r} was scrubbed"
    rest = _without_kept(result.text, case["keep"])
    for p in case["phi"]:
        assert not _occurs(p, rest), f"PHI of length {len(p)} survived"


def test_fixture_recall_and_precision() -> None:
    total = missed = spans = false_pos = 0
    for case in CASES:
        text = case["text"]
        result = scrub(text)
        rest = _without_kept(result.text, case["keep"])
        occ: list[tuple[int, int]] = []
        for p in case["phi"]:
            total += 1
            missed += _occurs(p, rest)
            occ.extend(m.span() for m in re.finditer(re.escape(p), text, re.I))
        for s in result.spans:
            spans += 1
            false_pos += not any(s.start < e and b < s.end for b, e in occ)
    assert missed == 0, f"recall {1 - missed / total:.3f}"
    assert false_pos / spans <= 0.02, f"{false_pos} of {spans} spans are not PHI"


CLINICAL = [
    "Is Gleason 7 prostate cancer aggressive?",
    "CA 19-9 of 37 U/mL after the Whipple procedure",
    "BRCA1 and BRCA2 carriers, HER2 positive, stage IV, T2N0M0, 5 mg daily, Hodgkin lymphoma",
    "In Hodgkin lymphoma, ABVD is standard. At Stage III the survival is 80%.",
    "My mom has stage 4 pancreatic cancer since 2019, she is 72 years old.",
    "Does Lynch syndrome or Li-Fraumeni syndrome increase risk? Kaposi sarcoma in HIV.",
    "Her PSA is 95 and BP is 120/80, pain 7/10, ECOG 2, Ki-67 30%, PD-L1 50%",
    "Ewing sarcoma, Wilms tumor, Burkitt lymphoma, Waldenstrom macroglobulinemia, Merkel cell carcinoma",
    "I'm HER2 positive and on Herceptin. I'm Stage 2. The doctor said Keytruda may help.",
    "Radiation Oncology said the Cancer Center can do proton therapy in 2024.",
    "In March she started FOLFIRINOX, 12 cycles over 6 months, ANC 1.2, platelets 95,000",
    "Is NCT04567890 recruiting? She had 3 cycles of R-CHOP and a CA-125 of 210.",
    "my dad is 89 and has CLL; diagnosed in 2015, treated since 2016",
]


@pytest.mark.parametrize("text", CLINICAL)
def test_clinical_text_is_untouched(text: str) -> None:
    result = scrub(text)
    assert result.text == text
    assert not result.found


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("she is 93", "AGE>89"),
        ("my 101-year-old grandmother", "AGE>89"),
        ("aged 95, with lymphoma", "AGE>89"),
        ("on 2024-03-14 she had surgery", "DATE"),
        ("surgery on March 14, 2024", "DATE"),
        ("surgery on the 14th of March", "DATE"),
        ("seen 3/14/24 in clinic", "DATE"),
        ("write to a.b@example.org", "EMAIL"),
        ("call 617-555-0134", "PHONE"),
        ("MRN: 12345678", "ID"),
        ("her SSN 123-45-6789", "ID"),
        ("see http://example.com/x", "URL"),
        ("we live at 12 Oak Street", "ADDRESS"),
        ("treated at Mayo Clinic", "PLACE"),
        ("from Chicago originally", "PLACE"),
        ("Dr. Okafor said so", "NAME"),
        ("my wife Susan is scared", "NAME"),
    ],
)
def test_kinds(text: str, kind: str) -> None:
    result = scrub(text)
    assert kind in result.counts()
    assert f"[{kind}]" in result.text
    assert kind in PHI_KINDS


def test_years_and_young_ages_are_kept() -> None:
    text = "diagnosed in 2019, in remission since 2015, she is 45 and he is 89 years old"
    assert scrub(text).text == text


def test_repr_and_spans_carry_no_values() -> None:
    result = scrub("My name is Jane Doe, call 617-555-0134.")
    assert "Jane" not in repr(result) and "555" not in repr(result)
    assert "Jane" not in str(result.spans)
    assert result.counts() == {"NAME": 1, "PHONE": 1}
    assert result.text == "My name is [NAME], call [PHONE]."
    # Offsets point into the original text.
    span = result.spans[0]
    assert (span.kind, span.start, span.end) == ("NAME", 11, 19)


def test_name_is_removed_everywhere_once_found() -> None:
    result = scrub("My husband Tom has lung cancer. Tom's oncologist wants chemo.")
    assert "Tom" not in result.text
    assert result.text.count("[NAME]") == 2


def test_eponyms_survive_next_to_a_name() -> None:
    result = scrub("Mrs. Lynch asked whether Lynch syndrome raises colon cancer risk.")
    assert result.text == "Mrs. [NAME] asked whether Lynch syndrome raises colon cancer risk."


def test_hash_text() -> None:
    assert hash_text("abc") == hash_text("abc")
    assert hash_text("abc") != hash_text("abd")
    assert len(hash_text("abc")) == 16 and re.fullmatch(r"[0-9a-f]+", hash_text("abc"))
    assert len(hash_text("abc", 8)) == 8


# --- query gate -----------------------------------------------------------------------------------------

FOUND = scrub(
    "My name is Jane Doe. My husband Tom had a Whipple at St. Mary's Hospital in Boston. "
    "Call 617-555-0134, MRN 00482913."
)


def test_leaks_report_kinds_only() -> None:
    assert FOUND.leaks('"pancreatic neoplasms"[mh]') == ()
    assert FOUND.leaks('"Jane Doe" AND cancer') == ("NAME",)
    assert FOUND.leaks('"st marys hospital"[tiab]') == ("PLACE",)
    assert FOUND.leaks("6175550134") == ("PHONE",)


def test_strip_phi_keeps_syntax_and_date_ranges() -> None:
    q = (
        '("Pancreatic Neoplasms"[mh] OR "jane doe pancreatic cancer"[tiab]) AND "Boston"[tiab] '
        "AND 2019:2024[dp] AND (tom[au] OR whipple)"
    )
    out = strip_phi_from_query(q, FOUND)
    validate_query(out)
    assert "jane" not in out.lower() and "boston" not in out.lower() and "tom" not in out.lower()
    assert "whipple" in out and "pancreatic cancer" in out
    assert any(isinstance(n, Range) for n in parse_query(out).children)  # type: ignore[union-attr]


def test_strip_phi_pattern_only_and_empty() -> None:
    assert strip_phi_from_query('"call 617-555-0134"[tiab]') == '"call"[tiab]'
    assert strip_phi_from_query('"Jane"[tiab]', FOUND) == ""
    assert strip_phi_from_query('"617 555 0134" OR biopsy', FOUND) == "biopsy"
    assert strip_phi_from_query('"unterminated Jane', FOUND).count("Jane") == 0  # best effort on bad syntax


def test_assert_no_phi() -> None:
    ok = '("Pancreatic Neoplasms"[mh] OR "pancreatic cancer"[tiab]) AND "biopsy"[tiab] AND 2020:2025[dp]'
    assert assert_no_phi(ok, FOUND) == ok
    with pytest.raises(PhiLeakError) as err:
        assert_no_phi('"tom" AND cancer', FOUND)
    assert err.value.kinds == ("NAME",)
    assert "tom" not in str(err.value).lower()
    with pytest.raises(PhiLeakError):
        assert_no_phi('"jane.doe@example.com"[tiab]')


def test_gate_never_touches_vocabulary_terms() -> None:
    lexicon = LayLexicon.load()
    terms = {e.clinical for e in lexicon} | {e.mesh for e in lexicon if e.mesh}
    for term in sorted(terms):
        q = f'"{term}"[tiab]'
        assert strip_phi_from_query(q, FOUND) == q, term


# --- properties -----------------------------------------------------------------------------------------

# Fragments that trigger the cue-based rules, mixed with noise, so the property explores the hard paths.
_PIECES = st.sampled_from(
    [
        *"abcdeJMTSBDrs .,'-/:@()[]0123456789\n",
        "Dr. ",
        "my wife ",
        "Boston",
        "MRN ",
        "March ",
        "I'm ",
        "Tom",
        "Lynch syndrome",
        "St. Mary's Hospital",
        "in ",
        "— ",
        "Thanks, ",
        "95 years old",
        "[NAME]",
    ]
)
_TEXT = st.lists(_PIECES, max_size=40).map("".join) | st.text(max_size=80)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_scrub_never_raises_and_is_idempotent(text: str) -> None:
    first = scrub(text)
    assert isinstance(first, ScrubResult)
    assert scrub(first.text).text == first.text
    for s in first.spans:
        assert 0 <= s.start < s.end <= len(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_strip_never_raises(query: str) -> None:
    out = strip_phi_from_query(query, FOUND)
    assert isinstance(out, str)


def test_redact_free_text_with_the_narratives_values() -> None:
    found = scrub(
        "Hi, I'm Linda Parker, call me at 555-201-7788. My husband John Parker has prostate cancer."
    )
    assert "Linda" not in found.text and "John" not in found.text
    out = found.redact(
        "Linda Parker asks about prostate cancer; call 555 201 7788. Parker's wife is worried."
    )
    assert out == "[NAME] asks about prostate cancer; call [PHONE]. [NAME] wife is worried."


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("my husband john kowalski has angina", ["john", "kowalski"]),
        ("zofia wisniewska here, is chemo safe?", ["zofia", "wisniewska"]),
        ("is chemo safe? thanks, zofia garcia", ["zofia", "garcia"]),
        ("my name is zofia nowak, is chemo safe?", ["zofia", "nowak"]),
        # A letter after an apostrophe starts no word: "I'm", not "I'M", so the "I'm <name>" cue fires.
        ("I'm zofia kowalczyk, does chemo help angina?", ["zofia", "kowalczyk"]),
        ("i'm zofia kowalczyk, does chemo help angina?", ["zofia", "kowalczyk"]),
        ("i’m zofia kowalczyk, does chemo help angina?", ["zofia", "kowalczyk"]),
        ("It's zofia kowalczyk, does chemo help angina?", ["zofia", "kowalczyk"]),
        ("it’s zofia kowalczyk, does chemo help angina?", ["zofia", "kowalczyk"]),
        ("my wife's name is zofia kowalczyk, is chemo safe?", ["zofia", "kowalczyk"]),
        ("her son’s first name is zofia, is chemo safe?", ["zofia"]),
    ],
)
def test_scrub_any_case_finds_lower_case_names_after_a_cue(text: str, names: list[str]) -> None:
    from retrieval.understand import scrub_any_case

    assert not scrub(text).found  # as written, the cues need capitals
    found = scrub_any_case(text)
    for name in names:
        assert found.leaks(f'"{name}"[tiab]'), name
    assert not found.leaks('"chemo"[tiab]') and not found.leaks('"angina"[tiab]')
    # Names only: after "from" or "to" a drug's name is as capitalisable as a town's.
    assert not scrub_any_case("switched from salmeterol to tiotropium").found


def test_scrub_any_case_takes_no_everyday_word_for_a_name() -> None:
    from retrieval.understand import scrub_any_case

    text = "my doctor suggests risedronate 5 mg, risedronate 15 mg; thanks, zofia garcia"
    found = scrub_any_case(text, frozenset({"suggests", "garcia"}), known={"suggests"}.__contains__)
    assert not found.leaks('"risedronate"[tiab]')  # no doctor named "Suggests Risedronate", anywhere
    assert found.leaks('"zofia"[tiab]') and found.leaks('"garcia"[tiab]')  # a surname may be everyday
    # Without the vocabulary, an unknown word after an everyday one is taken for a name (fail closed) ...
    assert scrub_any_case(text, frozenset({"suggests"})).leaks('"risedronate"[tiab]')
    # ... but not after an "-ed" verb: the unanswerable set's nonexistent drug is still counted.
    text = "my doctor mentioned quintaflozamide for my kidneys"
    assert not scrub_any_case(text, frozenset({"mentioned"})).found


def test_scrub_any_case_keeps_the_unknown_words_after_an_everyday_first_name() -> None:
    from retrieval.understand import scrub_any_case

    # "john" is everyday English, so no name starts there; "wisniewski" is still one, and so is every copy.
    text = "my husband john wisniewski has angina; wisniewski says"
    found = scrub_any_case(text, frozenset({"john", "has"}))
    assert found.leaks('"wisniewski"[tiab]') and not found.leaks('"angina"[tiab]')
    assert not found.leaks('"john"[tiab]')


def test_scrub_any_case_a_false_name_cancels_only_its_own_words() -> None:
    from retrieval.understand import scrub_any_case

    # "Suggests Garcia" is no doctor, but the true "Zofia Garcia" shares a word with it and is still a name.
    text = "my doctor suggests garcia tablets; thanks, zofia garcia"
    found = scrub_any_case(text, frozenset({"suggests", "garcia", "tablets"}))
    assert found.leaks('"zofia"[tiab]')


@pytest.mark.parametrize(
    ("text", "emptied"),
    [
        ("555-123-4567 john.smith@example.com", True),
        ("Call 555-123-4567, or email john.smith@example.com.", False),  # "call", "email" remain
        ("My name is John Smith, 555-123-4567", False),  # "name" remains: not empty, if no question
        ("Does chemotherapy help breast cancer?", False),  # nothing found: nothing emptied
        ("", False),
    ],
)
def test_a_question_of_personal_details_only_is_emptied(text: str, emptied: bool) -> None:
    assert scrub(text).emptied is emptied
