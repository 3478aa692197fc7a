"""The service's published contract (``/openapi.json``): what each route takes and answers.

The document is built per app, from its settings and from what it offers, so that a request the
schema calls valid is one the service accepts, and every answer it can give is declared with
its body:

- every error is ``{"detail": "one line"}`` (:class:`ErrorBody`), declared for each status code
  a route can return with these settings (FastAPI's default 422 body, a list of objects, is not
  what this service sends);
- the bearer token appears (a security scheme, and ``security`` on each ``/v1`` route) only when
  the service was given one;
- the requests state what the service checks: the limits of its settings (texts per request,
  characters per text), the ledger's rules (``subject`` or ``subjects`` with a ledger, none of
  them without), the mechanisms it releases with, each with its own parameters (from the
  registry's declarations, which are what the mechanism checks), the entity types its stage
  knows, the smallest epsilon emp decodes with on its embeddings, the encodings of an upload.

What JSON Schema cannot say is named in the 400 of the route that refuses it
(:data:`UNDECLARED_RULES`): the number of ``subjects`` against the number of texts, the unit a
subject already spent in, and what is inside an uploaded file. Nothing here decides anything
about privacy: it describes what :mod:`textveil.service.app` and the library check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from textveil.privacy.ledger import EVERY

if TYPE_CHECKING:
    from fastapi import FastAPI

    from textveil.registry import Parameter
    from textveil.service.settings import ServiceSettings
    from textveil.service.release_service import ReleaseService

NON_BLANK = r"[^\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
"""A character ``str.strip()`` keeps: a string that matches it somewhere is not blank (Python's
whitespace spelled out: ``\\s`` means other characters in ECMA-262 regular expressions)."""
SPACES = r"[\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
"""The characters ``str.strip()`` removes."""
WORD_CHARACTER = r"[\p{L}\p{N}]"
"""A letter or a digit: a string that matches it holds a word (:mod:`textveil.text.tokenize`)."""
SECURITY_SCHEME = "bearer"
MAX_REQUEST_ID = 200
ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "ascii", "latin-1",
             "iso-8859-15", "cp1250", "cp1251", "cp1252", "mac-roman", "koi8-r", "shift_jis", "euc-jp", "euc-kr",
             "gb18030", "big5")
"""The encodings an uploaded file may be in (the form field ``encoding``)."""

UNDECLARED_RULES = {
    "subjects": "'subjects' holds one subject per text (as many as 'texts')",
    "unit": "a subject spends in one unit: a release whose mechanism states its epsilon in another unit than the "
            "subject's earlier spends (a metric epsilon after a DP one, per word after per token) is refused",
    "file": "the file must be text in 'encoding' holding at least one non-blank text (.jsonl and .csv: records "
            "with the field 'text_field'; each .jsonl line one JSON object, each .csv record as many fields as the "
            "header and every quote closed)",
}
"""What the schema cannot state (JSON Schema cannot compare two arrays' lengths, see a ledger's
past spends or read a file): each is named in the 400 of the routes that refuse it."""


class ErrorBody(BaseModel):
    """Every error the service answers: one line saying what is wrong and how to fix it."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"detail": "texts[0] is empty: give text with at least one non-space character"}]})

    detail: str = Field(..., description="What went wrong and the fix, in one line (it never quotes a text).")


# -- the answers ----------------------------------------------------------------------------------
# What a route answers with 200, for the schema only (the routes return their JSON as built).
# Records that come from the library keep their other fields (additional properties): a
# number that is not finite is null in them (JSON has no NaN).


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class Change(_Record):
    """A token the mechanism changed (its index in the text after the entity stage)."""

    token: int
    from_: str = Field(..., alias="from")
    to: str


class ReplacedEntity(_Record):
    """What the entity stage replaced, by offsets in the original text (never its characters)."""

    type: str
    start: int
    end: int
    replacement: str
    score: Optional[float]


class GuaranteeRecord(_Record):
    """The release's Guarantee (``textveil.privacy.guarantee``); ``statement`` says it in words."""

    kind: str
    statement: Optional[str] = None
    epsilon: Optional[float] = None


class ReleaseRecord(_Record):
    text: str
    changed: list[Change]
    words_unchanged_by_noise: int
    entities: list[ReplacedEntity]
    guarantee: GuaranteeRecord


class EntityStageSummary(_Record):
    options: dict[str, Any] = Field(..., description="The stage's options (allow and deny lists as digests).")
    counts: dict[str, int]
    summary: str


