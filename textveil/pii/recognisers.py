"""The recognisers the entity stage adds to Presidio's English ones, and the rules that name them
for recall where Presidio's own are weak. Each is a general rule, written with Presidio's own means
(``PatternRecognizer`` patterns, context, checksums, ``PhoneRecognizer`` regions) and measured
alone in ``docs/entity-stage.md``:

- ``fac-places``: spaCy's FAC (buildings, roads, bridges, airports) read as LOCATION, as in
  Presidio's own ``default.yaml`` (its Python default mapping leaves FAC out);
- ``phone-regions``: phone numbers of Europe and the large English-speaking countries besides
  Presidio's eight default regions, checked by ``phonenumbers`` as valid there;
- ``phone-context``: digit groups shaped like a phone number where a phone word stands beside
  them ("Mobile:", "call me on", "... fax"), and any number written in international form (``+41``);
- ``card-schemes``: card numbers of 12 to 19 digits starting as the card schemes' numbers do
  (Presidio's pattern stops at 17 and misses Mastercard's 2-series), Luhn-checked as before;
- ``street-forms``: street addresses in more of the world's forms (the USPS street suffixes,
  "Rua ... 54", "ul. ... 84", "Lindenstraße 14", "Síp utca 16.", "P.O. Box 12"), and "Name 12"
  where an address word stands before it ("lives at", "Address:");
- ``address-blocks``: the city, region, postcode and country that follow a street address, on
  its line after commas or on the next lines;
- ``countries``: the names of the world's countries (English, from ``phonenumbers``' data);
- ``person-cues``: a capitalised name after words that introduce one: an honorific ("ms. Þór"),
  a greeting ("Hi Kat,"), a sign-off and a line break ("Best,\\nTom"), "my name is", a form's
  "Name:" or "From:";
- ``name-extension``: a person's name spaCy found in part ("Greta P Rozhkova" read as
  "Rozhkova") taken whole: the capitalised words, initials and name particles beside it;
  the other names of a list one of whose names is a person's ("Alain, Kimberly, Sarah and
  Alexis", spaCy finding only Sarah); and a first name or surname of a person found whole,
  wherever else it stands alone in the text ("Sophia A. Anderson ... Sophia");
- ``merge-overlaps``: spans that overlap are replaced as one (the best span's type), so that a
  person spaCy reads into a street name no longer leaves the house number behind.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from textveil.pii.found import Found

RULES = ("fac-places", "phone-regions", "phone-context", "card-schemes", "street-forms", "address-blocks", "countries",
         "person-cues", "name-extension", "merge-overlaps")
"""Every rule, in the order the docs' table adds them."""

PHONE_REGIONS = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR",  # Presidio's defaults
                 "AT", "BE", "BG", "CH", "CY", "CZ", "DK", "EE", "ES", "FI", "GR", "HR", "HU", "IE", "IS", "IT", "LI",
                 "LT", "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK", "AU", "NZ", "ZA")
"""Where a number written without its country code is tried: the European Economic Area,
Switzerland and the UK, the large English-speaking countries, and Presidio's defaults; not
Luxembourg, whose numbering plan makes a phone number of any 4 to 6 digits ("order 48213")."""

_FLAGS = re.DOTALL | re.MULTILINE  # case matters: a street word or a name is capitalised

# Words inside a name that stay in lower case ("Via delle Province", "Kamenice nad Lipou").
_PARTICLE = (r"(?:de|da|do|dos|das|del|della|delle|dei|di|du|des|la|le|les|el|lo|van|von|der|den|het|ter|y|e|i|nad|"
             r"pod|am|an|im|auf|zum|zur|sur|sous|en|al|bin|ibn|og|och|und|and|on|upon)")
_WORD = r"\p{Lu}[\p{L}\p{M}'’.-]*"
"""A capitalised word (a name, a town), with its accents, apostrophes, dots and hyphens."""
_NAME = rf"{_WORD}(?:[ \t]+(?:{_WORD}|{_PARTICLE})){{0,4}}"
_HOUSE = r"\d{1,6}[A-Za-z]?(?:[/-]\d{1,4}[A-Za-z]?)?"
"""A house number: 12, 12a, 12/3, 221B."""
_UNIT = r"(?:Apt|Apartment|Suite|Ste|Unit|Flat|Shop)\.?[ \t]*#?[ \t]*\d{1,5}[A-Za-z]?"

