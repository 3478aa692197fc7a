"""The documentation site: ``mkdocs build --strict`` succeeds without a single warning (no broken
link or anchor, no unresolved cross-reference, no docstring the API reference cannot parse), the
pages a newcomer needs are there, and two of them render in headless Chromium.

The site is built once per session into a temporary folder (conftest.py's ``site``, about 15 s on
2 cores). Skipped, with the fix, where MkDocs is not installed; the browser test skips where
Playwright or Chromium is missing (the launch is conftest.py's ``chromium_browser``).
"""

from __future__ import annotations


import pytest

from conftest import NEEDS_MKDOCS

pytestmark = NEEDS_MKDOCS


def test_the_site_builds_strictly_with_the_pages_a_newcomer_needs(site):
    for page in ("index.html", "getting-started.html", "guide/releasing.html", "choosing-a-mechanism.html",
                 "mechanisms/index.html", "results/index.html", "reference/index.html"):
        assert (site / page).is_file(), f"{page} is missing from the site"
    for name in ("emp", "syntf", "random", "erae", "aedp", "paraphrase", "restyle", "pivot", "synth", "redact",
                 "translate"):
        assert (site / "mechanisms" / f"{name}.html").is_file(), f"the {name} mechanism has no page"


def test_the_mechanism_pages_carry_the_registrys_parameters(site):
    emp = (site / "mechanisms" / "emp.html").read_text(encoding="utf-8")
    assert "keep_stop_words" in emp and "textveil.mechanisms.earth_movers.EarthMoversPrivacy" in emp
    assert "textveil-mechanism-parameters" not in emp  # the hook replaced its marker


def test_the_api_reference_is_rendered_from_the_docstrings(site):
    privacy = (site / "reference" / "privacy.html").read_text(encoding="utf-8")
    assert 'id="textveil.privacy.guarantee.Guarantee"' in privacy
    assert "The guarantee of one released document" in privacy  # Guarantee's docstring
    # the docstrings' doctests are code blocks (docs/hooks/griffe_docstrings.py), not nested blockquotes
    assert '<span class="gp">&gt;&gt;&gt; </span>' in privacy
    for page in sorted((site / "reference").glob("*.html")):
        assert "<blockquote>" not in page.read_text(encoding="utf-8"), f"{page.name} holds a blockquote"


def test_the_cli_reference_lists_every_command_with_its_help(site):
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert 'id="textveil-sanitize"' in cli and "Usage: textveil sanitize" in cli
    for command in ("compare", "release", "serve", "audit", "budget set-cap", "pivot encode"):
        assert f"textveil {command}" in cli


@pytest.fixture(scope="module")
def browser(chromium_browser):
    return chromium_browser


@pytest.mark.parametrize(("path", "title"), [("index.html", "textveil"),
                                             ("mechanisms/emp.html", "emp: Earth Mover's privacy - textveil")])
def test_pages_render_in_a_browser_with_the_navigation_and_nothing_from_elsewhere(browser, served, path, title):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    elsewhere: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: request.url.startswith(served) or elsewhere.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{served}/{path}")
    page.wait_for_load_state("networkidle")
    assert page.title() == title
    assert "Mechanisms" in page.locator("nav.md-tabs").inner_text()  # the tabs across the top
    assert "Mechanisms" in page.locator("nav.md-nav--primary").first.text_content()  # the side navigation
    assert page.locator("article h1").first.is_visible()
    # the theme's own stylesheet applied: the header is coloured, not an unstyled page
    assert page.locator("header.md-header").evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    page.close()
    assert not elsewhere, f"the page fetched from outside the site: {elsewhere}"
    assert not errors, f"the page raised: {errors}"
