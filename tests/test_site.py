"""The built site as files: pages, links, fragments, feeds, JSON, badges, and inert hostile markup."""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import jsonschema
import pytest

ATOM = "{http://www.w3.org/2005/Atom}"


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.tags: list[tuple[str, dict]] = []
        self.h1 = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "h1":
            self.h1 += 1
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def pages(out: Path):
    return sorted(out.rglob("*.html"))


def target_of(out: Path, page: Path, link: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points at, or None for an external link."""
    # The real site's 420,000 links to code are https: said without urlparse (which took 8 s of 9 over them).
    if link.startswith(("https://", "http://")) or urlparse(link).scheme or link.startswith("//"):
        return None
    url, fragment = urldefrag(link)
    base = "/" + page.relative_to(out).as_posix()
    resolved = unquote(urlparse(urljoin(base, url)).path) if url else base
    target = out / resolved.lstrip("/")
    if resolved.endswith("/"):
        target = target / "index.html"
    return target, fragment


def test_pages_exist_for_every_kind(built_site):
    _, out = built_site
    for path in ("index.html", "404.html", "search/index.html", "entries/ops-example/index.html",
                 "concepts/index.html", "concepts/prefix-caching/index.html", "schemes/config/index.html",
                 "engines/index.html", "engines/vllm/index.html", "engines/vllm/0.2.0/index.html",
                 "api/kb.json", "api/entries/ops-example.json", "api/kb.schema.json", "feeds/changes.xml",
                 "feeds/entries.xml", "feeds/vllm.xml", "badges/ops-example.svg", "sitemap.xml",
                 "assets/style.css", "assets/site.js", "assets/vendor/minisearch.min.js", "search/documents.json"):
        assert (out / path).is_file(), path


def test_no_broken_internal_link_or_fragment(built_site):
    _, out = built_site
    broken = []
    parsed = {}
    for page in pages(out):
        if page.name == "404.html":
            continue  # served at any address; its links start from the base URL
        for link in parse(page).links:
            found = target_of(out, page, link)
            if found is None:
                continue
            target, fragment = found
            if not target.is_file():
                broken.append((page.relative_to(out), link))
                continue
            if fragment and target.suffix == ".html":
                ids = parsed.setdefault(target, parse(target).ids)
                if fragment not in ids:
                    broken.append((page.relative_to(out), link))
    assert broken == []


def test_every_page_has_one_h1_landmarks_and_a_skip_link(built_site):
    _, out = built_site
    for page in pages(out):
        parsed = parse(page)
        tags = [t for t, _ in parsed.tags]
        assert parsed.h1 == 1, page
        assert "main" in tags and "header" in tags and "footer" in tags and "nav" in tags, page
        assert any(t == "a" and a.get("href") == "#main" for t, a in parsed.tags), page
        assert "main" in parsed.ids


def _text_of(html: str) -> str:
    """A fragment's text as a reader sees it: tags dropped, references decoded, spaces folded."""
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", html)).split())


def test_entry_page_shows_status_history_evidence_and_permalink(built_site):
    _, out = built_site
    text = (out / "entries/ops-example/index.html").read_text()
    runs = _text_of(text.split('class="runs"')[1].split("</ol>")[0])
    # The strip in words: each run with its versions and size; "changed" at the oldest release says what it means.
    assert "✗ changed in 0.1.0 (1 release): from the oldest release tracked, a claim is contradicted" in runs
    assert "✓ holds in 0.2.0 – 0.10.0 (2 releases, latest)" in runs
    assert text.count('<i class="c cell-') == 3  # the strip: one cell per release, hidden from screen readers
    assert '<div class="strip" aria-hidden="true">' in text
    assert 'id="symptom"' in text and 'id="root-cause"' in text and 'id="workaround"' in text
    assert '<tr class="hit"><th scope="row">4</th>' in text  # the matched line, highlighted, numbered
    assert "request.num_computed_tokens = 0" in text
    assert "https://github.com/vllm-project/vllm/blob/v0.10.0/pkg/sched.py#L4" in text
    assert "zero</code>: changed (not-found) in 0.1.0" in text  # the transition


def test_every_badge_links_to_its_legend_entry(built_site):
    _, out = built_site
    badges = 0
    for page in pages(out):
        for tag, attrs in parse(page).tags:
            if tag == "a" and "status" in (attrs.get("class") or "").split():
                badges += 1
                assert "legend/#" in attrs["href"], (page, attrs)
    assert badges > 20
    legend = parse(out / "legend/index.html").ids
    from verifier.model import (
        CHANGED_REASONS,
        ERROR_REASONS,
        MISSING_REASONS,
        STATUSES,
        VERDICTS,
    )

    for status in STATUSES:
        assert f"status-{status}" in legend
    for verdict in VERDICTS:
        assert f"verdict-{verdict}" in legend
    for reason in (*CHANGED_REASONS, *MISSING_REASONS, *ERROR_REASONS, "budget"):
        assert f"reason-{reason}" in legend


def test_front_page_shows_the_releases_each_entry_bites_and_only_useful_filters(built_site):
    _, out = built_site
    text = (out / "index.html").read_text()
    table = text.split('id="entries-table"')[1]
    row = _text_of(table.split("An example gotcha that is well-formed")[1].split("</tr>")[0])
    assert "vLLM: 0.2.0 – 0.10.0 (latest)" in row
    select = text.split('id="filter-status"')[1].split("</select>")[0]
    statuses = re.findall(r'<option value="([^"]*)">([^<]*)</option>', select)
    assert statuses[0] == ("", "any")
    assert [v for v, _ in statuses[1:]] == ["holds"]  # the only status any entry has at the latest release
    assert statuses[1][1] == "holds at the latest release (3)"
    # Categories come after the table, collapsed: nothing but the release form and the filters before it.
    assert text.index('id="entries-table"') < text.index('class="browse"')
    assert '<details class="browse-all">' in text


def test_release_page_answers_which_gotchas_bite(built_site):
    _, out = built_site
    text = (out / "engines/vllm/0.2.0/index.html").read_text()
    table = text.split('id="release-table"')[1].split("</table>")[0]
    row = table.split('<tr id="ops-example"')[1].split("</tr>")[0]
    title = _text_of(row.split("<summary>")[1].split("</summary>")[0])
    assert title == "An example gotcha that is well-formed"
    cells = [_text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.split("</details></td>")[1], re.S)]
    assert cells == ["performance", "ops", "–", "not yet"]  # severity, area, only if (none), fixed in
    details = _text_of(row.split("</summary>", 1)[1])  # collapsed: one click further
    assert "Symptom: Latency climbs and vllm:num_preemptions rises." in details  # the whole section, as here
    assert "What to do: Add capacity." in details  # the workaround's summary
    evidence = row.split('<details class="claims">')[1]
    assert "2 of 2 claims hold in 0.2.0" in _text_of(evidence)
    assert "pkg/sched.py</span>:4" in evidence and "blob/v0.2.0/pkg/sched.py#L4" in evidence
    assert 'href="../../../entries/ops-example/?release=0.2.0&amp;engine=vllm#evidence"' in row
    changed = _text_of(text.split('id="changed-since"')[1].split("</section>")[0])
    assert "An example gotcha that is well-formed: changed in 0.1.0 → ✓ holds here" in changed
    first = (out / "engines/vllm/0.1.0/index.html").read_text()
    assert 'id="release-table"' not in first  # nothing bites there: no table
    contradicted = first.split('id="changed"')[1]
    assert "An example gotcha" in contradicted and "A claim is contradicted" in contradicted
    assert "1 of 2 claims hold" in _text_of(contradicted)


