"""The local service (issue 13): every endpoint, every bad input, the security defaults, the
budget ledger through HTTP (nothing spent on a refused or failed request, a request_id spent
once), and texts never reaching the logs. Toy embeddings throughout: no test loads the default
384-d model."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the service needs fastapi (pip install -e .)")

from conftest import wait_until  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from textveil.errors import InvalidParameterError  # noqa: E402
from textveil.mechanisms.earth_movers import EarthMoversPrivacy  # noqa: E402
from textveil.privacy.ledger import BudgetLedger  # noqa: E402
from textveil.service import ServiceSettings, create_app, is_loopback, run_service  # noqa: E402
from textveil.service.release_service import text_digest  # noqa: E402
from textveil.service.server import check_bind  # noqa: E402

TOKEN = "t0ken-for-tests-0123456789abcdef"
TEXT = "The market rallied and stocks rose; investors said the bank was good."


def make_client(embeddings, **settings) -> TestClient:
    return TestClient(create_app(ServiceSettings(embeddings=embeddings, **settings)))


@pytest.fixture
def client(toy_word_embeddings) -> TestClient:
    return make_client(toy_word_embeddings)


@pytest.fixture
def ledger_path(tmp_path):
    path = tmp_path / "budget.sqlite"
    BudgetLedger(path).set_cap(25.0)
    return path


@pytest.fixture
def budgeted(toy_word_embeddings, ledger_path) -> TestClient:
    return make_client(toy_word_embeddings, ledger=ledger_path)


def sanitize(client: TestClient, texts=(TEXT,), epsilon=10, **extra):
    return client.post("/v1/sanitize", json={"texts": list(texts), "mechanism": "emp",
                                             "parameters": {"epsilon": epsilon}, **extra})


def one_line(response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail, detail
    return detail


# -- the endpoints --------------------------------------------------------------------------


def test_sanitize_returns_releases_changes_and_guarantees_in_words(client, toy_word_embeddings):
    response = sanitize(client, [TEXT, "Oil prices fell."], epsilon=2, seed=5)
    assert response.status_code == 200
    data = response.json()
    assert len(data["releases"]) == 2 and data["replayed"] is False and data["budget"] is None
    first = data["releases"][0]
    assert first["guarantee"]["epsilon"] == 2.0 and first["guarantee"]["mechanism"] == "emp"
    assert first["changed"], "at epsilon 2 on 8-d toy vectors some tokens change"
    assert all({"token", "from", "to"} <= set(change) for change in first["changed"])
    # the statement is the Guarantee's own, for each document
    assert data["guarantees"][0] == first["guarantee"]["statement"]
    assert "epsilon = 2 per token" in data["guarantees"][0]
    # the same seed gives the same release as the library does
    library = EarthMoversPrivacy(2, toy_word_embeddings, seed=5).sanitize_many([TEXT, "Oil prices fell."])
    assert [r["text"] for r in data["releases"]] == [r.text for r in library]


def test_requests_never_share_random_state(client):
    first = sanitize(client, epsilon=2, seed=11).json()["releases"]
    for _ in range(3):  # unseeded requests in between draw from fresh OS entropy
        assert sanitize(client, epsilon=2).status_code == 200
    again = sanitize(client, epsilon=2, seed=11).json()["releases"]
    assert first == again
    unseeded = {sanitize(client, epsilon=2).json()["releases"][0]["text"] for _ in range(4)}
    assert len(unseeded) > 1, "unseeded releases at epsilon 2 differ"
    service = client.app.state.service
    assert len(service._mechanisms) == 1, "one cached mechanism for one (name, parameters), whatever the seed"


def test_sanitising_runs_in_a_worker_thread(client, monkeypatch):
    seen = {}
    original = EarthMoversPrivacy.sanitize_many

    def spy(self, texts, progress=None):
        try:
            asyncio.get_running_loop()
            seen["loop"] = True
        except RuntimeError:
            seen["loop"] = False
        seen["thread"] = threading.current_thread().name
        return original(self, texts, progress=progress)

    monkeypatch.setattr(EarthMoversPrivacy, "sanitize_many", spy)
    assert sanitize(client).status_code == 200
    assert seen["loop"] is False, "sanitize_many ran on the event loop"


def test_mechanisms_lists_the_registry(client):
    from textveil.mechanisms.registry import MECHANISMS

    response = client.get("/v1/mechanisms")
    assert response.status_code == 200
    listed = {m["name"]: m for m in response.json()["mechanisms"]}
    assert list(listed) == MECHANISMS.names()
    emp = listed["emp"]
    assert emp["guarantee"] == "metric" and emp["swept"] == "epsilon" and emp["calibration"] is True
    assert {"epsilon", "layout", "seed"} <= {p["name"] for p in emp["parameters"]}
    assert emp["service"] == {"releases": True, "reason": None}
    assert listed["pivot"]["service"]["releases"] is False and "pivot encode" in listed["pivot"]["service"]["reason"]
    assert listed["erae"]["service"]["releases"] is False


def test_other_document_mechanisms_release_too(client):
    response = client.post("/v1/sanitize", json={"texts": ["mail me at ann@example.com"], "mechanism": "redact"})
    assert response.status_code == 200
    data = response.json()
    assert "ann@example.com" not in data["releases"][0]["text"]
    assert data["releases"][0]["guarantee"]["kind"] == "none" and "no formal guarantee" in data["guarantee_kind"]
    response = client.post("/v1/sanitize", json={"texts": ["good market"], "mechanism": "random", "seed": 1})
    assert response.status_code == 200 and response.json()["releases"][0]["guarantee"]["kind"] == "dp"


@pytest.mark.parametrize(("mechanism", "command"), [("pivot", "textveil pivot encode"), ("synth", "textveil synthesize")])
def test_corpus_level_mechanisms_are_refused_naming_their_command(client, mechanism, command):
    response = client.post("/v1/sanitize", json={"texts": ["good market"], "mechanism": mechanism})
    assert response.status_code == 400
    assert command in one_line(response)


def test_calibrate_gives_the_curve_for_the_slider(client):
    response = client.post("/v1/calibrate", json={"grid": [0.5, 50.0], "samples": 300, "draws": 5, "seed": 1})
    assert response.status_code == 200
    data = response.json()
    assert [p["epsilon"] for p in data["points"]] == [0.5, 50.0]
    low, high = data["points"]
    assert low["unchanged_fraction"] < high["unchanged_fraction"], "more epsilon, more words kept"
    assert low["distinct_substitutes"] > high["distinct_substitutes"]
    assert data["slider"] == {"min": 0.5, "max": 50.0} and data["embeddings"] == "toy-words"
    assert [c["field"] for c in data["curves"]] == ["unchanged_fraction", "distinct_substitutes"]
    default = client.post("/v1/calibrate", json={}).json()
    assert len(default["points"]) >= 5 and client.post("/v1/calibrate", json={}).json() == default  # cached
    on_text = client.post("/v1/calibrate", json={"text": TEXT, "grid": [10]}).json()
    assert on_text["tokens_from"] == "your text"


def test_calibrate_measures_syntf_by_releasing_sample_texts(client):
    """A mechanism without emp's word-by-word curve gets one measured through its own releases:
    at a tiny epsilon SynTF writes words uniformly from the vocabulary, at a large one the text's own."""
    body = {"mechanism": "syntf", "grid": [0.01, 60.0], "samples": 400, "draws": 2, "seed": 3}
    data = client.post("/v1/calibrate", json=body).json()
    assert data["mechanism"] == "syntf" and data["parameter"] == "epsilon"
    assert [c["field"] for c in data["curves"]] == ["words_from_text", "words_kept", "release_overlap"]
    low, high = data["points"]
    assert [low["epsilon"], high["epsilon"]] == [0.01, 60.0] and low["texts"] == 10 and low["draws"] == 2
    assert low["words_from_text"] < 0.5 < high["words_from_text"], "more epsilon, more of the release from the text"
    assert low["release_overlap"] < high["release_overlap"], "more epsilon, releases more alike"
    assert client.post("/v1/calibrate", json=body).json() == data  # seeded: cached, the same curve
    on_text = client.post("/v1/calibrate", json={**body, "text": TEXT, "parameters": {"rating": "similarity"}}).json()
    assert on_text["tokens_from"] == "your text" and on_text["points"][0]["tokens_sampled"] == len(TEXT.split())
    listed = {m["name"]: m for m in client.get("/v1/mechanisms").json()["mechanisms"]}
    assert listed["syntf"]["calibration"] is True and listed["random"]["calibration"] is False
    assert listed["erae"]["calibration"] is False  # no trained model loaded


