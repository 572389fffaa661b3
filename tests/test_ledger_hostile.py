"""The ledger against hostile data: a ledger, an evidence file, a lock or an engine key committed by a stranger's
pull request must not steer a write outside `ledger/`, follow a link, read without bound, or reach the site
misread. Every such file is refused with a LedgerError that names the file and where in it, before anything is
written; `verify` then exits 3 and leaves every file as it was."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from verifier import ledger as ledger_module
from verifier.ledger import READABLE_FORMATS, EngineLedger, Ledger, LedgerError, decode, encode
from verifier.run import verify_engine
from verifier.sources.directory import DirectorySource

from .conftest import VALID_ENTRY, run_cli
from .test_verify import index  # noqa: F401  (the fixture: a local package index with three vllm releases)

HOSTILE_ENGINES = ["../../escape", "../escape", "..", "", "a/b", "/tmp/abs", "Vllm", "vllm.json", "x\0y"]
HOSTILE_VERSIONS = ["../../x", "..", ".", "", "a/b", "a\\b", "0.1.0/../../x", "x y", ".hidden", "-rf", "0.1.0\n",
                    "v" * 300, "a..b"]
#: Values of every JSON type, and the numbers that equal 0 and 1 without being them.
OTHER_VALUES = [None, 0, 1, -1, 1.5, 0.0, 1.0, True, False, "x", "", "../x", [], {}, [[1, ["x"]]], {"a": [{}]}]
OTHER_KEYS = ["../x", "", "a/b", "X", "zz-extra"]


def pointer(at) -> str:
    """The location of a value as the messages write it (JSON Pointer without the leading slash, "" for an empty
    key)."""
    return "/".join(str(part).replace("~", "~0").replace("/", "~1") or '""' for part in at)


def paths_of(value, at=()):
    """The location of every value in a JSON document, the document itself first."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_of(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths_of(item, (*at, i))


def replaced(data, at, new):
    copy = json.loads(json.dumps(data))
    if not at:
        return new
    parent = copy
    for part in at[:-1]:
        parent = parent[part]
    parent[at[-1]] = new
    return copy


def renamed(data, at, new_key):
    copy = json.loads(json.dumps(data))
    parent = copy
    for part in at[:-1]:
        parent = parent[part]
    parent[new_key] = parent.pop(at[-1])
    return copy


def with_key(data, at, key):
    copy = json.loads(json.dumps(data))
    target = copy
    for part in at:
        target = target[part]
    target[key] = 1
    return copy


def mutations(data):
    """(location, mutated document): every value replaced by values of other types, every key renamed, a key
    added to every object."""
    for at in list(paths_of(data)):
        for new in OTHER_VALUES:
            yield at, replaced(data, at, new)
        target = data
        for part in at:
            target = target[part]
        if isinstance(target, dict):
            yield (*at, "zz-extra"), with_key(data, at, "zz-extra")
        if at and isinstance(at[-1], str):
            parent = data
            for part in at[:-1]:
                parent = parent[part]
            for key in OTHER_KEYS:
                if key not in parent:
                    yield (*at[:-1], key), renamed(data, at, key)


def refused_where(message: str, where, at) -> bool:
    """Whether a refusal names the file and the location of the mutation: the value itself, a key inside it (a
    value put there may be bad within), or the record holding it (two line numbers out of order)."""
    if str(where) not in message:
        return False
    if not at:
        return True
    return f": {pointer(at)}/" in message or any(f": {pointer(at[:n])}: " in message
                                                  for n in (len(at), len(at) - 1) if n > 0)


def sglang_tree(engine_tree):
    """The engine tree laid out as an SGLang release (under python/)."""
    tree = engine_tree.parent / "sglang"
    shutil.copytree(engine_tree, tree / "python")
    return tree


def two_engines(kb, engine_tree) -> list[str]:
    """A second entry, on SGLang; the `verify` arguments that read both engines from directories."""
    (kb / "gotchas" / "ops-sglang.md").write_text(
        VALID_ENTRY.replace("id: ops-example", "id: ops-sglang").replace("engines: [vllm]", "engines: [sglang]"))
    return ["verify", "--source", f"vllm=dir:{engine_tree}", "--source", f"sglang=dir:{sglang_tree(engine_tree)}"]


@pytest.fixture
def small_ledger(kb, index, capsys):  # noqa: F811
    """A real ledger of three vllm releases (changed, then holds twice, sharing records), and its evidence."""
    run_cli(capsys, "verify", "--engine", "vllm")
    folder = kb / "ledger"
    assert len(json.loads((folder / "vllm.json").read_text())["releases"]) == 3
    return folder


def files_under(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in sorted(folder.rglob("*"))}


