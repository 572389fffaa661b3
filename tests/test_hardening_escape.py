"""Issue #32, text reaching GitHub-rendered Markdown and terminals: one escaping function per output kind, used by
every command. Markdown (audit's, `verify --report`'s) is written through `verifier.md`, data never as a link,
raw HTML or a control character; `locate` and `bisect` print through `report.terminal`; no writer raises on a
lone surrogate (an argument or a file name of invalid UTF-8); SARIF's `artifactLocation.uri` is a URI reference.
"""

from __future__ import annotations

import os
import re
import threading
import types
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from verifier.cli import main

from .conftest import METRICS_PY, SCHED_PY, run_cli
from .gitrepo import GitRepo
from .test_markdown import _tokens

SITE = "https://site.example"
#: What hostile data holds: raw HTML, a comment that hides the rest of a body, a link, an image (a tracking pixel),
#: URLs GitHub would make links of (GFM autolinks), terminal escapes (ESC, CSI, OSC), a bidirectional control.
HOSTILE = ("<!-- hide <b>x</b> [l](https://evil.example/a) ![i](https://evil.example/p.png) "
           "<https://evil.example/b> https://evil.example/c www.evil.example \x1b[2J\x1b]0;t\x07\x9b31m \u202e")

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # newline and tab apart


def assert_inert(markdown: str, kb_links: bool = False) -> None:
    """No raw HTML, no link or image but to the site (`kb_links`: or one an entry of the real KB writes, never
    one of the data), no control character, no URL of the data that GitHub's autolinks would make a link of."""
    tokens = _tokens(markdown)
    html = [t.content for t in tokens if t.type in ("html_inline", "html_block")]
    assert not [h for h in html if h != "<br>"], markdown  # `<br>`: the verifier's own, between a cell's lines
    for t in tokens:
        if t.type in ("link_open", "image"):
            target = str(t.attrs.get("href") or t.attrs.get("src") or "")
            assert target.startswith(SITE + "/") or (kb_links and "evil" not in target), (target, markdown)
    assert not _RAW.search(markdown), markdown
    outside_code = re.sub(r"(`+).*?\1", "", markdown)  # GitHub links no URL inside a code span
    assert not re.search(r"(?i)https?://evil|(?<![\\\w])www\.evil", outside_code), markdown
    assert "evil" in markdown  # the data is shown, as text


# --- 1. audit's Markdown ---------------------------------------------------------------------------------------

def test_audit_markdown_writes_every_data_field_as_text():
    from verifier import audit
    from verifier.deployment import Installed, Settings

    entry = {"id": "ops-x", "title": "A title", "workaround": "Run `x`.", "engines": ["vllm"], "parts": [],
             "severity": "outage"}
    settings = Settings("vllm", flags={}, origin=f"serve.sh:{HOSTILE}")
    installed = Installed("vllm", f"0.1.0{HOSTILE}", f"req.txt:{HOSTILE}", settings=settings)
    target = audit.Target(installed, "0.1.0")
    finding = audit.Finding("vllm", "0.1.0", installed, entry, audit.ONLY_IF, (f"--flag is {HOSTILE}",))
    dropped = audit.Dropped("vllm", "0.1.0", "ops-y", f"--x is {HOSTILE} (serve.sh)")
    result = audit.Audit([target], [finding], [dropped], [f"req.txt:2: {HOSTILE}: not audited"])
    kb = {"engines": {"vllm": {"name": "vLLM", "releases": ["0.1.0"]}}}
    written = audit.markdown(kb, result, SITE)
    assert_inert(written)
    assert f"{SITE}/entries/ops-x/" in written


