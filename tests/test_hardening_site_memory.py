"""What `gotchas site` holds in memory does not grow with the whole site (issue 32): each page is on disk before the
next one is rendered and keeps no context once written, so the site is written as it is made, beside an earlier
site, which it replaces only once every file is written (a build that fails partway, a full disk say, leaves the
earlier site byte-identical and nothing of its own behind); and releases where an entry reads alike share one
reading of it."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from verifier import site
from verifier.site import writer

from .conftest import REPO
from .test_site_hostile import build, entry, make_site


@pytest.fixture
def kb_dir(kb_root):
    """A KB with the real vocabularies, registry and site templates (entries are given to `make_site`)."""
    shutil.copytree(REPO / "site", kb_root / "site")
    return kb_root


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by its relative path, with its bytes (folders by their path alone)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(folder.rglob("*"))}


def written_under(out: Path, path: tuple[str, ...]) -> bool:
    """Whether the page at `path` is a file somewhere under `out` (in it, or in a folder of the build's inside it)."""
    if out.joinpath(*path).is_file():
        return True
    return out.is_dir() and any(child.is_dir() and child.joinpath(*path).is_file() for child in out.iterdir())


def failing_writes(monkeypatch, after: int) -> dict:
    """Every write of the site's writer after the first `after` fails as a full disk does."""
    real = writer.open_regular
    calls = {"n": 0}

    def open_regular(path, flags, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(writer, "open_regular", open_regular)
    return calls


# --- 1. a page is written as it is made, and what it was made from let go ------------------------------------------


def test_each_page_is_on_disk_and_has_no_context_before_the_next_is_rendered(kb_dir, tmp_path, monkeypatch):
    out = tmp_path / "_site"
    data = make_site(kb_dir, [entry()], versions=("0.1.0", "0.2.0"))
    rendered: list[site.Page] = []
    late: list[str] = []
    kept: list[str] = []
    real = writer.Builder._render

    def render(self, page):
        for earlier in rendered:  # every page rendered before this one is written, and holds nothing more
            if not written_under(out, earlier.path):
                late.append("/".join(earlier.path))
            if earlier.context:
                kept.append("/".join(earlier.path))
        rendered.append(page)
        return real(self, page)

    monkeypatch.setattr(writer.Builder, "_render", render)
    builder = build(kb_dir, data, out)
    assert len(rendered) > 10  # the front page, the release pages, the entry page, the matrix, ...
    assert not late, f"pages not yet on disk when the next was rendered: {sorted(set(late))[:5]}"
    assert not kept, f"pages that kept their context once written: {sorted(set(kept))[:5]}"
    assert all(not page.context for page in builder.pages)
    for page in rendered:
        assert out.joinpath(*page.path).is_file()


# --- 2. a build that fails partway leaves the earlier site as it was, and nothing of its own -----------------------


@pytest.mark.parametrize("after", [3, 40])  # among the first pages; further on, among entries, the API, badges
def test_a_build_that_fails_partway_leaves_the_earlier_site_byte_identical(kb_dir, tmp_path, monkeypatch, after):
    out = tmp_path / "_site"
    build(kb_dir, make_site(kb_dir, [entry()], versions=("0.1.0",)), out)
    before = snapshot(out)
    assert (out / "entries" / "ops-example" / "index.html").is_file()

    with monkeypatch.context() as m, pytest.raises(OSError, match="No space left"):
        calls = failing_writes(m, after)
        build(kb_dir, make_site(kb_dir, [entry()], versions=("0.1.0", "0.2.0")), out)  # every page changes
    assert calls["n"] > after
    assert snapshot(out) == before  # byte-identical, and no folder or file of the failed build left in it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_site", "kb"]

    # room on the disk again: the next build replaces the earlier site, as it would have
    build(kb_dir, make_site(kb_dir, [entry()], versions=("0.1.0", "0.2.0")), out)
    assert (out / "engines" / "vllm" / "0.2.0" / "index.html").is_file()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [site.MARKER]


def test_a_build_that_fails_partway_into_a_new_folder_leaves_no_folder(kb_dir, tmp_path, monkeypatch):
    out = tmp_path / "new" / "_site"
    failing_writes(monkeypatch, 5)
    with pytest.raises(OSError, match="No space left"):
        build(kb_dir, make_site(kb_dir, [entry()]), out)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("earlier", [False, True])
def test_a_build_killed_outright_leaves_a_folder_the_next_build_takes(kb_dir, tmp_path, earlier):
    """A kill (SIGKILL, the OOM killer) discards nothing: the staging folder it left, with or without an earlier
    site beside it, is the site's own, and the next build removes it and builds."""
    out = tmp_path / "_site"
    if earlier:
        build(kb_dir, make_site(kb_dir, [entry()], versions=("0.1.0",)), out)
    left = out / f"{site.MARKER}.k1ll3d_x.building"
    (left / "entries").mkdir(parents=True)
    (left / "entries" / "half.html").write_text("<p>half")
    build(kb_dir, make_site(kb_dir, [entry()], versions=("0.1.0", "0.2.0")), out)
    assert (out / "engines" / "vllm" / "0.2.0" / "index.html").is_file() and not left.exists()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [site.MARKER]


def test_a_folder_holding_only_something_named_like_a_staging_link_is_still_refused(kb_dir, tmp_path):
    out = tmp_path / "_site"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / f"{site.MARKER}.abc.building").symlink_to(tmp_path / "elsewhere")  # a link is never the site's own
    with pytest.raises(site.SiteError, match="not empty and was not built by `gotchas site`"):
        build(kb_dir, make_site(kb_dir, [entry()]), out)
    assert (tmp_path / "elsewhere").is_dir()


# --- 3. releases where an entry reads alike share one reading -----------------------------------------------------


def test_releases_where_an_entry_reads_alike_share_one_reading(kb_dir):
    versions = ("0.1.0", "0.2.0", "0.3.0")
    data = make_site(kb_dir, [entry()], versions=versions)
    [one] = data.entries
    texts = [data.text_at(one, "vllm", v) for v in versions]
    assert texts[0] == texts[1] == texts[2]  # the same verdicts at every release: the same reading
    assert texts[1] is texts[0] and texts[2] is texts[0]  # kept once, not once per release
    assert data.text_at(one, "vllm", "0.2.0") is texts[0]  # and asked again, the same
    across = data.text_at(one, None, None)
    assert across.title == texts[0].title
