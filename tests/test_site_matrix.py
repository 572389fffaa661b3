"""The matrix of an engine's entries by its releases (`engines/<engine>/matrix/`): as files, each cell is the
ledger's status at that release, by colour, symbol and words, linking to the entry at that release; rows come
the worst severity first. In a browser (Debian's chromium, as tests/test_site_browser.py): the filters hide rows,
the table works without JavaScript, axe finds nothing at 1280 and 390 px, the page is never wider than a phone,
and a cell leads to the entry's evidence at its release."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.site.words import STATUS_ICONS

from .conftest import REPO, VALID_ENTRY, make_kb

# The browser tests need chromium and Playwright, as tests/test_site_browser.py does, on the same condition
# (skipped without them, except in CI, which installs both); the tests of the files here run without them.
from .site_fixture import CHROMIUM as _CHROMIUM  # noqa: E402
from .site_fixture import serve

try:
    if _CHROMIUM is None and not os.environ.get("CI"):
        raise ImportError("no chromium here (CI installs it: .ci/run)")
    from .test_site_browser import _watched, violations
    NO_BROWSER = ""
except (ImportError, pytest.skip.Exception) as why:  # test_site_browser skips itself without Playwright
    NO_BROWSER = str(why) or "no browser"

browser_only = pytest.mark.skipif(bool(NO_BROWSER), reason=NO_BROWSER)

MATRIX = "engines/{}/matrix/index.html"


class Matrix(HTMLParser):
    """A matrix page as data: its version headers (link, text) and its rows, each with its data attributes, the
    entry's link and title, and its cells (class, link, tooltip, symbol, hidden words); and the page's scripts,
    the table's region and the filter form's attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.columns: list[tuple[str, str]] = []
        self.rows: list[dict] = []
        self.scripts: list[str] = []
        self.region: dict | None = None
        self.form: dict | None = None
        self.scopes: list[str] = []
        self._part = None  # thead | tbody
        self._into: list[tuple[dict, str]] = []  # where text goes: (a dict, its key), innermost last
        self._tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        in_cell = any(name == "td" for name, _ in self._tags)
        pushed = False
        if tag == "script" and attrs.get("src"):
            self.scripts.append(attrs["src"])
        elif tag == "div" and attrs.get("role") == "region":
            self.region = attrs
        elif tag == "form" and attrs.get("id") == "matrix-filters":
            self.form = attrs
        elif tag in ("thead", "tbody"):
            self._part = tag
        elif tag == "th":
            self.scopes.append(attrs.get("scope", ""))
            if self._part == "tbody":
                self.rows[-1]["header"] = {"text": ""}
                self._into.append((self.rows[-1]["header"], "text"))
                pushed = True
        elif tag == "tr" and self._part == "tbody":
            self.rows.append({"severity": attrs.get("data-severity"), "scheme": attrs.get("data-scheme"),
                              "cells": []})
        elif tag == "td":
            self.rows[-1]["cells"].append({"class": attrs.get("class", ""), "icon": "", "words": ""})
        elif tag == "a" and self._part == "thead":
            self.columns.append([attrs.get("href"), ""])
            self._into.append((None, "column"))
            pushed = True
        elif tag == "a" and self._part == "tbody":
            row = self.rows[-1]
            if row["cells"]:
                row["cells"][-1].update(href=attrs.get("href"), title=attrs.get("title"))
            elif "href" not in row:
                row["href"] = attrs.get("href")
                row["title"] = ""
                self._into.append((row, "title"))
                pushed = True
        elif tag == "span" and in_cell:
            cell = self.rows[-1]["cells"][-1]
            if attrs.get("aria-hidden") == "true":
                self._into.append((cell, "icon"))
                pushed = True
            elif "visually-hidden" in (attrs.get("class") or ""):
                self._into.append((cell, "words"))
                pushed = True
        self._tags.append((tag, pushed))

    def handle_endtag(self, tag):
        while self._tags:
            name, pushed = self._tags.pop()
            if pushed:
                self._into.pop()
            if name == tag:
                break
        if tag in ("thead", "tbody"):
            self._part = None

    def handle_data(self, data):
        for target, key in self._into:
            if key == "column":
                if target is None and self.columns:
                    self.columns[-1][1] += data
            else:
                target[key] += data