@pytest.mark.parametrize("body", [{"mechanism": "random"}, {"mechanism": "pivot"}, {"mechanism": "erae"},
                                  {"grid": [-1.0]}, {"parameters": {"decode": "fuzzy"}}, {"mechanism": "nope"},
                                  {"parameters": {"epsilon": 3}}, {"parameters": {"layout": "keep"}},
                                  {"mechanism": "syntf", "parameters": {"rating": "loudness"}}])
def test_calibrate_refuses_what_it_cannot_measure(client, body):
    response = client.post("/v1/calibrate", json=body)
    assert response.status_code == 400
    one_line(response)


def test_healthz_and_the_pages(client):
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["ledger"] is False and health["token_required"] is False
    page = client.get("/")
    assert page.status_code == 200 and "textveil" in page.text and "/static/app.js" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    results = client.get("/results")
    assert results.status_code == 200 and "results.json" in results.text
    for asset in ("app.js", "common.js", "results.js", "style.css"):
        assert client.get(f"/static/{asset}").status_code == 200
    schema = client.get("/openapi.json").json()
    assert {"/v1/sanitize", "/v1/sanitize/upload", "/v1/mechanisms", "/v1/calibrate", "/v1/budget/{subject}",
            "/healthz"} <= set(schema["paths"])
    docs = client.get("/docs")  # Swagger UI from this service's own files: it works offline
    assert docs.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in docs.text
    assert "cdn" not in docs.text.lower() and "http://" not in docs.text and "https://" not in docs.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert client.get(f"/docs-assets/{asset}").status_code == 200