class SummaryLine(_Record):
    text: str
    warning: bool = Field(..., description="Whether the page shows the line as a warning.")


class Spent(_Record):
    unit: Optional[str]
    subjects: dict[str, Optional[float]]


class Released(_Record):
    """Releases, one per text, with their guarantees in words and, with a ledger, the spend."""

    mechanism: str
    parameters: dict[str, Any]
    releases: list[ReleaseRecord]
    guarantees: list[str]
    guarantee_kind: str
    entity_stage: EntityStageSummary
    then: list[str] = Field(..., description="What rewrote each release after the mechanism (polish), as asked.")
    summary: dict[str, Any] = Field(..., description="The summary of the releases (textveil.release.summary): the "
                                    "guarantee in general words and every total, as the command line reports it.")
    summary_lines: list[SummaryLine] = Field(..., description="The summary in words, a line each.")
    budget: Optional[dict[str, Optional[float]]] = Field(..., description="With a ledger: each subject's remaining "
                                                        "budget (null: no cap).")
    spent: Optional[Spent]
    dataset: Optional[str]
    replayed: bool
    request_id: Optional[str]


class ReleasedUpload(Released):
    inputs: list[str] = Field(..., description="The texts read from the file, in order.")


class Curve(_Record):
    field: str
    axis: str
    style: str
    label: str
    reading: str


class Slider(_Record):
    min: float
    max: float


class Calibration(_Record):
    """A mechanism's curve over its grid: per value, what it does to the words."""

    mechanism: str
    parameter: str
    embeddings: str
    tokens_from: str
    points: list[dict[str, Any]] = Field(..., description="One per value of the grid, the curves' fields among them.")
    curves: list[Curve]
    slider: Slider


class ServiceOffer(_Record):
    releases: bool
    reason: Optional[str]


class MechanismEntry(_Record):
    name: str
    guarantee: str
    guarantee_words: str
    description: str
    parameters: list[dict[str, Any]]
    swept: Optional[str]
    grid: list[float]
    calibration: bool
    calibration_note: Optional[str]
    service: ServiceOffer


class Mechanisms(_Record):
    mechanisms: list[MechanismEntry]


class Budget(_Record):
    subject: str
    dataset: str
    spent: Optional[float]
    cap: Optional[float] = Field(..., description="null: no cap")
    remaining: Optional[float] = Field(..., description="null: no cap")


class EntityStageHealth(_Record):
    available: bool
    reason: Optional[str]
    operators: list[str]
    default: str


class PolishHealth(_Record):
    available: bool = Field(..., description="Whether a request may ask for 'then': ['polish'].")
    reason: Optional[str]


class Limits(_Record):
    max_body_bytes: int
    max_text_chars: int
    max_texts: int


class Health(_Record):
    status: str
    version: str
    ledger: bool
    token_required: bool
    language_models_ready: list[str]
    """The language models loaded and warmed at start-up: a first request with one is as fast as the next."""
    entity_stage: EntityStageHealth
    polish: PolishHealth
    limits: Limits


def answer(model: type[BaseModel], description: str) -> dict[int | str, dict[str, Any]]:
    """A route's 200, declared."""
    return {200: {"model": model, "description": description}}


