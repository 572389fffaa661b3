"""The site's release surface and upgrade pages, built from the fixture releases (tests/site_fixture.py): a
surface page per release linked from its release page, an upgrade page per pair that says what `gotchas diff`
says, the picker and the JSON it computes from, and hostile surface data kept inert."""

from __future__ import annotations

import html
import json
import re

import pytest

from verifier import history
from verifier.ledger import Ledger
from verifier.surface.diff import diff

from .test_site import parse, target_of

REPO_URL = "https://github.com/vllm-project/vllm/blob/"
VERSIONS = ["0.1.0", "0.2.0", "0.10.0"]


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment.replace("<br>", " "))).split())


def _rows(page: str, section: str) -> list[list[str]]:
    """The rows of the table under the heading with id `section`, as the text of each cell."""
    block = page.split(f'id="{section}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    return [[_text(cell) for cell in re.findall(r"<td>(.*?)</td>", row, re.DOTALL)]
            for row in re.findall(r"<tr>(.*?)</tr>", block, re.DOTALL)]


def _line(path_text: str, needle: str) -> int:
    return next(n for n, line in enumerate(path_text.split("\n"), 1) if needle in line)


@pytest.fixture(scope="module")
def surfaces(built_site):
    kb, _ = built_site
    return Ledger(kb / "ledger").load_surfaces("vllm")


def test_a_surface_page_per_release_linked_from_its_release_page(built_site, surfaces):
    _, out = built_site
    assert surfaces.versions() == VERSIONS
    for version in VERSIONS:
        page = out / "engines" / "vllm" / version / "surface" / "index.html"
        assert page.is_file(), version
        release = (out / "engines" / "vllm" / version / "index.html").read_text()
        assert 'href="surface/"' in release
        text = page.read_text()
        counts = surfaces.surface(version).counts()
        for anchor, kind in (("flags", "flag"), ("env", "env"), ("metrics", "metric"), ("requests", "request")):
            assert len(_rows(text, anchor)) == counts[kind], (version, kind)


def test_the_surface_page_gives_defaults_choices_and_lines_linked_at_that_release(built_site):
    from .site_fixture import surface_files

    _, out = built_site
    text = (out / "engines/vllm/0.2.0/surface/index.html").read_text()
    args = surface_files("0.2.0")["vllm/engine/arg_utils.py"].decode()
    flags = {row[0].split(" ")[0]: row for row in _rows(text, "flags")}
    gpu = flags["--gpu-memory-utilization"]
    assert gpu[1] == "0.92"
    field, flag = _line(args, "gpu_memory_utilization: float"), _line(args, "'--gpu-memory-utilization'")
    assert gpu[3] == f"default at vllm/engine/arg_utils.py:{field}, flag at vllm/engine/arg_utils.py:{flag}"
    assert f'href="{REPO_URL}v0.2.0/vllm/engine/arg_utils.py#L{flag}"' in text
    assert flags["--scheduling-policy"][2] == "fcfs priority"
    assert flags["--tensor-parallel-size"][0].startswith("--tensor-parallel-size -tp --tp")
    assert flags["--gpu-memory-utilization"][0].endswith("The fraction of GPU memory to use.")  # what the code says
    env = {row[0].split(" ")[0]: row for row in _rows(text, "env")}
    assert env["VLLM_USE_V1"][1] == '"1"'
    assert _rows(text, "metrics")[1][:2] == ["vllm:num_requests_running Running.", "gauge (model_name)"]
    # the filter box is there for scripts to show; the tables are whole without them
    assert re.search(r'<form[^>]*id="surface-filter"[^>]*hidden', text)
    later = (out / "engines/vllm/0.10.0/surface/index.html").read_text()
    assert "--enable-prefix-caching (deprecated)" in _text(later)


def test_help_text_is_cut_in_the_table(tmp_path):
    from verifier.site.surface import MAX_HELP, clip

    long = "word " * 100
    assert len(clip(long)) <= MAX_HELP + 2 and clip(long).endswith(" …")
    assert clip("short") == "short"


