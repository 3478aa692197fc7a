"""The HTTP face of textveil: a FastAPI app over the same library functions a user's code calls.

``create_app(settings)`` returns the app; ``textveil serve`` (:mod:`textveil.cli.service`)
runs it with uvicorn through :func:`textveil.service.server.run_service`. It holds no privacy
logic: a release is ``build_mechanism`` then ``sanitize_many``, or ``release_with_budget``
when a budget ledger is configured (:mod:`textveil.service.release_service`).

Routes (``/v1`` ones want ``Authorization: Bearer TOKEN`` when a token is configured):

- ``POST /v1/sanitize``: texts, a mechanism and its parameters (and the entity stage's options,
  ``entities``: placeholders for names, places, organisations and contacts unless told
  otherwise) -> releases (each with what the stage replaced, by offsets in the original
  text), their guarantees in words, the stage's summary, and each subject's remaining budget;
- ``POST /v1/sanitize/upload``: the same for an uploaded ``.txt``, ``.jsonl`` or ``.csv`` file;
- ``GET /v1/mechanisms``: the registry (name, guarantee, description, parameters);
- ``POST /v1/calibrate``: emp's calibration curve (what an epsilon does to words);
- ``GET /v1/budget/{subject}``: spent, cap and remaining (404 without a ledger);
- ``GET /healthz``; the web page at ``/`` and the results viewer at ``/results``.

Status codes: 400 bad input (one line in ``detail``), 401 missing or wrong token, 404 no ledger,
409 a release that would pass a subject's cap (nothing released, nothing spent), 413 a body over
the size limit (or an uploaded file with more texts, or longer ones, than the limits), 422 a body
that does not fit the schema (the limits of texts per request and characters per text included),
503 busy (``Retry-After``), 504 a release that ran past the time limit (abandoned before its spend
is recorded, see :data:`TIMEOUT_DETAIL`). Every error body is ``{"detail": "one line"}``.

``/openapi.json`` states what the service checks, built for its settings and what it offers
(:mod:`textveil.service.contract`): a request the schema calls valid is released, or refused for
a reason its route's 400 names.
"""

# No ``from __future__ import annotations``: the request models are made per app (their limits
# are the settings'), and FastAPI reads the routes' annotations as objects.

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypeVar

from fastapi import APIRouter, FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.middleware import Middleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError, create_model
from starlette.concurrency import run_in_threadpool

from textveil.errors import InputError, InvalidParameterError, TextveilError
from textveil.pii.stage import OPERATORS
from textveil.privacy.ledger import DEFAULT_DATASET, EVERY, BudgetExceeded, RequestConflict
from textveil.service.release_service import (
    CALIBRATION_SAMPLE,
    InternalError,
    ReleaseOrder,
    ReleaseService,
    check_options,
    describe_texts,
    entity_refusal,
    finite_or_none,
    run_logged,
    text_digest,
)
from textveil.service.contract import (
    ENCODINGS,
    MAX_REQUEST_ID,
    Budget,
    Calibration,
    Contract,
    Health,
    Mechanisms,
    Released,
    ReleasedUpload,
    answer,
    route_errors,
)
from textveil.service.limits import AccessLog, LimitBody, RequireToken, SecurityHeaders
from textveil.service.settings import ServiceSettings

log = logging.getLogger("textveil.service")
T = TypeVar("T")

STATIC = Path(__file__).parent / "static"
PAGE_HEADERS = {
    # The pages load nothing from elsewhere (the machine may be offline, and a page that shows
    # private text should not talk to third parties).
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                               "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
}
TIMEOUT_DETAIL = (
    "the request ran past this service's time limit ({seconds:g} s) and was abandoned; a release with a ledger stops "
    "before its spend is recorded, unless it was being recorded as the limit passed: send a request_id, and a retry "
    "with the same id returns that release instead of spending again; send fewer or shorter texts per request")


# -- requests ------------------------------------------------------------------------
# Strict: a value of another JSON type is refused (false is not a seed, "5" not a sample count),
# as the schema says; a whole number written 5.0 is a JSON Schema integer, and taken as one.


def _whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


Whole = Annotated[int, BeforeValidator(_whole)]