def error(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A declared error answer: an :class:`ErrorBody`, with ``description`` and ``headers``."""
    answer: dict[str, Any] = {"model": ErrorBody, "description": description}
    if headers:
        answer["headers"] = headers
    return answer


def route_errors(settings: ServiceSettings, *, body: bool = False, heavy: bool = False, spends: bool = False,
                 refuses: str | None = None, undeclared: Iterable[str] = (),
                 missing: str | None = None) -> dict[int | str, dict[str, Any]]:
    """The error answers a ``/v1`` route declares with ``settings``.

    ``body``: it reads a body (400 for JSON that is not UTF-8, 413 over the size limit, 422 off
    the schema); ``heavy``: it runs under the concurrency and time limits (503, 504);
    ``spends``: it spends from the ledger (409, when there is one); ``refuses``: what else it
    refuses with 400 (checks that need the library: a mechanism's own refusal) and
    ``undeclared``: the keys of :data:`UNDECLARED_RULES` it refuses too; ``missing``: why it
    answers 404."""
    answers: dict[int | str, dict[str, Any]] = {}
    reasons = [refuses] if refuses else []
    if body:
        reasons.append("a JSON body that is not UTF-8")
    rules = [UNDECLARED_RULES[key] for key in undeclared]
    if rules:
        reasons.append("what the schema cannot state: " + "; ".join(rules))
    if reasons:
        answers[400] = error("Bad input (" + "; ".join(reasons) + "): one line in 'detail' names it and the fix; "
                             "nothing released or spent")
    if settings.api_token is not None:
        answers[401] = error("Missing or wrong API token: send 'Authorization: Bearer TOKEN'",
                             {"WWW-Authenticate": {"description": 'Bearer realm="textveil"',
                                                   "schema": {"type": "string"}}})
    if missing:
        answers[404] = error(missing)
    if spends and settings.ledger is not None:
        answers[409] = error("A subject's budget would pass its cap, or the request_id was used for another "
                             "request: nothing released, nothing spent")
    if body:
        answers[413] = error(f"The body is over {settings.max_body_bytes:,} bytes" +
                             ("; or the file holds more texts, or longer ones, than this service takes"
                              if "file" in undeclared else ""))
        answers[422] = error("The request does not fit the schema (a missing or unknown field, a wrong type, a value "
                             "out of range, too many texts or too long a text): one line in 'detail'")
    if heavy:
        answers[503] = error("Busy: every release slot is taken; retry after 'Retry-After' seconds",
                             {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}})
        answers[504] = error(f"Ran past the time limit ({settings.request_timeout:g} s): see 'detail'")
    return answers


# -- the request schemas, per app --------------------------------------------------------------


def parameter_schema(parameter: Parameter, *, choices: Iterable[Any] | None = None,
                     minimum: float | None = None) -> dict[str, Any]:
    """The JSON Schema of the values ``parameter.check`` accepts: its choices (``choices``: the
    narrower set a service offers), else its type with its exclusive minimum (``minimum``: an
    inclusive one instead); optional without a default: null too.

    >>> from textveil.registry import Parameter
    >>> parameter_schema(Parameter("epsilon", float, "privacy", minimum=0.0))
    {'type': 'number', 'exclusiveMinimum': 0.0, 'description': 'privacy'}
    >>> parameter_schema(Parameter("seed", int, "seed", None, minimum=-1))["anyOf"]
    [{'type': 'integer', 'minimum': 0}, {'type': 'null'}]
    """
    schema: dict[str, Any] = {}
    values = list(choices) if choices is not None else list(parameter.choices)
    if values:
        schema["enum"] = values
    elif parameter.type is bool:
        schema["type"] = "boolean"
    elif parameter.type is int:
        schema["type"] = "integer"
        if parameter.minimum is not None:
            schema["minimum"] = math.floor(parameter.minimum) + 1
    elif parameter.type is float:
        schema["type"] = "number"
        if parameter.minimum is not None:
            schema["exclusiveMinimum"] = parameter.minimum
    else:
        schema["type"] = "string"
    if minimum is not None:
        schema.pop("exclusiveMinimum", None)
        schema["minimum"] = minimum
    if not parameter.required and parameter.default is None:
        schema = {"anyOf": [schema, {"type": "null"}]}
    elif not parameter.required:
        schema["default"] = parameter.default
    return {**schema, "description": parameter.help}


def list_pattern(names: Iterable[str]) -> str:
    """A comma-separated list of some of ``names`` (at least one; blanks around them and empty
    items ignored), as a mechanism's list parameter reads it (redact's ``features``).

    >>> import re
    >>> pattern = re.compile(list_pattern(["urls", "emails"]))
    >>> [bool(pattern.search(s)) for s in ("urls", " ,emails, urls,", "", ",", "urls,phones")]
    [True, True, False, False, False]
    """
    blank = SPACES + "*"
    one = "(?:" + "|".join(names) + ")"
    return f"^(?:{blank},)*{blank}{one}{blank}(?:,{blank}(?:{one}{blank})?)*$"


def _redaction_features() -> Iterable[str]:
    from textveil.mechanisms.redaction import FEATURES

    return FEATURES


LIST_PARAMETERS: dict[tuple[str, str], Callable[[], Iterable[str]]] = {("redact", "features"): _redaction_features}
"""Parameters the registry declares as a string that the mechanism reads as a list of names,
(mechanism, parameter) -> the names it takes: the registry has no word for such a list yet."""


def name_schema(what: str) -> dict[str, Any]:
    """A subject or a dataset: a non-blank name other than ``*`` (the ledger's "every")."""
    return {"type": "string", "pattern": NON_BLANK, "not": {"const": EVERY},
            "description": f"The {what}: a non-blank name other than '{EVERY}'."}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _component(mechanism: str, suffix: str) -> str:
    return "".join(part.capitalize() for part in mechanism.split("_")) + suffix


def one_of(branches: list[dict[str, Any]]) -> dict[str, Any]:
    """``oneOf`` over ``branches``; none: a schema nothing is valid against."""
    return {"oneOf": branches} if branches else {"not": {}}


class Offer:
    """What one app offers, read from its release service once (when the schema is first asked for): the
    mechanisms it releases with and their parameters, its language models, the entity types."""

    def __init__(self, settings: ServiceSettings, service: ReleaseService) -> None:
        from textveil.mechanisms.registry import MECHANISMS
        from textveil.service.release_service import entity_refusal

        self.settings = settings
        self.entries = {entry.name: entry for entry in MECHANISMS.entries() if service.refusal(entry.name) is None}
        self.languages = list(service.offered_language_models())
        self.polish_refusal = service.polish_refusal()
        self.stage_refusal = entity_refusal()
        self.entity_types = service.entity_types()
        self.smallest = {name: service.smallest_epsilon(name) for name in self.entries}

    def then(self, description: str) -> dict[str, Any]:
        """The schema of a request's ``then``: polish, where this service can (it runs a language
        model), else nothing."""
        if self.polish_refusal is not None:
            return {"type": "array", "maxItems": 0, "description": f"{description} Not here: {self.polish_refusal}."}
        return {"type": "array", "items": {"enum": ["polish"]}, "description": description}

    def released(self) -> list[str]:
        """The mechanisms a request may release with: with a ledger, those it can count (their
        Guarantee states an epsilon)."""
        if self.settings.ledger is None:
            return list(self.entries)
        return [name for name, entry in self.entries.items() if entry.guarantee != "none"]

    def calibrated(self) -> list[str]:
        """The mechanisms with a parameter to calibrate (their curve's axis)."""
        return [name for name, entry in self.entries.items() if entry.swept is not None]

    def parameter(self, mechanism: str, parameter: Parameter) -> dict[str, Any]:
        choices = self.languages if parameter.name == "model" and self.languages else None
        minimum = self.smallest.get(mechanism) if parameter.name == "epsilon" else None
        schema = parameter_schema(parameter, choices=choices, minimum=minimum)
        names = LIST_PARAMETERS.get((mechanism, parameter.name))
        if names is not None:
            schema["pattern"] = list_pattern(names())
        return schema

    def parameters(self, mechanism: str, *, calibration: bool = False) -> dict[str, Any]:
        """The schema of ``parameters`` for ``mechanism``; ``calibration``: those a curve takes
        (not the swept one, whose values are the grid; emp's word-by-word curve: the decoder)."""
        entry = self.entries[mechanism]
        skipped = {"seed"} | ({entry.swept.name} if calibration and entry.swept else set())
        taken = [p for p in entry.parameters if p.name not in skipped]
        if calibration and mechanism == "emp":
            taken = [p for p in taken if p.name == "decode"]
        schema: dict[str, Any] = {
            "type": "object", "additionalProperties": False,
            "properties": {p.name: self.parameter(mechanism, p) for p in taken},
            "description": f"{mechanism}'s parameters" + (" but the swept one (its values are 'grid')"
                                                          if calibration else "")
            + " (GET /v1/mechanisms describes them; the seed is the request's own 'seed').",
        }
        required = [p.name for p in taken if p.required]
        if required:
            schema["required"] = required
        return schema

    def swept(self, mechanism: str) -> dict[str, Any]:
        """The schema of one value of ``mechanism``'s calibration grid."""
        swept = self.entries[mechanism].swept
        assert swept is not None
        schema = self.parameter(mechanism, swept)
        schema.pop("default", None)
        return schema


class Contract:
    """The OpenAPI document of one app: FastAPI's, then what only this app's settings and offer
    can say (see the module's docstring). Built once, on the first ask."""

    def __init__(self, app: FastAPI, settings: ServiceSettings, service: ReleaseService) -> None:
        self.app, self.settings, self.service = app, settings, service

    def __call__(self) -> dict[str, Any]:
        if self.app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            app = self.app
            document = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                                   description=app.description, routes=app.routes)
            self.app.openapi_schema = self.complete(document, Offer(self.settings, self.service))
        return self.app.openapi_schema

    def complete(self, document: dict[str, Any], offer: Offer) -> dict[str, Any]:
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        released, calibrated = offer.released(), offer.calibrated()
        for name in released:
            schemas[_component(name, "Parameters")] = offer.parameters(name)
        for name in calibrated:
            schemas[_component(name, "CalibrationParameters")] = offer.parameters(name, calibration=True)
        self.entities(schemas["EntityRequest"], offer)
        self.sanitize(schemas["SanitizeRequest"], offer, released)
        self.calibrate(schemas["CalibrateRequest"], offer, calibrated)
        upload = document["paths"]["/v1/sanitize/upload"]["post"]["requestBody"]["content"]
        generated = upload["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
        schemas["SanitizeUpload"] = self.upload(schemas.pop(generated)["properties"]["file"], offer, released)
        upload["multipart/form-data"] = {
            "schema": _ref("SanitizeUpload"),
            # object parts are JSON (the OpenAPI default for a multipart object), said outright
            "encoding": {"parameters": {"contentType": "application/json"},
                         "entities": {"contentType": "application/json"}},
        }
        # FastAPI declares its own 422 body on every route with parameters; this service's is an
        # ErrorBody, declared where a request can fail the schema (a route of strings alone cannot)
        for operations in document["paths"].values():
            for operation in operations.values():
                answer = operation["responses"].get("422", {})
                if "HTTPValidationError" in str(answer.get("content")):
                    del operation["responses"]["422"]
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        if self.settings.api_token is not None:
            document["components"]["securitySchemes"] = {SECURITY_SCHEME: {
                "type": "http", "scheme": "bearer",
                "description": "The token 'textveil serve' was given (--token-file or $TEXTVEIL_API_TOKEN)."}}
            for path, operations in document["paths"].items():
                if path.startswith("/v1/"):
                    for operation in operations.values():
                        operation["security"] = [{SECURITY_SCHEME: []}]
        return document

    # -- the parts ------------------------------------------------------------------------

    def entities(self, schema: dict[str, Any], offer: Offer) -> None:
        properties = schema["properties"]
        types = properties["entity_types"]
        if offer.entity_types is not None:
            types["anyOf"] = [{"type": "array", "items": {"enum": offer.entity_types}}, {"type": "null"}]
            types["description"] += " Names are upper case as listed (lower case is read as upper)."
        if offer.stage_refusal is not None:
            properties["operator"] = {"const": "off", "description": "off: this service cannot run the entity stage "
                                      f"({offer.stage_refusal})"}
            schema["required"] = ["operator"]
        # an empty list of types replaces nothing: it needs deny words, or the stage off
        schema["anyOf"] = [
            {"properties": {"entity_types": {"anyOf": [{"type": "null"}, {"minItems": 1}]}}},
            {"properties": {"operator": {"const": "off"}}, "required": ["operator"]},
            {"properties": {"deny": {"contains": {"pattern": NON_BLANK}}}, "required": ["deny"]},
        ]

    def mechanisms(self, names: list[str], suffix: str, offer: Offer, *,
                   swept: bool = False) -> list[dict[str, Any]]:
        """One schema per mechanism for a body's ``oneOf``: ``mechanism`` names it (the
        default, emp, also when left out), ``parameters`` (and ``grid`` with ``swept``) are its own."""
        branches = []
        for name in names:
            component = _component(name, suffix)
            properties: dict[str, Any] = {"mechanism": {"const": name}, "parameters": _ref(component)}
            if swept:
                properties["grid"] = {"anyOf": [{"type": "array", "items": offer.swept(name)}, {"type": "null"}]}
            required = [] if name == "emp" else ["mechanism"]
            branch: dict[str, Any] = {"properties": properties}
            if offer.parameters(name, calibration=swept).get("required"):
                required.append("parameters")
            if required:
                branch["required"] = required
            branches.append(branch)
        return branches

    def sanitize(self, schema: dict[str, Any], offer: Offer, released: list[str]) -> None:
        properties = schema["properties"]
        properties["mechanism"] = {"enum": released, "default": "emp",
                                   "description": "A mechanism this service releases with (GET /v1/mechanisms)"
                                   + (" that states its epsilon, so that the ledger can count it" if
                                      self.settings.ledger is not None else "") + "."}
        properties["texts"]["items"]["pattern"] = NON_BLANK
        properties["seed"] = parameter_schema(_seed()) | {"description": properties["seed"]["description"]}
        if offer.stage_refusal is not None:
            properties["entities"] = {**_ref("EntityRequest"), "description": properties["entities"]["description"]}
            schema["required"] = [*schema.get("required", []), "entities"]
        properties["then"] = offer.then(properties["then"]["description"])
        rules = [one_of(self.mechanisms(released, "Parameters", offer))]
        if self.settings.ledger is None:
            for name in ("subject", "subjects", "dataset", "request_id"):
                properties[name] = _nothing("This service keeps no budget ledger: leave it out (or null).")
        else:
            properties["subject"] = {"anyOf": [name_schema("subject every text spends from"), {"type": "null"}]}
            properties["subjects"] = {
                "anyOf": [{"type": "array", "items": name_schema("subject of one text"), "minItems": 1,
                           "maxItems": self.settings.max_texts}, {"type": "null"}],
                "description": "The subject of each text, one per text (as many as 'texts')."}
            properties["dataset"] = {"anyOf": [name_schema("dataset the subjects belong to"),
                                               {"const": "", "description": "The default dataset."},
                                               {"type": "null"}],
                                     "description": "The dataset the subjects belong to (default: 'default')."}
            # the ledger counts every release: one of subject (every text's) and subjects (one per text)
            rules.append({"oneOf": [{"properties": {"subject": {"type": "string"}}, "required": ["subject"]},
                                    {"properties": {"subjects": {"type": "array"}}, "required": ["subjects"]}]})
        schema["allOf"] = rules

    def calibrate(self, schema: dict[str, Any], offer: Offer, calibrated: list[str]) -> None:
        properties = schema["properties"]
        properties["mechanism"] = {"enum": calibrated, "default": "emp",
                                   "description": "A mechanism this service releases with that has a parameter to "
                                   "calibrate (its curve's axis)."}
        text = properties["text"]["anyOf"][0]
        text["pattern"] = WORD_CHARACTER
        properties["text"]["description"] += " It must hold a word (a letter or a digit)."
        schema["allOf"] = [one_of(self.mechanisms(calibrated, "CalibrationParameters", offer, swept=True))]

    def upload(self, file: dict[str, Any], offer: Offer, released: list[str]) -> dict[str, Any]:
        """The multipart body of ``/v1/sanitize/upload`` (its JSON fields as JSON parts)."""
        ledger = self.settings.ledger is not None
        seed = parameter_schema(_seed())["anyOf"][0]
        properties: dict[str, Any] = {
            "file": {**file, "minLength": 1},  # an empty file holds no text
            "mechanism": {"enum": released, "default": "emp", "description": "As /v1/sanitize's 'mechanism'."},
            "parameters": {"type": "object", "description": "The mechanism's parameters (a JSON object)."},
            "text_field": {"type": "string", "default": "text",
                           "description": "The text field of .jsonl and .csv records."},
            "encoding": {"enum": list(ENCODINGS), "default": "utf-8", "description": "The file's encoding."},
            "seed": {**seed, "description": "A seed for a reproducible release (default: OS entropy)."},
            "entities": {**_ref("EntityRequest"),
                         "description": "The entity stage's options, as /v1/sanitize's 'entities' (a JSON object; "
                                        "default: placeholders)."},
            "then": {"enum": ["", "polish"] if offer.polish_refusal is None else [""], "default": "",
                     "description": "As /v1/sanitize's 'then': polish, or empty for nothing"
                                    + ("" if offer.polish_refusal is None else f" ({offer.polish_refusal})") + "."},
        }
        required = ["file"]
        if offer.stage_refusal is not None:
            required.append("entities")
        if ledger:
            properties["subject"] = name_schema("subject every text of the file spends from")
            properties["dataset"] = {"anyOf": [name_schema("dataset the subject belongs to"),
                                               {"const": "", "description": "The default dataset."}],
                                     "description": "The dataset the subject belongs to (default: 'default')."}
            properties["request_id"] = {
                "type": "string", "maxLength": MAX_REQUEST_ID,
                "description": "A retry with the same id returns the recorded release and spends nothing again "
                               "(empty: none). Use a random id (a UUID)."}
            required.append("subject")
        else:
            nothing = "This service keeps no budget ledger: leave it out."
            properties["subject"] = {"not": {}, "description": nothing}
            properties["dataset"] = {"not": {}, "description": nothing}
            properties["request_id"] = {"type": "string", "maxLength": 0, "description": nothing}
        return {"type": "object", "properties": properties, "required": required,
                "allOf": [one_of(self.mechanisms(released, "Parameters", offer))],
                "description": "A file to release, with the options of /v1/sanitize as form fields."}


def _seed() -> Parameter:
    from textveil.mechanisms.registry import SEED

    return SEED


def _nothing(description: str) -> dict[str, Any]:
    return {"type": "null", "description": description}
