"""The site in a real headless browser (Debian's chromium, driven by Playwright): filters, version picker,
search, dark mode, keyboard navigation, and zero axe-core violations."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .site_fixture import serve

# Debian's chromium here and in CI; GOTCHAS_CHROMIUM names another (GitHub's runners have google-chrome).
CHROMIUM = os.environ.get("GOTCHAS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("no chromium here (CI installs it: .ci/run)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
    "playwright.sync_api", fromlist=["sync_playwright"])

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def base_url(built_site):
    _, out = built_site
    with serve(out) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()
    assert errors == [], errors  # no script error, no CSP violation


def axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def violations(page) -> list[dict]:
    page.evaluate(axe_source())  # evaluated over the devtools protocol, so the page's CSP does not apply
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "nodes": [n["target"] for n in v["nodes"]][:3]} for v in result["violations"]]


@pytest.mark.parametrize("path", ["", "entries/ops-example/", "concepts/prefix-caching/", "engines/vllm/0.2.0/",
                                  "search/", "engines/vllm/"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_accessibility_violations(page, base_url, path, scheme):
    page.emulate_media(color_scheme=scheme)
    page.goto(base_url + path)
    assert violations(page) == []


def test_live_filters(page, base_url):
    page.goto(base_url)
    rows = page.locator("#entries-table tbody tr")
    assert rows.count() == 3
    page.select_option("#filter-scheme", "config")
    visible = [r for r in rows.all() if r.is_visible()]
    assert [r.locator("a").first.inner_text() for r in visible] == ["Prefix caching is on by default and costs unique prompts"]
    assert page.locator("#filter-count").inner_text() == "1 of 3 entries shown"
    page.select_option("#filter-scheme", "")
    page.select_option("#filter-concept", "preemption")
    assert len([r for r in rows.all() if r.is_visible()]) == 2
    page.select_option("#filter-concept", "")
    page.select_option("#filter-status", "changed")
    assert len([r for r in rows.all() if r.is_visible()]) == 0


def test_filters_without_javascript_are_plain_lists(browser, base_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(base_url)
    assert not page.locator("#filters").is_visible()
    assert page.locator("nav.browse a[href='schemes/config/']").is_visible()
    page.locator("summary", has_text="vLLM releases").click()
    page.locator("a[href='engines/vllm/0.2.0/']").click()
    assert page.locator("h1").inner_text() == "Gotchas in vLLM 0.2.0"
    context.close()


def test_version_picker_reaches_the_release_in_two_clicks(page, base_url):
    page.goto(base_url)
    page.select_option("#picker-engine", "vllm")
    page.select_option("#picker-version", "0.2.0")
    page.click("#version-picker button[type=submit]")
    page.wait_for_url(base_url + "engines/vllm/0.2.0/")
    bite = page.locator("#bite").locator("xpath=..")
    assert "An example gotcha that is well-formed" in bite.inner_text()
    assert "pkg/sched.py:4" in bite.inner_text()


@pytest.mark.parametrize("query,expected", [
    ("--enable-prefix-caching", "Prefix caching is on by default and costs unique prompts"),
    ("max_num_seqs", "Prefix caching is on by default and costs unique prompts"),
    ("vllm:num_preemptions", "An example gotcha that is well-formed"),
    ("latency", "An example gotcha that is well-formed"),
])
def test_search_finds_identifiers_as_written(page, base_url, query, expected):
    page.goto(base_url + "search/")
    page.fill("#search-input", query)
    page.wait_for_function("q => document.getElementById('search-status').textContent.includes(q)", arg=query)
    first = page.locator("#search-results li a").first
    assert first.inner_text() == expected
    first.click()
    assert page.locator("h1").inner_text() == expected


def test_dark_mode_follows_the_system_and_toggles(page, base_url):
    page.emulate_media(color_scheme="dark")
    page.goto(base_url)
    background = "getComputedStyle(document.body).backgroundColor"
    dark = page.evaluate(background)
    assert page.get_attribute("#theme-toggle", "aria-pressed") == "true"
    page.click("#theme-toggle")
    assert page.evaluate(background) != dark
    assert page.get_attribute("#theme-toggle", "aria-pressed") == "false"
    page.reload()
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "light"


def test_keyboard_navigation(page, base_url):
    page.goto(base_url + "entries/ops-example/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    assert page.evaluate("getComputedStyle(document.activeElement).left") != "-9999px"  # visible when focused
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.closest('main') !== null")
    assert focused
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"


def test_not_found_page_is_styled_from_the_base(browser, built_site):
    _, out = built_site
    text = (out / "404.html").read_text()
    assert 'href="https://gotchas.example/assets/style.css"' in text


@pytest.fixture(scope="module")
def real_base_url(real_site):
    with serve(real_site) as url:
        yield url


def test_real_site_answers_which_gotchas_bite_a_release_in_two_clicks(page, real_base_url):
    page.goto(real_base_url)
    page.select_option("#picker-engine", "vllm")
    page.select_option("#picker-version", "0.22.0")
    page.click("#version-picker button[type=submit]")  # the second click
    page.wait_for_url(real_base_url + "engines/vllm/0.22.0/")
    holds = page.locator("#bite").locator("xpath=..").inner_text()
    from verifier.entries import load_entry

    from .conftest import REPO

    seed = load_entry(REPO / "gotchas" / "ops-kv-cache-full-preempts-and-recomputes.md").entry
    assert seed.title in holds
    assert "vllm/v1/core/sched/scheduler.py:" in holds
    assert violations(page) == []


@pytest.mark.parametrize("path", ["", "entries/ops-kv-cache-full-preempts-and-recomputes/"])
def test_real_pages_have_no_accessibility_violations(page, real_base_url, path):
    page.goto(real_base_url + path)
    assert violations(page) == []
