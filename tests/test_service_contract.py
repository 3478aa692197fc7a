"""The service keeps its published contract (issue 29): schemathesis reads ``/openapi.json``,
generates requests from it (valid ones and invalid ones: the schema's examples, its boundaries,
then random ones) and runs every check it has on every answer, in process (ASGI: no socket), in
three configurations: loopback without a token, with a token, and with a budget ledger.
Deterministic (derandomized, a fixed seed) and bounded: about 900 requests per configuration, on
the toy embeddings and the pure-Python mechanisms, some 20 s each once spaCy is loaded.

schemathesis runs as its command line does (its engine: every phase, every check), inside a
plain test: its pytest loader for a fixture's schema does not run under pytest 9, and a schema
loaded at import would build three apps (and load spaCy) whenever the file is collected.

The one allowance: a valid request may be refused for a rule JSON Schema cannot state, which the
route's 400 names (:data:`textveil.service.contract.UNDECLARED_RULES`): too few or too many
``subjects`` for the texts, a subject's earlier spends in another unit, an uploaded file that is
not text. Such a refusal passes only when it is that rule's (its message, or, for a file, the same
request with a text file is accepted)."""

from __future__ import annotations

import json
import re

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="the contract tests need schemathesis "
                                   "(pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="the service needs fastapi (pip install -e .)")

from fastapi.testclient import TestClient  # noqa: E402
from schemathesis.checks import load_all_checks  # noqa: E402
from schemathesis.core.failures import Failure  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from textveil.privacy.ledger import BudgetLedger  # noqa: E402
from textveil.service import ServiceSettings, create_app  # noqa: E402
from textveil.service.contract import SECURITY_SCHEME  # noqa: E402

TOKEN = "t0ken-for-contract-tests-0123456789"
CHEAP = ("emp", "random", "syntf", "redact")
"""The mechanisms the contract test's service offers: pure Python, on every machine, milliseconds
a release (translation and the language models take seconds; their parameters' schemas come from
the same registry declarations)."""
LIMITS = {"max_texts": 4, "max_text_chars": 300, "request_timeout": 600.0}
"""Small text limits keep the run short; a generous time limit, with the client's below, keeps a
heavy calibration on a busy machine from answering 504 (declared, but a server error to
schemathesis) or timing the client out: the contract is under test here, not the limits."""
"""Small limits: the schema's boundaries are reached, and the entity stage reads little."""
EXAMPLES = 100
"""Random requests per route and configuration, after the examples and the boundaries."""
CONFIGURATIONS = ("loopback", "token", "ledger")
UNDECLARED = {  # the rule a valid request broke, by the message of its 400
    "subjects": re.compile(r"^\d+ subjects for \d+ texts: give one subject per text$"),
    "unit": re.compile(r"would spend in two units|has spent in .*, which does not add up with it"),
}
TEXT_FILE = b"The market rallied on Friday and the bank said so."


class Service:
    def __init__(self, name: str, app, headers: dict[str, str]) -> None:
        self.name, self.app, self.headers = name, app, headers
        self.client = TestClient(app)

    def openapi(self) -> dict:
        return self.client.get("/openapi.json").json()


def make_service(name: str, embeddings, folder) -> Service:
    options: dict = {"embeddings": embeddings, "mechanisms": CHEAP, "concurrency": 1, **LIMITS}
    headers: dict[str, str] = {}
    if name == "token":
        options["api_token"] = TOKEN
        headers["Authorization"] = f"Bearer {TOKEN}"
    if name == "ledger":
        ledger = folder / "budget.sqlite"
        BudgetLedger(ledger).set_cap(200.0)  # some releases pass it: 409 is declared
        options["ledger"] = ledger
    return Service(name, create_app(ServiceSettings(**options)), headers)


def undeclared_rule(case, response, headers: dict[str, str]) -> str | None:
    """The rule the schema cannot state that refused this valid request, or None."""
    if response.status_code not in (400, 413):
        return None
    detail = response.json().get("detail", "")
    for rule, message in UNDECLARED.items():
        if response.status_code == 400 and message.search(detail):
            return rule
    if case.operation.path == "/v1/sanitize/upload" and isinstance(case.body, dict):
        # the same request with a text file in its encoding: accepted, so the file was the reason
        text_file = {**case.body, "file": TEXT_FILE.decode().encode(case.body.get("encoding", "utf-8"))}
        again = case.operation.Case(body=text_file, media_type=case.media_type, headers=dict(case.headers or {}))
        answer = again.call(headers=headers)
        unit = answer.status_code == 400 and UNDECLARED["unit"].search(answer.json().get("detail", ""))
        if 200 <= answer.status_code < 300 or answer.status_code == 409 or unit:
            return "file"
    return None