# --- 1. paths: an engine key or a release version names no file outside the folder ------------------------------

@pytest.mark.parametrize("engine", HOSTILE_ENGINES)
def test_an_engine_key_that_is_not_a_name_names_no_ledger_file(tmp_path, engine):
    ledger = Ledger(tmp_path / "kb" / "ledger")
    for attempt in (lambda: ledger.path(engine), lambda: ledger.evidence_path(engine), lambda: ledger.load(engine),
                    lambda: ledger.load_evidence(engine), lambda: ledger.save(EngineLedger(engine)),
                    lambda: ledger.save_evidence({"engine": engine, "version": None, "checks": {}})):
        with pytest.raises(LedgerError, match="engine"):
            attempt()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_verify_with_an_engine_key_that_leaves_the_folder_writes_nothing(tmp_path, engine_tree):
    """The registry's engine keys are checked when it is loaded; this guard holds even if one slips through."""
    folder = tmp_path / "kb" / "ledger"
    folder.mkdir(parents=True)
    with pytest.raises(LedgerError, match="escape"):
        verify_engine("../../escape", DirectorySource("../../escape", engine_tree), [], Ledger(folder))
    assert [p for p in tmp_path.rglob("*.json")] == []


@pytest.mark.parametrize("version", HOSTILE_VERSIONS)
def test_a_release_version_that_is_not_a_name_is_refused_on_reading(tmp_path, version):
    data = {"engine": "vllm", "format": 2, "releases": {version: {"entries": {}}}}
    (tmp_path / "vllm.json").write_text(json.dumps(data))
    with pytest.raises(LedgerError) as raised:
        Ledger(tmp_path).load("vllm")
    message = str(raised.value)
    assert str(tmp_path / "vllm.json") in message and "releases/" in message
    assert "\n" not in message and "\0" not in message  # a hostile key is shown escaped, never raw


@pytest.mark.parametrize("key", ["entries/../../x", "ops-example/../../x", "Ops/x", "a/b/c", "ops-example"])
def test_evidence_keyed_by_what_is_not_entry_slash_check_is_refused(tmp_path, key):
    good = {"path": "pkg/a.py", "start": 1, "lines": ["x = 1"], "match": [1, 1], "verdict": "holds"}
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "vllm.json").write_text(json.dumps(
        {"engine": "vllm", "version": "0.1.0", "checks": {key: good}}))
    with pytest.raises(LedgerError, match="checks/"):
        Ledger(tmp_path).load_evidence("vllm")


def test_a_ledger_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "vllm.json").write_text("precious")
    (tmp_path / "ledger").symlink_to(elsewhere)
    ledger = Ledger(tmp_path / "ledger")
    for attempt in (lambda: ledger.load("vllm"), lambda: ledger.save(EngineLedger("vllm")),
                    lambda: ledger.save_evidence({"engine": "vllm", "version": None, "checks": {}})):
        with pytest.raises(LedgerError, match="symbolic link"):
            attempt()
    with pytest.raises(LedgerError, match="symbolic link"), ledger.lock():
        pass
    assert files_under(elsewhere) == {"vllm.json": b"precious"}


def test_an_evidence_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "vllm.json").write_text("precious")
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "evidence").symlink_to(elsewhere)
    ledger = Ledger(tmp_path / "ledger")
    with pytest.raises(LedgerError, match="symbolic link"):
        ledger.save_evidence({"engine": "vllm", "version": None, "checks": {}})
    with pytest.raises(LedgerError, match="symbolic link"):
        ledger.load_evidence("vllm")
    assert files_under(elsewhere) == {"vllm.json": b"precious"}


# --- 2. links and special files: never followed, never read without bound -------------------------------------

def test_a_lock_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / ".lock").symlink_to(target)
    with pytest.raises(LedgerError, match="symbolic link"), Ledger(tmp_path / "ledger").lock():
        pass
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    (tmp_path / "ledger").mkdir()
    lock = tmp_path / "ledger" / ".lock"
    lock.mkdir() if kind == "folder" else os.mkfifo(lock)
    with pytest.raises(LedgerError, match="not a regular file"), Ledger(tmp_path / "ledger").lock():
        pass


def test_verify_refuses_a_linked_lock_and_writes_nothing(kb, engine_tree, capsys):
    target = kb / "precious.txt"
    target.write_text("keep me\n")
    (kb / "ledger").mkdir()
    (kb / "ledger" / ".lock").symlink_to(target)
    code, _, err = run_cli(capsys, "verify", "--source", f"dir:{engine_tree}")
    assert code == 3 and "symbolic link" in err
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in (kb / "ledger").iterdir()) == [".lock"]


