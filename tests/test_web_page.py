"""The web page in a real browser: headless Chromium (Debian's) driven by Playwright against a
real uvicorn server on a free 127.0.0.1 port, toy embeddings and a budget ledger behind it.

A screenshot of the released page is saved under the test's tmp folder, and copied to
``docs/results/service/page.png`` when ``TEXTVEIL_KEEP_SCREENSHOT=1``. Skipped, with the
reason, where Playwright or Chromium is missing.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from conftest import CHROMIUM_MISSING, REPO_ROOT, find_chromium, wait_until

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
uvicorn = pytest.importorskip("uvicorn", reason="uvicorn is not installed (pip install -e .)")

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=CHROMIUM_MISSING)

TEXT = ("The market rallied on Friday and stocks rose, the analyst said; investors in London and Tokyo bought "
        "gold, oil and the dollar as inflation fell.")
RESULTS = REPO_ROOT / "docs" / "results" / "paper001-c50-bbc-release-aware" / "results.json"  # committed with the project


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(toy_word_embeddings, tmp_path_factory):
    """A real uvicorn server, in a thread, on a free loopback port; yields its base URL."""
    from textveil.privacy.ledger import BudgetLedger
    from textveil.service import ServiceSettings, create_app

    ledger = tmp_path_factory.mktemp("ledger") / "budget.sqlite"
    BudgetLedger(ledger).set_cap(100.0)
    app = create_app(ServiceSettings(embeddings=toy_word_embeddings, ledger=ledger))
    port = free_port()
    instance = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    wait_until(lambda: instance.started or not thread.is_alive(), "the uvicorn server's start")
    assert instance.started, "the uvicorn server stopped before it started"
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser(chromium_browser):
    return chromium_browser


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(server + "/")
    opened.wait_for_selector("body[data-ready=true]")
    yield opened
    context.close()
    assert not errors, f"the page raised: {errors}"


def test_the_page_releases_text_with_the_changed_words_highlighted(page, tmp_path):
    page.wait_for_selector("#curve path.unchanged")  # the calibration curve beside the slider
    assert page.is_visible("#ledger-fields")  # the service keeps a ledger: the page asks for a subject
    page.fill("#text", TEXT)
    page.fill("#subject", "author-1")
    page.locator("#slider").fill("5")
    assert "At epsilon 5" in page.inner_text("#reading")
    page.click("details summary")
    page.fill("#seed", "3")
    page.select_option("#entities", "off")  # the mechanism alone: every changed word shows in both texts
    with page.expect_response(lambda r: r.url.endswith("/v1/sanitize")) as answered:
        page.click("#release")
    assert answered.value.request.post_data_json["entities"] == {"operator": "off"}
    response = answered.value.json()
    page.wait_for_selector("#released mark")
    changed = response["releases"][0]["changed"]
    marks = page.locator("#released mark")
    assert marks.count() == len(changed) > 0
    assert sorted(m.lower() for m in marks.all_inner_texts()) == sorted(c["to"].lower() for c in changed)
    assert page.locator("#original mark").count() == len(changed)
    assert page.inner_text("#released") == response["releases"][0]["text"]
    assert "epsilon = 5 per token" in page.inner_text("#guarantee")
    assert "entity stage: off" in page.inner_text("#entity-summary")
    assert "author-1" in page.inner_text("#budget")
    shot = tmp_path / "page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("TEXTVEIL_KEEP_SCREENSHOT") == "1":
        kept = REPO_ROOT / "docs" / "results" / "service" / "page.png"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, kept)
    with page.expect_download() as downloaded:
        page.click("#download-json")
    saved = json.loads(Path(downloaded.value.path()).read_text(encoding="utf-8"))
    assert saved["releases"] == response["releases"]


def test_the_page_polishes_the_release_when_asked(page):
    """The box asks the service to polish (``then: ["polish"]``); unticked, nothing is asked. Where
    the service cannot polish (no language model), the box is off and the note says why."""
    page.fill("#text", "The market rallied on Friday and stocks rose.")
    page.fill("#subject", "author-polish")
    page.select_option("#entities", "off")
    with page.expect_response(lambda r: r.url.endswith("/v1/sanitize")) as answered:
        page.click("#release")
    assert answered.value.request.post_data_json["then"] == []
    health = page.evaluate("() => fetch('/healthz').then((r) => r.json())")
    if not health["polish"]["available"]:
        assert page.is_disabled("#polish") and health["polish"]["reason"] in page.inner_text("#polish-note")
        return
    page.check("#polish")
    with page.expect_response(lambda r: r.url.endswith("/v1/sanitize"), timeout=120_000) as answered:
        page.click("#release")
    assert answered.value.request.post_data_json["then"] == ["polish"]
    response = answered.value.json()
    page.wait_for_function("document.querySelector('#summary').textContent.includes('polished')")
    assert page.locator("#released mark").count() == 0  # written anew: no word lines up with a change
    assert page.inner_text("#released") == response["releases"][0]["text"]
    assert "Post-processing, which costs no privacy: polish:" in page.inner_text("#guarantee")


def test_the_page_highlights_the_replaced_entities_in_the_original(page):
    """The default entity stage (placeholders) before the mechanism: the original shows each
    replaced entity at the response's offsets, its title naming the type and the replacement,
    and the stage's summary line sits beside the guarantee."""
    text = "Hi, I am Margaret Okafor from Portland."
    page.wait_for_selector("#curve path.unchanged")
    assert page.input_value("#entities") == "placeholder"  # on by default
    page.fill("#text", text)
    page.fill("#subject", "author-4")
    with page.expect_response(lambda r: r.url.endswith("/v1/sanitize")) as answered:
        page.click("#release")
    response = answered.value.json()
    entities = response["releases"][0]["entities"]
    assert {e["type"] for e in entities} >= {"PERSON", "LOCATION"}
    page.wait_for_selector("#original mark.entity")
    marks = page.locator("#original mark.entity")
    assert marks.count() == len(entities)
    assert marks.all_inner_texts() == [text[e["start"]:e["end"]] for e in entities]
    assert "Margaret Okafor" in marks.all_inner_texts() and "Portland" in marks.all_inner_texts()
    titles = [marks.nth(i).get_attribute("title") for i in range(marks.count())]
    assert all(t.startswith(f"{e['type']} \u2192 {e['replacement']}") for t, e in zip(titles, entities))
    assert page.inner_text("#original") == text  # the original, whole: the highlights only wrap it
    assert "Margaret" not in page.inner_text("#released") and "Okafor" not in page.inner_text("#released")
    assert page.inner_text("#entity-summary") == response["entity_stage"]["summary"] + "."
    assert "entity stage (placeholder): replaced" in page.inner_text("#entity-summary")
    assert "entity stage" in page.inner_text("#guarantee").lower()