# USPS Publication 28's street suffixes (the common ones), British ones, and their abbreviations:
# the word after a street's name in English.
_SUFFIXES = ("Alley Allee Arcade Avenue Bend Boulevard Bridge Broadway Bypass Causeway Centre Center Chase Circle "
             "Circus Close Common Commons Concourse Corner Court Cove Crescent Crest Crossing Curve Dale Drive "
             "Embankment Esplanade Estate Expressway Extension Fields Freeway Garden Gardens Gate Gateway Glen Green "
             "Grove Harbor Harbour Heights Highway Hill Hills Hollow Junction Keys Knoll Landing Lane Loop Mall Manor "
             "Meadow Meadows Mews Mount Mountains Motorway Orchard Oval Parade Park Parkway Pass Passage Path Pike "
             "Place Plaza Point Ports Promenade Quay Ridge Rise Road Route Row Run Shore Shores Square Stravenue "
             "Stream Street Summit Terrace Trace Track Trail Turnpike Vale Valley View Villas Ville Vista Walk Way "
             "Wharf Wynd Yard").split()
_ABBREVIATIONS = "Ave Av Blvd Cir Cl Cres Ct Dr Hwy Ln Pde Pkwy Pl Rd Sq St Str Ter Tce".split()
_SUFFIX = (r"(?:" + "|".join(sorted({w for s in _SUFFIXES for w in (s, s.upper())}, key=len, reverse=True))
           + "|(?:" + "|".join(_ABBREVIATIONS) + r")\.?|str\.?)")

# Words before a street's name: in the Romance and Slavic languages, and French ones in lower case.
_PREFIX = (r"(?:Rua|Rúa|R\.|Rue|rue|Avenida|Avda\.|Av\.|Avenue|avenue|Calle|C/|Carrer|Carretera|Ctra\.|Camino|Paseo|"
           r"Plaza|Praça|Largo|Travessa|Estrada|Alameda|Rambla|Ronda|Via|Viale|Vicolo|Piazza|Piazzale|Corso|Strada|"
           r"Boulevard|boulevard|Bd|Chemin|chemin|Allée|allée|Impasse|impasse|Quai|quai|Place|place|Cours|cours|"
           r"Route|route|ul\.|Ul\.|ulica|Ulica|al\.|Al\.|Aleja|aleja|os\.|pl\.|Plac|plac|náměstí|nám\.|trg|Trg)")

# A street's name ending in a street word (German, Dutch, Nordic, Finnish), or followed by one as a
# word of its own (Hungarian, Nordic, Basque), before the house number. Not "ring" ("Spring 2024").
_COMPOUND = (r"(?:straße|strasse|str\.|gasse|weg|allee|platz|damm|ufer|steig|pfad|laan|straat|gracht|kade|"
             r"singel|dreef|plein|hof|vej|vejen|gade|stræde|allé|gata|gatan|gate|vägen|väg|veien|vegen|vei|torg|"
             r"gränd|stig|katu|kuja|tie|polku|kroken|bakken|braut|stræti|gyden|utca|útja)")
_STREET_WORD = (r"(?:utca|u\.|út|útja|tér|körút|fasor|köz|sor|sétány|gate|gata|gatan|vej|vei|veien|allé|Allé|Straße|"
                r"straße|Strasse|strasse|Str\.|str\.|Weg|weg|laan|straat|kalea|enparantza|bidea|etorbidea)")

