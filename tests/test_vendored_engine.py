"""An engine whose code reaches the index vendored into another project's sdist (llama.cpp inside llama-cpp-python,
#30): `vendored_at` in the registry maps check paths (llama.cpp's own) to the archive's folder, and the rest of the
archive is not the engine's code. End to end on a package index on 127.0.0.1, and from an unpacked sdist."""

from __future__ import annotations

import json
import shutil
import tarfile

import pytest

from verifier import kb as kb_module

from .conftest import REPO, run_cli
from .index_server import IndexServer, make_sdist

REGISTRY = '''
llama-cpp:
  name: llama.cpp
  package: llama-cpp-python
  repository: https://github.com/ggml-org/llama.cpp
  vendored_at: vendor/llama.cpp
'''

COMMON_H = b'''#pragma once
struct common_params {
    int32_t n_predict = -1; // new tokens to predict
    int32_t n_ctx     = %d; // context size
    int32_t n_parallel = 1; // number of parallel sequences to decode
};
'''


def llama_entry(entry_id: str, title: str, checks: str, severity: str = "wrong-output",
                symptom: str = "Long prompts are cut.", cause: str = "Context shift.",
                workaround: str = "Turn it off.") -> str:
    """An entry of the llama-cpp engine with these checks (YAML items) and one sentence per section."""
    return f"""---
id: {entry_id}
title: {title}
scheme: config
severity: {severity}
concepts: [kv-cache]
engines: [llama-cpp]
references:
  - https://example.org/issue/1
history:
  - {{date: 2026-12-03, note: "Written."}}
checks:
{checks}---

## Symptom

{symptom}

## Root cause

{cause}

## Workaround

{workaround}
"""


ENTRY = llama_entry("config-llama-server-default-context", "llama-server's default context size", '''\
  - id: ctx-default
    claim: The default context size is 4096.
    path: common/common.h
    in: common_params.n_ctx
    contains: int32_t n_ctx = 4096;
''', severity="performance", cause="The context has a fixed default size.", workaround="Pass `-c`.")


#: The llama.cpp commit an sdist vendors, as llama-cpp-python's sdists say it: the submodule's detached HEAD.
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def sdist(version: str, n_ctx: int, head: bytes | None = None) -> bytes:
    files = {"vendor/llama.cpp/common/common.h": COMMON_H % n_ctx,
             "vendor/llama.cpp/tools/server/server.cpp": b"int main() { return 0; }\n",
             "llama_cpp/server/app.py": b"# llama-cpp-python's own server: not llama.cpp's code\n",
             "common/common.h": b"// a file of the outer package at a path llama.cpp also has: never read\n"}
    if head is not None:
        files[".git/modules/vendor/llama.cpp/HEAD"] = head
    return make_sdist(files, top=f"llama_cpp_python-{version}")


@pytest.fixture
def vendored_kb(kb_root, monkeypatch):
    (kb_root / "gotchas" / "engines.yaml").write_text(REGISTRY)
    (kb_root / "gotchas" / "config-llama-server-default-context.md").write_text(ENTRY)
    monkeypatch.chdir(kb_root)
    return kb_root


def test_the_registry_maps_repository_paths_into_the_vendored_folder(vendored_kb):
    engine = kb_module.load(vendored_kb).engines["llama-cpp"]
    assert engine.vendored_at == "vendor/llama.cpp/"
    assert engine.archive_path("common/common.h") == "vendor/llama.cpp/common/common.h"
    assert engine.repository_path("vendor/llama.cpp/tools/server/server.cpp") == "tools/server/server.cpp"
    assert engine.repository_path("llama_cpp/server/app.py") is None  # the outer package's own file


@pytest.mark.parametrize("text,message", [
    ('  vendored_at: vendor/llama.cpp\n  archive_root: python/\n', "archive_root or vendored_at, not both"),
    ("  vendored_at: ../outside\n", "vendored_at '../outside'"),
])
def test_a_vendored_at_that_cannot_be_is_refused_with_its_line(kb_root, text, message):
    (kb_root / "gotchas" / "engines.yaml").write_text(REGISTRY.replace("  vendored_at: vendor/llama.cpp\n", text))
    with pytest.raises(kb_module.KBError, match=message) as raised:
        kb_module.load(kb_root)
    assert "engines.yaml:6" in str(raised.value)


