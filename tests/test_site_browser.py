"""The site in a real headless browser (Debian's chromium, driven by Playwright): filters, the release form,
search, dark mode, keyboard navigation, zero axe-core violations; and on the real KB, each reader's journey at
1280 and 360 px, light and dark: two actions to a release's answer, search rankings, no page wider than the
viewport, the legend one click from a badge."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from .site_fixture import CHROMIUM, serve

if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("no chromium here (CI installs it: .ci/run)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
    "playwright.sync_api", fromlist=["sync_playwright"])



#: The search has answered `q` from the whole documents (not only from search/head.json).
SEARCHED = ("q => { const t = document.getElementById('search-status').textContent; "
            "return t.includes(q) && !t.includes('searching the whole text'); }")


@pytest.fixture(scope="module")
def base_url(built_site):
    _, out = built_site
    with serve(out) as url:
        yield url


@pytest.fixture
def page(browser):
    yield from _watched(browser, viewport={"width": 1200, "height": 900})


def _watched(browser, **context_options):
    """A page in a new context; after the test, no script error and no CSP violation may have been logged."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()
    assert errors == [], errors


def axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def violations(page) -> list[dict]:
    page.evaluate(axe_source())  # evaluated over the devtools protocol, so the page's CSP does not apply
    # with the rule that a control's accessible name contains its visible text (WCAG 2.5.3), which axe keeps off
    # by default as experimental: a "more" link named "The whole workaround of ..." failed it
    result = page.evaluate("axe.run(document, {resultTypes: ['violations'], "
                           "rules: {'label-content-name-mismatch': {enabled: true}, 'target-size': {enabled: true}}})")
    return [{"id": v["id"], "nodes": [n["target"] for n in v["nodes"]][:3]} for v in result["violations"]]


@pytest.mark.parametrize("path", ["", "entries/ops-example/", "engines/vllm/0.1.0/", "search/?q=latency", "legend/"])
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
    assert page.locator("#filter-engine option").all_inner_texts() == ["any", "vLLM"]  # engines with entries
    page.select_option("#filter-status", "holds")
    assert len([r for r in rows.all() if r.is_visible()]) == 3