def test_upgrade_pages_for_consecutive_releases_and_to_the_newest(built_site):
    from verifier.site.upgrade import pairs

    _, out = built_site
    made = sorted(p.name for p in (out / "engines" / "vllm").iterdir() if "..." in p.name)
    assert made == ["0.1.0...0.10.0", "0.1.0...0.2.0", "0.2.0...0.10.0"]
    assert pairs(["0.10.0", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.15.0"]) == [
        ("0.10.0", "0.10.2"), ("0.10.0", "0.15.0"),
        ("0.10.2", "0.11.0"), ("0.10.2", "0.11.2"), ("0.10.2", "0.12.0"), ("0.10.2", "0.13.0"), ("0.10.2", "0.15.0"),
        ("0.11.0", "0.11.2"), ("0.11.0", "0.15.0"),
        ("0.11.2", "0.12.0"), ("0.11.2", "0.13.0"), ("0.11.2", "0.14.0"), ("0.11.2", "0.15.0"),
        ("0.12.0", "0.13.0"), ("0.12.0", "0.14.0"), ("0.12.0", "0.15.0"),
        ("0.13.0", "0.14.0"), ("0.13.0", "0.15.0"), ("0.14.0", "0.15.0")]
    release = (out / "engines/vllm/0.2.0/index.html").read_text()
    assert 'href="../0.1.0...0.2.0/"' in release and 'href="../0.2.0...0.10.0/"' in release


@pytest.mark.parametrize("older,newer", [("0.1.0", "0.2.0"), ("0.2.0", "0.10.0"), ("0.1.0", "0.10.0")])
def test_an_upgrade_page_shows_what_gotchas_diff_computes(built_site, surfaces, older, newer):
    _, out = built_site
    text = (out / "engines" / "vllm" / f"{older}...{newer}" / "index.html").read_text()
    result = diff(surfaces.surface(older), surfaces.surface(newer))
    shown = []
    for anchor in ("flags", "env", "metrics", "requests"):
        if f'id="{anchor}"' in text:
            shown += [(row[0].split(":")[0], row[1].split(" → ")[-1]) for row in _rows(text, anchor)]
    assert shown == [(c.what, c.name) for c in result.changes]
    counts = result.counts()
    assert (f"Flags, variables, metrics and request fields: {counts['added']} added, {counts['removed']} removed, "
            f"{counts['renamed']} renamed, {counts['changed']} changed.") in _text(text)


def test_a_changed_default_shows_both_sides_with_their_lines(built_site):
    from .site_fixture import surface_files

    _, out = built_site
    text = (out / "engines/vllm/0.1.0...0.2.0/index.html").read_text()
    rows = {row[1]: row for row in _rows(text, "flags")}
    old = surface_files("0.1.0")["vllm/engine/arg_utils.py"].decode()
    new = surface_files("0.2.0")["vllm/engine/arg_utils.py"].decode()
    gpu = rows["--gpu-memory-utilization"]
    assert gpu[0] == "changed: default"
    assert gpu[2] == (f"0.90 · default at vllm/engine/arg_utils.py:{_line(old, 'gpu_memory_utilization: float')}, "
                      f"flag at vllm/engine/arg_utils.py:{_line(old, chr(39) + '--gpu-memory-utilization')}")
    flag = _line(new, "'--gpu-memory-utilization'")
    assert gpu[3] == (f"0.92 · default at vllm/engine/arg_utils.py:{_line(new, 'gpu_memory_utilization: float')}, "
                      f"flag at vllm/engine/arg_utils.py:{flag}")
    assert f'{REPO_URL}v0.1.0/vllm/engine/arg_utils.py#L' in text
    assert f'href="{REPO_URL}v0.2.0/vllm/engine/arg_utils.py#L{flag}"' in text  # each side at its own release
    renamed = rows["--max-seq-len → --max-model-len"]
    assert renamed[0] == "renamed: spellings"
    assert "spellings: --max-model-len, --max-seq-len" in renamed[3]
    assert rows["--swap-space"][0] == "removed" and rows["--swap-space"][3] == "absent"
    assert rows["--kv-cache-dtype"][0] == "added" and rows["--kv-cache-dtype"][2] == "absent"
    choices = {row[1]: row for row in _rows((out / "engines/vllm/0.2.0...0.10.0/index.html").read_text(), "flags")}
    assert choices["--scheduling-policy"][2].endswith("choices: fcfs, priority")
    assert choices["--scheduling-policy"][3].endswith("choices: fcfs, priority, lifo")


def test_an_upgrade_page_lists_the_entries_that_start_and_stop_biting_with_the_checks_that_flipped(built_site):
    kb, out = built_site
    ledger = Ledger(kb / "ledger").load("vllm")
    changes = history.between(ledger, "0.1.0", "0.2.0")
    start = [c for c in changes if c.after == "holds"]
    assert start  # the fixture's first release contradicts ops-example; 0.2.0 has its code
    text = (out / "engines/vllm/0.1.0...0.2.0/index.html").read_text()
    section = text.split('id="start"', 1)[1].split("</section>", 1)[0]
    for change in start:
        assert f'href="../../../entries/{change.entry}/"' in section
        for t in change.checks:
            assert f"<code>{t.check}</code>" in section
    assert "✗ changed in 0.1.0 → ✓ holds in 0.2.0" in _text(section)
    assert "None." in _text(text.split('id="stop"', 1)[1].split("</section>", 1)[0])


def test_the_picker_lists_every_upgrade_page_and_offers_two_selects_to_scripts(built_site):
    _, out = built_site
    page = out / "engines/vllm/upgrade/index.html"
    text = page.read_text()
    assert re.search(r'<form[^>]*id="upgrade-form"[^>]*hidden', text)  # without JavaScript: the links below
    options = re.findall(r'<option value="([^"]+)"', text.split('id="upgrade-from"', 1)[1].split("</select>", 1)[0])
    assert options == list(reversed(VERSIONS))
    assert 'value="0.2.0" selected' in text.split('id="upgrade-from"', 1)[1].split("</select>", 1)[0]
    links = [link for link in parse(page).links if "..." in link]
    assert sorted(links) == ["../0.1.0...0.10.0/", "../0.1.0...0.2.0/", "../0.2.0...0.10.0/"]
    for link in links:
        assert target_of(out, page, link)[0].is_file()
    assert 'href="upgrade/"' in (out / "engines/vllm/index.html").read_text()


def test_the_pickers_json_holds_each_release_as_its_surface_has_it(built_site, surfaces):
    _, out = built_site
    engine = json.loads((out / "api/upgrade/vllm.json").read_text())
    assert engine["versions"] == VERSIONS and engine["surfaces"] == VERSIONS
    items = engine["items"]
    kinds = [k[0] for k in engine["kinds"]]
    assert [(b[0], b[1]) for b in items] == sorted((b[0], b[1]) for b in items)  # diff's order: kind, then name
    for version in VERSIONS:
        release = json.loads((out / "api/upgrade/vllm" / f"{version}.json").read_text())
        surface = surfaces.surface(version)
        assert sorted((kinds[items[r[0]][0]], items[r[0]][1]) for r in release["items"]) == sorted(surface.items)
        for row in release["items"]:
            item = surface.items[(kinds[items[row[0]][0]], items[row[0]][1])]
            assert (release["files"][row[1]], row[2]) == (item.path, item.line)
        assert release["blob"] == f"{REPO_URL}v{version}/"
        assert set(release["entries"]) == {"ops-example", "config-prefix-caching-example", "ops-hostile-markup"}
    # a default by what it means: 0.90 and 0.92 differ, the same default in two releases is one number
    gpu = [b for b in items if b[1] == "--gpu-memory-utilization"]
    assert len({b[4] for b in gpu}) == 2


def test_every_new_page_has_one_h1_and_no_broken_link(built_site):
    _, out = built_site
    new = [p for p in out.rglob("index.html") if "surface" in p.parts or "..." in p.parent.name
           or p.parent.name == "upgrade"]
    assert len(new) == 3 + 3 + 1
    for page in new:
        parsed = parse(page)
        assert parsed.h1 == 1, page
        for link in parsed.links:
            found = target_of(out, page, link)
            if found:
                assert found[0].is_file(), (page, link)


def test_hostile_surface_data_is_text(kb_root, tmp_path):
    """Names, defaults, help and paths from the surface file are data: escaped in pages, never markup or links
    that are not to the engine's repository."""
    import shutil

    from verifier import kb as kb_module
    from verifier import site
    from verifier.ledger import EngineLedger, EntryRecord, ReleaseRecord
    from verifier.surface.model import FLAG, Item
    from verifier.surface.store import EngineSurfaces, ReleaseSurface

    from .conftest import REPO, VALID_ENTRY
    from .test_site_hostile import entry, tags

    shutil.copytree(REPO / "site", kb_root / "site")
    kb = kb_module.load(kb_root)
    path = 'a"><script>alert(1)</script>.py'
    evil = Item(FLAG, "--x<script>alert(2)</script>", '"</code><img src=x onerror=alert(3)>"', "x",
                ("--y\"onmouseover=alert(4)",), ("<b>c</b>",), "<img src=x onerror=alert(5)>", path=path, line=3)
    surfaces = EngineSurfaces("vllm", {v: ReleaseSurface(v, files={path: "0" * 64}, items=[evil] if v == "0.2.0" else [])
                                       for v in ("0.1.0", "0.2.0")})
    ledger = EngineLedger("vllm", {v: ReleaseRecord("2024-01-01", "sha256:a", "pypi", "2024-01-02T00:00:00Z", "0.5.0",
                                                    {"ops-example": EntryRecord("holds", {})}) for v in ("0.1.0", "0.2.0")})
    data = site.Site(kb, [entry(VALID_ENTRY)], {"vllm": site.EngineView(kb.engines["vllm"], ledger, {}, surfaces)})
    out = tmp_path / "_site"
    site.build(data, kb_root / "site" / "templates", kb_root / "site" / "assets", out)
    for page in (out / "engines/vllm/0.2.0/surface/index.html", out / "engines/vllm/0.1.0...0.2.0/index.html"):
        text = page.read_text()
        assert "<script>alert" not in text and "<img" not in text and "<b>c" not in text, page
        for tag, attrs in tags(page):
            assert not any(k.startswith("on") for k in attrs), (page, tag, attrs)
            if tag == "a" and "://" in attrs.get("href", ""):
                assert attrs["href"].startswith("https://github.com/vllm-project/vllm/blob/v0.2.0/a%22%3E%3Cscript%3E")
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in (out / "engines/vllm/0.2.0/surface/index.html").read_text()


def test_the_real_ledgers_vllm_0_10_2_to_0_12_0_upgrade_has_a_page():
    """The upgrade from the last 0.10 release across two minor series (the README's `gotchas diff` example)."""
    from verifier.site.upgrade import pairs

    from .conftest import REPO

    assert ("0.10.2", "0.12.0") in pairs(Ledger(REPO / "ledger").load("vllm").versions())