class EntityRequest(BaseModel):
    """The entity stage before the mechanism: Presidio with spaCy finds names, places,
    organisations, e-mails, phones and the like, and replaces them before any mechanism sees the
    text. Best-effort detection, not covered by epsilon: what it misses goes through the
    mechanism like any other word."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"operator": "pseudonym", "entity_types": ["PERSON", "LOCATION"], "allow": ["Friday"]}]})

    operator: Literal["placeholder", "pseudonym", "drop", "off"] = Field(
        "placeholder", description="placeholder (<PERSON>, the default), pseudonym (a fake value of the same kind, "
        "the same for the same entity in every request while the service runs, keyed by the service's secret key), "
        "drop (removed), or off (no stage: the release is the mechanism's alone).")
    entity_types: Optional[list[str]] = Field(
        None, description="Presidio entity types to replace (default: PERSON, LOCATION, ORGANIZATION, NRP, "
        "EMAIL_ADDRESS, PHONE_NUMBER, URL, IP_ADDRESS, CREDIT_CARD, IBAN_CODE, US_SSN; add DATE_TIME for dates).")
    allow: list[str] = Field(default_factory=list, description="Words the stage never replaces.")
    deny: list[str] = Field(default_factory=list, description="Words the stage always replaces (as CUSTOM).")
    scope: Literal["corpus", "document"] = Field(
        "corpus", description="With pseudonym: one pseudonym per entity across every request (corpus) or per "
        "document.")


class SanitizeRequest(BaseModel):
    """Texts to release, the mechanism and its parameters; a subject (or one per text) to count
    the spend against when the service keeps a budget ledger."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"texts": ["The market rallied on Friday."], "mechanism": "emp", "parameters": {"epsilon": 20}}]})

    texts: list[str] = Field(..., min_length=1, description="The texts to release, one release each (each with a "
                             "non-space character).")
    mechanism: str = Field("emp", description="A mechanism name (GET /v1/mechanisms).")
    parameters: dict[str, Any] = Field(default_factory=dict, description="The mechanism's parameters, e.g. "
                                       "{\"epsilon\": 20, \"layout\": \"public\"}.")
    subject: Optional[str] = Field(None, description="With a ledger: the subject every text spends from.")
    subjects: Optional[list[str]] = Field(None, description="With a ledger: one subject per text.")
    dataset: Optional[str] = Field(None, description="With a ledger: the dataset the subjects belong to.")
    request_id: Optional[str] = Field(None, min_length=1, max_length=MAX_REQUEST_ID,
                                      description="With a ledger: a retry with the same id returns the recorded "
                                      "release and spends nothing again. Use a random id (a UUID).")
    seed: Optional[Whole] = Field(None, description="A seed for a reproducible release (default: OS entropy).")
    entities: Optional[EntityRequest] = Field(
        None, description="The entity stage before the mechanism (default: placeholders for names, places, "
        "organisations and contact details). Each release lists what it replaced, by offsets in the original text.")
    then: list[str] = Field(
        default_factory=list, description="What rewrites each release after the mechanism: [\"polish\"] has the "
        "language model write it as fluent sentences, reading only the release (no privacy cost: the guarantee stays "
        "the mechanism's and names the polish).")