def test_the_lock_says_who_holds_it_and_is_kept_a_regular_file(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    with ledger.lock(), pytest.raises(LedgerError, match=f"locked by gotchas run pid {os.getpid()}"), ledger.lock():
        pass
    assert (tmp_path / "ledger" / ".lock").read_text() == f"gotchas run pid {os.getpid()}\n"


def test_a_ledger_that_is_a_link_is_not_followed(small_ledger, kb, index, capsys):  # noqa: F811
    real = kb / "real.json"
    os.replace(small_ledger / "vllm.json", real)
    before = real.read_bytes()
    (small_ledger / "vllm.json").symlink_to(real)
    with pytest.raises(LedgerError, match="symbolic link"):
        Ledger(small_ledger).load("vllm")
    code, _, err = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 3 and "symbolic link" in err
    assert real.read_bytes() == before and (small_ledger / "vllm.json").is_symlink()


def test_a_ledger_linked_to_an_endless_device_is_refused_unread(tmp_path):
    (tmp_path / "vllm.json").symlink_to("/dev/zero")
    with pytest.raises(LedgerError, match="symbolic link"):
        Ledger(tmp_path).load("vllm")
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "vllm.json").symlink_to("/dev/zero")
    with pytest.raises(LedgerError, match="symbolic link"):
        Ledger(tmp_path).load_evidence("vllm")


@pytest.mark.parametrize("name,bound", [("vllm.json", "MAX_LEDGER_BYTES"), ("evidence/vllm.json", "MAX_EVIDENCE_BYTES")])
def test_a_file_larger_than_the_bound_is_refused(tmp_path, name, bound):
    limit = getattr(ledger_module, bound)
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:  # sparse: the size is what matters
        handle.write(b'{"engine": "vllm", "format": 2, "releases": {}}')
        handle.truncate(limit + 1)
    load = Ledger(tmp_path).load if name == "vllm.json" else Ledger(tmp_path).load_evidence
    with pytest.raises(LedgerError, match=f"larger than {limit >> 20} MiB"):
        load("vllm")
    with open(path, "r+b") as handle:  # at the bound exactly, it is read (and refused as JSON, not for its size)
        handle.truncate(limit)
    with pytest.raises(LedgerError, match="not valid JSON"):
        load("vllm")


@pytest.mark.parametrize("text", ["[" * 200_000, '{"engine": "vllm", "format": 2' + "0" * 5000 + "}",
                                  '{"engine": "vllm", "format": 2, "releases": {}} trailing', "\udcff", b"\xff\xfe"])
def test_json_that_the_parser_chokes_on_is_refused_not_raised(tmp_path, text):
    (tmp_path / "evidence").mkdir()
    for path in (tmp_path / "vllm.json", tmp_path / "evidence" / "vllm.json"):
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    for load in (Ledger(tmp_path).load, Ledger(tmp_path).load_evidence):
        with pytest.raises(LedgerError, match="vllm.json"):
            load("vllm")


# --- 3. a typed read: every field of its type, refused with where, before anything is written -------------------

CHECK = ("releases", "0.10.0", "entries", "ops-example", "checks", "zero")
WRONG_TYPES = [
    (("releases",), []),
    ((*CHECK, "verdict"), 3),
    ((*CHECK, "verdict"), "holdz"),
    ((*CHECK, "lines"), "4-4"),
    ((*CHECK, "lines", 1), "4"),
    ((*CHECK, "path"), {"a": "pkg/sched.py"}),
    ((*CHECK, "symbol"), [[[{"a": []}]]]),
    ((*CHECK, "form"), True),
    ((*CHECK, "sha256"), "<script>"),
    (("releases", "0.10.0", "entries", "ops-example", "status"), ["holds"]),
    (("releases", "0.10.0", "entries", "ops-example", "checks"), [1]),
    (("releases", "0.10.0", "entries"), "all"),
    (("releases", "0.10.0", "date"), {"y": 2024}),
    (("releases", "0.10.0", "commit"), "0c1e570"),  # a vendored engine's commit: 40 hex digits, never short
    (("releases", "0.10.0", "commit"), "../../../etc/passwd"),
    (("releases", "0.10.0", "commit"), None),
    (("releases", "0.10.0"), None),
]


@pytest.mark.parametrize("at,value", WRONG_TYPES, ids=[f"{pointer(at)}={value!r}" for at, value in WRONG_TYPES])
def test_a_ledger_of_the_wrong_types_is_refused_with_where(small_ledger, at, value):
    data = json.loads((small_ledger / "vllm.json").read_text())
    (small_ledger / "vllm.json").write_text(json.dumps(replaced(data, at, value)))
    with pytest.raises(LedgerError) as raised:
        Ledger(small_ledger).load("vllm")
    assert f"{small_ledger / 'vllm.json'}: {pointer(at)}: " in str(raised.value)


