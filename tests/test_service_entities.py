"""The entity stage in the local service: on by default (placeholders), chosen per request
(``entities``), one stage per distinct options shared by every request, pseudonyms under the
service's one key (never in a response or a log), and a clear one-line error when a request
wants the stage and it is not installed. Toy embeddings; Presidio with spaCy's small model."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("fastapi", reason="the service needs fastapi (pip install -e .)")

from fastapi.testclient import TestClient  # noqa: E402

from conftest import skip_without_entity_stage  # noqa: E402
from textveil.pii.detector import unavailable  # noqa: E402
from textveil.service import ServiceSettings, create_app  # noqa: E402

TEXT = "Hi, I am Margaret Okafor from Portland."
KEY = "service-pseudonym-key-for-tests-0123456789"

needs_stage = pytest.mark.skipif(
    unavailable() is not None,
    reason=f"these service tests release through the entity stage, which cannot load here: {unavailable()}")


def make_client(embeddings, **settings) -> TestClient:
    return TestClient(create_app(ServiceSettings(embeddings=embeddings, **settings)))


@pytest.fixture
def client(toy_word_embeddings) -> TestClient:
    return make_client(toy_word_embeddings)


def release(client: TestClient, texts=(TEXT,), mechanism="redact", entities=None, **extra):
    body = {"texts": list(texts), "mechanism": mechanism, **extra}
    if entities is not None:
        body["entities"] = entities
    return client.post("/v1/sanitize", json=body)


def one_line(response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail, detail
    return detail


@needs_stage
def test_names_and_places_are_replaced_by_default(client):
    response = release(client, mechanism="emp", parameters={"epsilon": 20}, seed=1)
    assert response.status_code == 200, response.text
    data = response.json()
    record = data["releases"][0]
    assert "Margaret" not in record["text"] and "Okafor" not in record["text"]
    entities = record["entities"]
    by_type = {entity["type"]: entity for entity in entities}
    assert {"PERSON", "LOCATION"} <= set(by_type)
    assert TEXT[by_type["PERSON"]["start"]:by_type["PERSON"]["end"]] == "Margaret Okafor"
    assert TEXT[by_type["LOCATION"]["start"]:by_type["LOCATION"]["end"]] == "Portland"
    for entity in entities:
        assert set(entity) == {"type", "start", "end", "replacement", "score"}
        assert entity["replacement"] == f"<{entity['type']}>"
    # what was replaced is named by its offsets only: the original characters are nowhere in the answer
    assert "Margaret" not in response.text and "Okafor" not in response.text and "Portland" not in response.text
    guarantee = record["guarantee"]
    assert "entity stage" in guarantee["entity_stage"] and guarantee["entity_stage"] in guarantee["statement"]
    assert data["guarantees"][0] == guarantee["statement"]
    stage = data["entity_stage"]
    assert stage["options"]["operator"] == "placeholder" and stage["counts"]["PERSON"] == 1
    assert stage["summary"].startswith("entity stage (placeholder): replaced 2 before the mechanism")


@needs_stage
def test_off_releases_with_the_mechanism_alone(client):
    data = release(client, entities={"operator": "off"}).json()
    record = data["releases"][0]
    assert "Margaret Okafor" in record["text"] and "Portland" in record["text"]  # redact passes words through
    assert record["entities"] == [] and not record["guarantee"]["entity_stage"]
    assert data["entity_stage"]["summary"].startswith("entity stage: off")
    placeholder = release(client).json()["releases"][0]
    assert placeholder["text"] == "Hi, I am <PERSON> from <LOCATION>."


@needs_stage
def test_drop_and_chosen_types_allow_and_deny(client):
    dropped = release(client, entities={"operator": "drop"}).json()["releases"][0]
    assert "Margaret" not in dropped["text"] and all(e["replacement"] == "" for e in dropped["entities"])
    people = release(client, entities={"entity_types": ["person"]}).json()["releases"][0]
    assert [e["type"] for e in people["entities"]] == ["PERSON"] and "Portland" in people["text"]
    allowed = release(client, entities={"allow": ["Portland"], "deny": ["Hi"]}).json()
    record = allowed["releases"][0]
    assert "Portland" in record["text"] and "CUSTOM" in {e["type"] for e in record["entities"]}
    assert "Portland" not in json.dumps(allowed["entity_stage"]), "allow and deny lists are shown as digests"


@needs_stage
def test_pseudonyms_hold_for_the_life_of_the_service_and_the_key_never_shows(toy_word_embeddings, tmp_path,
                                                                            caplog):
    caplog.set_level(logging.DEBUG)
    key_file = tmp_path / "pseudonym.key"
    key_file.write_text(KEY + "\n")
    client = make_client(toy_word_embeddings, pseudonym_key=key_file)
    first = release(client, entities={"operator": "pseudonym"})
    second = release(client, texts=["Margaret Okafor wrote again, this time from Portland."],
                     entities={"operator": "pseudonym"})
    assert first.status_code == second.status_code == 200
    names = [{e["type"]: e["replacement"] for e in r.json()["releases"][0]["entities"]} for r in (first, second)]
    assert names[0]["PERSON"] == names[1]["PERSON"] and names[0]["PERSON"] not in ("Margaret Okafor", "<PERSON>")
    assert names[0]["LOCATION"] == names[1]["LOCATION"] != "Portland"
    assert names[0]["PERSON"] in first.json()["releases"][0]["text"]
    # the same key file after a restart: the same pseudonyms
    again = release(make_client(toy_word_embeddings, pseudonym_key=key_file), entities={"operator": "pseudonym"})
    assert again.json()["releases"][0]["text"] == first.json()["releases"][0]["text"]
    # another key (the default: a fresh one per service): other pseudonyms
    other = release(make_client(toy_word_embeddings), entities={"operator": "pseudonym"})
    assert other.json()["releases"][0]["text"] != first.json()["releases"][0]["text"]
    for response in (first, second, again, client.get("/healthz"), client.get("/openapi.json")):
        assert KEY not in response.text and KEY[:12] not in response.text
    assert first.json()["entity_stage"]["options"]["key"].startswith("<secret sha256:")  # its digest only
    assert KEY not in caplog.text and KEY[:12] not in caplog.text
    assert KEY not in repr(client.app.state.settings) and KEY not in repr(client.app.state.service.__dict__)


@needs_stage
def test_one_stage_per_options_shared_by_requests(client):
    service = client.app.state.service
    for _ in range(2):
        release(client)
        release(client, mechanism="emp", parameters={"epsilon": 10})
    release(client, entities={"operator": "off"})
    operators = sorted(json.loads(key)["operator"] for key in service._stages)
    assert operators == ["off", "placeholder"], "one stage per distinct options"
    placeholder = next(stage for key, stage in service._stages.items() if '"placeholder"' in key)
    assert {id(m.stage) for m in service._mechanisms.values() if hasattr(m, "stage")} == {id(placeholder)}
    assert len(placeholder._memo) == 1, "the stage screened the text once, for both mechanisms"


@needs_stage
def test_upload_takes_the_entity_options_as_json(client):
    data = b'{"text": "Margaret Okafor lives in Portland."}\n{"text": "good market"}\n'
    response = client.post("/v1/sanitize/upload", files={"file": ("posts.jsonl", data)},
                           data={"mechanism": "redact", "entities": '{"operator": "drop"}'})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "Margaret" not in body["releases"][0]["text"] and body["releases"][1]["entities"] == []
    assert body["entity_stage"]["options"]["operator"] == "drop"
    default = client.post("/v1/sanitize/upload", files={"file": ("note.txt", TEXT.encode())},
                          data={"mechanism": "redact"})
    assert default.json()["releases"][0]["text"] == "Hi, I am <PERSON> from <LOCATION>."
    bad = client.post("/v1/sanitize/upload", files={"file": ("note.txt", TEXT.encode())},
                      data={"mechanism": "redact", "entities": '{"operator": "mask"}'})
    assert bad.status_code == 400 and "entities" in one_line(bad) and "operator" in one_line(bad)


@pytest.mark.parametrize("entities, status, says", [
    ({"operator": "mask"}, 422, "entities.operator"),
    ({"operator": "pseudonym", "scope": "paragraph"}, 422, "entities.scope"),
    ({"operator": "placeholder", "colour": "red"}, 422, "entities.colour"),
    ({"entity_types": []}, 400, "entities.entity_types is empty"),
    ({"entity_types": ["PERSON", "NO_SUCH_TYPE"]}, 400, "unknown entity types NO_SUCH_TYPE"),
])
def test_bad_entity_options_get_one_line(client, entities, status, says):
    if status == 400:  # these are the stage's own checks
        skip_without_entity_stage()
    response = release(client, entities=entities)
    assert response.status_code == status, response.text
    assert says in one_line(response)


def test_a_stage_that_is_not_installed_is_named_in_one_line(client, monkeypatch):
    import textveil.pii.detector as detector

    monkeypatch.setattr(detector, "unavailable", lambda: "the entity stage needs presidio_analyzer: run 'make demo' "
                                                         "(or pass --entities off to release without it)")
    response = release(client)  # the stage is on by default
    assert response.status_code == 400
    detail = one_line(response)
    assert "presidio_analyzer" in detail and '"operator": "off"' in detail and "--entities" not in detail
    assert release(client, entities={"operator": "off"}).status_code == 200  # off needs nothing
    health = client.get("/healthz").json()["entity_stage"]
    assert health["available"] is False and "presidio_analyzer" in health["reason"]


def test_the_schema_documents_the_entity_options(client):
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    request = components["SanitizeRequest"]["properties"]["entities"]
    assert "entity stage" in request["description"]
    options = components["EntityRequest"]
    assert options["properties"]["operator"]["enum"] == ["placeholder", "pseudonym", "drop", "off"]
    assert options["properties"]["operator"]["default"] == "placeholder"
    assert all(p.get("description") for p in options["properties"].values())
    health = client.get("/healthz").json()["entity_stage"]
    assert health["operators"] == ["placeholder", "pseudonym", "drop", "off"] and health["default"] == "placeholder"


def test_serve_reads_the_pseudonym_key_file_and_never_prints_it(tmp_path, monkeypatch, capsys):
    from conftest import run_cli

    import textveil.service as service
    from textveil.privacy.secrets import Secret

    seen = {}
    monkeypatch.setattr(service, "run_service", lambda host, port, settings: seen.update(settings=settings))
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    code, out, err = run_cli(["serve", "--pseudonym-key", str(key_file)], capsys, monkeypatch)
    assert code == 0, err
    assert seen["settings"].pseudonym_key == Secret(KEY) and KEY not in out + err
    assert KEY not in repr(seen["settings"])
    code, out, err = run_cli(["serve", "--pseudonym-key", str(tmp_path / "missing")], capsys, monkeypatch)
    assert code != 0 and "--pseudonym-key" in err and "not a readable" in err