_UNITS_AFTER = rf"(?:,?[ \t]+{_UNIT})*"
_STREETS = (
    ("number then street", rf"(?:{_UNIT},?[ \t]+)?\b{_HOUSE}(?:[ \t]+\d{{1,5}})?,?[ \t]+{_NAME}[ \t]+{_SUFFIX}"
                           rf"(?!\w){_UNITS_AFTER}"),
    ("number then street word", rf"\b{_HOUSE},?[ \t]+{_PREFIX}[ \t]+(?:{_NAME}|{_PARTICLE}[ \t]+{_NAME}|"
                                rf"\d{{1,3}}[ \t]+{_NAME})(?:[ \t]+{_HOUSE}\b\.?)?{_UNITS_AFTER}"),
    ("street word then number", rf"(?<![\w.])(?:{_HOUSE}[ \t]+)?{_PREFIX}[ \t]+(?:{_PARTICLE}[ \t]+)?"
                                rf"(?:{_NAME}|\d{{1,3}}[ \t]+{_NAME})[ \t,]+{_HOUSE}\b\.?{_UNITS_AFTER}"),
    ("compound street then number", rf"\b(?:{_HOUSE}[ \t]+)?(?:{_WORD}[ \t]+){{0,3}}?\p{{Lu}}[\p{{L}}\p{{M}}'’-]*?"
                                    rf"{_COMPOUND}[ \t]+{_HOUSE}\b\.?{_UNITS_AFTER}"),
    ("street then street word then number", rf"\b(?:{_HOUSE}[ \t]+)?{_NAME}[ \t]+{_STREET_WORD}[ \t]+{_HOUSE}"
                                            rf"\b\.?{_UNITS_AFTER}"),
    ("apartment or suite", rf"\b{_UNIT}\b"),
    ("post box", r"\b(?:P\.?[ \t]?O\.?[ \t]?Box|Post(?:[ \t]?[Bb]ox|fach)|PSC|CMR|Unit)[ \t]+\d{1,6}"
                 r"(?:,?[ \t]+Box[ \t]+\d{1,6})?\b"),
    ("military post", r"\b(?:APO|FPO|DPO)[ \t]+(?:AA|AE|AP)[ \t]+\d{5}\b"),
)
"""Street addresses by their form: each is a general rule, not a list of streets."""

_OLD_WORDS = (r"(?:Street|St|Road|Rd|Avenue|Ave|Drive|Dr|Lane|Ln|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace|"
              r"Crescent|Close|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Heights|Row|Walk|Hill|Gardens|Grove|"
              r"Trail|Alley|Mews|Stream|Ridge|Plaza|Via|Rua|Calle|Avenida|Rue|Viale|"
              r"Piazza|Ulica|Straße|Strasse|Gasse|Weg|Vej|Gatan|Gade|Katu|Kuja|Tie|Laan|Straat|Plein)")
_BASELINE_STREETS = (
    ("number then street", rf"\b\d{{1,6}}[A-Za-z]?(?:\s+\d{{1,5}})?(?:\s+[A-Z][\w'.-]*){{0,3}}\s+{_OLD_WORDS}\b"),
    ("street then number", rf"\b(?:{_OLD_WORDS}(?:\s+[A-Z][\w'.-]*){{1,3}}|[A-Z][\w'-]*(?:straße|strasse|gasse|"
                           r"weg|vej|gatan|gade|katu|kuja|tie|laan|straat|vägen|veien))\s+\d{1,5}[A-Za-z]?\b"),
    ("apartment or suite", r"\b(?:Apt|Apartment|Suite|Unit|Flat)\.?\s*#?\s*\d{1,5}[A-Za-z]?\b"),
)
"""The street patterns the stage had before these rules (what ``street-forms`` replaces)."""

# After a street address: a town, a region, a postcode, a country, after a comma or on the next
# line (one blank line may stand between), each segment wholly made of such words.
_POSTCODE = r"(?:\d{3,6}(?:-\d{3,4})?|(?=[\p{Lu}]*\d)[\p{Lu}\d]{2,4})"
_PLACE_WORD = rf"(?:{_WORD}|{_POSTCODE}|{_PARTICLE})"
_PLACE = rf"(?=[^\n,]*\p{{L}})(?:{_PLACE_WORD}|\d{{1,5}})(?:[ \t]+(?:{_PLACE_WORD}|\d{{1,5}})){{0,5}}"
_BLOCK_TAIL = rf"(?:(?:,[ \t]*|[ \t]*\n[ \t]*(?:\n[ \t]*)?){_PLACE}(?=[ \t]*(?:[,\n]|$|\.(?:\s|$)))){{0,4}}"

_ADDRESS_CONTEXT = ["address", "live", "located", "reside", "corner", "deliver", "send", "move", "street", "road"]
"""Words (lemmas) before a bare "Name 12" that make it an address."""