@pytest.mark.parametrize("at,value", WRONG_TYPES[:6], ids=[f"{pointer(at)}={value!r}" for at, value in WRONG_TYPES[:6]])
def test_verify_refuses_a_malformed_ledger_before_writing_anything(kb, engine_tree, capsys, at, value):
    argv = two_engines(kb, engine_tree)
    code, out, err = run_cli(capsys, *argv)
    assert code in (0, 1), out + err
    folder = kb / "ledger"
    data = json.loads((folder / "vllm.json").read_text())
    data["releases"]["0.10.0"] = data["releases"].pop("HEAD")  # the locations above name release 0.10.0
    (folder / "vllm.json").write_text(json.dumps(replaced(data, at, value)))
    # sglang comes first: a run that read vllm's ledger only when it got to it would have written these again.
    (folder / "sglang.json").unlink()
    (folder / "evidence" / "sglang.json").unlink()
    before = files_under(folder)
    code, _, err = run_cli(capsys, *argv)
    assert files_under(folder) == before
    assert code == 3 and f"{pointer(at)}: " in err


def test_verify_refuses_malformed_evidence_before_writing_anything(kb, engine_tree, capsys):
    argv = two_engines(kb, engine_tree)
    run_cli(capsys, *argv)
    folder = kb / "ledger"
    evidence = json.loads((folder / "evidence" / "vllm.json").read_text())
    evidence["checks"]["ops-example/zero"]["lines"] = [["<script>alert(1)</script>"]]
    (folder / "evidence" / "vllm.json").write_text(json.dumps(evidence))
    (folder / "sglang.json").unlink()
    before = files_under(folder)
    code, _, err = run_cli(capsys, *argv)
    assert files_under(folder) == before
    assert code == 3 and "checks/ops-example~1zero/lines/0: " in err


def test_every_single_mutation_of_a_ledger_is_read_faithfully_or_refused_with_where(small_ledger):
    """Property: a value replaced by one of another type, a key renamed or added, anywhere in a real ledger.
    Reading either gives records that write back as exactly that document, or refuses it with a LedgerError
    naming the file and the location; never another exception, never a misreading. (The documents go to the
    decoder that `Ledger.load` hands a file's JSON to, without writing each to a file.)"""
    path = small_ledger / "vllm.json"
    data = json.loads(path.read_text())
    assert json.loads(encode(Ledger(small_ledger).load("vllm"))) == data
    failures, read, refused = [], 0, 0
    for at, mutated in mutations(data):
        try:
            loaded = decode(mutated, "vllm", str(path))
        except LedgerError as exc:
            refused += 1
            readable_format = at == ("format",) and mutated["format"] in READABLE_FORMATS
            if not readable_format and not refused_where(str(exc), path, at):
                failures.append(f"{pointer(at)}: refused without saying where: {exc}")
        except Exception as exc:  # noqa: BLE001 - the property is that nothing else escapes
            failures.append(f"{pointer(at)} = {json.dumps(mutated)[:200]}: {type(exc).__name__}: {exc}")
        else:
            read += 1
            if json.loads(encode(loaded)) != mutated:
                failures.append(f"{pointer(at)}: misread as {encode(loaded)[:400]}")
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"
    assert read > 50 and refused > 500  # both sides of the property were exercised


def test_every_single_mutation_of_evidence_is_read_faithfully_or_refused_with_where(small_ledger):
    path = small_ledger / "evidence" / "vllm.json"
    data = json.loads(path.read_text())
    assert data["checks"]  # excerpts to mutate
    failures, read, refused = [], 0, 0
    for at, mutated in mutations(data):
        try:
            loaded = ledger_module.decode_evidence(mutated, "vllm", str(path))
        except LedgerError as exc:
            refused += 1
            if not refused_where(str(exc), path, at):
                failures.append(f"{pointer(at)}: refused without saying where: {exc}")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{pointer(at)} = {json.dumps(mutated)[:200]}: {type(exc).__name__}: {exc}")
        else:
            read += 1
            if loaded != mutated:
                failures.append(f"{pointer(at)}: misread as {json.dumps(loaded)[:400]}")
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"
    assert read > 10 and refused > 200


def test_evidence_is_read_back_as_verify_wrote_it(small_ledger):
    path = small_ledger / "evidence" / "vllm.json"
    assert Ledger(small_ledger).load_evidence("vllm") == json.loads(path.read_text())
    path.unlink()
    assert Ledger(small_ledger).load_evidence("vllm") == {"engine": "vllm", "version": None, "checks": {}}