def test_filters_without_javascript_are_plain_lists(browser, base_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(base_url)
    assert not page.locator("#filters").is_visible()
    assert not page.locator("#release-form").is_visible()
    page.locator("summary", has_text="Browse by engine").click()
    assert page.locator("nav.browse a[href='schemes/config/']").is_visible()
    page.locator("summary", has_text="Pick a vLLM release").click()  # the first action
    page.locator("a[href='engines/vllm/0.2.0/']").click()  # the second
    assert page.locator("h1").inner_text() == "Gotchas in vLLM 0.2.0"
    context.close()


def test_a_typed_release_reaches_its_page_in_two_actions(page, base_url):
    page.goto(base_url)
    page.fill("#release-input", "vllm 0.2.0")  # the first action
    page.press("#release-input", "Enter")  # the second
    page.wait_for_url(base_url + "engines/vllm/0.2.0/")
    row = page.locator("#release-table tr#ops-example")
    assert "An example gotcha that is well-formed" in row.inner_text()
    assert not row.get_by_text("What to do:").is_visible()  # collapsed: the table first
    row.locator("summary").first.click()
    assert "What to do: Add capacity." in row.inner_text()
    page.goto(base_url)
    page.fill("#release-input", "9.9.9")
    page.press("#release-input", "Enter")
    assert "No verified release" in page.locator("#release-error").inner_text()
    assert page.url == base_url


@pytest.mark.parametrize("query,expected", [
    ("--enable-prefix-caching", "Prefix caching is on by default and costs unique prompts"),
    ("max_num_seqs", "Prefix caching is on by default and costs unique prompts"),
    ("vllm:num_preemptions", "An example gotcha that is well-formed"),
    ("num_preemptions", "An example gotcha that is well-formed"),  # a bare identifier finds its prefixed one
    ("num-preemptions", "An example gotcha that is well-formed"),
    ("latency", "An example gotcha that is well-formed"),
])
def test_search_finds_identifiers_as_written(page, base_url, query, expected):
    page.goto(base_url + "search/")
    page.fill("#search-input", query)
    page.wait_for_function(SEARCHED, arg=query)
    first = page.locator("#search-results li a").first
    assert first.inner_text() == expected
    first.click()
    assert page.locator("h1").inner_text() == expected


def test_search_answers_from_the_small_index_first_then_the_whole_text(page, base_url):
    """The first query reads search/head.json only; the whole documents follow and the query runs again."""
    held = []
    page.route("**/search/documents.json", lambda route: held.append(route))  # held back until asked for
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(base_url + "search/?q=" + quote("well-formed"))
    page.wait_for_function("() => document.querySelector('#search-results li') !== null")
    assert "An example gotcha that is well-formed" in page.locator("#search-results").inner_text()
    assert "searching the whole text" in page.locator("#search-status").inner_text()
    assert any(u.endswith("search/head.json") for u in asked)
    for _ in range(100):  # the request for the whole documents reaches the route
        if held:
            break
        page.wait_for_timeout(50)
    held[0].continue_()
    page.wait_for_function(SEARCHED, arg="well-formed")
    page.fill("#search-input", "capacity")  # a word of the Workaround only: the whole text has it
    page.wait_for_function(SEARCHED, arg="capacity")
    assert "An example gotcha that is well-formed" in page.locator("#search-results").inner_text()


@pytest.mark.parametrize("query", ["0.2.0", "vllm 0.2.0", "vLLM==0.2.0"])
def test_a_version_searched_for_leads_to_its_release_page(page, base_url, query):
    page.goto(base_url + "search/")
    page.fill("#search-input", query)
    page.wait_for_function(SEARCHED, arg=query)
    first = page.locator("#search-results li a").first
    assert first.inner_text() == "vLLM 0.2.0: the release page"
    first.click()
    page.wait_for_url(base_url + "engines/vllm/0.2.0/")
    page.goto(base_url + "search/")
    page.fill("#search-input", "9.9.9")
    page.wait_for_function("() => document.getElementById('search-status').textContent.includes('9.9.9')")
    assert page.locator("#search-results li.search-release").count() == 0  # no such release: no such link


def test_the_search_box_of_every_page_searches(page, base_url):
    page.goto(base_url + "entries/ops-example/")
    page.fill("#header-q", "vllm:num_preemptions")
    page.press("#header-q", "Enter")
    page.wait_for_function("() => document.getElementById('search-status').textContent.includes('vllm:num_preemptions')")
    first = page.locator("#search-results li").first
    assert first.locator("a").inner_text() == "An example gotcha that is well-formed"  # it says so in its symptom
    assert first.locator("mark").first.inner_text() == "vllm:num_preemptions"
    # beside the title: where it stands at each engine's newest release, and how bad it is
    assert first.locator("p.search-meta").inner_text() == "vLLM 0.10.0: holds \u00b7 severity: performance"


def test_dark_mode_follows_the_system_and_the_button_says_what_it_does(page, base_url):
    page.emulate_media(color_scheme="dark")
    page.goto(base_url)
    background = "getComputedStyle(document.body).backgroundColor"
    dark = page.evaluate(background)
    assert page.inner_text("#theme-toggle") == "Light theme"
    page.click("#theme-toggle")
    assert page.evaluate(background) != dark
    assert page.inner_text("#theme-toggle") == "Dark theme"
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


# --- release surfaces and upgrades -------------------------------------------------------------------------------

def _static_diff(browser, url: str, viewport=None) -> str:
    """The text of an upgrade page's diff, as a reader without JavaScript sees it (at `viewport`: a narrow one
    lays a table's rows out as blocks, and the text says so)."""
    context = browser.new_context(java_script_enabled=False, viewport=viewport or {"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(url)
    text = page.locator("#upgrade-diff").inner_text()
    context.close()
    return text


def _pick(page, older: str, newer: str, engine: str = "vLLM") -> None:
    page.select_option("#upgrade-from", older)
    page.select_option("#upgrade-to", newer)
    page.wait_for_function("t => document.getElementById('upgrade-status').textContent.startsWith(t)",
                           arg=f"{engine} {older} → {newer}:")


def test_the_upgrade_picker_shows_a_changed_default_with_its_lines_as_the_static_page_does(page, browser, base_url):
    from .site_fixture import surface_files

    page.goto(base_url + "engines/vllm/upgrade/")
    assert page.locator("#upgrade-form").is_visible()
    _pick(page, "0.1.0", "0.2.0")  # two choices
    row = page.locator("#upgrade-diff table tr", has_text="--gpu-memory-utilization")
    cells = row.locator("td").all_inner_texts()
    args = surface_files("0.1.0")["vllm/engine/arg_utils.py"].decode().split("\n")
    flag = next(n for n, line in enumerate(args, 1) if "'--gpu-memory-utilization'" in line)
    assert cells[0] == "changed: default"
    assert cells[2].startswith("0.90 · default at vllm/engine/arg_utils.py:") and cells[2].endswith(f":{flag}")
    assert cells[3].startswith("0.92 · ")
    assert row.locator("td").nth(2).locator("a").last.get_attribute("href") == (
        f"https://github.com/vllm-project/vllm/blob/v0.1.0/vllm/engine/arg_utils.py#L{flag}")
    assert "?from=0.1.0&to=0.2.0" in page.url  # the pair can be linked to
    assert page.locator("#upgrade-diff").inner_text() == _static_diff(browser, base_url + "engines/vllm/0.1.0...0.2.0/")
    page.locator("#upgrade-result a", has_text="The page of this upgrade").click()
    page.wait_for_url(base_url + "engines/vllm/0.1.0...0.2.0/")


@pytest.mark.parametrize("older,newer", [("0.2.0", "0.10.0"), ("0.1.0", "0.10.0")])
def test_the_picker_gives_every_static_pair_as_its_page_does(page, browser, base_url, older, newer):
    page.goto(base_url + f"engines/vllm/upgrade/?from={older}&to={newer}")
    page.wait_for_function("() => document.getElementById('upgrade-diff') !== null")
    assert page.locator("#upgrade-diff").inner_text() == _static_diff(browser, base_url + f"engines/vllm/{older}...{newer}/")


def test_the_picker_without_javascript_links_to_the_upgrade_pages(browser, base_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(base_url + "engines/vllm/upgrade/")
    assert not page.locator("#upgrade-form").is_visible()
    page.locator("a", has_text="0.1.0 → 0.2.0").click()
    assert page.locator("h1").inner_text() == "Upgrading vLLM from 0.1.0 to 0.2.0"
    assert "--max-seq-len → --max-model-len" in page.locator("#flags + table").inner_text()
    context.close()


def test_the_surface_filter_narrows_the_tables(page, base_url):
    page.goto(base_url + "engines/vllm/0.2.0/surface/")
    rows = page.locator("table.surface tbody tr")
    total = rows.count()
    page.fill("#surface-filter-input", "gpu memory")
    visible = [r.locator("td").first.inner_text() for r in rows.all() if r.is_visible()]
    assert [v.split()[0] for v in visible] == ["--gpu-memory-utilization"]
    assert page.locator("#surface-filter-count").inner_text() == f"1 of {total} match “gpu memory”"
    assert not page.locator("#env").is_visible()  # a table with nothing left goes
    page.fill("#surface-filter-input", "")
    assert len([r for r in rows.all() if r.is_visible()]) == total
    page.goto(base_url + "engines/vllm/0.1.0...0.2.0/")  # an upgrade page's changes have the same box
    page.fill("#surface-filter-input", "VLLM_USE")
    shown = [r.inner_text() for r in page.locator("table.upgrade tbody tr").all() if r.is_visible()]
    assert len(shown) == 1 and shown[0].startswith("changed: default\tVLLM_USE_V1")
    assert page.locator("#start").is_visible()  # the entries are not filtered


@pytest.mark.parametrize("path", ["engines/vllm/0.2.0/surface/", "engines/vllm/0.1.0...0.2.0/",
                                  "engines/vllm/upgrade/?from=0.1.0&to=0.10.0"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_surface_and_upgrade_pages_have_no_accessibility_violations(page, base_url, path, scheme):
    page.emulate_media(color_scheme=scheme)
    page.goto(base_url + path)
    if "upgrade/" in path:
        page.wait_for_function("() => document.getElementById('upgrade-diff') !== null")
    assert violations(page) == []


# --- the real KB: each journey at 1280 and 360 px, light and dark ----------------------------------------------

@pytest.fixture(scope="module")
def real_base_url(real_site):
    with serve(real_site) as url:
        yield url


LOOKS = [(1280, "light"), (1280, "dark"), (360, "light"), (360, "dark")]
LOOK_IDS = [f"{w}px-{s}" for w, s in LOOKS]


#: Both widths and both themes in two runs, for journeys whose outcome no look should change but each must work in.
TWO_LOOKS = [LOOKS[0], LOOKS[3]]


@pytest.fixture(params=LOOKS, ids=LOOK_IDS)
def look(request, browser):
    yield from _look(request, browser)


@pytest.fixture(params=TWO_LOOKS, ids=[f"{w}px-{s}" for w, s in TWO_LOOKS])
def two_looks(request, browser):
    yield from _look(request, browser)


def _look(request, browser):
    width, scheme = request.param
    yield from _watched(browser, viewport={"width": width, "height": 800}, color_scheme=scheme)


def _seed():
    from verifier.entries import load_entry

    from .conftest import REPO

    return load_entry(REPO / "gotchas" / "ops-kv-cache-full-preempts-and-recomputes.md").entry


def test_real_site_what_do_i_do_on_vllm_0_10_0_in_two_actions(look, real_base_url):
    page = look
    page.goto(real_base_url)
    page.fill("#release-input", "vLLM 0.10.0")  # typed, or picked from the list it offers
    page.press("#release-input", "Enter")
    page.wait_for_url(real_base_url + "engines/vllm/0.10.0/")
    row = page.locator(f"#release-table tr#{_seed().id}")
    assert _seed().title in row.inner_text()
    assert not row.locator(".row-details").is_visible()  # one line per gotcha until a row is opened
    row.locator("summary").first.click()
    assert "What to do:" in row.inner_text() and "Symptom:" in row.inner_text()
    claims = row.locator("details.claims")
    assert not claims.locator("ul").first.is_visible()  # the claims are one click further
    claims.locator("summary").click()
    assert "vllm/v1/core/sched/scheduler.py:" in claims.inner_text()


PHONE = {"width": 390, "height": 844}


def test_real_site_release_page_on_a_phone_is_its_table_first_and_under_five_screens(browser, real_base_url):
    """The issue's measure: vLLM 0.10.0 on a 390 px phone, details collapsed."""
    from verifier import kb as kb_module

    from .conftest import REPO

    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(real_base_url + "engines/vllm/0.10.0/")
    first = page.locator("#release-table tbody tr").first
    assert first.bounding_box()["y"] + 40 < PHONE["height"]  # the first gotcha's title is on the first screen
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 5 * PHONE["height"], height
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    rank = {s: i for i, s in enumerate(kb_module.load(REPO).severities)}
    order = [rank[s] for s in page.locator("#release-table tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.severity)")]
    assert order == sorted(order) and len(order) > 10
    context.close()


def test_real_site_release_filters_narrow_the_table(page, real_base_url):
    page.goto(real_base_url + "engines/vllm/0.10.0/")
    rows = page.locator("#release-table tbody tr")
    total = rows.count()
    page.select_option("#release-severity", "security")
    shown = page.locator("#release-table tbody tr:not([hidden])")
    assert 0 < shown.count() < total
    assert set(shown.evaluate_all("rows => rows.map(r => r.dataset.severity)")) == {"security"}
    assert page.locator("#release-count").inner_text() == f"{shown.count()} of {total} shown"
    page.select_option("#release-scheme", "api")  # security and api: none here, or a few
    assert set(shown.evaluate_all("rows => rows.map(r => r.dataset.scheme)")) <= {"api"}
    page.select_option("#release-severity", "")
    page.select_option("#release-scheme", "")
    assert shown.count() == total


def _window(engine: str, version: str, key: str):
    from verifier.ledger import Ledger, window_at

    from .conftest import REPO

    return window_at(Ledger(REPO / "ledger").load_evidence(engine), version, key)


def _excerpt_rows(item) -> list[tuple[int, str]]:
    return [(int(r.locator("th").inner_text()), re.sub(r"^matched:\s?", "", r.locator("td").inner_text()))
            for r in item.locator("table.excerpt tr").all()]


def test_real_site_an_entry_opened_from_a_release_page_shows_that_releases_code(two_looks, real_base_url):
    page = two_looks
    page.goto(real_base_url + "engines/vllm/0.10.0/")
    row = page.locator(f"#release-table tr#{_seed().id}")
    row.locator("summary").first.click()
    row.get_by_role("link", name="The entry, with its code at 0.10.0").click()
    page.wait_for_url("**/entries/" + _seed().id + "/?release=0.10.0&engine=vllm#evidence")
    page.wait_for_function("() => document.getElementById('evidence-at').textContent.startsWith('vLLM 0.10.0')")
    assert page.locator("#evidence-release-vllm").input_value() == "0.10.0"
    shown = 0
    for item in page.locator("li.check[data-engine=vllm]").all():
        check = item.get_attribute("data-check")
        assert "in vLLM 0.10.0" in item.locator(".where").inner_text()
        window = _window("vllm", "0.10.0", f"{_seed().id}/{check}")
        rows = _excerpt_rows(item)
        if window is None:
            assert rows == []
            continue
        start, lines = window
        assert rows and all(lines[n - start].rstrip() == text.rstrip() for n, text in rows), check
        shown += 1
    assert shown >= 3


def test_real_site_the_release_picker_renders_the_default_release_as_the_page_does(page, real_base_url):
    """site.js renders a release as entry.html does: picking another release and back gives the static text."""
    page.goto(real_base_url + f"entries/{_seed().id}/")
    static = page.locator("ol.checks").inner_text()
    newest = page.locator("#evidence-release-vllm").input_value()
    page.select_option("#evidence-release-vllm", "0.8.0")
    page.wait_for_function("() => document.getElementById('evidence-at').textContent.startsWith('vLLM 0.8.0')")
    assert page.locator("ol.checks").inner_text() != static
    assert "release=0.8.0" in page.url
    page.select_option("#evidence-release-vllm", newest)
    page.wait_for_function(f"() => document.getElementById('evidence-at').textContent.startsWith('vLLM {newest}')")
    assert page.locator("ol.checks").inner_text() == static


def test_real_site_a_fixed_entry_opens_at_the_last_release_it_bites(page, real_base_url):
    from verifier import history
    from verifier.ledger import Ledger

    from .conftest import REPO

    ledger = Ledger(REPO / "ledger").load("vllm")
    for path in sorted((REPO / "gotchas").glob("*.md")):
        statuses = history.entry_statuses(ledger, path.stem)
        if statuses and statuses[-1][1] == "not-affected" and any(s == "holds" for _, s in statuses):
            break
    else:
        pytest.fail("no fixed vLLM entry")
    last = [v for v, s in statuses if s == "holds"][-1]
    page.goto(real_base_url + f"entries/{path.stem}/")
    assert page.locator("#evidence-at").inner_text().startswith(f"vLLM {last} (the last release it bites")
    wheres = page.locator("li.check[data-engine=vllm] .where").all_inner_texts()
    assert wheres and all(f"vLLM {last}" in w for w in wheres)
    assert page.locator("table.excerpt").count() > 0  # its code, where a page of the newest had none


def test_real_front_page_reaches_its_first_entry_in_few_tab_stops(two_looks, real_base_url):
    """Before #17, 47 category links stood before the table: 67 Tab presses to the first entry. What stands before
    it now: the header, the release form, one release picker per engine (20 with two engines)."""
    page = two_looks
    page.goto(real_base_url)
    for presses in range(1, 40):  # noqa: B007 - the count is read after the loop
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('#entries-table') !== null"):
            break
    assert presses <= 18 + page.locator("details.picker-list").count()


def test_real_front_page_every_filter_option_finds_entries(page, real_base_url):
    page.goto(real_base_url)
    rows = page.locator("#entries-table tbody tr")
    total = rows.count()
    for select in ("#filter-engine", "#filter-status", "#filter-scheme", "#filter-concept"):
        values = page.locator(f"{select} option").evaluate_all("all => all.map(o => o.value)")
        assert len(values) > 1, select
        for value in values[1:]:
            page.select_option(select, value)
            shown = page.evaluate("Array.from(document.querySelectorAll('#entries-table tbody tr')).filter(r => !r.hidden).length")
            assert 0 < shown, (select, value)
            assert page.locator("#filter-count").inner_text() == f"{shown} of {total} entries shown"
        page.select_option(select, "")


@pytest.mark.parametrize("width", [1280, 360])
def test_real_site_release_picked_without_javascript(browser, real_base_url, width):
    context = browser.new_context(java_script_enabled=False, viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(real_base_url)
    page.locator("summary", has_text="Pick a vLLM release").click()
    page.locator("a[href='engines/vllm/0.10.0/']").click()
    assert page.locator("h1").inner_text() == "Gotchas in vLLM 0.10.0"
    context.close()


#: Each query, and the entry it must rank first (an exact identifier, or the phrase).
REAL_QUERIES = {
    "max num seqs": "config-batch-defaults-depend-on-gpu-and-entrypoint",  # spaces for `-`/`_`: the same identifier
    "vllm:num_preemptions": "ops-kv-cache-full-preempts-and-recomputes",
    "num_preemptions": "ops-kv-cache-full-preempts-and-recomputes",
    "--max-num-seqs": "config-batch-defaults-depend-on-gpu-and-entrypoint",
    "max_num_seqs": "config-batch-defaults-depend-on-gpu-and-entrypoint",
    "KV cache pool is full": None,  # a phrase: only entries with every word, those with the phrase first
}


def test_real_site_search_ranks_what_was_asked_first(two_looks, real_base_url):
    page = two_looks
    docs = {d["id"]: d for d in json.loads(page.request.get(real_base_url + "search/documents.json").text())}
    for query, expected in REAL_QUERIES.items():
        page.goto(real_base_url + "search/?q=" + quote(query))
        page.wait_for_function(SEARCHED, arg=query)
        links = page.locator("#search-results li > a")
        urls = [a.get_attribute("href") for a in links.all()]
        ids = [u.rstrip("/").rsplit("/", 1)[1] for u in urls]
        if expected:
            assert ids[0] == expected, (query, ids[:5])
        else:
            words = query.lower().split()
            with_phrase = [i for i in ids if any(query.lower() in docs[i][f].lower() for f in ("title", "symptom", "text"))]
            assert with_phrase and ids[:len(with_phrase)] == with_phrase, ids
            assert len(ids) < len(docs) / 2  # every word must occur: not "all 60 entries"
            for i in ids:
                text = " ".join(docs[i][f] for f in ("title", "symptom", "text", "identifiers", "concepts", "code")
                                ).lower()  # every field the index searches: code too (`_pool_bytes...` has pool)
                assert all(w in text for w in words), i
        snippet = page.locator("#search-results li p.search-snippet").first
        marks = [m.inner_text().lower() for m in snippet.locator("mark").all()]
        spaced = [re.sub(r"[-_]", " ", m) for m in marks]  # `max num seqs` marks max-num-seqs: the same words
        assert marks and (query.lower() in marks or all(m in query.lower() for m in spaced)), marks
        text = snippet.inner_text()
        assert text[0] == "…" or text[0].isupper() or text[0] in "`'\"(-" or text[0].isdigit() or text[0].islower()
        body = text.strip("… ")
        assert body.split()[0] in docs[ids[0]]["symptom"] + docs[ids[0]]["text"]  # starts on a word boundary


def test_real_site_upgrade_from_vllm_0_10_2_to_0_12_0_in_the_picker_is_its_page(browser, two_looks, real_base_url):
    page = two_looks
    page.goto(real_base_url + "engines/vllm/upgrade/")
    _pick(page, "0.10.2", "0.12.0")
    seed = page.locator("#upgrade-diff table tr", has_text="--seed").first.locator("td").all_inner_texts()
    assert seed[0] == "changed: default"
    assert seed[2].startswith("None · ") and seed[3].startswith("0 · ")
    assert re.search(r"vllm/engine/arg_utils\.py:\d+$", seed[2]) and re.search(r"\.py:\d+$", seed[3])
    assert page.locator("#upgrade-diff").inner_text() == _static_diff(
        browser, real_base_url + "engines/vllm/0.10.2...0.12.0/", page.viewport_size)


def test_real_site_the_pickers_diff_is_gotchas_diff(page, real_base_url):
    """The browser's diff against surface.diff.diff on the real surfaces: every vLLM pair of consecutive releases,
    and pairs of SGLang releases far apart (the most renames to pair), both ways."""
    import random

    from verifier.ledger import Ledger
    from verifier.surface.diff import diff

    from .conftest import REPO

    script = """async ([engine, pairs]) => {
      const get = async u => (await fetch(u)).json();
      const data = await get("../../../api/upgrade/" + engine + ".json"), releases = {};
      const found = [];
      for (const [a, b] of pairs) {
        for (const v of [a, b]) releases[v] = releases[v] || await get("../../../api/upgrade/" + engine + "/" + v + ".json");
        found.push(window.gotchasUpgrade.diff(data, releases[a], releases[b]).map(c =>
          [c.what, data.kinds[c.kind][0], c.before ? data.items[c.before[0]][1] : null, c.name, c.fields]));
      }
      return found;
    }"""
    for engine in ("vllm", "sglang"):
        surfaces = Ledger(REPO / "ledger").load_surfaces(engine)
        versions = surfaces.versions()
        if engine == "vllm":
            chosen = list(itertools.pairwise(versions))
        else:
            pick = random.Random(7)
            chosen = [(pick.choice(versions[:20]), pick.choice(versions[-20:])) for _ in range(4)]
            chosen += [(b, a) for a, b in chosen[:2]]
        page.goto(real_base_url + f"engines/{engine}/upgrade/")
        found = page.evaluate(script, [engine, chosen])
        for (older, newer), got in zip(chosen, found):
            result = diff(surfaces.surface(older), surfaces.surface(newer))
            expected = [[c.what, c.kind, c.before.name if c.before else None, c.name, list(c.fields)]
                        for c in result.changes]
            assert got == expected, (engine, older, newer)


WIDE_PAGES = ["", "legend/", "search/", "engines/", "engines/sglang/", "engines/vllm/0.10.0/",
              "engines/vllm/0.33.0/", "engines/sglang/0.5.10/", "concepts/", "concepts/kv-cache/",
              "entries/ops-kv-cache-full-preempts-and-recomputes/",
              "entries/perf-prompt-logprobs-bypass-prefix-cache/",
              "entries/api-sglang-native-generate-stops-at-128-new-tokens/",
              "engines/vllm/0.12.0/surface/", "engines/sglang/0.5.23/surface/", "engines/vllm/0.10.2...0.12.0/",
              "engines/vllm/upgrade/?from=0.10.2&to=0.12.0"]


@pytest.mark.parametrize("width,scheme", [(360, "dark")])  # the theme changes colours, never widths
def test_real_site_no_page_is_wider_than_the_viewport(browser, real_base_url, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    wide = {}
    for path in WIDE_PAGES:
        page.goto(real_base_url + path)
        if "upgrade/" in path:  # the picker's result comes once its JSON is read
            page.wait_for_function("() => document.getElementById('upgrade-diff') !== null")
        scroll = page.evaluate("document.scrollingElement.scrollWidth")
        if scroll > width:
            wide[path] = scroll
    context.close()
    assert wide == {}


def test_real_site_legend_is_one_click_from_a_badge(look, real_base_url):
    page = look
    page.goto(real_base_url + "entries/api-sglang-priority-larger-first-and-ignored-by-default/")
    page.locator("ol.runs a.status", has_text="changed").first.click()
    page.wait_for_url(real_base_url + "legend/#status-changed")
    term = page.locator("#status-changed + dd")
    assert term.is_visible() and "oldest releases" in term.inner_text()
    page.go_back()
    page.locator("a.status").first.click()
    assert "/legend/#status-" in page.url


@pytest.mark.parametrize("path,width,scheme", [
    ("", 1280, "light"), ("engines/vllm/0.10.0/", 1280, "light"),
    ("engines/vllm/0.10.2...0.12.0/", 360, "dark"), ("engines/vllm/0.12.0/surface/", 1280, "light"),
    ("entries/ops-kv-cache-full-preempts-and-recomputes/", 360, "dark"), ("legend/", 360, "dark"),
    ("engines/vllm/0.10.0/", 390, "light"), ("engines/sglang/0.5.2/", 390, "dark"),
    ("entries/ops-kv-cache-full-preempts-and-recomputes/?release=0.10.0", 1280, "dark")])
def test_real_pages_have_no_accessibility_violations(browser, real_base_url, path, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    page.goto(real_base_url + path)
    page.locator("details").evaluate_all("all => all.forEach(d => d.open = true)")  # what is one click away too
    assert violations(page) == []
    context.close()