def _streets(forms: bool, blocks: bool) -> Any:
    """The street-address recogniser: the stage's former patterns, or the wider ``street-forms``;
    with ``blocks``, each followed by the rest of its address block."""
    from presidio_analyzer import Pattern, PatternRecognizer

    tail = _BLOCK_TAIL if blocks else ""
    # a house number with a street word is surer than spaCy's reading of the words in it (0.85):
    # "79 Wolfe Street" is a street, not the person "Wolfe Street"
    patterns = ([Pattern(name, f"(?:{regex}){tail}", 0.9) for name, regex in _STREETS] if forms
                else [Pattern(name, f"(?:{regex}){tail}", 0.5) for name, regex in _BASELINE_STREETS])
    if forms:
        # "Stubben 149": a name and a number, an address only where an address word is near
        patterns.append(Pattern("name then number", rf"\b(?:{_HOUSE}[ \t]+)?{_NAME}[ \t]+{_HOUSE}\b{tail}", 0.1))
    kind = _classes().LineSplit if blocks else PatternRecognizer
    return kind(supported_entity="LOCATION", name="StreetAddressRecognizer", patterns=patterns,
                context=_ADDRESS_CONTEXT if forms else ["address", "live", "lives", "street", "road"],
                global_regex_flags=_FLAGS)


# A phone number's shape: digit groups (some in brackets) split by spaces, dots, dashes or a slash,
# after an optional +country code or 00, with an optional extension; not the start of a time.
_PHONE_SHAPE = (r"(?<![\w+/.,-])(?:(?:\+|\b00)\d{1,3}[ \t.-]?(?:\(0\)[ \t]?)?)?(?:\(\d{1,5}\)[ \t.-]?)?\d{1,5}"
                r"(?:(?:[ \t]|[ \t]?[./-][ \t]?)\(?\d{1,5}\)?){0,6}(?:[ \t]?(?:x|ext\.?|extension)[ \t]?\d{1,5})?"
                r"(?![\w.,:]?\d)")
_INTERNATIONAL = (r"(?<![\w+])\+\d{1,3}[ \t.-]?(?:\(0\)[ \t]?)?\(?\d{1,5}\)?"
                  r"(?:(?:[ \t]|[ \t]?[./-][ \t]?)\d{1,5}){0,6}(?:[ \t]?(?:x|ext\.?|extension)[ \t]?\d{1,5})?"
                  r"(?![\w.,:]?\d)")
_PHONE_BEFORE = re.compile(r"(?i)\b(?:phone|telephone|tel|mobile|mob|cell|cellphone|fax|landline|desk|office|"
                           r"whats ?app|sms|text|call|ring|dial|reach|contact|number(?![ \t]+of)|answering|messages?|"
                           r"hotline|helpline|ph)\b\W{0,3}(?:\w+\W{1,3}){0,3}$")
_PHONE_AFTER = re.compile(r"(?i)^[ \t]*[-–(]?[ \t]*(?:office|mobile|cell|fax|home|work|tel|phone|landline|desk)\b")
_DATE_SHAPE = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$")
_YEARS = re.compile(r"^(?:19|20)\d\d[ \t]*[-–/][ \t]*(?:(?:19|20)\d\d|\d\d)$")


def _not_a_phone(text: str) -> bool:
    """Whether a number is too short or long for a phone number (7 to 15 digits), or is a date
    or a span of years ("2019-2023"), which several numbering plans accept as valid.

    >>> [_not_a_phone(t) for t in ("2019-2023", "14.02.1958", "4417", "020 7946 0321")]
    [True, True, True, False]
    """
    digits = sum(c.isdigit() for c in text)
    return not 7 <= digits <= 15 or bool(_DATE_SHAPE.match(text) or _YEARS.match(text))