def test_release_table_puts_the_worst_first_and_says_where_each_stops(real_site):
    """On the real KB: rows in the KB's severity order (then what bites before what may), every row an entry that
    bites or may at 0.10.0; "fixed in" the first later release where it is not affected (or a claim changed); the
    upgrade line counts the rows the newest release clears."""
    from verifier import history
    from verifier import kb as kb_module
    from verifier.ledger import Ledger

    from .conftest import REPO

    kb = kb_module.load(REPO)
    engine_ledger = Ledger(REPO / "ledger").load("vllm")
    versions = engine_ledger.versions()
    later = versions[versions.index("0.10.0") + 1:]
    text = (real_site / "engines/vllm/0.10.0/index.html").read_text()
    rows = re.findall(r'<tr id="([^"]+)" data-severity="([^"]*)" data-scheme="[^"]*" data-status="([^"]+)">(.*?)</tr>',
                      text.split('id="release-table"')[1].split("</table>")[0], re.S)
    rank = {s: i for i, s in enumerate(kb.severities)}
    order = [(rank[severity], status != "holds") for _, severity, status, _ in rows]
    assert order == sorted(order) and len(rows) > 10
    cleared = 0
    for entry_id, _, status, row in rows:
        statuses = dict(history.entry_statuses(engine_ledger, entry_id))
        assert statuses["0.10.0"] == status in ("holds", "unverified")
        stop = next((v for v in later if statuses.get(v) in ("not-affected", "changed")), None)
        fixed_in = _text_of(re.findall(r'<td class="fixed-in[^"]*">(.*?)</td>', row, re.S)[0])
        assert fixed_in == ("not yet" if stop is None else f"fixed in {stop}" if statuses[stop] == "not-affected"
                            else f"a claim changed in {stop}"), (entry_id, fixed_in)
        cleared += statuses.get(versions[-1]) in ("not-affected", "changed")
    upgrade = _text_of(text.split('class="upgrade-line">')[1].split("</p>")[0])
    assert upgrade == f"Upgrading to {versions[-1]}, the newest, clears {cleared} of these {len(rows)}: the upgrade."
    assert 0 < cleared < len(rows)