@schemathesis.check
def positive_data_acceptance_but_undeclared_rules(ctx, response, case):
    """schemathesis's ``positive_data_acceptance`` (which the runs below turn off for this one),
    but for a refusal by a rule the schema cannot state."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except Failure:
        if undeclared_rule(case, response, dict(ctx.internals.headers or {})) is None:
            raise
        return None


def run_schemathesis(service: Service) -> tuple[list[str], int]:
    """schemathesis on ``service`` in process, every phase and every check: the failures (one
    line each, with a curl to reproduce them) and the number of requests it made."""
    from schemathesis.config import SchemathesisConfig
    from schemathesis.engine import events, from_schema

    config = SchemathesisConfig.from_dict({
        "seed": 20290329, "workers": 1, "continue-on-failure": True, "headers": service.headers,
        "request-timeout": 900,
        "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
        "checks": {"positive_data_acceptance": {"enabled": False}},
    })
    schema = schemathesis.openapi.from_asgi("/openapi.json", service.app, config=config)
    failures, requests = [], 0
    for event in from_schema(schema).execute():
        if isinstance(event, (events.ScenarioFinished, events.FuzzScenarioFinished)):
            requests += len(event.recorder.interactions)
            for checks in event.recorder.checks.values():
                for check in checks:
                    if check.failure_info is not None:
                        failure = check.failure_info.failure
                        failures.append(f"{event.recorder.label}: {check.name}: {failure.title}: "
                                        f"{failure.message.strip()} | {check.failure_info.code_sample}")
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            failures.append(f"error: {getattr(event, 'info', None) or event.exception}")
        elif isinstance(event, events.EngineFinished):
            failures += [f"{failure.title}: {failure.message}" for failure in event.failures]
    return sorted(set(failures)), requests


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_the_service_does_what_its_schema_says(name, toy_word_embeddings, tmp_path):
    service = make_service(name, toy_word_embeddings, tmp_path)
    failures, requests = run_schemathesis(service)
    assert requests > 100, f"schemathesis made {requests} requests only"
    assert not failures, f"{len(failures)} failures in {requests} requests:\n" + "\n".join(failures)


def test_every_check_schemathesis_has_runs():
    """The runs above run every check schemathesis has, as it enables them by default (all but
    max_response_time, which needs a limit), with positive_data_acceptance in its wrapper."""
    from schemathesis.checks import CHECKS, CheckContext
    from schemathesis.config import ChecksConfig

    load_all_checks()
    names = set(CHECKS.get_all_names())
    assert {"not_a_server_error", "status_code_conformance", "content_type_conformance",
            "response_headers_conformance", "response_schema_conformance", "negative_data_rejection",
            "positive_data_acceptance", "missing_required_header", "unsupported_method", "allow_header_conformance",
            "use_after_free", "ensure_resource_availability", "ignored_auth"} <= names
    context = CheckContext(override=None, auth=None, headers=None, config=ChecksConfig(), transport_kwargs=None,
                           response_checks=None)
    enabled = {check.__name__ for check in context.internals.checks}
    assert enabled == {name for name in names if not isinstance(CHECKS.get_one(name), type)}
    assert "positive_data_acceptance_but_undeclared_rules" in enabled


# -- what the three configurations declare -------------------------------------------------------


def test_errors_are_one_line_objects_declared_on_every_route(toy_word_embeddings, tmp_path):
    for name in CONFIGURATIONS:
        document = make_service(name, toy_word_embeddings, tmp_path).openapi()
        schemas = document["components"]["schemas"]
        assert schemas["ErrorBody"]["properties"]["detail"]["type"] == "string"
        assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
        for path, operations in document["paths"].items():
            for operation in operations.values():
                for status, answer in operation["responses"].items():
                    if status.startswith(("4", "5")):
                        assert answer["content"]["application/json"]["schema"] == {
                            "$ref": "#/components/schemas/ErrorBody"}, (name, path, status)
        sanitize = document["paths"]["/v1/sanitize"]["post"]["responses"]
        assert {"400", "413", "422", "503", "504"} <= set(sanitize)
        assert ("409" in sanitize) == (name == "ledger") and ("401" in sanitize) == (name == "token")
        budget = document["paths"]["/v1/budget/{subject}"]["get"]["responses"]
        assert ("404" in budget) == (name != "ledger")


def test_the_token_is_declared_only_when_there_is_one(toy_word_embeddings, tmp_path):
    loopback = make_service("loopback", toy_word_embeddings, tmp_path).openapi()
    assert "securitySchemes" not in loopback["components"]
    assert not [op for ops in loopback["paths"].values() for op in ops.values() if "security" in op]
    token = make_service("token", toy_word_embeddings, tmp_path)
    document = token.openapi()
    assert document["components"]["securitySchemes"] == {SECURITY_SCHEME: {
        "type": "http", "scheme": "bearer", "description": document["components"]["securitySchemes"][SECURITY_SCHEME][
            "description"]}}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert ("security" in operation) == path.startswith("/v1/"), path
            if not path.startswith("/v1/"):
                continue
            # a request without the token gets the declared 401: an ErrorBody and the challenge
            answer = getattr(token.client, method)(path.replace("{subject}", "ann"))
            assert answer.status_code == 401 and "401" in operation["responses"], path
            assert set(answer.json()) == {"detail"} and isinstance(answer.json()["detail"], str)
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]


def test_the_schema_states_the_settings_and_the_offer(toy_word_embeddings, tmp_path):
    document = make_service("loopback", toy_word_embeddings, tmp_path).openapi()
    schemas = document["components"]["schemas"]
    request = schemas["SanitizeRequest"]
    texts = request["properties"]["texts"]
    assert texts["maxItems"] == LIMITS["max_texts"] and texts["items"]["maxLength"] == LIMITS["max_text_chars"]
    assert request["properties"]["mechanism"]["enum"] == list(CHEAP)
    assert request["properties"]["subject"]["type"] == "null"  # no ledger: nothing to count against
    emp = schemas["EmpParameters"]
    assert emp["required"] == ["epsilon"] and emp["additionalProperties"] is False
    assert emp["properties"]["epsilon"]["minimum"] > 0  # emp's own bound on these embeddings
    assert emp["properties"]["layout"]["enum"] == ["public", "keep"]
    ledger = make_service("ledger", toy_word_embeddings, tmp_path).openapi()["components"]["schemas"]
    request = ledger["SanitizeRequest"]
    assert request["properties"]["mechanism"]["enum"] == ["emp", "random", "syntf"]  # redact states no epsilon
    subject_rule = request["allOf"][1]["oneOf"]
    assert [rule["required"] for rule in subject_rule] == [["subject"], ["subjects"]]
    assert ledger["SanitizeUpload"]["required"] == ["file", "subject"]
    assert json.dumps(request["properties"]["subject"]).count('"*"') == 1  # '*' is the ledger's "every"


def test_what_the_runs_found_stays_fixed(toy_word_embeddings, tmp_path):
    """Found by schemathesis: a text parameter of another JSON type (redact's features) was a 500,
    and false was read as seed 0; a whole number written 5.0 is an integer, as JSON Schema says."""
    client = make_service("loopback", toy_word_embeddings, tmp_path).client
    off = {"operator": "off"}
    for features in (5, None, ["urls"]):
        answer = client.post("/v1/sanitize", json={"texts": ["good"], "mechanism": "redact", "entities": off,
                                                   "parameters": {"features": features}})
        assert answer.status_code == 400 and "parameters.features must be a string" in answer.json()["detail"]
    assert client.post("/v1/sanitize", json={"texts": ["good"], "mechanism": "random", "seed": False}).status_code == 422
    seeded = client.post("/v1/sanitize", json={"texts": ["good"], "mechanism": "random", "seed": 5.0, "entities": off})
    assert seeded.status_code == 200 and seeded.json()["parameters"]["seed"] == 5


def test_a_service_offers_only_the_mechanisms_it_was_given(toy_word_embeddings, tmp_path):
    service = make_service("loopback", toy_word_embeddings, tmp_path)
    refused = service.client.post("/v1/sanitize", json={"texts": ["good"], "mechanism": "translate"})
    assert refused.status_code == 400 and "does not offer translate" in refused.json()["detail"]
    listed = {m["name"]: m for m in service.client.get("/v1/mechanisms").json()["mechanisms"]}
    assert [name for name, entry in listed.items() if entry["service"]["releases"]] == list(CHEAP)
    assert "does not offer" in listed["translate"]["service"]["reason"] and listed["syntf"]["calibration"] is True
    with pytest.raises(Exception, match="unknown mechanism 'nope'"):
        ServiceSettings(mechanisms=("emp", "nope"))