def test_only_a_vendored_engine_goes_without_a_tag_pattern(kb_root):
    (kb_root / "gotchas" / "engines.yaml").write_text(REGISTRY.replace("  vendored_at: vendor/llama.cpp\n", ""))
    with pytest.raises(kb_module.KBError, match="missing \\['tag_pattern'\\]"):
        kb_module.load(kb_root)
    (kb_root / "gotchas" / "engines.yaml").write_text(REGISTRY)
    vendored = kb_module.load(kb_root).engines["llama-cpp"]
    assert vendored.tag("0.3.2") == "" and vendored.ref("0.3.2", COMMIT) == COMMIT and vendored.ref("0.3.2") == ""


def test_verify_reads_the_vendored_code_from_the_index(vendored_kb, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as index:
        index.add("llama-cpp-python", "llama_cpp_python-0.3.1.tar.gz", sdist("0.3.1", 512),
                  upload_time="2024-10-01T00:00:00Z")
        index.add("llama-cpp-python", "llama_cpp_python-0.3.2.tar.gz", sdist("0.3.2", 4096, COMMIT.encode() + b"\n"),
                  upload_time="2024-11-01T00:00:00Z")
        index.add("llama-cpp-python", "llama_cpp_python-0.3.3.tar.gz", sdist("0.3.3", 4096, b"ref: refs/heads/x\n"),
                  upload_time="2024-12-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        code, out, err = run_cli(capsys, "verify", "--engine", "llama-cpp")
    assert code == 1, out + err  # changed at 0.3.1, holds at 0.3.2: a status change
    data = json.loads((vendored_kb / "ledger" / "llama-cpp.json").read_text())
    checks = {v: data["releases"][v]["entries"]["config-llama-server-default-context"]["checks"]["ctx-default"]
              for v in ("0.3.1", "0.3.2")}
    assert checks["0.3.2"]["verdict"] == "holds" and checks["0.3.2"]["path"] == "common/common.h"
    assert checks["0.3.2"]["lines"] == [4, 4] and checks["0.3.2"]["symbol"] == "common_params.n_ctx"
    assert checks["0.3.1"]["verdict"] == "changed"
    # The commit each release vendors, from its sdist; none where the archive does not name one.
    assert data["releases"]["0.3.2"]["commit"] == COMMIT
    assert "commit" not in data["releases"]["0.3.1"] and "commit" not in data["releases"]["0.3.3"]
    # The site links the code of 0.3.2 at that commit, and gives 0.3.1 no link rather than a wrong one.
    shutil.copytree(REPO / "site", vendored_kb / "site")
    code, out, err = run_cli(capsys, "site", "--out", str(tmp_path / "site"))
    assert code == 0, out + err
    folder = tmp_path / "site" / "entries" / "config-llama-server-default-context"
    at_each = (folder / "evidence.json").read_text()  # the entry page's lines and links at every release
    assert f"https://github.com/ggml-org/llama.cpp/blob/{COMMIT}/common/common.h#L4" in at_each
    assert at_each.count("ggml-org/llama.cpp/blob/") == 1
    assert "ggml-org/llama.cpp/blob/" not in (folder / "index.html").read_text()  # the newest, 0.3.3: no commit
    release = (tmp_path / "site" / "engines" / "llama-cpp" / "0.3.2" / "index.html").read_text()
    assert COMMIT[:12] in release
    listing = (tmp_path / "site" / "engines" / "llama-cpp" / "index.html").read_text()
    assert f"<code>{COMMIT[:12]}</code>" in listing and "llama.cpp commit</th>" in listing
    older = (tmp_path / "site" / "engines" / "llama-cpp" / "0.3.1" / "index.html").read_text()
    assert "ggml-org/llama.cpp/blob/" not in older and "ggml-org/llama.cpp/tree/" not in older


def test_verify_reads_an_unpacked_sdist_through_the_same_mapping(vendored_kb, tmp_path, capsys):
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(sdist("0.3.2", 4096))
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    tree = tmp_path / "unpacked" / "llama_cpp_python-0.3.2"
    code, out, err = run_cli(capsys, "check", "--source", f"dir:{tree}")
    assert code == 0, out + err
    assert "holds" in out
