"""PHI scrubbing for patient narratives and a last-line gate on generated queries.

Patient questions are PHI. Nothing verbatim from a narrative may leave the service except clinical concepts,
so the Understand stage scrubs first and checks every query it is about to send to NCBI against what it
scrubbed (:func:`assert_no_phi`, :func:`strip_phi_from_query`).

Rules (HIPAA Safe Harbor flavoured, tuned for precision on clinical text):

* Patterns: URLs, e-mails, phone numbers, SSNs and record/account numbers, long digit runs, exact dates
  (``03/14/2024``, ``2024-03-14``, ``March 14, 2024``, ``14th of March``), street addresses, ZIP codes after a
  state, ages over 89, US states and large cities, hospital and cancer-centre names.
* Cues: names after ``Dr./Mr./Mrs./Ms.``, ``my name is``, ``I'm``, ``my wife/son/...``, ``named/called``
  and in sign-offs; places after ``in/at/from/near`` when capitalised and not a known word. A name found
  by a cue is also removed wherever else it occurs in the text.
* Kept on purpose: years alone ("since 2015", needed for date limits), ages up to 89, and clinical tokens
  (eponyms followed by a clinical word, "Gleason 7", "CA 19-9", "BRCA1", "stage IV", "T2N0M0", "5 mg").

:class:`ScrubResult` never shows raw PHI in its repr; the raw strings sit in a private field that only
:meth:`ScrubResult.leaks` and the query gate read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from core import CometaError, content_words
from retrieval.query import And, Node, Not, Or, QuerySyntaxError, Range, Term, parse_query
from retrieval.vocab import LayLexicon, normalize_token

__all__ = [
    "PHI_KINDS",
    "PhiLeakError",
    "PhiSpan",
    "ScrubResult",
    "assert_no_phi",
    "hash_text",
    "scrub",
    "scrub_any_case",
    "strip_phi_from_query",
]

PHI_KINDS = ("NAME", "PHONE", "EMAIL", "ID", "DATE", "ADDRESS", "PLACE", "AGE>89", "URL")
# The placeholders scrub() leaves in the text ("[NAME]"), which later stages must neither correct nor query.
_PLACEHOLDER = re.compile(r"\[(?:NAME|PHONE|EMAIL|ID|DATE|ADDRESS|PLACE|AGE>89|URL)\]")


class PhiLeakError(CometaError, ValueError):
    """A query still carries PHI. The message names kinds only, never the values."""

    def __init__(self, kinds: Iterable[str]) -> None:
        self.kinds = tuple(sorted(set(kinds)))
        super().__init__(f"query contains PHI: {', '.join(self.kinds)}")


@dataclass(frozen=True, slots=True)
class PhiSpan:
    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """Scrubbed text plus where PHI was found (offsets into the original text, no values)."""

    text: str
    spans: tuple[PhiSpan, ...] = ()
    # Raw PHI strings, for leak checks only: excluded from repr/eq so they never reach a log line.
    _values: tuple[tuple[str, str], ...] = dataclasses.field(default=(), repr=False, compare=False)

    @property
    def found(self) -> bool:
        return bool(self.spans)

    @property
    def emptied(self) -> bool:
        """PHI was found and nothing else is left of the question (stopwords and punctuation aside): no
        query may be built from it, so nothing is searched (the ``phi_scrubbed`` zero-hit cause)."""
        return self.found and not content_words(_PLACEHOLDER.sub(" ", self.text))

    def counts(self) -> dict[str, int]:
        """PHI kinds -> number of spans (safe to log)."""
        return dict(Counter(s.kind for s in self.spans))

    def leaks(self, query: str) -> tuple[str, ...]:
        """Kinds of the PHI found in the narrative that reappear in ``query`` (sorted, no values)."""
        return tuple(sorted({kind for kind, _ in _leaked_values(query, self._values)}))

    def redact(self, text: str) -> str:
        """Free ``text`` (e.g. an LLM's corrected question) with this narrative's PHI values and any pattern
        PHI replaced by placeholders - for text, where :func:`strip_phi_from_query` is for queries."""
        for kind, needle in _needles(self._values):
            text = _needle_re(needle).sub(f"[{kind}]", text)
        digit_values = _digit_values(self._values)
        if digit_values:

            def _mark(m: re.Match[str]) -> str:
                kind = digit_values.get(re.sub(r"\D", "", m.group(0)))
                return m.group(0) if kind is None else f"[{kind}]"

            text = _DIGITS.sub(_mark, text)
        return scrub(text).text


def hash_text(text: str, length: int = 16) -> str:
    """Stable SHA-256 hex prefix of ``text``: lets logs correlate questions without storing them."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


# --- word lists ------------------------------------------------------------------------------------------

_MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_US_STATES = [
    *(
        "Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia "
        "Hawaii Idaho Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts "
        "Michigan Minnesota Mississippi Missouri Montana Nebraska Nevada Ohio Oklahoma Oregon "
        "Pennsylvania Tennessee Texas Utah Vermont Virginia Washington Wisconsin Wyoming"
    ).split(),
    "New Hampshire",
    "New Jersey",
    "New Mexico",
    "New York",
    "North Carolina",
    "North Dakota",
    "Rhode Island",
    "South Carolina",
    "South Dakota",
    "West Virginia",
    "District of Columbia",
]
_CITIES = [
    *(
        "Atlanta Austin Baltimore Boston Charlotte Chicago Cincinnati Cleveland Columbus Dallas "
        "Denver Detroit Houston Indianapolis Jacksonville Memphis Miami Milwaukee Minneapolis "
        "Nashville Omaha Orlando Philadelphia Phoenix Pittsburgh Portland Raleigh Rochester "
        "Sacramento Seattle Tampa Tucson Honolulu Albuquerque Anchorage Boise Buffalo Louisville "
        "Richmond Toronto Montreal Vancouver Calgary Ottawa London Manchester Birmingham Glasgow "
        "Edinburgh Dublin Paris Lyon Marseille Berlin Munich Hamburg Madrid Barcelona Lisbon Rome "
        "Milan Naples Amsterdam Rotterdam Brussels Vienna Zurich Geneva Stockholm Oslo Copenhagen "
        "Helsinki Warsaw Prague Budapest Athens Istanbul Moscow Cairo Lagos Nairobi Johannesburg "
        "Dubai Riyadh Tehran Karachi Lahore Delhi Mumbai Bangalore Chennai Kolkata Dhaka Bangkok "
        "Singapore Jakarta Manila Beijing Shanghai Shenzhen Guangzhou Wuhan Chengdu Seoul Busan "
        "Tokyo Osaka Sydney Melbourne Brisbane Perth Auckland Lima Bogota Santiago Caracas Havana"
    ).split(),
    "Los Angeles",
    "San Francisco",
    "San Diego",
    "San Jose",
    "San Antonio",
    "Fort Worth",
    "Las Vegas",
    "Salt Lake City",
    "Kansas City",
    "St. Louis",
    "St Louis",
    "New Orleans",
    "Oklahoma City",
    "El Paso",
    "Mexico City",
    "Sao Paulo",
    "Rio de Janeiro",
    "Buenos Aires",
    "Hong Kong",
    "Tel Aviv",
    "Cape Town",
    "Ho Chi Minh City",
]
_STATE_ABBR = frozenset(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND "
    "OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC".split()
)
# Abbreviations that are also everyday/clinical tokens: only trusted with a ZIP or a known city before them.
_AMBIGUOUS_ABBR = frozenset("CA DO HI IN MD ME MS OK OR PA".split())
_KNOWN_CENTRES = [
    "Mayo Clinic",
    "Cleveland Clinic",
    "MD Anderson",
    "M.D. Anderson",
    "Memorial Sloan Kettering",
    "Memorial Sloan-Kettering",
    "Sloan Kettering",
    "Sloan-Kettering",
    "Dana-Farber",
    "Dana Farber",
    "Johns Hopkins",
    "City of Hope",
    "Fred Hutch",
    "Fred Hutchinson",
    "Moffitt",
    "Roswell Park",
    "Kaiser Permanente",
    "Mass General",
    "Massachusetts General",
    "Cedars-Sinai",
    "Cedars Sinai",
    "Mount Sinai",
    "Mt. Sinai",
    "Royal Marsden",
]
# Capitalised words that follow name/place cues in ordinary prose; never PHI on their own.
_COMMON_CAPS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december christmas easter thanksgiving english spanish french
    german chinese italian hindi arabic american canadian british mexican indian african asian european
    catholic christian jewish muslim hindu buddhist hispanic latino latina black white god jesus lord
    medicare medicaid google facebook reddit youtube internet er icu oncology radiology hospital clinic
    center centre university college church home work school stage grade type level phase cycle round
    day week month year today tomorrow yesterday not so very really just also still now here there
    worried scared afraid sorry tired sick fine okay ok confused lost devastated terrified hoping trying
    writing asking looking going wondering new old the this that a an and or but if""".split()
)
# Words after an eponym that make it clinical ("Hodgkin lymphoma", "Lynch syndrome", "Whipple procedure").
_CLINICAL_NEXT = frozenset(
    """syndrome syndromes disease diseases lymphoma lymphomas sarcoma sarcomas tumor tumors tumour tumours
    procedure procedures operation surgery score scores scale grade grading staging classification
    criteria test tests cell cells carcinoma leukemia leukaemia nevus nevi polyp polyps polyposis
    esophagus node nodes sign signs effect triad maneuver method protocol regimen cyst cysts adenoma
    adenomas disorder variant type""".split()
)
# Always-clinical tokens that may be capitalised right after a cue ("I'm Stage 4", "Dr. said ...").
_CLINICAL_WORDS = frozenset(
    """hodgkin hodgkins whipple gleason wilms ewing ewings burkitt kaposi waldenstrom stage grade her2 brca
    brca1 brca2 chemo cancer tumor tumour oncology positive negative metastatic terminal benign malignant
    triple""".split()
)
_SIGNOFF = (
    r"(?:thanks|thank you|thanks so much|many thanks|regards|best regards|kind regards|best|sincerely|"
    r"cheers|love|xoxo|blessings)"
)
_FAMILY = (
    r"(?:wife|husband|hubby|mom|mum|mother|dad|father|son|daughter|sister|brother|aunt|auntie|uncle|grandma|"
    r"grandmother|grandpa|grandfather|granny|partner|friend|boyfriend|girlfriend|fiance|fiancee|fiancé|"
    r"fiancée|niece|nephew|cousin|neighbor|neighbour|stepmom|stepdad|stepson|stepdaughter|baby|child|kid|"
    r"doctor|oncologist|surgeon|nurse|gp|pcp)"
)
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "mx", "miss", "prof", "doctor", "nurse"})
_NAME_TOKEN = r"(?:[A-Z]['’])?[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:['’-][A-Z]?[a-z]+)*"
_NAME = rf"{_NAME_TOKEN}(?:\s+[A-Z]\.)?(?:\s+{_NAME_TOKEN})?"


@functools.lru_cache(maxsize=1)
def _known_words() -> tuple[frozenset[str], frozenset[str]]:
    """(protected, common): lexicon/clinical words, and those plus general corpus words (loaded lazily)."""
    lex = LayLexicon.load()
    protected = frozenset(lex.words() | _CLINICAL_WORDS | _COMMON_CAPS)
    common = frozenset(protected | set(lex.word_counts))
    return protected, common


def _alt(words: Iterable[str]) -> str:
    parts = sorted({re.escape(w).replace(r"\ ", r"\s+") for w in words}, key=len, reverse=True)
    return "(?:" + "|".join(parts) + ")"


# --- pattern table ---------------------------------------------------------------------------------------
# (kind, regex, value group or None). Matches are resolved leftmost-longest; earlier rows win ties.

_Validator = Callable[[re.Match[str]], bool]


def _valid_md(m: re.Match[str]) -> bool:
    mo, day = int(m.group("mo")), int(m.group("d"))
    return 1 <= mo <= 12 and 1 <= day <= 31


def _valid_dm(m: re.Match[str]) -> bool:
    a, b = int(m.group("a")), int(m.group("b"))
    return (1 <= a <= 12 and 1 <= b <= 31) or (1 <= b <= 12 and 1 <= a <= 31)


_PATTERNS: list[tuple[str, re.Pattern[str], str | None, _Validator | None]] = [
    ("URL", re.compile(r"\b(?:https?://|www\.)[^\s<>\"'\])]+[^\s<>\"'\]).,;:!?]", re.I), None, None),
    ("EMAIL", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"), None, None),
    ("ID", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), None, None),
    (
        "ID",
        re.compile(
            r"\b(?:MRN|medical\s+record(?:\s+(?:number|no\.?|#))?|record\s+(?:number|no\.?|#)|"
            r"chart\s+(?:number|no\.?|#)|patient\s+(?:id|number|no\.?|#)|account\s+(?:number|no\.?|#)|"
            r"acct\.?(?:\s+(?:no\.?|#))?|policy\s+(?:number|no\.?|#)|member\s+(?:id|number|no\.?)|"
            r"insurance\s+(?:id|number|no\.?)|ssn|social\s+security(?:\s+(?:number|no\.?|#))?|"
            r"case\s+(?:number|no\.?|#)|id\s+(?:number|no\.?|#)|ID|NHS\s+(?:number|no\.?))"
            r"\s*(?:is|was|:|#|=|-)?\s*(?P<v>[A-Za-z]{0,4}[-#]?\d[\w-]{2,})",
            re.I,
        ),
        "v",
        None,
    ),
    (
        "PHONE",
        re.compile(
            r"(?<![\w+])(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}"
            r"(?:\s*(?:x|ext\.?|extension)\s*\d{1,5})?\b"
        ),
        None,
        None,
    ),
    ("PHONE", re.compile(r"(?<![\w+])\+\d{1,3}(?:[\s.-]?\d{2,4}){2,5}\b"), None, None),
    (
        "PHONE",
        re.compile(
            r"\b(?:call|phone|cell|mobile|tel|text|fax|number|reach\s+me)\b[^\d\n]{0,12}(?P<v>\d{3}[-.\s]\d{4})\b",
            re.I,
        ),
        "v",
        None,
    ),
    (
        "DATE",
        re.compile(
            r"\b(?:january|february|april|june|july|august|september|october|november|december)\s+"
            r"\d{1,2}(?:st|nd|rd|th)?\b(?:,?\s+(?:19|20)\d{2}\b)?",
            re.I,
        ),
        None,
        None,
    ),
    ("DATE", re.compile(r"\b(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?:\d{4}|\d{2})\b"), None, _valid_dm),
    ("DATE", re.compile(r"\b\d{4}[/.-](?P<mo>\d{1,2})[/.-](?P<d>\d{1,2})\b"), None, _valid_md),
    (
        "DATE",
        re.compile(
            rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+(?:19|20)\d{{2}}\b)?"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b\.?(?:,?\s+(?:19|20)\d{{2}}\b)?"
        ),
        None,
        None,
    ),
    (
        "DATE",
        re.compile(
            r"\b(?:on|since|from|until|till|by|dated?|before|after)\s+(?P<v>(?P<mo>\d{1,2})/(?P<d>\d{1,2}))\b(?![/.]\d)",
            re.I,
        ),
        "v",
        _valid_md,
    ),
    # "March 2024": the month is PHI, the year is not (it feeds date limits).
    ("DATE", re.compile(rf"\b(?P<v>{_MONTHS})\.?\s+(?:of\s+)?(?:19|20)\d{{2}}\b"), "v", None),
    (
        "AGE>89",
        re.compile(
            r"\b(?:9\d|1[0-2]\d)(?:\s*-?\s*|\s+)(?:years?|yrs?|y/?o|y\.o\.)(?:[\s-]*old)?\b"
            r"|\bninety(?:[\s-](?:one|two|three|four|five|six|seven|eight|nine))?(?=[\s-]+(?:years?|yrs?)?[\s-]*old)"
            r"|\b(?:in\s+)?(?:her|his|my|their)\s+(?:90s|nineties|100s)\b",
            re.I,
        ),
        None,
        None,
    ),
    (
        "AGE>89",
        re.compile(
            r"\b(?:aged?|turned|turning|she's|he's|i'm|she\s+is|he\s+is|i\s+am|is\s+now)\s+(?P<v>9\d|1[0-2]\d)\b"
            r"(?![/.,]\d)(?!\s*(?:%|percent|mg|mcg|g\b|kg|lbs?|pounds|mm|cm|ml|units|cells|bpm|/))",
            re.I,
        ),
        "v",
        None,
    ),
    (
        "ADDRESS",
        re.compile(
            r"\b\d{1,6}(?:\s+[NSEW]\.?)?(?:\s+(?:[A-Z][a-z]+|\d{1,3}(?:st|nd|rd|th))){1,4}\s+"
            r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
            r"Terrace|Ter|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Square|Sq|Trail|Row)\b\.?"
            r"(?:,?\s*(?:Apt|Apartment|Suite|Ste|Unit|#)\.?\s*#?\w+)?"
        ),
        None,
        None,
    ),
    ("ADDRESS", re.compile(r"\bP\.?\s?O\.?\s+Box\s+\d+\b", re.I), None, None),
    ("ADDRESS", re.compile(r"\bzip(?:\s*code)?\s*(?:is|:)?\s*(?P<v>\d{5}(?:-\d{4})?)\b", re.I), "v", None),
    (
        "ADDRESS",
        re.compile(
            rf"\b(?:{'|'.join(sorted(_STATE_ABBR))}|{_alt(_US_STATES)[3:-1]}),?\s+(?P<v>\d{{5}}(?:-\d{{4}})?)\b"
        ),
        "v",
        None,
    ),
    (
        "PLACE",
        re.compile(
            _alt(_KNOWN_CENTRES) + r"(?:\s+(?:Clinic|Hospital|Cancer\s+Center|Medical\s+Center))?\b", re.I
        ),
        None,
        None,
    ),
    # Lower-cased city/state names are trusted only right after a place preposition ("we live in boston").
    (
        "PLACE",
        re.compile(
            r"\b(?:in|at|from|near|around|outside|to)\s+(?P<v>" + _alt(_CITIES + _US_STATES) + r")\b", re.I
        ),
        "v",
        None,
    ),
    (
        "PLACE",
        re.compile(
            r"\b(?:(?:St\.?|Saint|Mt\.?|Mount)\s+)?(?:[A-Z][\w'’.&-]*\s+){0,4}[A-Z][\w'’.&-]*\s+"
            r"(?:Hospital|Medical\s+Cent(?:er|re)|Clinic|Cancer\s+Cent(?:er|re)|Cancer\s+Institute|"
            r"Health\s+System|Healthcare|Infirmary|Hospice|Oncology(?:\s+Associates)?)s?\b"
        ),
        None,
        None,
    ),
    (
        "PLACE",
        re.compile(
            r"\bUniversity\s+of\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\b(?:\s+(?:Hospital|Medical\s+Center|Health))?"
        ),
        None,
        None,
    ),
    (
        "PLACE",
        re.compile(r"\b" + _alt(_CITIES + _US_STATES) + r"\b(?!['’]s\s+(?:disease|syndrome))"),
        None,
        None,
    ),
    (
        "PLACE",
        re.compile(
            rf"\b(?P<v>[A-Z][a-z]+(?:\s[A-Z][a-z]+)?,\s+(?P<st>{'|'.join(sorted(_STATE_ABBR))}))\b(?!\s*-?\s*\d{{1,3}}\b)"
        ),
        "v",
        None,
    ),
]

# Cue-introduced names: (regex with group "n", strong cue?). Strong cues ignore the common-word filter.
_NAME_CUES: list[tuple[re.Pattern[str], bool]] = [
    (re.compile(rf"\b(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof|Doctor|Nurse)\.?\s+(?P<n>{_NAME})"), True),
    (
        re.compile(
            rf"\b(?:[Mm]y|[Hh]er|[Hh]is|[Oo]ur)\s+(?:(?i:{_FAMILY})['’]s\s+)?(?:full\s+|first\s+|last\s+)?"
            rf"name\s+is\s+(?P<n>{_NAME})"
        ),
        True,
    ),
    (re.compile(rf"\b(?:[Nn]amed|[Cc]alled)\s+(?P<n>{_NAME})"), False),
    (re.compile(rf"\b(?:[Mm]y|[Oo]ur|[Hh]er|[Hh]is)\s+(?i:{_FAMILY})(?:['’]s)?\s*,?\s+(?P<n>{_NAME})"), True),
    (re.compile(rf"\b(?:I['’]m|I\s+am|[Tt]his\s+is|[Ii]t['’]s)\s+(?P<n>{_NAME})\b"), False),
    (re.compile(rf"(?:^|\n|\b(?i:hi|hello|hey)\b,?)\s*(?P<n>{_NAME})\s+here\b"), False),
    (re.compile(rf"(?:^|[\n.!?])\s*(?:[-—–~]+)\s*(?P<n>{_NAME})\s*\.?\s*$"), True),
    (re.compile(rf"\b(?i:{_SIGNOFF})\s*[,!.]?\s*(?:\n\s*)?(?P<n>{_NAME})\s*[.!]?\s*$"), True),
]
# Capitalised word after a place preposition ("moved from Springfield", "treated at Riverside").
_PLACE_CUE = re.compile(
    r"\b(?:in|at|from|near|to|around|outside|downtown)\s+(?P<v>[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})"
)

_FAMILY_RE = re.compile(_FAMILY, re.I)


def _name_tokens(candidate: str, start: int, text: str, strong: bool) -> list[tuple[int, int]]:
    """Spans of the accepted name words of a cue match, stopping at the first clinical/common word."""
    protected, common = _known_words()
    blocked = protected if strong else common
    out: list[tuple[int, int]] = []
    for m in re.finditer(r"[A-Z][\w'’-]*\.?", candidate):
        word = m.group(0).rstrip(".")
        key = normalize_token(word)
        if len(word) == 1 or key in _TITLES:  # initials and titles are not the name itself
            continue
        # After a first name, the next capitalised word is most likely the surname ("I'm Linda Parker"), so
        # only clinical words stop it then, not the common-word filter.
        stop = protected if out else blocked
        if key in stop or key in _CLINICAL_WORDS or _FAMILY_RE.fullmatch(word):
            break
        after = text[start + m.end() :].lstrip()
        nxt = after.split(maxsplit=1)[0].lower().strip(".,;:!?") if after else ""
        if nxt in _CLINICAL_NEXT:
            break
        out.append((start + m.start(), start + m.start() + len(word)))
    return out


def _find_spans(text: str) -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int, int]] = []  # kind, start, end, rank
    for rank, (kind, rx, group, valid) in enumerate(_PATTERNS):
        for m in rx.finditer(text):
            if valid is not None and not valid(m):
                continue
            if "st" in rx.groupindex and m.group("st") in _AMBIGUOUS_ABBR:
                continue  # "Smith, MD", "..., OR" - a degree or a word more often than a state
            if kind == "PLACE" and group is None and not _place_has_proper_word(m.group(0)):
                continue
            s, e = m.span(group) if group else m.span()
            if e > s:
                found.append((kind, s, e, rank))

    names: set[str] = set()
    base = len(_PATTERNS)
    for rank, (rx, strong) in enumerate(_NAME_CUES):
        for m in rx.finditer(text):
            for s, e in _name_tokens(m.group("n"), m.start("n"), text, strong):
                found.append(("NAME", s, e, base + rank))
                names.add(text[s:e])
    _, common = _known_words()
    for m in _PLACE_CUE.finditer(text):
        words = m.group("v").split()
        keep: list[str] = []
        for w in words:
            if normalize_token(w) in common:
                break
            keep.append(w)
        if keep:
            s = m.start("v")
            found.append(("PLACE", s, s + len(" ".join(keep)), base + len(_NAME_CUES)))
    # A name found once is removed everywhere it occurs ("my husband Tom ... Tom says").
    for name in names:
        for m in re.finditer(rf"\b{re.escape(name)}\b", text):
            nxt = text[m.end() :].lstrip().split(maxsplit=1)
            if nxt and nxt[0].lower().strip(".,;:!?") in _CLINICAL_NEXT:
                continue
            found.append(("NAME", m.start(), m.end(), base + len(_NAME_CUES) + 1))

    # Leftmost-longest, then pattern order: one span per stretch of text.
    found.sort(key=lambda f: (f[1], -(f[2] - f[1]), f[3]))
    spans: list[tuple[str, int, int]] = []
    last_end = -1
    for kind, s, e, _ in found:
        if s < last_end:
            continue
        if spans and spans[-1][0] == kind and not text[last_end:s].strip():
            spans[-1] = (kind, spans[-1][1], e)  # "[NAME] [NAME]" -> one span: fewer hints about the name
        else:
            spans.append((kind, s, e))
        last_end = e
    return spans


_GENERIC_PLACE_WORDS = frozenset(
    """st st. saint mt mt. mount the a an our my her his their university college general regional community
    radiation surgical surgery medical gynecologic pediatric breast lung urology hematology outpatient
    memorial medical center centre cancer hospital hospitals clinic clinics institute health system
    healthcare infirmary hospice oncology associates of county city state children's childrens womens
    women's veterans va and at in to from local main big new""".split()
)