def test_the_page_draws_syntfs_curve_measured_from_its_releases(page):
    page.wait_for_selector("#curve path.unchanged")  # emp's first
    with page.expect_response(lambda r: r.url.endswith("/v1/calibrate")) as answered:
        page.select_option("#mechanism", "syntf")
    assert answered.value.json()["mechanism"] == "syntf"
    page.wait_for_function("document.querySelector('#curve-caption').textContent.includes('taken from its text')")
    assert page.locator("#curve path.substitutes").count() == 1
    page.locator("#slider").fill("20")
    reading = page.inner_text("#reading")
    assert "At epsilon 20" in reading and "come from its text" in reading


def test_the_page_releases_an_uploaded_jsonl_file(page):
    records = b'{"text": "Oil prices fell and the dollar rose."}\n{"text": "Investors said the bank was good."}\n'
    page.set_input_files("#file", files=[{"name": "posts.jsonl", "mimeType": "application/x-ndjson",
                                          "buffer": records}])
    page.fill("#subject", "author-2")
    page.click("#release")
    page.wait_for_selector("#document-picker:not([hidden])")
    assert page.locator("#document option").count() == 2
    assert page.inner_text("#original") == "Oil prices fell and the dollar rose."
    page.select_option("#document", "1")
    assert page.inner_text("#original") == "Investors said the bank was good."


def test_the_page_shows_a_bad_input_in_one_line(page):
    page.fill("#text", "   ")
    page.fill("#subject", "author-3")
    page.click("#release")
    page.wait_for_selector("#status.error")
    assert "texts[0] is empty" in page.inner_text("#status")


def test_the_results_page_draws_the_tables_and_the_risk_utility_map(browser, server):
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(server + "/results")
    page.wait_for_selector("body[data-ready=true]")
    page.set_input_files("#results-file", str(RESULTS))
    page.wait_for_selector("svg.risk-utility-map")
    tasks = list(results["points"][0]["utility"])
    assert page.locator("svg.risk-utility-map").count() == len(tasks)
    assert page.locator("#table-risk tbody tr").count() == len(results["points"])
    # the budget beside the risk: a file written before it was kept says so, never a made-up number
    assert "epsilon per document: median (largest)" in page.inner_text("#table-risk thead")
    assert "not recorded" in page.inner_text("#table-risk tbody")
    assert page.locator("#table-utility tbody tr").count() == len(results["points"])
    assert "risk: best of all" in page.inner_text("#legend")
    # a measure whose stored description already says which way is better is not told it twice
    stated = copy.deepcopy(results)
    for point in stated["points"]:
        for measure in point["utility"].values():
            direction = "higher is better" if measure["higher_is_better"] else "lower is better"
            measure["metric"] = f"{measure['metric']} ({direction})"
    page.set_input_files("#results-file", files=[{"name": "stated.json", "mimeType": "application/json",
                                                  "buffer": json.dumps(stated).encode()}])
    page.locator("#table-utility thead", has_text="is better))").wait_for()  # the page's CSP forbids eval
    header = page.inner_text("#table-utility thead")
    assert header.count("is better") == len(tasks) and "is better), " not in header
    page.set_input_files("#results-file", files=[{"name": "x.json", "mimeType": "application/json",
                                                  "buffer": b'{"not": "results"}'}])
    page.wait_for_selector("#results-status.error")
    assert "not a textveil results.json" in page.inner_text("#results-status")
    context.close()


def test_the_api_page_draws_every_route_offline(browser, server):
    """/docs is Swagger UI from the service's own files: every request the page makes goes to
    the service (none to a CDN), and it lists the /v1 routes."""
    context = browser.new_context()
    page = context.new_page()
    elsewhere = []
    page.on("request", lambda request: None if request.url.startswith(server) else elsewhere.append(request.url))
    page.goto(server + "/docs")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/v1/sanitize" in path for path in paths) and any("/healthz" in path for path in paths)
    assert elsewhere == []
    context.close()