@functools.lru_cache(maxsize=1)
def _classes() -> Any:
    """The recogniser classes, made on first use: Presidio is imported only where the stage runs."""
    from types import SimpleNamespace

    from presidio_analyzer import Pattern, PatternRecognizer, RecognizerResult
    from presidio_analyzer.predefined_recognizers import CreditCardRecognizer, PhoneRecognizer

    class RegionalPhoneRecognizer(PhoneRecognizer):
        """Presidio's phone recogniser over more regions, less what no region's number is."""

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            found = super().analyze(text, entities, nlp_artifacts)
            return [result for result in found if not _not_a_phone(text[result.start:result.end])]

    class LineSplitRecognizer(PatternRecognizer):
        """A pattern recogniser whose spans may run over lines (an address block), reported one
        line at a time: the stage cuts every span at its first line break."""

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None,
                    regex_flags: int | None = None) -> list[Any]:
            results = []
            for result in super().analyze(text, entities, nlp_artifacts, regex_flags):
                for line in re.finditer(r"[^\n]*\S[^\n]*", text[result.start:result.end]):
                    start = result.start + line.start() + len(line.group()) - len(line.group().lstrip())
                    end = result.start + line.start() + len(line.group().rstrip())
                    results.append(RecognizerResult(result.entity_type, start, end, result.score,
                                                    result.analysis_explanation, dict(result.recognition_metadata)))
            return results

    class ContextPhoneRecognizer(PatternRecognizer):
        """Digit groups shaped like a phone number (7 to 15 digits) where a phone word stands
        within three words before them or right after them, and numbers in international form
        (+ and a country code) anywhere: what ``phonenumbers`` calls invalid for every region it
        was given is still somebody's number."""

        def __init__(self) -> None:
            super().__init__(supported_entity="PHONE_NUMBER", name="ContextPhoneRecognizer",
                             patterns=[Pattern("digit groups", _PHONE_SHAPE, 0.1),
                                       Pattern("international form", _INTERNATIONAL, 0.4)],
                             global_regex_flags=_FLAGS)

        def invalidate_result(self, pattern_text: str) -> bool:
            return _not_a_phone(pattern_text)

        def enhance_using_context(self, text: str, raw_recognizer_results: list[Any],
                                  other_raw_recognizer_results: list[Any], nlp_artifacts: Any,
                                  context: list[str] | None = None) -> list[Any]:
            # Presidio's lemma context skips stop words ("call") and counts from the number's
            # first token, so this recogniser reads its own few words either side.
            for result in raw_recognizer_results:
                before = text[max(0, result.start - 40):result.start]
                if _PHONE_BEFORE.search(before) or _PHONE_AFTER.match(text[result.end:result.end + 20]):
                    result.score = max(result.score, 0.5)
                    result.recognition_metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True
            return raw_recognizer_results

    class CardNumberRecognizer(CreditCardRecognizer):
        """Presidio's card recogniser (its context words, its Luhn check) over the card schemes'
        whole range: 12 (Maestro) to 19 digits (Visa, Discover, UnionPay, JCB), starting 1 to 6
        (Mastercard's 2221-2720 included), in groups split by spaces or dashes."""

        def __init__(self) -> None:
            super().__init__(patterns=[Pattern("card schemes, 12 to 19 digits",
                                               r"\b[1-6]\d{3}(?:[ -]?\d{2,7}){2,5}\b", 0.3)],
                             name="CardNumberRecognizer")

        def validate_result(self, pattern_text: str) -> bool:
            digits = "".join(c for c in pattern_text if c.isdigit())
            return 12 <= len(digits) <= 19 and bool(super().validate_result(pattern_text))

    class PersonCueRecognizer(PatternRecognizer):
        """A name after a cue, unless its first word is a stop word ("Dear All", "I am The")."""

        def invalidate_result(self, pattern_text: str) -> bool:
            return pattern_text.split()[0].casefold().rstrip(".") in _stop_words()

    return SimpleNamespace(LineSplit=LineSplitRecognizer, ContextPhone=ContextPhoneRecognizer,
                           CardNumber=CardNumberRecognizer, RegionalPhone=RegionalPhoneRecognizer,
                           PersonCue=PersonCueRecognizer)