def _place_has_proper_word(span: str) -> bool:
    """A facility match needs one distinctive word: "the Cancer Center" is not an identifier."""
    return any(w.lower() not in _GENERIC_PLACE_WORDS for w in span.split())


def _apply(text: str, spans: list[tuple[str, int, int]]) -> tuple[str, list[tuple[int, int, int, int]]]:
    """Text with placeholders, plus (orig_start, orig_end, out_start, out_end) of each placeholder."""
    parts: list[str] = []
    marks: list[tuple[int, int, int, int]] = []
    pos = out = 0
    for kind, s, e in spans:
        parts.append(text[pos:s])
        out += s - pos
        ph = f"[{kind}]"
        parts.append(ph)
        marks.append((s, e, out, out + len(ph)))
        out += len(ph)
        pos = e
    parts.append(text[pos:])
    return "".join(parts), marks


def _to_original(p: int, marks: list[tuple[int, int, int, int]], end: bool) -> int:
    shift = 0
    for s, e, os_, oe in marks:
        if p < os_:
            break
        if p < oe or (end and p == oe):
            return e if end else s  # inside a placeholder: the whole original span
        shift = e - oe
    return p + shift


def _merge(text: str, spans: Iterable[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for kind, s, e in sorted(spans, key=lambda x: (x[1], -x[2])):
        if out and (s < out[-1][2] or (out[-1][0] == kind and not text[out[-1][2] : s].strip())):
            k0, s0, e0 = out[-1]
            out[-1] = (k0, s0, max(e0, e))
        else:
            out.append((kind, s, e))
    return out


def scrub(text: str) -> ScrubResult:
    """Replace PHI in ``text`` with typed placeholders (``[NAME]``, ``[PHONE]``, ...)."""
    if not text:
        return ScrubResult(text="")
    spans = _find_spans(text)
    if not spans:
        return ScrubResult(text=text)
    out, marks = _apply(text, spans)
    # Overlapping candidates can hide a match that only shows once its neighbour is replaced; repeat until
    # a pass finds nothing new, so that scrub(scrub(x).text) == scrub(x).
    for _ in range(3):
        extra = _find_spans(out)
        if not extra:
            break
        mapped = [(k, _to_original(s, marks, False), _to_original(e, marks, True)) for k, s, e in extra]
        spans = _merge(text, [*spans, *mapped])
        out, marks = _apply(text, spans)
    values = tuple((kind, text[s:e]) for kind, s, e in spans)
    return ScrubResult(
        text=out,
        spans=tuple(PhiSpan(kind, s, e) for kind, s, e in spans),
        _values=values,
    )


def scrub_any_case(
    text: str, everyday: Collection[str] = frozenset(), known: Callable[[str], bool] | None = None
) -> ScrubResult:
    """The names :func:`scrub`'s name cues would find in ``text`` had every word been written with a capital
    ("my wife zofia kowalczyk", "thanks, zofia garcia", "zofia wisniewska here", "i'm zofia nowak"), as a
    result to check queries with (:meth:`ScrubResult.leaks`, :func:`assert_no_phi`), never text to show: its
    ``text`` is ``text`` unchanged. A name that would start with an ``everyday`` word (lower-case words) is
    none: "my doctor suggests risedronate" names no doctor "Suggests Risedronate". Unless that first word
    looks like a verb (a ``known`` vocabulary word, or "-ed": "mentioned"), the match's later words that are
    neither everyday nor ``known`` still are names ("my husband john wisniewski": "john" is everyday
    English, not a vocabulary word, and "wisniewski" is still a name). Places are left out: after "from" or
    "to" any capitalised unknown word is a place candidate, and a drug's name is one too ("switched from
    salmeterol")."""
    # ASCII only, so offsets stay those of ``text`` ("ß".upper() is two letters); the cues' own lower-case
    # words ("named", "here", "name is") stay as they are, or the cues would no longer match. A letter after
    # an apostrophe starts no word: "I'm" must stay "I'm" (not "I'M") for the "I'm <name>" cue.
    found = scrub(re.sub(r"(?<![\w'’])[a-z][a-z'’]*", _capitalise, text))
    spans: list[PhiSpan] = []
    values: list[tuple[str, str]] = []
    # A name the cue found is removed wherever it occurs, word by word: a false one's words too. Exact
    # values, so that a false match sharing a word with a true name cancels only its own copies.
    false: set[tuple[str, ...]] = set()
    for span, (kind, value) in zip(found.spans, found._values, strict=True):
        words_ = value.lower().split()
        if kind != "NAME" or words_[0] not in everyday:
            continue
        false.add(tuple(words_))
        # After a verb ("my doctor suggests/mentioned ...") the rest is the clinical question, not a name.
        verb = (known is not None and known(words_[0])) or (len(words_[0]) >= 5 and words_[0].endswith("ed"))
        for m in re.finditer(r"\S+", value):
            w = m.group(0).lower()
            if verb or m.start() == 0 or w in everyday or (known is not None and known(w)):
                false.add((w,))
            else:  # an unknown word after an everyday one: still a name
                spans.append(PhiSpan("NAME", span.start + m.start(), span.start + m.end()))
                values.append(("NAME", m.group(0)))
    for span, (kind, value) in zip(found.spans, found._values, strict=True):
        words_ = value.lower().split()
        if kind == "NAME" and words_[0] not in everyday and tuple(words_) not in false:
            spans.append(span)
            values.append((kind, value))
    return ScrubResult(text=text, spans=tuple(spans), _values=tuple(values))


def _capitalise(m: re.Match[str]) -> str:
    w = m.group(0)
    return w if w in _CUE_WORDS else w[0].upper() + w[1:]


# Words the name cues expect in lower case (``_NAME_CUES``); "i'm" is not one: the cue wants "I'm".
_CUE_WORDS = frozenset("named called here name is am this it's it’s full first last".split())


# --- query gate ------------------------------------------------------------------------------------------

_DIGITS = re.compile(r"\d[\d\s().+-]{4,}\d")
_DIGIT_KINDS = frozenset({"PHONE", "ID", "ADDRESS"})


def _needles(values: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Strings to remove from a query: each value, plus the distinctive words of names and places."""
    protected, _ = _known_words()
    out: dict[str, str] = {}
    for kind, value in values:
        v = " ".join(value.split())
        if not v:
            continue
        out.setdefault(v.lower(), kind)
        if kind in ("NAME", "PLACE"):
            for w in re.findall(r"[A-Za-z][\w'’-]+", v):
                lw = normalize_token(w)
                if len(lw) >= 3 and lw not in _GENERIC_PLACE_WORDS and normalize_token(lw) not in protected:
                    out.setdefault(lw, kind)
    return sorted(((k, n) for n, k in out.items()), key=lambda p: -len(p[1]))


_CLINICAL_NEXT_RE = "|".join(sorted(_CLINICAL_NEXT))


@functools.lru_cache(maxsize=512)
def _needle_re(needle: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in needle.split())
    if body.isalpha():
        # A single word: also its possessive/plural spellings ("Mary's" ~ "marys"), but not the eponym of
        # a clinical term ("Mrs. Lynch" must not take "Lynch syndrome" with it).
        body += rf"(?:['’]?s)?(?![\w])(?!['’]?s?\s+(?:{_CLINICAL_NEXT_RE})\b)"
    return re.compile(rf"(?<![\w]){body}(?![\w])", re.I)


def _digit_values(values: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Digits-only forms of phone/ID/ZIP values -> kind, so "617 555 0134" matches "(617) 555-0134"."""
    out: dict[str, str] = {}
    for kind, value in values:
        digits = re.sub(r"\D", "", value)
        if kind in _DIGIT_KINDS and len(digits) >= 5:
            out.setdefault(digits, kind)
    return out


def _leaked_values(query: str, values: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    vals = list(values)
    hits = [(kind, n) for kind, n in _needles(vals) if _needle_re(n).search(query)]
    digit_values = _digit_values(vals)
    for m in _DIGITS.finditer(query):
        d = re.sub(r"\D", "", m.group(0))
        if d in digit_values:
            hits.append((digit_values[d], m.group(0)))
    return hits


def _clean_text(text: str, values: list[tuple[str, str]]) -> tuple[str, set[str]]:
    """``text`` without the narrative's PHI values and without anything the patterns call PHI."""
    kinds: set[str] = set()
    for kind, needle in _needles(values):
        text, n = _needle_re(needle).subn(" ", text)
        if n:
            kinds.add(kind)
    digit_values = _digit_values(values)
    if digit_values:

        def _drop(m: re.Match[str]) -> str:
            kind = digit_values.get(re.sub(r"\D", "", m.group(0)))
            if kind is None:
                return m.group(0)
            kinds.add(kind)
            return " "

        text = _DIGITS.sub(_drop, text)
    spans = _find_spans(text)
    for kind, s, e in reversed(spans):
        kinds.add(kind)
        text = text[:s] + " " + text[e:]
    return " ".join(text.split()), kinds


def _render(node: Node, top: bool) -> str:
    if isinstance(node, Term):
        body = node.text + ("*" if node.wildcard else "")
        body = f'"{body}"' if node.quoted or node.field is not None else body
        return body + (f"[{node.tag}]" if node.tag else "")
    if isinstance(node, Range):
        return f"{node.lo}:{node.hi}[{node.field}]"
    if isinstance(node, Not):
        s = f"{_render(node.left, isinstance(node.left, Not))} NOT {_render(node.right, False)}"
    else:
        op = " AND " if isinstance(node, And) else " OR "
        s = op.join(_render(c, False) for c in node.children)
    return s if top else f"({s})"


def _prune(node: Node, values: list[tuple[str, str]], kinds: set[str]) -> Node | None:
    if isinstance(node, Range):  # date limits are years/dates the service chose, not narrative PHI
        return node
    if isinstance(node, Term):
        cleaned, k = _clean_text(node.text, values)
        kinds |= k
        if not any(ch.isalnum() for ch in cleaned):
            return None
        if node.wildcard and sum(ch.isalnum() for ch in cleaned.split()[-1]) < 4:
            return None
        return dataclasses.replace(node, text=cleaned)
    if isinstance(node, Not):
        left = _prune(node.left, values, kinds)
        right = _prune(node.right, values, kinds)
        if left is None:
            return None
        return left if right is None else Not(left, right)
    children = [c for c in (_prune(ch, values, kinds) for ch in node.children) if c is not None]
    if not children:
        return None
    if len(children) == 1:
        return children[0]
    return And(tuple(children)) if isinstance(node, And) else Or(tuple(children))


def _strip(query: str, found: ScrubResult | None) -> tuple[str, set[str]]:
    values = list(found._values) if found is not None else []
    kinds: set[str] = set()
    try:
        ast = parse_query(query)
    except QuerySyntaxError:
        cleaned, kinds = _clean_text(query, values)  # not a query we could send anyway; best effort
        return cleaned, kinds
    pruned = _prune(ast, values, kinds)
    return ("" if pruned is None else _render(pruned, True)), kinds


def strip_phi_from_query(query: str, found: ScrubResult | None = None) -> str:
    """``query`` minus the narrative's PHI and pattern PHI, still valid syntax ("" if nothing is left).

    Works on the parsed query: a term losing all its words is dropped, operators around it are repaired,
    date ranges are kept. An unparseable query is cleaned as plain text.
    """
    return _strip(query, found)[0]


def assert_no_phi(query: str, found: ScrubResult | None = None) -> str:
    """Return ``query`` unchanged if it carries no PHI, else raise :class:`PhiLeakError` (kinds only)."""
    _, kinds = _strip(query, found)
    if kinds:
        raise PhiLeakError(kinds)
    return query