class CalibrateRequest(BaseModel):
    """emp's calibration: per epsilon, the fraction of word tokens left unchanged and the
    distinct substitutes a word gets, sampled from ``text`` or from the vocabulary."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mechanism: str = "emp"
    grid: Optional[list[float]] = Field(None, min_length=1, max_length=25, description="Epsilons (default: 5 to 40).")
    parameters: dict[str, Any] = Field(default_factory=dict, description="{\"decode\": \"exact\"} or approx.")
    text: Optional[str] = Field(None, description="Sample word tokens from this text (default: the vocabulary, "
                                "Zipf-weighted). Nothing of it is released.")
    samples: Whole = Field(CALIBRATION_SAMPLE["samples"], ge=1, le=5000, description="Word tokens sampled per epsilon.")
    word_types: Whole = Field(CALIBRATION_SAMPLE["word_types"], ge=1, le=500,
                              description="Word types whose distinct substitutes are counted.")
    draws: Whole = Field(CALIBRATION_SAMPLE["draws"], ge=1, le=100, description="Draws per word type.")
    seed: Optional[Annotated[int, Field(ge=0), BeforeValidator(_whole)]] = Field(
        CALIBRATION_SAMPLE["seed"], description="Seed of the sample (a seeded curve is cached); null: OS entropy.")


def limited_requests(settings: ServiceSettings) -> tuple[type[SanitizeRequest], type[CalibrateRequest]]:
    """The request models of an app: those above, with its limits on texts (a request over them
    does not fit the schema: 422, before any work)."""
    text = Annotated[str, StringConstraints(max_length=settings.max_text_chars)]
    sanitize = create_model(
        "SanitizeRequest", __base__=SanitizeRequest, __doc__=SanitizeRequest.__doc__,
        texts=(list[text], Field(..., min_length=1, max_length=settings.max_texts,
                                 description=f"The texts to release, one release each: at most {settings.max_texts:,}, "
                                 f"each of at most {settings.max_text_chars:,} characters with a non-space one.")))
    calibrate = create_model(
        "CalibrateRequest", __base__=CalibrateRequest, __doc__=CalibrateRequest.__doc__,
        text=(Optional[text], Field(None, description="Sample word tokens from this text (default: the vocabulary, "
                                    "Zipf-weighted; at most {:,} characters). Nothing of it is released."
                                    .format(settings.max_text_chars))))
    return sanitize, calibrate


# -- the app ---------------------------------------------------------------------------


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The textveil service with ``settings`` (default: loopback use, no ledger, no token)."""
    from textveil.version import __version__

    settings = settings or ServiceSettings()
    service = ReleaseService(settings.embeddings, settings.ledger, settings.concurrency, settings.models,
                           pseudonym_key=settings.pseudonym_key, mechanisms=settings.mechanisms,
                           batched_concurrency=settings.batched_concurrency)
    middleware = []
    if settings.cors_origins:  # none unless asked: a browser page elsewhere cannot call the service
        from fastapi.middleware.cors import CORSMiddleware

        middleware.append(Middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                                     allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"]))
    middleware += [Middleware(AccessLog), Middleware(SecurityHeaders),
                   Middleware(RequireToken, token=settings.api_token),
                   Middleware(LimitBody, max_bytes=settings.max_body_bytes)]
    app = FastAPI(
        title="textveil", version=__version__, middleware=middleware, docs_url=None, redoc_url=None,
        description="Release text with a formal privacy guarantee against authorship re-identification. "
                    "Every /v1 route wants 'Authorization: Bearer TOKEN' when the service was given a token.",
    )
    app.state.settings = settings
    app.state.service = service
    _add_error_handlers(app, settings)
    app.openapi = Contract(app, settings, service)  # type: ignore[method-assign]
    v1 = APIRouter(prefix="/v1")  # the token is checked by RequireToken, and declared when there is one
    listing: list[dict[str, Any]] = []
    Sanitize, Calibrate = limited_requests(settings)  # noqa: N806
    # what each route answers, declared (textveil.service.contract): a 200 and the errors it can give
    ledger_rules = ("unit",) if settings.ledger is not None else ()
    refused = "what the mechanism or the entity stage refuses itself"
    answers = {
        "sanitize": answer(Released, "One release per text, with its guarantee") | route_errors(
            settings, body=True, heavy=True, spends=True, refuses=refused,
            undeclared=("subjects", *ledger_rules) if settings.ledger is not None else ()),
        "upload": answer(ReleasedUpload, "One release per text of the file, and the texts read") | route_errors(
            settings, body=True, heavy=True, spends=True, refuses=refused, undeclared=("file", *ledger_rules)),
        "mechanisms": answer(Mechanisms, "The registry, and whether this service releases with each")
        | route_errors(settings),
        "calibrate": answer(Calibration, "The curve over the grid") | route_errors(
            settings, body=True, heavy=True, refuses="a text without a word; " + refused),
        "budget": answer(Budget, "The subject's budget in the dataset") | route_errors(
            settings, missing=None if settings.ledger is not None else "This service keeps no budget ledger"),
        "healthz": answer(Health, "The service is up: its version, ledger, token, entity stage and limits"),
    }

    async def heavy(work: Callable[[threading.Event], T], what: str, slots: Any = None) -> T:
        """Run ``work`` in a worker thread under the concurrency limit (``slots``: the CPU-shared
        one unless given) and the time limit."""
        slots = service.slots if slots is None else slots
        if not await slots.acquire(settings.queue_seconds):
            raise HTTPException(503, f"the service is busy ({slots.limit} requests at once, "
                                     f"{slots.waiting} waiting); retry in a second", headers={"Retry-After": "1"})
        abandoned = threading.Event()
        task = asyncio.ensure_future(run_in_threadpool(run_logged, lambda: work(abandoned), what))

        def finished(done: asyncio.Future) -> None:
            slots.release()  # when the work ends, not when its request gives up
            if not done.cancelled():
                done.exception()  # retrieved: an abandoned release's error is not reported again

        task.add_done_callback(finished)
        try:
            return await asyncio.wait_for(asyncio.shield(task), settings.request_timeout)
        except asyncio.TimeoutError:
            abandoned.set()
            log.warning("%s abandoned after %g s", what, settings.request_timeout)
            raise HTTPException(504, TIMEOUT_DETAIL.format(seconds=settings.request_timeout)) from None
        except asyncio.CancelledError:  # the client went away
            abandoned.set()
            raise

    def order_of(texts: list[str], mechanism: str, parameters: dict[str, Any], subject: str | None,
                 subjects: list[str] | None, dataset: str | None, request_id: str | None,
                 seed: int | None, entities: EntityRequest | None, then: list[str] | None = None) -> ReleaseOrder:
        """The request checked whole before any work: limits, subjects against the ledger, the
        mechanism and its parameters. Nothing is spent on a request that fails here."""
        if len(texts) > settings.max_texts:
            raise HTTPException(413, f"this request has {len(texts):,} texts; this service takes at most "
                                     f"{settings.max_texts:,} per request (textveil serve --max-texts)")
        for number, text in enumerate(texts):
            if not text.strip():
                raise InvalidParameterError(f"texts[{number}] is empty: give text with at least one non-space "
                                            "character")
            if len(text) > settings.max_text_chars:
                raise HTTPException(413, f"texts[{number}] has {len(text):,} characters; this service takes at most "
                                         f"{settings.max_text_chars:,} per text (textveil serve --max-text-chars): "
                                         "split it")
        if subject is not None and subjects is not None:
            raise InvalidParameterError("give 'subject' (every text's) or 'subjects' (one per text), not both")
        if subject is not None:
            subjects = [subject] * len(texts)
        if service.ledger is None:
            for name, value in (("subject", subjects), ("dataset", dataset), ("request_id", request_id)):
                if value is not None:
                    raise InvalidParameterError(
                        f"this service keeps no budget ledger, so '{name}' cannot be honoured (nothing would be "
                        "counted); start it with 'textveil serve --ledger PATH', or leave it out")
        else:
            if subjects is None:
                raise InvalidParameterError("this service keeps a budget ledger: give 'subject' (every text's) or "
                                            "'subjects' (one per text), so that the release is counted")
            if len(subjects) != len(texts):
                raise InvalidParameterError(f"{len(subjects)} subjects for {len(texts)} texts: give one subject "
                                            "per text")
            for name in [*subjects, dataset or DEFAULT_DATASET]:
                if not name.strip() or name == EVERY:
                    raise InvalidParameterError(f"a subject or dataset must be a non-empty name other than "
                                                f"'{EVERY}', got {name!r}")
        options = check_options(mechanism, parameters)
        refusal = service.refusal(mechanism)
        if refusal:
            raise InvalidParameterError(refusal)
        service.language_model_source(mechanism, options)  # only a model the service offers
        from textveil.mechanisms.registry import MECHANISMS

        seed = MECHANISMS.entry(mechanism).parameter("seed").check(seed)
        stage = service.entity_options(None if entities is None else entities.model_dump())
        steps = service.then_steps(then)  # the library's parser: an unknown name is one line
        return ReleaseOrder(list(texts), mechanism, options, seed, subjects,
                            dataset or DEFAULT_DATASET, request_id, stage, steps)

    async def release(order: ReleaseOrder, what: str) -> dict[str, Any]:
        log.info("%s: %s (entities %s), %s%s", what, order.mechanism, order.entities.operator,
                 describe_texts(order.texts),
                 "" if order.subjects is None else f", {len(set(order.subjects))} subject(s)")
        result = await heavy(lambda abandoned: service.release(order, abandoned), what,
                             service.slots_for(order.mechanism, order.then))
        log.info("%s: %d release(s)%s", what, len(result["releases"]), ", replayed" if result["replayed"] else "")
        return result

    @v1.post("/sanitize", summary="Release texts with a mechanism", responses=answers["sanitize"])
    async def sanitize(body: Sanitize) -> JSONResponse:
        """Release each text; with a ledger, count each text's spend against its subject (refused
        with 409, nothing spent, past a cap). The guarantees come in words, one per release."""
        order = order_of(body.texts, body.mechanism, body.parameters, body.subject, body.subjects, body.dataset,
                         body.request_id, body.seed, body.entities, body.then)
        return JSONResponse(await release(order, "sanitize"))

    @v1.post("/sanitize/upload", summary="Release an uploaded file (.txt, .jsonl, .csv)", responses=answers["upload"])
    async def sanitize_upload(
        file: UploadFile = File(..., description="A UTF-8 .txt file (one text), or .jsonl/.csv (one text per record)."),
        mechanism: str = Form("emp"),
        parameters: str = Form("{}", description="The mechanism's parameters as a JSON object."),
        text_field: str = Form("text", description="The text field of .jsonl/.csv records."),
        encoding: Literal[ENCODINGS] = Form("utf-8", description="The file's encoding."),  # type: ignore[valid-type]
        subject: Optional[str] = Form(None), dataset: Optional[str] = Form(None),
        request_id: Optional[str] = Form(None, max_length=MAX_REQUEST_ID), seed: Optional[int] = Form(None),
        entities: str = Form("{}", description="The entity stage's options as a JSON object, as /v1/sanitize's "
                             "'entities' (e.g. {\"operator\": \"pseudonym\"}; default: placeholders)."),
        then: str = Form("", description="What rewrites each release after the mechanism, as /v1/sanitize's 'then': "
                         "'polish', or empty for nothing."),
    ) -> JSONResponse:
        """As ``/v1/sanitize``, the texts read from the file; the answer adds them as ``inputs``."""
        import json

        from textveil.corpus.reading import RECORD_FORMATS, InputFile, decode_input, parse_documents

        data = await file.read()
        name = Path(file.filename or "upload.txt").name or "upload.txt"
        try:
            options = json.loads(parameters)
        except ValueError:
            raise InvalidParameterError("the form field 'parameters' is not JSON; send an object such as "
                                        "{\"epsilon\": 20}") from None
        try:
            stage = EntityRequest.model_validate(json.loads(entities))
        except ValueError as error:
            why = validation_line(error.errors()) if isinstance(error, ValidationError) else "not JSON"
            raise InvalidParameterError(f"the form field 'entities' is not valid ({why}); send an object such as "
                                        "{\"operator\": \"placeholder\"}") from None
        try:
            text = decode_input(data, name, encoding)
        except InputError as error:
            hint = str(error).split("; pass --encoding")[0]
            raise InputError(f"{hint}; send the file's encoding in the form field 'encoding' (e.g. latin-1)") from None
        fmt = RECORD_FORMATS.get(Path(name).suffix.lower(), "text")
        documents = parse_documents(InputFile(Path(name), Path(name), fmt), text, text_field)
        if not documents:
            raise InputError(f"{name} holds no records; give a file with at least one text")
        texts = [d.text for d in documents]
        log.info("upload: %s file of %d bytes (sha256 %s)", fmt, len(data), text_digest(text))
        order = order_of(texts, mechanism, options, subject, None, dataset, request_id or None, seed, stage,
                         [then] if then.strip() else None)
        return JSONResponse({**await release(order, "sanitize upload"), "inputs": texts})

    @v1.get("/mechanisms", summary="The mechanisms: guarantee, description, parameters", response_model=None,
            responses=answers["mechanisms"])
    async def mechanisms() -> dict[str, Any]:
        if not listing:
            listing.extend(await run_in_threadpool(service.listing))
        return {"mechanisms": listing}

    @v1.post("/calibrate", summary="What an epsilon does to words (emp)", responses=answers["calibrate"])
    async def calibrate(body: Calibrate) -> JSONResponse:
        """Per epsilon of the grid: the fraction of word tokens left unchanged (all, and in the
        vocabulary) and the distinct substitutes a word gets, for the page's slider."""
        from textveil.building import check_mechanism_options

        check_mechanism_options(body.mechanism, body.parameters)
        result = await heavy(lambda abandoned: service.calibrate(
            body.mechanism, body.grid, body.parameters, body.text, samples=body.samples, word_types=body.word_types,
            draws=body.draws, seed=body.seed, abandoned=abandoned), "calibrate")
        return JSONResponse(result)

    @v1.get("/budget/{subject}", summary="A subject's budget: spent, cap, remaining", response_model=None,
            responses=answers["budget"])
    async def budget(subject: str, dataset: Optional[str] = Query(None)) -> dict[str, Any]:
        if service.ledger is None:
            raise HTTPException(404, "this service keeps no budget ledger; start it with 'textveil serve --ledger "
                                     "PATH'")
        return finite_or_none(await run_in_threadpool(service.budget, subject, dataset))  # JSON has no infinity

    app.include_router(v1)

    @app.get("/healthz", summary="Liveness, and what the page needs to know", response_model=None,
             responses=answers["healthz"])
    async def healthz() -> dict[str, Any]:
        refusal = entity_refusal()
        return {"status": "ok", "version": __version__, "ledger": service.ledger is not None,
                "language_models_ready": list(service.ready_language_models),
                "token_required": settings.api_token is not None,
                "entity_stage": {"available": refusal is None, "reason": refusal,
                                 "operators": list(OPERATORS),
                                 "default": "placeholder"},
                "polish": {"available": (polish := service.polish_refusal()) is None, "reason": polish},
                "limits": {"max_body_bytes": settings.max_body_bytes, "max_text_chars": settings.max_text_chars,
                           "max_texts": settings.max_texts}}

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    @app.get("/results", include_in_schema=False)
    async def results_page() -> FileResponse:
        return FileResponse(STATIC / "results.html", headers=PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _add_api_docs(app)
    return app


def _add_error_handlers(app: FastAPI, settings: ServiceSettings) -> None:
    async def bad_input(_request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=400)

    async def over_budget(_request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=409)

    async def internal(_request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"internal error ({error}); the service log has its traceback"},
                            status_code=500)

    async def invalid_body(_request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return JSONResponse({"detail": validation_line(error.errors(), settings)}, status_code=422)

    app.add_exception_handler(TextveilError, bad_input)
    app.add_exception_handler(BudgetExceeded, over_budget)
    app.add_exception_handler(RequestConflict, over_budget)  # the ledger's state forbids it: 409 too
    app.add_exception_handler(InternalError, internal)
    app.add_exception_handler(RequestValidationError, invalid_body)


def validation_line(errors: Any, settings: Optional[ServiceSettings] = None) -> str:
    """FastAPI's validation errors in one line, without echoing the input (it may be a text);
    with ``settings``, a limit of the service is named with the option that sets it.

    >>> validation_line([{"loc": ("body", "texts"), "msg": "Field required", "type": "missing"}])
    'texts: Field required'
    >>> line = validation_line([{"loc": ("body", "texts", 0), "msg": "String should have at most 9 characters",
    ...                          "type": "string_too_long"}], ServiceSettings(max_text_chars=9))
    >>> line.startswith("texts.0: String should have at most 9 characters (this service takes at most 9"), line[-32:]
    (True, 'textveil serve --max-text-chars)')
    """
    parts = []
    for error in errors:
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "invalid JSON")
            parts.append(f"the request body is not valid JSON ({reason})")
            continue
        loc = [part for part in error.get("loc", ()) if part != "body"]
        where = ".".join(str(part) for part in loc)
        line = f"{where}: {error.get('msg')}" if where else str(error.get("msg"))
        if settings is not None and loc[:1] in (["texts"], ["text"]):
            if error.get("type") == "string_too_long":
                line += (f" (this service takes at most {settings.max_text_chars:,} characters per text: split it; "
                         "textveil serve --max-text-chars)")
            elif error.get("type") == "too_long" and loc == ["texts"]:
                line += f" (this service takes at most {settings.max_texts:,} per request; textveil serve --max-texts)"
        parts.append(line)
    return "; ".join(parts) or "the request does not fit the schema (see /docs)"


def _add_api_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from files served here (those the ``fastapi-offline`` package ships,
    Swagger UI 5, which reads OpenAPI 3.1). FastAPI's own page loads them from a CDN, which a
    machine without internet (or a steward who keeps the service off it) cannot reach: the page
    stayed blank."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="textveil API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon.png")