def test_upload_releases_each_jsonl_record(client):
    data = b'{"text": "good market", "id": 1}\n\n{"text": "bad bank"}\n'
    response = client.post("/v1/sanitize/upload", files={"file": ("posts.jsonl", data)},
                           data={"parameters": '{"epsilon": 10}', "seed": "3"})
    assert response.status_code == 200
    body = response.json()
    assert body["inputs"] == ["good market", "bad bank"] and len(body["releases"]) == 2
    text = client.post("/v1/sanitize/upload", files={"file": ("note.txt", b"\xef\xbb\xbfgood market")},
                       data={"parameters": '{"epsilon": 10}'})
    assert text.status_code == 200 and text.json()["inputs"] == ["good market"]  # the BOM is not text


# -- the budget ledger --------------------------------------------------------------------


def test_budget_spends_per_text_and_reports_what_is_left(budgeted, ledger_path):
    response = sanitize(budgeted, ["good market", "bad bank"], epsilon=10, subject="ann")
    assert response.status_code == 200
    data = response.json()
    assert data["budget"] == {"ann": 5.0} and data["spent"]["subjects"] == {"ann": 20.0}
    assert "metric epsilon per token" == data["spent"]["unit"]
    budget = budgeted.get("/v1/budget/ann").json()
    assert budget == {"subject": "ann", "dataset": "default", "spent": 20.0, "cap": 25.0, "remaining": 5.0}
    other = budgeted.get("/v1/budget/bob", params={"dataset": "elsewhere"}).json()
    assert other["spent"] == 0.0 and other["dataset"] == "elsewhere"
    per_text = sanitize(budgeted, ["good", "bad"], epsilon=2, subjects=["cy", "di"]).json()
    assert per_text["budget"] == {"cy": 23.0, "di": 23.0}


def test_a_spend_past_the_cap_is_refused_and_spends_nothing(budgeted, ledger_path):
    ledger = BudgetLedger(ledger_path)
    assert sanitize(budgeted, ["good market"], epsilon=20, subject="ann").status_code == 200
    before = (ledger.totals(), ledger.spends())
    response = sanitize(budgeted, ["good market"], epsilon=10, subject="ann")
    assert response.status_code == 409
    assert "cap of 25" in one_line(response)
    # two texts of one subject whose sum passes the cap: all or nothing
    assert sanitize(budgeted, ["good", "bad"], epsilon=3, subject="ann").status_code == 409
    assert (ledger.totals(), ledger.spends()) == before
    assert budgeted.get("/v1/budget/ann").json()["remaining"] == 5.0