def test_hostile_markup_comes_out_inert(built_site):
    _, out = built_site
    for path in [out / "entries/ops-hostile-markup/index.html", out / "index.html", out / "search/index.html"]:
        parsed = parse(path)
        scripts = [a.get("src") for t, a in parsed.tags if t == "script"]
        assert all(src and src.endswith(".js") for src in scripts if src is not None), scripts
        assert [a for t, a in parsed.tags if t == "script" and "src" not in a and a.get("type") != "application/json"] == []
        assert not any(k.startswith("on") for _, a in parsed.tags for k in a), path
        assert not any(v and re.match(r"\s*(javascript|data|vbscript):", v, re.IGNORECASE)
                       for _, a in parsed.tags for k, v in a.items() if k in ("href", "src")), path
        assert not any(t == "img" for t, _ in parsed.tags)
    text = (out / "entries/ops-hostile-markup/index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    documents = (out / "search/documents.json").read_text()
    assert "</script" not in (out / "index.html").read_text().split('id="release-data"')[1].split("</script>")[0]
    assert json.loads(documents)
    # the wordings evidence.js puts in the page (innerHTML) are the Markdown renderer's, as inert as the page's
    wordings = json.loads((out / "entries/ops-hostile-markup/evidence.json").read_text())["wordings"]
    assert wordings
    for wording in wordings:
        for html in wording["sections"].values():
            fragment = Page()
            fragment.feed(html)
            assert not any(t in ("script", "img", "iframe", "style") for t, _ in fragment.tags), html
            assert not any(k.startswith("on") for _, a in fragment.tags for k in a), html
            assert not any(v and re.match(r"\s*(javascript|data|vbscript):", v, re.IGNORECASE)
                           for _, a in fragment.tags for k, v in a.items() if k in ("href", "src")), html
        assert "&lt;script&gt;alert(3)&lt;/script&gt;" in wording["sections"]["symptom"]
        assert wording["title"].startswith("<script>alert(1)")  # text: evidence.js sets it as textContent
    assert "wording.title" in (out / "assets/evidence.js").read_text().split("title.textContent = ")[1][:20]


def test_content_security_policy_forbids_inline_script(built_site):
    _, out = built_site
    text = (out / "index.html").read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "object-src 'none'" in policy
    assert "http://" not in text.replace("http://www.w3.org", "")  # no CDN, no external fonts
    assert "fonts.googleapis" not in (out / "assets/style.css").read_text()


def test_feeds_parse_and_name_the_status_change(built_site):
    _, out = built_site
    changes = ET.parse(out / "feeds/changes.xml").getroot()
    assert changes.tag == f"{ATOM}feed"
    titles = [e.find(f"{ATOM}title").text for e in changes.findall(f"{ATOM}entry")]
    assert any("vLLM 0.2.0" in t and "changed → holds" in t for t in titles), titles
    for entry in changes.findall(f"{ATOM}entry"):
        assert entry.find(f"{ATOM}id").text.startswith("https://gotchas.example/")
        assert entry.find(f"{ATOM}updated").text.endswith("Z")
    new = ET.parse(out / "feeds/entries.xml").getroot()
    assert len(new.findall(f"{ATOM}entry")) == 3
    ET.parse(out / "feeds/vllm.xml")
    assert len(ET.parse(out / "feeds/vllm-entries.xml").getroot().findall(f"{ATOM}entry")) == 3
    assert ET.parse(out / "feeds/sglang-entries.xml").getroot().findall(f"{ATOM}entry") == []
    urls = [u.text for u in ET.parse(out / "sitemap.xml").getroot().iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert "https://gotchas.example/entries/ops-example/" in urls


def test_json_validates_against_the_published_schema(built_site):
    _, out = built_site
    schema = json.loads((out / "api/kb.schema.json").read_text())
    kb = json.loads((out / "api/kb.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(kb)
    entry = json.loads((out / "api/entries/ops-example.json").read_text())
    assert entry["status"]["vllm"]["ranges"] == [
        {"status": "changed", "first": "0.1.0", "last": "0.1.0", "latest": False,
         "next": {"version": "0.2.0", "status": "holds"}},
        {"status": "holds", "first": "0.2.0", "last": "0.10.0", "latest": True, "next": None}]
    assert entry["status"]["vllm"]["transitions"][0]["check"] == "zero"
    assert entry["status"]["vllm"]["transitions"][0]["before"]["reason"] == "not-found"
    assert entry["status"]["vllm"]["statuses"] == {"0.1.0": "changed", "0.2.0": "holds", "0.10.0": "holds"}
    assert entry["status"]["vllm"]["verified"]["0.1.0"] == {"verified": 1, "claims": 2}


def test_badges_are_svg_with_text(built_site):
    _, out = built_site
    root = ET.parse(out / "badges/ops-example.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "vLLM holds" in root.get("aria-label")


def test_search_documents_carry_identifiers_as_written(built_site):
    _, out = built_site
    docs = {d["id"]: d for d in json.loads((out / "search/documents.json").read_text())}
    assert "--enable-prefix-caching" in docs["config-prefix-caching-example"]["identifiers"].split()
    assert "max_num_seqs" in docs["config-prefix-caching-example"]["identifiers"].split()
    assert "vllm:num_preemptions" in docs["ops-example"]["identifiers"].split()


def test_rebuilding_replaces_the_output(built_site, tmp_path):
    _, out = built_site
    stale = out / "entries" / "gone"
    stale.mkdir()
    (stale / "index.html").write_text("old")
    from verifier.cli import main

    kb, _ = built_site
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(kb)
        assert main(["site", "--out", str(out), "--base-url", "https://gotchas.example/"]) == 0
    assert not stale.exists()


def test_real_site_has_no_broken_link_and_a_page_per_release(real_site):
    out = real_site
    from verifier import kb as kb_module
    from verifier.ledger import Ledger

    from .conftest import REPO

    kb = kb_module.load(REPO)
    ledger = Ledger(REPO / "ledger")
    for engine in kb.engines:
        for version in ledger.load(engine).versions():
            assert (out / "engines" / engine / version / "index.html").is_file()
    for path in kb.entry_files():
        assert (out / "entries" / path.stem / "index.html").is_file()
    broken = []
    ids: dict[Path, set[str]] = {}
    for page in pages(out):
        if page.name == "404.html":
            continue
        for link in links_of(page):
            found = target_of(out, page, link)
            if not found:
                continue
            target, fragment = found
            if not target.is_file():
                broken.append((page.relative_to(out), link))
            elif fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(_ID.findall(target.read_text(encoding="utf-8")))
                if fragment not in ids[target]:
                    broken.append((page.relative_to(out), link))
    assert broken == []


def links_of(path: Path) -> list[str]:
    """The href and src of a page's tags, as `parse` finds them, but by a pattern: the real site's 100 MB of
    surface and upgrade tables take HTMLParser half a minute. The templates quote every attribute with '"', and
    autoescape writes a '"' in a value as a reference, so the pattern finds each whole."""
    return [html_module.unescape(v) for v in _LINK.findall(path.read_text(encoding="utf-8")) if v]


_LINK = re.compile(r'<[a-z][^>]*?\s(?:href|src)="([^"]*)"')
#: The ids a page defines, by the same pattern's reasoning (every attribute is quoted with '"').
_ID = re.compile(r'<[a-z][^>]*?\sid="([^"]*)"')


def test_unverified_says_how_many_claims_were_verified_and_never_does_not_hold(kb_root, tmp_path, monkeypatch):
    """A release where a check's file is gone: the entry is `unverified` there, with "1 of 2 claims verified",
    and no page calls it "does not hold" or links to code the release does not have."""
    from verifier.cli import main
    from verifier.ledger import (
        CheckRecord,
        EngineLedger,
        EntryRecord,
        Ledger,
        ReleaseRecord,
    )

    from .conftest import REPO, VALID_ENTRY

    shutil.copytree(REPO / "site", kb_root / "site")
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    holds = CheckRecord("holds", form=0, path="pkg/sched.py", lines=(4, 4), symbol="Scheduler.preempt", check="x")
    metric = CheckRecord("holds", form=0, path="pkg/metrics.py", lines=(1, 1), check="y")
    gone = CheckRecord("missing", "file-missing", 0, "pkg/metrics.py", check="y")
    releases = {
        "0.1.0": ReleaseRecord("2024-01-01", "sha256:a", "pypi", "t", "0.4.0",
                               {"ops-example": EntryRecord("holds", {"zero": holds, "metric": metric})}),
        "0.2.0": ReleaseRecord("2024-02-01", "sha256:b", "pypi", "t", "0.4.0",
                               {"ops-example": EntryRecord("unverified", {"zero": holds, "metric": gone})}),
    }
    Ledger(kb_root / "ledger").save(EngineLedger("vllm", releases))
    out = tmp_path / "_site"
    monkeypatch.chdir(kb_root)
    assert main(["site", "--out", str(out)]) == 0
    release = (out / "engines/vllm/0.2.0/index.html").read_text()
    assert "Do not read this as" in release.split('id="unverified"')[1].split("</p>")[0]
    row = release.split('<tr id="ops-example"')[1].split("</summary>")[0]
    assert "An example gotcha that is well-formed" in row and "unverified: 1 of 2 claims verified" in _text_of(row)
    assert "blob/v0.2.0/pkg/metrics.py" not in release  # no link to a file the release does not have
    entry = (out / "entries/ops-example/index.html").read_text()
    runs = _text_of(entry.split('class="runs"')[1].split("</ol>")[0])
    assert "✓ holds in 0.1.0 (1 release)" in runs
    assert "? unverified in 0.2.0 (1 release, latest): 1 of 2 claims verified in 0.2.0" in runs
    assert "the code may have moved" in entry  # what `missing` means, beside the check
    for page in out.rglob("*.html"):
        assert "does not hold" not in page.read_text().lower(), page
    data = json.loads((out / "api/entries/ops-example.json").read_text())
    assert data["status"]["vllm"]["latest"] == "unverified"
    assert data["status"]["vllm"]["verified"]["0.2.0"] == {"verified": 1, "claims": 2}
    badge = (out / "badges/ops-example.svg").read_text()
    assert "vLLM ? unverified" in badge


# --- evidence: bounded excerpts, links only to files the release has ------------------------------------------

def _lines(n: int) -> list[str]:
    return [f"line {i}" for i in range(1, n + 1)]


def test_an_excerpt_is_a_few_lines_around_the_match():
    from verifier.site import evidence

    found = evidence.excerpt({"path": "a.py", "start": 1, "match": (50, 51), "lines": _lines(400)})
    assert [r.number for r in found.rows] == [48, 49, 50, 51, 52, 53]
    assert [r.number for r in found.rows if r.hit] == [50, 51]
    assert found.scope is None
    edge = evidence.excerpt({"path": "a.py", "start": 10, "match": (10, 10), "lines": _lines(3)})
    assert [r.number for r in edge.rows] == [10, 11, 12]  # never past what the ledger kept


@pytest.mark.parametrize("whole,match", [(True, (1, 2000)), (False, (3, 2000)), (True, (5, 5))],
                         ids=["absent", "long-match", "absent-one-line"])
def test_an_excerpt_of_a_whole_scope_is_its_first_lines_and_its_size(whole, match):
    from verifier.site import evidence

    found = evidence.excerpt({"path": "a.py", "start": 1, "match": match, "lines": _lines(2000)}, whole_scope=whole)
    assert len(found.rows) == evidence.SCOPE_LINES
    assert found.rows[0].number == match[0]
    assert found.scope == (match[0], match[1] - match[0] + 1)
    assert not any(r.hit for r in found.rows)


def test_an_excerpt_cuts_a_very_long_line():
    from verifier.site import evidence

    found = evidence.excerpt({"path": "a.py", "start": 1, "match": (1, 1), "lines": ["x" * 100_000]})
    assert len(found.rows[0].text) <= evidence.MAX_LINE + 2


def test_the_real_sites_entry_pages_stay_small(real_site):
    """Before #17 one entry page was 1.1 MB (its `absent` checks printed whole files)."""
    sizes = {p.parent.name: p.stat().st_size for p in (real_site / "entries").glob("*/index.html")}
    assert max(sizes.values()) < 150_000, max(sizes.items(), key=lambda i: i[1])
    for page in (real_site / "entries").glob("*/index.html"):
        for block in page.read_text().split('<table class="excerpt">')[1:]:
            rows = block.split("</table>")[0].count("<tr")
            assert rows <= 2 * 2 + 8, page  # context either side of a match of at most MAX_MATCH lines


def test_the_real_sites_surface_and_upgrade_pages_stay_small(real_site):
    """SGLang 0.5.23 has some 2,100 items (940 environment variables, 530 flags): its surface page is 630 KB with
    help cut at 100 characters; the upgrade from its oldest release to the newest lists 2,000 changes in 730 KB.
    The picker reads the engine's file and two releases' files, never every release."""
    surface = {p: p.stat().st_size for p in (real_site / "engines").glob("*/*/surface/index.html")}
    upgrade = {p: p.stat().st_size for p in (real_site / "engines").glob("*/*...*/index.html")}
    assert len(surface) == sum(len(list((real_site / "api/upgrade").glob(f"{e}/*.json"))) for e in ("vllm", "sglang", "llama-cpp"))
    assert max(surface.values()) < 800_000, max(surface.items(), key=lambda i: i[1])
    assert max(upgrade.values()) < 900_000, max(upgrade.items(), key=lambda i: i[1])
    picker = [(real_site / "api/upgrade" / f"{e}.json").stat().st_size for e in ("vllm", "sglang")]
    releases = [p.stat().st_size for p in (real_site / "api/upgrade").glob("*/*.json")]
    assert max(picker) < 500_000 and max(releases) < 150_000, (picker, max(releases))


def test_code_links_only_to_files_the_release_has(kb_root, tmp_path, monkeypatch):
    from verifier import kb as kb_module
    from verifier.ledger import CheckRecord, EngineLedger, EntryRecord, ReleaseRecord
    from verifier.site import evidence
    from verifier.site.model import EngineView, Site

    from .conftest import VALID_ENTRY

    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    kb = kb_module.load(kb_root)
    holds = CheckRecord("holds", form=0, path="pkg/sched.py", lines=(4, 4), check="x")
    gone = CheckRecord("missing", "file-missing", 0, "pkg/metrics.py", check="y")
    no_symbol = CheckRecord("missing", "symbol-missing", 0, "pkg/sched.py", check="y")
    broken = CheckRecord("error", "unavailable", 0, "pkg/other.py", check="y")
    ledger = EngineLedger("vllm", {
        "0.1.0": ReleaseRecord("2024-01-01", "sha256:a", "pypi", "t", "0.4.0",
                               {"ops-example": EntryRecord("unverified", {"zero": holds, "metric": gone})}),
        "0.2.0": ReleaseRecord("2024-02-01", "sha256:b", "pypi", "t", "0.4.0",
                               {"ops-example": EntryRecord("unverified", {"zero": no_symbol, "metric": broken})})})
    data = Site(kb, [], {"vllm": EngineView(kb.engines["vllm"], ledger, {})})
    assert data.files_at("vllm", "0.1.0") == {"pkg/sched.py"}
    assert evidence.code_link(data, "vllm", "0.1.0", holds).endswith("/blob/v0.1.0/pkg/sched.py#L4")
    assert evidence.code_link(data, "vllm", "0.1.0", gone) is None  # the file is missing there
    # The file is there (only its symbol is not): a link to the file, without lines.
    assert evidence.code_link(data, "vllm", "0.2.0", no_symbol).endswith("/blob/v0.2.0/pkg/sched.py")
    assert evidence.code_link(data, "vllm", "0.2.0", broken) is None  # an error says nothing of the file
    # A file that holds in another release, but that no verdict found in this one, gets no link here.
    assert evidence.code_link(data, "vllm", "0.2.0", gone) is None


@pytest.mark.parametrize("name", ["../layout.html", "/etc/passwd", ".hidden"])
def test_templates_are_named_inside_their_folder(tmp_path, name):
    import jinja2

    from verifier.site import SiteError
    from verifier.site.writer import environment

    from .conftest import REPO

    env = environment(REPO / "site" / "templates")
    with pytest.raises((SiteError, jinja2.TemplateNotFound)):
        env.get_template(name)


def test_summaries_are_one_line_cut_at_a_word():
    from verifier.site.text import MAX_SUMMARY, summary

    assert str(summary("- Pass `--x`.\n- Or lower `y`.")) == "Pass <code>--x</code>."
    assert str(summary("First sentence here. Second one.")) == "First sentence here. Second one."
    long = "word " * 200
    cut = str(summary(long + "\n\nmore"))
    assert len(cut) <= MAX_SUMMARY + 2 and cut.endswith(" …") and "wor …" not in cut
    assert str(summary("<script>x</script> `a`")) == "&lt;script&gt;x&lt;/script&gt; <code>a</code>"


def test_conditions_are_shown_on_the_entry_and_release_pages_and_in_json(real_site):
    """An entry with `when:` (FORMAT.md, Conditions) says on its page under which setting it bites, with the
    default and the claim that pins it; a release page says "Only if" beside it; its JSON carries them."""
    priority = "config-request-priority-ignored-under-fcfs"
    entry = (real_site / "entries" / priority / "index.html").read_text()
    # the default comes from the release surface (no `default`/`witness` written), so the page names none
    assert "--scheduling-policy is fcfs" in _text_of(entry)
    assert "requests send priority or clients send the X-Vllm-Priority header" in _text_of(entry)
    assert 'id="check-fcfs-default"' in entry
    release = (real_site / "engines" / "vllm" / "0.10.0" / "index.html").read_text()
    item = release[release.index(f'id="{priority}"'):]
    item = item[:item.index("</tr>")]
    # on a release's page, the default its code gives the setting, with the line
    assert "Only if: --scheduling-policy is fcfs (default fcfs in 0.10.0, vllm/" in _text_of(item)
    assert "; requests send priority" in _text_of(item)
    data = json.loads((real_site / "api" / "entries" / f"{priority}.json").read_text())
    policy, sent = data["conditions"]
    assert {k: policy[k] for k in ("engine", "kind", "flags", "values", "negated", "default", "witness")} == {
        "engine": "vllm", "kind": "flag", "flags": ["--scheduling-policy"], "values": ["fcfs"], "negated": False,
        "default": None, "witness": None}
    assert sent["kind"] == "any" and [(m["kind"], m["request"], m["only_if"], m["since"]) for m in sent["any"]] == [
        ("request", "priority", None, None), ("only-if", None, "clients send the X-Vllm-Priority header", "0.28.0")]
    assert data["severity"] == "performance"