def test_audit_markdown_of_hostile_pull_request_files(audit_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "req <b>[l](https:evil.example) \x1b[2J.txt"
    (tmp_path / name).write_text('vllm==0.10.0 ; python_version > "3"\n'
                                 "sglang @ https://evil.example/<!--x.whl\n")
    code, out, err = audit_cli("-r", name, "--format", "markdown", "--site-url", SITE, "--serve",
                               'vllm serve m --scheduling-policy "<!--[c](https://evil.example)\x1b[2J" '
                               '--foo-bar "[d](https://evil.example/d)"')
    assert "Traceback" not in err
    assert "evil.example/&lt;!--x.whl" in out.replace("\\", "")  # the note is there, as text
    assert_inert(out, kb_links=True)


# --- 2. verify --report ----------------------------------------------------------------------------------------

class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802  (http.server's name)
        self.send_response(403, "Forbidden <!-- [x](https://evil.example/r) \x1b[2J")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _reason_phrase_note() -> str:
    """What the index client says of an index whose HTTP reason phrase is hostile (a real server on 127.0.0.1)."""
    from verifier.errors import GotchasError
    from verifier.sources.pypi.http import HttpClient

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(GotchasError) as raised:
            HttpClient(timeout=5, attempts=1).get(f"http://127.0.0.1:{server.server_address[1]}/simple/vllm/",
                                                  what="vllm's release list", limit=1000)
    finally:
        server.shutdown()
        server.server_close()
    assert "evil.example" in raised.value.message
    return f"vllm: {raised.value.message}"


def test_verify_report_writes_notes_hints_and_reason_phrases_as_text(monkeypatch):
    from verifier import report
    from verifier.history import StatusChange, Transition
    from verifier.ledger.records import CheckRecord
    from verifier.model import Diagnostic

    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    note = _reason_phrase_note()
    before = CheckRecord("holds", path="pkg/a.py", lines=(1, 2))
    after = CheckRecord("missing", reason="symbol-missing", path=f"pkg/{HOSTILE}.py", hint=f"moved? {HOSTILE}")
    change = StatusChange("vllm", "ops-x", "0.1.0", "0.2.0", "holds", "unverified",
                          (Transition("ops-x", "zero", "0.1.0", "0.2.0", before, after),))
    diagnostic = Diagnostic("gotchas/x.md", 3, "G201", f"unknown field {HOSTILE}")
    kb = types.SimpleNamespace(engines={})
    written = report.run_markdown(kb, [], [change], [diagnostic], [note, f"a note {HOSTILE}"], SITE,
                                  [f"ops-x: fixed 0.2.0, but {HOSTILE}"])
    assert_inert(written)
    assert "Forbidden" in written


# --- 3. locate and bisect on a terminal ------------------------------------------------------------------------

ESC_NAME = "pkg/\x1b[2J\x1b]0;owned\x07x.py"
ESC_MESSAGE = "keep computed tokens \x1b[31m\x1b]0;owned\x07 \x9b2J"
BROKEN = SCHED_PY.replace("request.num_computed_tokens = 0", "request.num_computed_tokens -= 1")


def _repo(path: Path) -> GitRepo:
    repo = GitRepo(path)
    repo.write("pkg/sched.py", SCHED_PY)
    repo.write("pkg/metrics.py", METRICS_PY)
    repo.write(ESC_NAME, SCHED_PY)
    repo.commit("initial")
    repo.tag("v0.1.0")
    repo.write("pkg/sched.py", BROKEN)
    repo.commit(ESC_MESSAGE)
    repo.tag("v0.2.0", message="release 0.2.0")
    return repo


def _no_raw_controls(out: str) -> None:
    assert not _RAW.search(out), out


def test_locate_prints_file_names_through_the_terminal_escaper(kb, tmp_path, isolated_git, capsys):
    repo = _repo(tmp_path / "engine")
    code = main(["locate", "vllm", "Scheduler.preempt", "--source", f"git:{repo.path}", "--release", "0.1.0"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "pkg/\\x1b[2J\\x1b]0;owned\\x07x.py" in out
    _no_raw_controls(out)


def test_bisect_prints_commit_messages_through_the_terminal_escaper(kb, tmp_path, isolated_git, capsys):
    repo = _repo(tmp_path / "engine")
    code = main(["bisect", "ops-example", "zero", "--source", f"git:{repo.path}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "keep computed tokens \\x1b[31m" in out, repr(out)
    _no_raw_controls(out)


# --- 4. lone surrogates ----------------------------------------------------------------------------------------

def test_a_source_path_of_invalid_utf8_is_printed_not_a_traceback(kb, tmp_path, isolated_git, capsys):
    repo = _repo(tmp_path / os.fsdecode(b"engine\xff"))
    code = main(["bisect", "ops-example", "metric", "--source", f"git:{repo.path}"])
    out = capsys.readouterr().out
    assert code == 1 and "same status in every release" in out and "\\udcff" in out


def test_every_format_of_audit_writes_an_argument_of_invalid_utf8(audit_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"r\xff.txt")
    Path(name).write_text("vllm==0.10.0\n")
    serve = os.fsdecode(b"vllm serve m --foo-\xff x --api-key \xed\xa0\x80")
    for fmt in ("text", "markdown", "json", "sarif"):
        code, out, err = audit_cli("-r", name, "--serve", serve, "--format", fmt)
        assert "Traceback" not in err and code in (0, 1), (fmt, err)
        assert out.encode("utf-8")  # nothing unwritable


def test_the_report_file_of_verify_takes_a_surrogate(tmp_path):
    from verifier import report

    kb = types.SimpleNamespace(engines={})
    written = report.run_markdown(kb, [], [], [], [os.fsdecode(b"note \xff"), "\ud800"], "", [])
    written.encode("utf-8")


def test_no_command_output_raises_on_a_surrogate(kb, capsys):
    code, out, err = run_cli(capsys, "show", "ops-example", "--engine", "vllm")
    assert code == 0
    from verifier import report

    def say(args):
        print("path " + os.fsdecode(b"\xff") + " \ud800")
        return 0

    assert report.printable(say, None) == 0
    out = capsys.readouterr().out
    assert "\\udcff" in out and "\\ud800" in out


# --- 5. SARIF URIs ---------------------------------------------------------------------------------------------

#: RFC 3986 relative-ref (no scheme, so no ':' in the first segment) made of unreserved, sub-delims, ':', '@',
#: '/' and percent-encoded octets: no space, no '#', no '?', no raw '%'.
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|%[0-9A-Fa-f]{2})"
_RELATIVE_REF = re.compile(rf"(?:{_PCHAR}+|{_PCHAR}*)(?:/(?:{_PCHAR}|:)*)*")


@pytest.mark.parametrize("name", ["a b#c%d?e é.txt", "sub dir/x:y #1.txt", os.fsdecode(b"bad\xff.txt")])
def test_sarif_locations_are_uri_references(audit_cli, tmp_path, monkeypatch, name):
    import json

    monkeypatch.chdir(tmp_path)
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("vllm==0.10.0\n")
    code, out, err = audit_cli("-r", name, "--format", "sarif")
    assert code == 1, err
    uris = {location["physicalLocation"]["artifactLocation"]["uri"]
            for result in json.loads(out)["runs"][0]["results"] for location in result.get("locations", [])}
    assert uris, out
    for uri in uris:
        assert _RELATIVE_REF.fullmatch(uri), uri
        assert urllib.parse.unquote_to_bytes(uri) == os.fsencode(name)


def test_an_absolute_location_outside_the_folder_is_a_file_uri(audit_cli, tmp_path, monkeypatch):
    import json

    folder = tmp_path / "elsewhere #1"
    folder.mkdir()
    (folder / "r é.txt").write_text("vllm==0.10.0\n")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    code, out, _ = audit_cli("-r", str(folder / "r é.txt"), "--format", "sarif")
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == (folder / "r é.txt").as_uri() and " " not in uri and "#" not in uri


def test_check_job_summary_writes_messages_hints_and_notes_with_no_link():
    from verifier import report
    from verifier.model import Check, CheckResult, Diagnostic, Release, Verdict

    check = Check(id="zero", claim="c", engine="vllm", path="pkg/a.py", matcher="contains", pattern="x", line=3)
    result = CheckResult("ops-x", check, Release("vllm", "0.1.0"),
                         Verdict("changed", "not-found", message="m", hint=f"closest line: {HOSTILE}",
                                 path="pkg/a.py", lines=(1, 2)), "gotchas/e.md")
    diagnostic = Diagnostic("gotchas/x.md", 1, "G201", f"unknown field {HOSTILE}")
    assert_inert(report.render("markdown", [diagnostic], [result], [f"note {HOSTILE}"], 1))