def matrix(path: Path) -> Matrix:
    found = Matrix()
    found.feed(path.read_text(encoding="utf-8"))
    found.close()
    return found


def _ledger_statuses(kb: Path, engine: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The engine's versions, oldest first, and each entry's status at each release, as the ledger has them."""
    from verifier.ledger import Ledger

    ledger = Ledger(kb / "ledger").load(engine)
    statuses: dict[str, dict[str, str]] = {}
    for version in ledger.versions():
        for entry, record in ledger.releases[version].entries.items():
            statuses.setdefault(entry, {})[version] = record.status
    return ledger.versions(), statuses


def _entry_id(href: str) -> str:
    found = re.fullmatch(r"\.\./\.\./\.\./entries/([^/?#]+)/", href)
    assert found, href
    return found.group(1)


def _cells_match(page: Matrix, engine_name: str, versions: list[str], statuses: dict[str, dict[str, str]]) -> int:
    """Every cell of the page is the ledger's status there, by class, symbol and words, linking to the entry at
    its release; the number of cells."""
    from verifier.site.matrix import cell_word
    from verifier.site.words import css

    newest_first = list(reversed(versions))
    assert [href for href, _ in page.columns] == [f"../{v}/" for v in newest_first]
    assert [text for _, text in page.columns] == newest_first
    count = 0
    for row in page.rows:
        entry = _entry_id(row["href"])
        assert len(row["cells"]) == len(newest_first), entry
        for version, cell in zip(newest_first, row["cells"]):
            status = statuses.get(entry, {}).get(version)  # None: no verdict at that release
            words = f"{engine_name} {version}: {cell_word(status)}"
            assert cell["class"] == f"cell-{css(status)}", (entry, version)
            assert cell["href"] == f"../../../entries/{entry}/?release={version}#evidence", (entry, version)
            assert cell["icon"] == STATUS_ICONS[status], (entry, version)
            assert cell["words"] == cell["title"] and cell["words"].startswith(words), (entry, version, cell)
            count += 1
    return count


# --- the fixture site: fixture entries verified against a local index (tests/site_fixture.py) ---------------------

def test_a_matrix_page_per_engine_linked_from_the_engines_and_the_release_list(built_site):
    _, out = built_site
    assert (out / MATRIX.format("vllm")).is_file()
    assert (out / "assets/matrix.js").is_file()
    engines = (out / "engines/index.html").read_text()
    assert 'href="vllm/matrix/"' in engines
    assert 'href="matrix/"' in (out / "engines/vllm/index.html").read_text()
    # SGLang has no verified release in the fixture: its page says so, and nothing links to it
    sglang = (out / MATRIX.format("sglang")).read_text()
    assert "No release verified yet." in sglang and "<table" not in sglang
    assert 'href="sglang/matrix/"' not in engines
    assert 'href="matrix/"' not in (out / "engines/sglang/index.html").read_text()


def test_only_the_matrix_page_loads_its_script(built_site):
    _, out = built_site
    page = matrix(out / MATRIX.format("vllm"))
    assert "../../../assets/matrix.js" in page.scripts
    for other in ("index.html", "engines/vllm/index.html", "entries/ops-example/index.html"):
        assert "matrix.js" not in (out / other).read_text(), other


def test_every_cell_is_the_ledgers_status_and_links_to_the_entry_at_that_release(built_site):
    kb, out = built_site
    versions, statuses = _ledger_statuses(kb, "vllm")
    page = matrix(out / MATRIX.format("vllm"))
    assert {_entry_id(r["href"]) for r in page.rows} == {"ops-example", "config-prefix-caching-example",
                                                          "ops-hostile-markup"}
    assert _cells_match(page, "vLLM", versions, statuses) == 3 * 3
    example = next(r for r in page.rows if _entry_id(r["href"]) == "ops-example")
    # newest first: holds at 0.10.0 and 0.2.0; at 0.1.0 a claim is contradicted
    assert [c["icon"] for c in example["cells"]] == ["✓", "✓", "✗"]
    assert [c["title"] for c in example["cells"]] == ["vLLM 0.10.0: bites", "vLLM 0.2.0: bites", "vLLM 0.1.0: changed"]


def test_the_table_is_a_labelled_scrolling_region_of_headers_and_the_filters_wait_for_javascript(built_site):
    _, out = built_site
    page = matrix(out / MATRIX.format("vllm"))
    assert page.region is not None and page.region.get("tabindex") == "0" and page.region.get("aria-label")
    assert page.scopes == ["col"] * 4 + ["row"] * 3  # "Gotcha" and three releases; a header per entry
    assert page.form is not None and "hidden" in page.form  # the whole table shows without JavaScript
    text = (out / MATRIX.format("vllm")).read_text()
    legend = text.split('class="matrix-legend"')[1].split("</p>")[0]
    for status, anchor in (("holds", "status-holds"), ("changed", "status-changed"),
                           ("unverified", "status-unverified"), ("not-affected", "status-not-affected"),
                           (None, "status-not-verified")):
        assert f'href="../../../legend/#{anchor}"' in legend and STATUS_ICONS[status] in legend, status


def test_hostile_titles_come_out_inert_in_the_matrix(built_site):
    _, out = built_site
    text = (out / MATRIX.format("vllm")).read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script>" not in text and "<img" not in text
    assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", text) == []


# --- a site of entries of every severity and status, from a ledger written here ----------------------------------

#: id -> (title, scheme, severity, introduced): the rows, in the order the matrix must show them (the worst
#: severity first, then by title: "Aardvark" is last, being of the mildest severity).
MIXED = {
    "api-alpha-outage": ("Alpha, an outage of the API", "api", "outage", None),
    "ops-zeta-outage": ("Zeta, an outage that begins at 0.3.0", "ops", "outage", "0.3.0"),
    "ops-example": ("An example gotcha that is well-formed", "ops", "performance", None),
    "observability-aardvark": ("Aardvark, a metric that lies", "observability", "observability", None),
}
#: Twelve releases: wider than a phone's screen, so that the table scrolls sideways there.
VERSIONS = [f"0.{i}.0" for i in range(1, 13)]


def _mixed_statuses() -> dict[str, dict[str, str | None]]:
    """What the ledger written here makes of each entry at each release (None: no record)."""
    found = {}
    for entry in MIXED:
        found[entry] = {}
        for i, version in enumerate(VERSIONS, 1):
            status = "holds"
            if entry == "api-alpha-outage":
                status = None if i == 1 else "unverified" if i == 2 else "holds"
            elif entry == "ops-zeta-outage":
                status = "not-affected" if i < 3 else "changed" if i == 12 else "holds"
            found[entry][version] = status
    return found


def _write_mixed_kb(root: Path) -> None:
    from verifier.ledger import CheckRecord, EngineLedger, EntryRecord, Ledger, ReleaseRecord

    make_kb(root, site=True)
    for entry, (title, scheme, severity, introduced) in MIXED.items():
        text = VALID_ENTRY.replace("id: ops-example", f"id: {entry}").replace(
            "title: An example gotcha that is well-formed", f"title: {title}").replace(
            "scheme: ops", f"scheme: {scheme}").replace("severity: performance", f"severity: {severity}")
        if introduced:
            text = text.replace("engines: [vllm]\n", f"engines: [vllm]\nintroduced: {{vllm: {introduced}}}\n")
        (root / "gotchas" / f"{entry}.md").write_text(text)
    holds = CheckRecord("holds", form=0, path="pkg/sched.py", lines=(4, 4), symbol="Scheduler.preempt", check="x")
    metric = CheckRecord("holds", form=0, path="pkg/metrics.py", lines=(1, 1), check="y")
    gone = CheckRecord("missing", "file-missing", 0, "pkg/metrics.py", check="y")
    contradicted = CheckRecord("changed", "not-found", 0, "pkg/sched.py", check="x")
    records = {"holds": {"zero": holds, "metric": metric}, "unverified": {"zero": holds, "metric": gone},
               "changed": {"zero": contradicted, "metric": metric}, "not-affected": {"zero": holds, "metric": metric}}
    statuses = _mixed_statuses()
    releases = {}
    for month, version in enumerate(VERSIONS, 1):
        entries = {entry: EntryRecord(statuses[entry][version], records[statuses[entry][version]])
                   for entry in MIXED if statuses[entry][version] is not None}
        releases[version] = ReleaseRecord(f"2024-{month:02d}-01", f"sha256:{month}", "pypi", "t", "0.4.0", entries)
    Ledger(root / "ledger").save(EngineLedger("vllm", releases))


@pytest.fixture(scope="module")
def mixed_site(tmp_path_factory):
    """(KB folder, site folder) of MIXED at VERSIONS."""
    kb = tmp_path_factory.mktemp("mixed") / "kb"
    _write_mixed_kb(kb)
    out = kb.parent / "_site"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(kb)
        assert main(["site", "--out", str(out)]) == 0
    return kb, out


def test_rows_come_the_worst_severity_first_then_by_title(mixed_site):
    _, out = mixed_site
    page = matrix(out / MATRIX.format("vllm"))
    assert [_entry_id(r["href"]) for r in page.rows] == list(MIXED)
    assert [r["severity"] for r in page.rows] == [s for _, _, s, _ in MIXED.values()]
    assert [r["scheme"] for r in page.rows] == [s for _, s, _, _ in MIXED.values()]
    assert [r["title"] for r in page.rows] == [t for t, _, _, _ in MIXED.values()]
    assert all(r["header"]["text"].endswith(r["severity"]) for r in page.rows)  # the severity in words, beside


def test_every_status_shows_by_its_symbol_and_its_words(mixed_site):
    kb, out = mixed_site
    versions, statuses = _ledger_statuses(kb, "vllm")
    assert versions == VERSIONS
    assert statuses == {e: {v: s for v, s in by.items() if s} for e, by in _mixed_statuses().items()}
    page = matrix(out / MATRIX.format("vllm"))
    assert _cells_match(page, "vLLM", versions, statuses) == len(MIXED) * len(VERSIONS)
    cells = {(_entry_id(r["href"]), c["href"].split("release=")[1].split("#")[0]): c for r in page.rows
             for c in r["cells"]}
    assert cells["api-alpha-outage", "0.1.0"]["title"] == "vLLM 0.1.0: not verified"
    assert cells["api-alpha-outage", "0.1.0"]["icon"] == "–"
    assert cells["api-alpha-outage", "0.2.0"]["title"] == "vLLM 0.2.0: unverified (1 of 2 claims verified)"
    assert cells["ops-zeta-outage", "0.1.0"]["title"] == "vLLM 0.1.0: not affected"
    assert cells["ops-zeta-outage", "0.12.0"]["title"] == "vLLM 0.12.0: changed"
    assert cells["ops-example", "0.5.0"]["title"] == "vLLM 0.5.0: bites"


def test_the_filters_offer_the_severities_and_areas_the_rows_have_in_the_kbs_order(mixed_site):
    from verifier import kb as kb_module

    kb, out = mixed_site
    text = (out / MATRIX.format("vllm")).read_text()
    options = {name: re.findall(r'<option value="([^"]*)">([^<]*)</option>', text.split(f'id="matrix-{name}"')[1]
                                .split("</select>")[0]) for name in ("severity", "scheme")}
    order = list(kb_module.load(kb).severities)
    assert options["severity"] == [("", "any")] + sorted(
        [("outage", "outage (2)"), ("performance", "performance (1)"), ("observability", "observability (1)")],
        key=lambda o: order.index(o[0]))
    schemes = list(kb_module.load(kb).schemes)
    assert [v for v, _ in options["scheme"]] == [""] + sorted({"api", "ops", "observability"}, key=schemes.index)
    assert ("ops", "ops (2)") in options["scheme"]


# --- the real KB ---------------------------------------------------------------------------------------------------

def test_the_real_matrices_have_every_entry_at_every_release_and_stay_small(real_site):
    """SGLang has some 90 releases and 24 entries: 2,200 cells, each a link (some 610 KB; 20 KB gzipped)."""
    from verifier import kb as kb_module
    from verifier.entries import load_entry
    from verifier.ledger import Ledger

    kb = kb_module.load(REPO)
    entries = [load_entry(p).entry for p in kb.entry_files()]
    for engine in kb.engines:
        path = real_site / MATRIX.format(engine)
        assert path.stat().st_size < 800_000, (engine, path.stat().st_size)
        page = matrix(path)
        versions = Ledger(REPO / "ledger").load(engine).versions()
        assert len(page.columns) == len(versions)
        assert sorted(_entry_id(r["href"]) for r in page.rows) == sorted(e.id for e in entries if engine in e.engines)
        assert all(len(r["cells"]) == len(versions) for r in page.rows)


# --- in a browser --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mixed_url(mixed_site):
    _, out = mixed_site
    with serve(out) as url:
        yield url + "engines/vllm/matrix/"


@pytest.fixture
def page(browser):
    yield from _watched(browser, viewport={"width": 1280, "height": 900})


@pytest.fixture
def phone(browser):
    yield from _watched(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)


def _shown(page) -> list[str]:
    """The ids of the rows one sees."""
    return page.evaluate("Array.from(document.querySelectorAll('#matrix tbody tr')).filter(r => r.offsetParent)"
                         ".map(r => r.querySelector('th a').getAttribute('href').split('/').slice(-2)[0])")


@browser_only
def test_the_filters_hide_the_rows_of_other_severities_and_areas(page, mixed_url):
    page.goto(mixed_url)
    assert page.locator("#matrix-filters").is_visible()
    assert _shown(page) == list(MIXED)
    assert page.locator("#matrix-count").inner_text() == "4 of 4 entries shown"
    page.select_option("#matrix-severity", "outage")
    assert _shown(page) == ["api-alpha-outage", "ops-zeta-outage"]
    assert page.locator("#matrix-count").inner_text() == "2 of 4 entries shown"
    page.select_option("#matrix-scheme", "ops")
    assert _shown(page) == ["ops-zeta-outage"]
    assert "severity=outage" in page.url and "area=ops" in page.url  # the filtered view can be linked to
    page.select_option("#matrix-severity", "")
    assert _shown(page) == ["ops-zeta-outage", "ops-example"]
    page.select_option("#matrix-scheme", "")
    assert _shown(page) == list(MIXED) and "?" not in page.url
    page.goto(mixed_url + "?severity=observability")  # a link to a filtered view opens filtered
    assert page.locator("#matrix-severity").input_value() == "observability"
    assert _shown(page) == ["observability-aardvark"]


@browser_only
def test_without_javascript_the_whole_table_shows(browser, mixed_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(mixed_url)
    assert not page.locator("#matrix-filters").is_visible()
    assert _shown(page) == list(MIXED)
    context.close()


@browser_only
@pytest.mark.parametrize("width,scheme", [(1280, "light"), (1280, "dark"), (390, "light"), (390, "dark")])
def test_no_accessibility_violations(browser, mixed_url, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(mixed_url)
    assert violations(page) == []
    page.select_option("#matrix-severity", "outage")  # and once filtered
    assert violations(page) == []
    context.close()


@browser_only
def test_on_a_phone_the_table_scrolls_in_its_box_with_the_titles_in_sight(phone, mixed_url):
    page = phone
    page.goto(mixed_url)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390  # the page is no wider than the screen
    region = page.locator(".matrix-wrap")
    assert page.evaluate("(el) => el.scrollWidth > el.clientWidth", region.element_handle())  # the table scrolls
    title = page.locator("#matrix tbody th").first
    before = title.bounding_box()["x"]
    region.evaluate("el => el.scrollLeft = el.scrollWidth")
    assert title.bounding_box()["x"] == before  # the first column stays put
    assert title.locator("a").is_visible()
    cell = page.locator("#matrix tbody td a").first.bounding_box()
    assert cell["width"] >= 24 and cell["height"] >= 24
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390


@browser_only
def test_a_cell_leads_to_the_entry_at_its_release(page, mixed_url):
    page.goto(mixed_url)
    base = mixed_url.removesuffix("engines/vllm/matrix/")
    page.locator("#matrix tbody tr", has=page.locator("th a[href$='/ops-zeta-outage/']")).locator(
        "td a[title='vLLM 0.12.0: changed']").click()
    page.wait_for_url(base + "entries/ops-zeta-outage/?release=0.12.0#evidence")
    assert page.locator("h1").inner_text() == MIXED["ops-zeta-outage"][0]
    page.go_back()
    page.locator("#matrix thead a", has_text="0.3.0").click()  # a column's header is its release's page
    page.wait_for_url(base + "engines/vllm/0.3.0/")


@pytest.fixture(scope="module")
def real_url(real_site):
    with serve(real_site) as url:
        yield url


@browser_only
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("width,scheme", [(1280, "light"), (390, "dark")])
def test_the_real_matrices_fit_a_phone_and_have_no_accessibility_violations(browser, real_url, engine, width,
                                                                             scheme):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(real_url + f"engines/{engine}/matrix/")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    assert violations(page) == []
    context.close()