def test_a_request_id_is_spent_once_and_answered_the_same(budgeted, ledger_path):
    first = sanitize(budgeted, ["good market", "oil prices fell"], epsilon=5, subject="ann", request_id="req-1")
    again = sanitize(budgeted, ["good market", "oil prices fell"], epsilon=5, subject="ann", request_id="req-1")
    assert first.status_code == again.status_code == 200
    assert again.json()["releases"] == first.json()["releases"]
    assert again.json()["guarantees"] == first.json()["guarantees"]
    assert again.json()["replayed"] is True and first.json()["replayed"] is False
    assert [s["amount"] for s in BudgetLedger(ledger_path).spends()] == [5.0, 5.0]
    assert again.json()["budget"] == {"ann": 15.0}


def test_ledger_and_subjects_go_together(client, budgeted):
    assert "no budget ledger" in one_line(sanitize(client, subject="ann"))
    assert "no budget ledger" in one_line(sanitize(client, request_id="r"))
    assert client.get("/v1/budget/ann").status_code == 404
    missing = sanitize(budgeted)
    assert missing.status_code == 400 and "give 'subject'" in one_line(missing)
    assert "one subject per text" in one_line(sanitize(budgeted, ["a", "b"], subjects=["x"]))
    assert "not both" in one_line(sanitize(budgeted, subject="x", subjects=["x"]))
    assert sanitize(budgeted, subject="*").status_code == 400
    no_epsilon = budgeted.post("/v1/sanitize", json={"texts": ["good"], "mechanism": "redact", "subject": "ann"})
    assert no_epsilon.status_code == 400 and "states no epsilon" in one_line(no_epsilon)


# -- bad input: one line, nothing spent ------------------------------------------------------


BAD_BODIES = [
    ({"texts": [""], "parameters": {"epsilon": 10}}, 400, "texts[0] is empty"),
    ({"texts": ["good", "  \n "], "parameters": {"epsilon": 10}}, 400, "texts[1] is empty"),
    ({"texts": [], "parameters": {"epsilon": 10}}, 422, "texts"),
    ({"texts": ["good"], "parameters": {"epsilon": -1}}, 400, "epsilon must be a finite number greater than 0"),
    ({"texts": ["good"], "parameters": {"epsilon": 0}}, 400, "greater than 0"),
    ({"texts": ["good"], "parameters": {"epsilon": "ten"}}, 400, "epsilon must be a number"),
    ({"texts": ["good"], "parameters": {}}, 400, "needs parameters.epsilon"),
    ({"texts": ["good"], "mechanism": "nope", "parameters": {"epsilon": 10}}, 400, "unknown mechanism 'nope'"),
    ({"texts": ["good"], "parameters": {"epsilon": 10, "colour": "red"}}, 400, "takes no parameter 'colour'"),
    ({"texts": ["good"], "parameters": {"epsilon": 10, "seed": 1}}, 400, "not in 'parameters'"),
    ({"texts": ["good"], "parameters": {"epsilon": 10}, "seed": -5}, 400, "seed"),
    ({"texts": ["good"], "epsilon": 10}, 422, "epsilon: Extra inputs are not permitted"),
    ({"texts": "good", "parameters": {"epsilon": 10}}, 422, "texts"),
]


@pytest.mark.parametrize(("body", "status", "says"), BAD_BODIES, ids=[says for _, _, says in BAD_BODIES])
def test_bad_input_gets_one_line_and_spends_nothing(budgeted, ledger_path, body, status, says):
    response = budgeted.post("/v1/sanitize", json={"subject": "ann", **body})
    assert response.status_code == status
    assert says in one_line(response)
    assert BudgetLedger(ledger_path).spends() == []