# A person's name: proper-case words ("O'Neill", "Jean-Luc"), initials and particles between them.
_NAME_WORD = r"\p{Lu}(?:[\p{Ll}\p{M}]|['’-]\p{L})[\p{L}\p{M}'’-]*"
_INITIAL = r"\p{Lu}\.?"
_NAME_PARTICLE = r"(?:van|von|de|da|do|dos|das|del|della|di|du|der|den|ter|ten|le|la|bin|ibn|al|zu)"
_PERSON = rf"{_NAME_WORD}(?:[ \t]+(?:{_NAME_WORD}|{_INITIAL}(?=[ \t])|{_NAME_PARTICLE}(?=[ \t]+\p{{Lu}}))){{0,3}}"
_CUES = (
    ("honorific", r"\b(?i:mr|mrs|ms|miss|mx|dr|prof|professor)\.?[ \t]+"),
    ("greeting", r"\b(?i:dear|hi|hello|hey|thanks|thank you|good morning|good afternoon|good evening)[ \t]+"),
    ("sign-off", r"\b(?i:regards|best|cheers|thanks|many thanks|sincerely|yours|love|best wishes|all the best),?"
                 r"[ \t]*(?:\n[ \t]*)?"),
    ("introduction", r"\b(?i:my name is|name is|call me|this is|i am|i'm)[ \t]+"),
    ("form field", r"(?:^|\n|[.?!][ \t])[ \t]*(?i:name|full name|first name|last name|surname|given name|from|to|"
                   r"cc|attn|attention|signed|author|by|directed by|contact|patient|user):[ \t]*"),
)
_NOT_NAMES = frozenset({"sir", "madam", "team", "customer", "colleagues", "friends", "folks", "guys", "everybody"})
"""Words a greeting is followed by that name nobody (spaCy's stop words aside: "all", "everyone")."""
_CUE_WORDS = frozenset({"hi", "hello", "hey", "dear", "thanks", "thank", "cheers", "regards", "best", "sincerely",
                        "yours", "love", "greetings", "welcome", "congrats", "congratulations", "mr", "mrs", "ms",
                        "miss", "mx", "dr", "prof", "professor"})
"""Words a name is not taken over: a greeting stays, and an honorific stays as spaCy leaves it."""


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS) | _NOT_NAMES


def _person_cues() -> Any:
    from presidio_analyzer import Pattern

    # the cue stands in a lookbehind: it is not replaced, only the name after it
    patterns = [Pattern(name, rf"(?<={cue}){_PERSON}(?![\w'’-])", 0.6) for name, cue in _CUES]
    # the line above a street address (after a blank line at most) that is only a name: the addressee
    streets = "|".join(f"(?:{regex})" for name, regex in _STREETS if name != "apartment or suite")
    above = rf"(?=[ \t]*\n(?:[ \t]*\n)?[ \t]*(?:{streets}))"
    patterns.append(Pattern("addressee", rf"(?<=(?:^|\n)[ \t]*){_PERSON}{above}", 0.6))
    return _classes().PersonCue(supported_entity="PERSON", name="PersonCueRecognizer", patterns=patterns,
                                global_regex_flags=_FLAGS)


@functools.lru_cache(maxsize=1)
def _name_edges() -> tuple[Any, Any, Any]:
    """A name's word just before a span (searched up to the span), just after it (matched), and
    any name word."""
    import regex

    left = regex.compile(rf"(?<![\w'’.-])(?:{_NAME_WORD}|{_INITIAL}|{_NAME_PARTICLE})[ \t]$")
    right = regex.compile(rf"[ \t](?:{_NAME_PARTICLE}[ \t]+)*(?:{_NAME_WORD}|{_INITIAL}(?=[ \t]\p{{Lu}}))(?![\w'’-])")
    return left, right, regex.compile(rf"(?<![\w'’-]){_NAME_WORD}")


def extended_names(text: str, results: Sequence[Any], words: int = 2) -> list[Any]:
    """For each PERSON result that holds one name word (initials and particles aside: "Rozhkova",
    "van Lint"), the span of its name taken whole on its line: up to ``words`` capitalised words,
    initials and particles either side, not a stop word nor a greeting ("Then Ann", "Hi Ann"
    stay). A name spaCy found whole ("Vaclav Klaus") is left as it is: the capitalised words
    before it are more often a title ("Prime Minister"). Returned as new spans of the same type
    and score, for :func:`resolve` to merge.

    >>> from textveil.pii.found import Found
    >>> text = "Greta P Rozhkova, then Sietske van der Wardt"
    >>> [text[s.start:s.end] for s in extended_names(text, [Found("PERSON", 8, 16, 0.85),
    ...                                                     Found("PERSON", 23, 34, 0.85)])]
    ['Greta P Rozhkova', 'Sietske van der Wardt']
    """
    left, right, name_word = _name_edges()
    stop = _stop_words()
    extended = []
    for result in results:
        if result.entity_type != "PERSON" or len(name_word.findall(text, result.start, result.end)) != 1:
            continue
        start, end = result.start, result.end
        for _ in range(words):
            found = left.search(text, max(0, start - 40), start)
            if not found or found.group().strip().casefold().rstrip(".") in stop | _CUE_WORDS:
                break
            start = found.start()
        for _ in range(words):
            found = right.match(text, end)
            if not found or found.group().split()[-1].casefold() in stop:
                break
            end = found.end()
        if (start, end) != (result.start, result.end):
            extended.append(Found(result.entity_type, start, end, result.score))
    return extended


