"""The suite never writes into the user's cache: each offline test has a cache folder of its own (conftest's
`_own_cache`), and the session checks at its end that the user's cache is as it was (`_user_cache_untouched`)."""

from __future__ import annotations

import os
from pathlib import Path

from verifier.cache import cache_dir
from verifier.verdicts import VerdictCache

from .conftest import USER_CACHE, _cache_state


def test_a_test_s_cache_is_its_own_and_not_the_user_s(tmp_path):
    folder = cache_dir("members")
    assert Path(os.environ["GOTCHAS_CACHE_DIR"]) in folder.parents
    assert USER_CACHE not in folder.parents and folder.resolve() != USER_CACHE.resolve()
    cache = VerdictCache()
    try:
        assert USER_CACHE not in Path(cache.path).parents
    finally:
        cache.close()


def test_the_cache_state_sees_a_new_file_and_a_file_written_again(tmp_path):
    root = tmp_path / "cache"
    (root / "members" / "ab").mkdir(parents=True)
    (root / "verdicts.sqlite3").write_bytes(b"x")
    for path in (root, root / "members", root / "members" / "ab", root / "verdicts.sqlite3"):
        os.utime(path, ns=(10**18, 10**18))  # an old time: a write now is a later one however fine the clock
    before = _cache_state(root)
    (root / "members" / "ab" / "new").write_bytes(b"y")  # a member two folders down
    assert _cache_state(root) != before
    os.utime(root / "verdicts.sqlite3", ns=(10**18, 10**18))
    before = _cache_state(root)
    (root / "verdicts.sqlite3").write_bytes(b"xy")  # the verdicts written again
    assert _cache_state(root) != before


def test_sqlite_side_files_a_reader_elsewhere_makes_are_not_a_write(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    (root / "verdicts.sqlite3").write_bytes(b"x")
    before = _cache_state(root)
    (root / "verdicts.sqlite3-wal").write_bytes(b"w")  # another process opened the cache
    (root / "verdicts.sqlite3-shm").write_bytes(b"s")
    assert _cache_state(root) == before
    (root / "kb.json").write_bytes(b"{}")  # a new file at the top is still a write
    assert _cache_state(root) != before