def test_invalid_utf8_is_refused_naming_the_byte(client):
    body = b'{"texts": ["good \xff market"], "parameters": {"epsilon": 10}}'
    response = client.post("/v1/sanitize", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert "not valid UTF-8" in one_line(response) and "0xff" in one_line(response)
    upload = client.post("/v1/sanitize/upload", files={"file": ("notes.txt", b"good \xfe market")},
                         data={"parameters": '{"epsilon": 10}'})
    assert upload.status_code == 400
    assert "notes.txt is not valid utf-8" in one_line(upload) and "byte offset 5" in one_line(upload)
    broken = client.post("/v1/sanitize", content=b'{"texts": ["go', headers={"Content-Type": "application/json"})
    assert broken.status_code == 422 and "not valid JSON" in one_line(broken)
    bad_record = client.post("/v1/sanitize/upload", files={"file": ("p.jsonl", b'{"body": "x"}\n')},
                             data={"parameters": '{"epsilon": 10}'})
    assert bad_record.status_code == 400 and "no field 'text'" in one_line(bad_record)


def test_oversized_bodies_and_texts_are_refused(toy_word_embeddings):
    client = make_client(toy_word_embeddings, max_body_bytes=2000, max_text_chars=100, max_texts=3)
    big = {"texts": ["good " * 1000], "parameters": {"epsilon": 10}}
    declared = client.post("/v1/sanitize", json=big)
    assert declared.status_code == 413 and "larger than this service takes (2,000 bytes)" in one_line(declared)

    def chunks():  # no Content-Length: the limit is counted on the streamed body
        for _ in range(10):
            yield b"x" * 500

    streamed = client.post("/v1/sanitize", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    # the limits on texts are in the schema (/openapi.json): a request over them does not fit it
    long_text = client.post("/v1/sanitize", json={"texts": ["good " * 30], "parameters": {"epsilon": 10}})
    assert long_text.status_code == 422 and "at most 100 characters per text" in one_line(long_text)
    many = client.post("/v1/sanitize", json={"texts": ["good"] * 4, "parameters": {"epsilon": 10}})
    assert many.status_code == 422 and "at most 3 per request" in one_line(many)
    long_sample = client.post("/v1/calibrate", json={"text": "good " * 30})
    assert long_sample.status_code == 422 and "--max-text-chars" in one_line(long_sample)
    # a file's texts are not in the schema: over the limits, 413
    upload = client.post("/v1/sanitize/upload", files={"file": ("big.txt", b"good " * 1000)},
                         data={"parameters": '{"epsilon": 10}'})
    assert upload.status_code == 413
    records = client.post("/v1/sanitize/upload", files={"file": ("many.jsonl", b'{"text": "good"}\n' * 4)},
                          data={"parameters": '{"epsilon": 10}', "entities": '{"operator": "off"}'})
    assert records.status_code == 413 and "at most 3 per request" in one_line(records)


# -- security defaults ------------------------------------------------------------------------


def test_the_token_is_checked_on_every_v1_route(toy_word_embeddings):
    client = make_client(toy_word_embeddings, api_token=TOKEN)
    requests = [("post", "/v1/sanitize", {"json": {"texts": ["good"], "parameters": {"epsilon": 10}}}),
                ("get", "/v1/mechanisms", {}), ("post", "/v1/calibrate", {"json": {"grid": [10]}}),
                ("get", "/v1/budget/ann", {}),
                ("post", "/v1/sanitize/upload", {"files": {"file": ("a.txt", b"good")},
                                                  "data": {"parameters": '{"epsilon": 10}'}})]
    for method, path, kwargs in requests:
        missing = getattr(client, method)(path, **kwargs)
        assert missing.status_code == 401 and "needs an API token" in one_line(missing), path
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = getattr(client, method)(path, headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"}, **kwargs)
        assert wrong.status_code == 401 and "wrong" in one_line(wrong), path
        basic = getattr(client, method)(path, headers={"Authorization": "Basic " + TOKEN}, **kwargs)
        assert basic.status_code == 401, path
        right = getattr(client, method)(path, headers={"Authorization": f"Bearer {TOKEN}"}, **kwargs)
        assert right.status_code in (200, 404), (path, right.text)  # 404: no ledger for /v1/budget
    assert client.get("/healthz").json()["token_required"] is True
    assert client.get("/").status_code == 200  # the page holds no data; it asks for the token
    # the token is checked before the body is read: an unauthenticated oversized body is 401, not 413
    assert client.post("/v1/sanitize", content=b"x" * (2 << 20)).status_code == 401


def test_settings_hide_the_token_and_refuse_weak_ones():
    settings = ServiceSettings(api_token=TOKEN, embeddings="default")
    assert TOKEN not in repr(settings)
    with pytest.raises(InvalidParameterError, match="at least 16 characters"):
        ServiceSettings(api_token="short")
    with pytest.raises(InvalidParameterError, match="concurrency"):
        ServiceSettings(concurrency=0)
    with pytest.raises(InvalidParameterError, match="name the origins"):
        ServiceSettings(cors_origins=("*",))


def test_a_non_loopback_host_needs_a_token(toy_word_embeddings, monkeypatch):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")
    open_settings = ServiceSettings(embeddings=toy_word_embeddings)
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        with pytest.raises(InvalidParameterError, match="without an API token"):
            run_service(host, 8765, open_settings)  # refused before anything listens
    check_bind("127.0.0.1", open_settings)
    check_bind("0.0.0.0", ServiceSettings(embeddings=toy_word_embeddings, api_token=TOKEN))


def test_serve_command_reads_the_token_and_never_prints_it(tmp_path, monkeypatch, capsys):
    from conftest import run_cli

    import textveil.service as service

    seen = {}
    monkeypatch.setattr(service, "run_service", lambda host, port, settings: seen.update(host=host, settings=settings))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    code, out, err = run_cli(["serve", "--host", "0.0.0.0", "--token-file", str(token_file), "--port", "9999",
                              "--cors-origin", "http://localhost:3000"], capsys, monkeypatch)
    assert code == 0, err
    assert seen["settings"].api_token == TOKEN and seen["settings"].cors_origins == ("http://localhost:3000",)
    assert TOKEN not in out + err
    monkeypatch.setenv("TEXTVEIL_API_TOKEN", TOKEN)
    code, out, err = run_cli(["serve"], capsys, monkeypatch)
    assert code == 0 and seen["settings"].api_token == TOKEN and TOKEN not in out + err
    monkeypatch.delenv("TEXTVEIL_API_TOKEN")
    monkeypatch.setattr(service, "run_service", run_service)
    code, out, err = run_cli(["serve", "--host", "0.0.0.0"], capsys, monkeypatch)
    assert code == 2 and "without an API token" in err


def test_no_cors_unless_origins_are_configured(toy_word_embeddings):
    origin = {"Origin": "http://elsewhere.example"}
    plain = make_client(toy_word_embeddings).get("/v1/mechanisms", headers=origin)
    assert "access-control-allow-origin" not in plain.headers
    client = make_client(toy_word_embeddings, cors_origins=("http://elsewhere.example",), api_token=TOKEN)
    preflight = client.options("/v1/sanitize", headers={**origin, "Access-Control-Request-Method": "POST",
                                                        "Access-Control-Request-Headers": "authorization"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "http://elsewhere.example"
    answered = client.get("/v1/mechanisms", headers={**origin, "Authorization": f"Bearer {TOKEN}"})
    assert answered.headers["access-control-allow-origin"] == "http://elsewhere.example"
    other = client.get("/v1/mechanisms", headers={"Origin": "http://evil.example", "Authorization": f"Bearer {TOKEN}"})
    assert "access-control-allow-origin" not in other.headers


def test_releases_at_once_share_the_cpus_out(toy_word_embeddings):
    from textveil.machine import usable_cpus

    assert make_client(toy_word_embeddings).app.state.service.slots.limit == usable_cpus()  # one per CPU
    assert make_client(toy_word_embeddings).app.state.service.decode_threads == 1
    assert make_client(toy_word_embeddings, concurrency=1).app.state.service.decode_threads == usable_cpus()


def test_a_full_service_answers_503_with_retry_after(toy_word_embeddings):
    client = make_client(toy_word_embeddings, concurrency=1, queue_seconds=0.05)
    slots = client.app.state.service.slots
    assert asyncio.run(slots.acquire(timeout=0))  # a release in flight
    try:
        response = sanitize(client)
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        assert "busy" in one_line(response)
    finally:
        slots.release()
    assert sanitize(client).status_code == 200


def test_a_slow_release_times_out_with_504_and_spends_nothing(toy_word_embeddings, ledger_path, monkeypatch):
    original = EarthMoversPrivacy.sanitize_many

    def slow(self, texts, progress=None):
        time.sleep(0.6)
        return original(self, texts, progress=progress)

    monkeypatch.setattr(EarthMoversPrivacy, "sanitize_many", slow)
    app = create_app(ServiceSettings(embeddings=toy_word_embeddings, ledger=ledger_path, request_timeout=0.1))
    with TestClient(app) as client:
        response = sanitize(client, subject="ann")
        assert response.status_code == 504 and "time limit" in one_line(response)
        wait_until(lambda: not app.state.service.slots.busy, "the abandoned release")  # its slot is given back
    assert BudgetLedger(ledger_path).spends() == []


# -- texts never reach the logs ---------------------------------------------------------------


def test_texts_never_reach_the_logs(toy_word_embeddings, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    secret = "Zyxwvut Qwertyish confided the merger to Plumbottom on Tuesday"
    client = make_client(toy_word_embeddings, ledger=tmp_path / "uncapped.sqlite", max_text_chars=200)
    assert sanitize(client, [secret], subject="author-7").status_code == 200
    assert client.post("/v1/sanitize/upload", files={"file": ("s.jsonl", ('{"text": "%s"}\n' % secret).encode())},
                       data={"parameters": '{"epsilon": 10}', "subject": "author-7"}).status_code == 200
    assert sanitize(client, [secret], epsilon=-1, subject="author-7").status_code == 400
    assert sanitize(client, [secret * 5], subject="author-7").status_code == 422  # over --max-text-chars
    assert client.post("/v1/calibrate", json={"text": secret}).status_code == 200
    assert client.get("/v1/budget/author-7").status_code == 200

    def failing(self, texts, progress=None):
        raise RuntimeError(f"cannot release {texts[0]}")  # a bug whose message quotes the text

    monkeypatch.setattr(EarthMoversPrivacy, "sanitize_many", failing)
    broken = sanitize(client, [secret], subject="author-7")
    assert broken.status_code == 500 and secret not in broken.text and "RuntimeError" in broken.text
    logged = caplog.text
    assert "sanitize" in logged and text_digest(secret) in logged and "RuntimeError" in logged
    for word in ("Zyxwvut", "Qwertyish", "Plumbottom", "merger"):
        assert word not in logged and word.lower() not in logged
    served = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("httpx"))  # not the client's
    assert "author-7" not in served, "a subject in the path is logged by its route template only"


def test_a_trained_model_is_loaded_once_and_released_with(toy_word_embeddings, tmp_path):
    """ER-AE needs its trained model: refused without `serve --model`, released with it."""
    from textveil.mechanisms.autoencoder import ERAE

    texts = ["the market rallied today", "the bank shares fell", "the economy grew this quarter"] * 4
    folder = ERAE(5.0, toy_word_embeddings, hidden=16, layers=1, max_length=8, epochs=1, pretrain_epochs=1, batch_size=4, seed=0,
                  device="cpu").train(texts).save(tmp_path / "erae")
    body = {"texts": ["the bank rallied"], "mechanism": "erae", "parameters": {"epsilon": 3}}
    refused = make_client(toy_word_embeddings).post("/v1/sanitize", json=body)
    assert refused.status_code == 400 and "--model" in refused.json()["detail"]
    served = make_client(toy_word_embeddings, models=(folder,))
    response = served.post("/v1/sanitize", json=body)
    assert response.status_code == 200, response.text
    released = response.json()["releases"][0]
    assert released["guarantee"]["kind"] == "dp" and released["guarantee"]["epsilon"] == 3.0
    assert len(released["text"].split()) == 3
    listed = {m["name"]: m["service"]["releases"] for m in served.get("/v1/mechanisms").json()["mechanisms"]}
    assert listed["erae"] is True and listed["aedp"] is False
    # and its slider gets a curve, measured through the loaded model's own releases
    curve = served.post("/v1/calibrate", json={"mechanism": "erae", "grid": [1.0, 50.0], "samples": 80, "seed": 2})
    assert curve.status_code == 200, curve.text
    assert [p["epsilon"] for p in curve.json()["points"]] == [1.0, 50.0]
    assert all(0 <= p["words_from_text"] <= 1 for p in curve.json()["points"])


# -- a language model's paraphrase, served -------------------------------------------------------


def test_paraphrase_is_offered_and_released_with_the_served_language_model(toy_word_embeddings, tiny_lm_folder,
                                                                           tmp_path):
    """``serve --model FOLDER`` with a language model: paraphrase and restyle are offered with it
    (a request names it by its folder's name, never a path of its own), release with one copy of
    it loaded for the process, and a paraphrase answers with its Guarantee and spends epsilon * L."""
    from textveil.mechanisms.paraphrase import Paraphrase

    ledger = tmp_path / "budget.sqlite"
    served = make_client(toy_word_embeddings, models=(tiny_lm_folder,), ledger=ledger)
    listed = {m["name"]: m for m in served.get("/v1/mechanisms").json()["mechanisms"]}
    for name in ("paraphrase", "restyle"):
        assert listed[name]["service"] == {"releases": True, "reason": None}
        model = next(p for p in listed[name]["parameters"] if p["name"] == "model")
        assert model["default"] == tiny_lm_folder.name and model["choices"][0] == tiny_lm_folder.name
        assert str(tiny_lm_folder) not in json.dumps(model)  # the server's paths stay on the server
        assert listed[name]["calibration"] is False and "textveil evaluate" in listed[name]["calibration_note"]
    assert listed["paraphrase"]["guarantee"] == "dp" and listed["restyle"]["guarantee"] == "none"
    texts = ["The market rallied on Friday.", "Oil prices fell in London."]
    body = {"texts": texts, "mechanism": "paraphrase", "parameters": {"epsilon": 2, "max_new_tokens": 6}, "seed": 3,
            "subject": "ann"}
    response = served.post("/v1/sanitize", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    library = Paraphrase(2.0, max_new_tokens=6, model=str(tiny_lm_folder), seed=3).sanitize_many(texts)
    assert [r["text"] for r in data["releases"]] == [r.text for r in library]
    for record, statement in zip(data["releases"], data["guarantees"]):
        assert record["guarantee"]["kind"] == "dp" and record["guarantee"]["document_epsilon"] == 12.0
        assert statement == record["guarantee"]["statement"] and "(12)-differentially private" in statement
    assert data["parameters"]["model"] == tiny_lm_folder.name
    assert data["spent"] == {"unit": "dp epsilon per document", "subjects": {"ann": 24.0}}
    assert BudgetLedger(ledger).spent("ann") == 24.0
    restyled = served.post("/v1/sanitize", json={"texts": texts, "mechanism": "restyle", "subject": "ann",
                                                 "parameters": {"model": tiny_lm_folder.name, "max_new_tokens": 4}})
    assert restyled.status_code == 400 and "states no epsilon" in one_line(restyled)  # a ledger cannot count it
    for asked in (str(tmp_path), "/etc/passwd", "other-model"):
        refused = served.post("/v1/sanitize", json={**body, "parameters": {"epsilon": 2, "model": asked}})
        assert refused.status_code == 400 and "not offered by this service" in one_line(refused)
    # one copy of the model for the process, whatever the parameters, seeds or mechanism
    plain = make_client(toy_word_embeddings, models=(tiny_lm_folder,))
    for parameters, seed in (({"epsilon": 2, "max_new_tokens": 4}, 1), ({"epsilon": 5, "max_new_tokens": 4}, None)):
        answer = plain.post("/v1/sanitize", json={"texts": texts, "mechanism": "paraphrase", "parameters": parameters,
                                                  "seed": seed})
        assert answer.status_code == 200, answer.text
    answer = plain.post("/v1/sanitize", json={"texts": texts, "mechanism": "restyle",
                                              "parameters": {"max_new_tokens": 4}})
    assert answer.status_code == 200 and answer.json()["releases"][0]["guarantee"]["kind"] == "none"
    service = plain.app.state.service
    assert len(service._mechanisms) == 3 and len(service._language_models) == 1
    assert len({id(mechanism.language_model) for mechanism in service._mechanisms.values()}) == 1


def test_the_offered_language_models_are_loaded_and_warmed_at_start_up(toy_word_embeddings, tiny_lm_folder,
                                                                      monkeypatch):
    """Before the service listens, each offered language model is loaded and writes one short
    text (engine, template cache, output vocabulary built); /healthz names the ready ones, and a
    first request loads nothing."""
    served = make_client(toy_word_embeddings, models=(tiny_lm_folder,))
    service = served.app.state.service
    assert served.get("/healthz").json()["language_models_ready"] == []
    monkeypatch.setattr(service, "offered_language_models", lambda: {tiny_lm_folder.name: str(tiny_lm_folder)})
    assert service.load_language_models() == [tiny_lm_folder.name]
    assert served.get("/healthz").json()["language_models_ready"] == [tiny_lm_folder.name]
    loaded, built = dict(service._language_models), len(service._mechanisms)
    assert len(loaded) == 1 and built == 1
    answer = served.post("/v1/sanitize", json={"texts": ["The market rallied."], "mechanism": "paraphrase",
                                               "parameters": {"epsilon": 2, "max_new_tokens": 4}})
    assert answer.status_code == 200, answer.text
    assert service._language_models == loaded  # the request found the model loaded