def name_parts(name: str) -> list[str]:
    """The words of a person's name of two or more that stand for the person alone elsewhere in a
    text ("Lee" of "Ann Lee"): proper-case, three letters or more, not a stop word or an honorific.

    >>> name_parts("Dr. Sophia A. Anderson"), name_parts("Anderson")
    (['Sophia', 'Anderson'], [])
    """
    _, _, name_word = _name_edges()
    words = [w for w in name_word.findall(name) if len(w) >= 3 and w.casefold() not in _stop_words() | _CUE_WORDS]
    return words if len(words) >= 2 else []


@functools.lru_cache(maxsize=1)
def _name_list() -> tuple[Any, Any]:
    import regex

    item = rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?"
    return (regex.compile(rf"(?<![\w'’-]){item}(?:,[ \t]+{item})*,?[ \t]+(?:and|or|&)[ \t]+{item}(?![\w'’-])"),
            regex.compile(item))


def listed_names(text: str, results: Sequence[Any]) -> list[Any]:
    """The names of a list ("A, B and C", on one line) one of whose names is a PERSON result,
    that no result covers yet, as PERSON spans: the items of a list are of one kind.

    >>> from textveil.pii.found import Found
    >>> text = "They had 3: Alain, Sarah and Alexis. Paris, Rome and Oslo."
    >>> [text[s.start:s.end] for s in listed_names(text, [Found("PERSON", 19, 24, 0.85)])]
    ['Alain', 'Alexis']
    """
    people = [r for r in results if r.entity_type == "PERSON"]
    if not people:
        return []
    lists, items = _name_list()
    stop = _stop_words() | _CUE_WORDS
    listed = []
    for found in lists.finditer(text):
        spans = [(found.start() + m.start(), found.start() + m.end()) for m in items.finditer(found.group())]
        person = next((r for r in people if any(r.start <= a and b <= r.end for a, b in spans)), None)
        if person is None:
            continue
        for a, b in spans:
            covered = any(r.start < b and a < r.end for r in results)
            if not covered and not any(word.casefold().rstrip(".") in stop for word in text[a:b].split()):
                listed.append(Found("PERSON", a, b, person.score))
    return listed


@functools.lru_cache(maxsize=1)
def country_names() -> tuple[str, ...]:
    """The English names of the world's countries and territories, as ``phonenumbers`` (which
    Presidio needs anyway) ships them, longest first.

    >>> "United Kingdom" in country_names() and "Brazil" in country_names()
    True
    """
    from phonenumbers import SUPPORTED_REGIONS
    from phonenumbers.geocoder import _region_display_name

    names = {_region_display_name(region, "en") for region in SUPPORTED_REGIONS}
    return tuple(sorted((n for n in names if n and len(n) > 3), key=lambda n: (-len(n), n)))


def recognisers(rules: Sequence[str]) -> tuple[list[Any], list[str]]:
    """The recognisers ``rules`` add, and the names of Presidio's own that they replace."""
    from presidio_analyzer import PatternRecognizer

    added: list[Any] = [_streets("street-forms" in rules, "address-blocks" in rules)]
    replaced = []
    if "phone-regions" in rules:
        added.append(_classes().RegionalPhone(supported_regions=PHONE_REGIONS, name="RegionalPhoneRecognizer"))
        replaced.append("PhoneRecognizer")
    if "phone-context" in rules:
        added.append(_classes().ContextPhone())
    if "card-schemes" in rules:
        added.append(_classes().CardNumber())
        replaced.append("CreditCardRecognizer")
    if "person-cues" in rules:
        added.append(_person_cues())
    if "countries" in rules:
        names = country_names()
        added.append(PatternRecognizer(supported_entity="LOCATION", name="CountryRecognizer",
                                       deny_list=list(names) + [n.upper() for n in names], deny_list_score=0.5,
                                       global_regex_flags=_FLAGS))
    return added, replaced
