"""The front page's "paste your deployment" box (site/assets/audit.js, fed by verifier/site/audit_data.py) against
`gotchas audit --serve`: one table of serve lines and engine versions, each run through the CLI (`gotchas audit --kb
KB --serve LINE --engine ENGINE==VERSION --format json`, and its text format for the headline) and through the box in
chromium; both must list the same entries in the same groups and order, with the same titles, "only if" words,
workarounds and fixes, drop the same entries for the same reasons, and note the same things. The JSON the box reads
unpacks to the compiled KB; the box stays out of the way of a page load and of readers without JavaScript; it has no
axe-core violations at 1280 and 390 px. On the real KB and its committed ledger, `vllm serve m --scheduling-policy
priority` at vLLM 0.10.0 drops exactly what the CLI drops.

The site is built as site_fixture's `built_site` builds it (fixture releases verified against a local index, then
`gotchas site`), from entries of its own: `built_site`'s entries have no `when`, and its index serves no SGLang.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil

import pytest

from .site_fixture import CHROMIUM as _CHROMIUM  # noqa: E402
from .site_fixture import serve

if _CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("no chromium here (CI installs it: .ci/run)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
    "playwright.sync_api", fromlist=["sync_playwright"])

from .test_site_browser import _watched, violations  # noqa: E402

# --- the fixture KB: entries with conditions of both engines ------------------------------------------------------


def _entry(entry_id: str, title: str, severity: str, when: str, checks: str, engines: str = "[vllm]",
           workaround: str = "Add capacity.") -> str:
    from .conftest import VALID_ENTRY

    text = VALID_ENTRY.replace("id: ops-example", f"id: {entry_id}").replace(
        "title: An example gotcha that is well-formed", f"title: {title}").replace(
        "severity: performance", f"severity: {severity}").replace("engines: [vllm]", f"engines: {engines}").replace(
        "scheme: ops", f"scheme: {entry_id.split('-')[0]}").replace("Add capacity.", workaround)
    head, rest = text.split("checks:\n", 1)
    return head + "when:\n" + when + "checks:\n" + checks + "severity:" + rest.split("severity:", 1)[1]


_POLICY_CHECK = """  - id: fcfs-default
    claim: The default scheduling policy is fcfs.
    path: vllm/engine/arg_utils.py
    in: EngineArgs
    contains: 'scheduling_policy: str = "fcfs"'
"""
_TP_CHECK = """  - id: tp-default
    claim: Tensor parallelism is off by default.
    path: vllm/engine/arg_utils.py
    in: EngineArgs
    contains: 'tensor_parallel_size: int = 1'
"""
_ENV_CHECK = """  - id: v1-read
    claim: VLLM_USE_V1 is read from the environment.
    path: vllm/envs.py
    string: VLLM_USE_V1
"""
_REPORT_CHECK = """  - id: report-default
    claim: The cache report is off by default.
    path: python/sglang/srt/server_args.py
    in: ServerArgs
    contains: 'enable_cache_report: bool = False'
"""
_SCHEDULER_CHECK = """  - id: scheduler-reads-tp
    claim: The scheduler reads the tensor parallel size.
    path: python/sglang/srt/managers/scheduler.py
    string: tp_size
"""
ENTRIES = {
    "config-policy-example": _entry(
        "config-policy-example", "Request priority is ignored under the fcfs policy example", "wrong-output",
        "  - flag: --scheduling-policy\n    is: [fcfs]\n  - request: priority\n", _POLICY_CHECK,
        workaround="Start the server with `--scheduling-policy priority`."),
    "perf-prefix-example": _entry(
        "perf-prefix-example", "Prefix caching costs unique prompts example", "cost",
        "  - flag: --enable-prefix-caching\n    is: [true]\n", _POLICY_CHECK),
    "memory-tp-example": _entry(
        "memory-tp-example", "Tensor parallel workers each hold a copy example", "outage",
        """  - flag: [--tensor-parallel-size, -tp]
    is-not: ["1"]
  - any:
      - only-if: the GPUs share one PCIe switch
      - flag: --gpu-memory-utilization
        is: ["0.95"]
""", _TP_CHECK),
    "config-v1-example": _entry(
        "config-v1-example", "The V1 engine example", "security",
        """  - env: VLLM_USE_V1
    is: ["1"]
  - flag: --kv-cache-dtype
    set: false
    since: 0.2.0
""", _ENV_CHECK),
    "api-sglang-report-example": _entry(
        "api-sglang-report-example", "SGLang hides cached tokens without the report example", "observability",
        "  - flag: --enable-cache-report\n    is: [false]\n", _REPORT_CHECK, engines="[sglang]"),
    "ops-sglang-tp-example": _entry(
        "ops-sglang-tp-example", "SGLang tensor parallel example", "performance",
        "  - flag: --tp-size\n    is-not: [\"1\"]\n", _SCHEDULER_CHECK, engines="[sglang]"),
}

#: An SGLang release's server arguments: --tp-size with an alias, a flag with choices, a store_true flag (on by
#: default in 0.4.0, which contradicts the report entry's check there: `changed`).
SGLANG_ARGS = '''
import dataclasses


@dataclasses.dataclass
class ServerArgs:
    tp_size: int = 1
    schedule_policy: str = "fcfs"
    enable_cache_report: bool = False

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=ServerArgs.tp_size)
        parser.add_argument("--schedule-policy", type=str, default=ServerArgs.schedule_policy,
                            choices=["lpm", "random", "fcfs"])
        parser.add_argument("--enable-cache-report", action="store_true")
'''


def sglang_sdist(version: str) -> bytes:
    from .index_server import make_sdist

    args = SGLANG_ARGS if version != "0.4.0" else SGLANG_ARGS.replace("enable_cache_report: bool = False",
                                                                      "enable_cache_report: bool = True")
    files = {"sglang/srt/server_args.py": args.encode()}  # the sdist holds the repository's python/ folder
    if version != "0.4.0":  # the scheduler check has no file in 0.4.0: missing there, so its entry is unverified
        files["sglang/srt/managers/scheduler.py"] = b"TP = 'tp_size'\n"
    return make_sdist(files, top=f"sglang-{version}")


@pytest.fixture(scope="module")
def audit_site(tmp_path_factory):
    """(KB folder, site folder): vLLM 0.1.0, 0.2.0, 0.10.0 (site_fixture's) and SGLang 0.4.0, 0.5.0 verified, and
    the site built."""
    from .conftest import VALID_ENTRY, make_kb
    from .site_fixture import verified_site

    kb = make_kb(tmp_path_factory.mktemp("audit-kb") / "kb", site=True)
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)  # no conditions; `changed` in 0.1.0 (OLD_SCHED)
    for entry_id, text in ENTRIES.items():
        (kb / "gotchas" / f"{entry_id}.md").write_text(text)
    out = verified_site(tmp_path_factory, kb, more=[
        ("sglang", "0.4.0", sglang_sdist("0.4.0"), "2024-01-05T00:00:00Z"),
        ("sglang", "0.5.0", sglang_sdist("0.5.0"), "2024-02-05T00:00:00Z")])
    return kb, out


@pytest.fixture(scope="module")
def compiled_kb(audit_site):
    """The fixture KB compiled as `gotchas audit --kb` compiles it."""
    from verifier import compiled

    kb, _ = audit_site
    return compiled.compile_kb(kb)


@pytest.fixture(scope="module")
def base_url(audit_site):
    _, out = audit_site
    with serve(out) as url:
        yield url


@pytest.fixture
def page(browser):
    yield from _watched(browser, viewport={"width": 1280, "height": 900})


# --- both paths ----------------------------------------------------------------------------------------------------

def cli(capsys, monkeypatch, kb, compiled_kb, command: str, engine_version: str) -> dict:
    """What `gotchas audit --kb KB [--serve COMMAND] --engine ENGINE==VERSION` shows, as the box shows it: the
    headline (the text format's first line), per group the entries with their words, the dropped ones with their
    reasons, the notes; or the usage error."""
    from verifier import compiled
    from verifier.cli import main

    monkeypatch.setattr(compiled, "compile_kb", lambda root: compiled_kb)  # compiled once, as the CLI compiles it
    serve_args = ["--serve", command] if command.strip() else []
    outputs = {}
    for fmt in ("json", "text"):
        code = main(["audit", "--kb", str(kb), *serve_args, "--engine", engine_version, "--format", fmt])
        out, err = capsys.readouterr()
        if code == 2:
            return {"error": err.strip().removeprefix("gotchas: ")}
        outputs[fmt] = out
    data = json.loads(outputs["json"])
    target = data["targets"][0]
    shown = {"heading": outputs["text"].split("\n")[0] if target["release"] else "Nothing audited", "groups": {},
             "dropped": [[d["id"], d["engine"], d["release"], d["reason"]] for d in data["dropped"]],
             "notes": data["notes"], "audited": data["audited"], "brings": None}
    for finding in target["gotchas"]:
        fixed = None if target["upgrade"] is None else (
            f"fixed in {finding['fixed_in']}" if finding["fixed_in"] else "not fixed in any tracked release")
        shown["groups"].setdefault(finding["status"], []).append({
            "id": finding["id"], "severity": finding["severity"] or "unrated", "title": finding["title"],
            "parts": finding["parts"], "only_if": finding["only_if"],
            "workaround": finding["workaround"].replace("`", ""), "fixed": fixed})
    if target["upgrade"] and target["upgrade"]["brings"]:
        shown["brings"] = target["upgrade"]["brings"]
    return shown


#: What the box shows, read from the page.
READ_BOX = """() => {
  const box = document.getElementById("audit-result");
  const text = (el, sel) => { const found = el.querySelector(sel); return found ? found.textContent : null; };
  const shown = { heading: text(box, "#audit-heading"), groups: {}, dropped: [], notes: [],
                  audited: box.querySelector(".audit-nothing") === null, brings: null };
  box.querySelectorAll("ul.audit-list[data-group]").forEach((list) => {
    const group = list.dataset.group;
    Array.from(list.children).forEach((li) => {
      if (group === "dropped") {
        const where = /^ \\((\\S+) (\\S+)\\): $/.exec(li.childNodes[1].textContent);
        shown.dropped.push([li.dataset.entry, where[1], where[2], text(li, ".audit-reason")]);
        return;
      }
      const parts = text(li, ".audit-parts");
      const fixed = text(li, ".audit-fixed");
      const workaround = text(li, ".audit-workaround");
      (shown.groups[group] = shown.groups[group] || []).push({
        id: li.dataset.entry, severity: text(li, ".severity"), title: text(li, ".audit-title"),
        parts: parts === null ? [] : parts.replace(/^bites /, "").split("; "),
        only_if: Array.from(li.querySelectorAll(".audit-only-if > li"))
          .map((w) => w.textContent.replace(/^only if /, "")),
        workaround: workaround === null ? "" : workaround.replace(/^workaround: /, ""), fixed: fixed });
    });
  });
  box.querySelectorAll(".audit-notes > li").forEach((li) => shown.notes.push(li.textContent.replace(/^note: /, "")));
  const brings = box.querySelector(".audit-brings");
  if (brings) shown.brings = Array.from(brings.querySelectorAll("a")).map((a) => a.textContent);
  return shown;
}"""


def box(page, command: str, version: str) -> dict:
    """What the box shows for a pasted command line and a typed version (or the problem it reports)."""
    page.fill("#audit-serve", command)
    page.fill("#audit-version", version)
    page.evaluate("() => { const h = document.getElementById('audit-heading'); if (h) h.remove(); }")
    page.click("#audit-form button[type=submit]")
    page.wait_for_function("() => document.getElementById('audit-heading') !== null || "
                           "document.getElementById('audit-status').classList.contains('audit-problem')")
    if page.locator("#audit-heading").count() == 0:
        return {"error": page.locator("#audit-status").inner_text()}
    return page.evaluate(READ_BOX)


CONTINUED = """$ VLLM_USE_V1=1 \\
    vllm serve 'my model' \\
    --scheduling-policy "priority" \\
    -tp 2 --gpu-memory-utilization=0.95  # --enable-prefix-caching is a comment here
"""

#: (id, the command line pasted, the version typed, the CLI's --engine, what the case must show: group -> ids, or
#: "dropped" -> ids, or "notes" -> a text one note holds, or "error" -> a text the problem holds).
CASES = [
    ("vllm-flag-value-drops", "vllm serve m --scheduling-policy priority", "vllm==0.2.0", "vllm==0.2.0",
     {"dropped": {"config-policy-example"}}),
    ("vllm-flag-with-equals-meets", "vllm serve m --scheduling-policy=fcfs", "0.2.0", "vllm==0.2.0",
     {"bites only if": {"config-policy-example"}}),
    ("vllm-defaults-left-alone", "vllm serve m", "vLLM 0.10.0", "vllm==0.10.0",
     {"bites only if": {"config-policy-example"}, "bites": {"config-v1-example"},
      "dropped": {"perf-prefix-example", "memory-tp-example"}}),
    ("vllm-default-of-another-release", "vllm serve m", "vllm==0.1.0", "vllm==0.1.0",
     {"dropped": {"config-v1-example"}, "notes": "`changed`"}),
    ("vllm-bare-boolean", "vllm serve m --enable-prefix-caching", "0.2.0", "vllm==0.2.0",
     {"bites": {"perf-prefix-example"}}),
    ("vllm-no-boolean", "vllm serve m --no-enable-prefix-caching", "0.2.0", "vllm==0.2.0",
     {"dropped": {"perf-prefix-example"}}),
    ("vllm-boolean-word", "vllm serve m --enable-prefix-caching off", "0.10.0", "vllm==0.10.0",
     {"dropped": {"perf-prefix-example"}}),
    ("vllm-env-prefix", "VLLM_USE_V1=0 env vllm serve m", "0.10.0", "vllm==0.10.0",
     {"dropped": {"config-v1-example"}}),
    ("vllm-set-false-given", "vllm serve m --kv-cache-dtype fp8", "0.2.0", "vllm==0.2.0",
     {"dropped": {"config-v1-example"}}),
    ("vllm-abbreviated-flags", "vllm serve m --enable-prefix --sched priority", "0.2.0", "vllm==0.2.0",
     {"bites": {"perf-prefix-example"}, "dropped": {"config-policy-example"}}),
    ("vllm-short-alias", "vllm serve m -tp 2", "0.2.0", "vllm==0.2.0",
     {"bites only if": {"memory-tp-example"}}),
    ("vllm-alias-of-the-code", "vllm serve m --tp 1", "0.10.0", "vllm==0.10.0",
     {"dropped": {"memory-tp-example"}}),
    ("vllm-quotes-continuations-comment", CONTINUED, "0.2.0", "vllm==0.2.0",
     {"bites": {"memory-tp-example", "config-v1-example"},
      "dropped": {"config-policy-example", "perf-prefix-example"}}),
    ("vllm-untracked-version", "vllm serve m --scheduling-policy priority", "vllm==0.5.0", "vllm==0.5.0",
     {"dropped": {"config-policy-example"}, "notes": "is not a tracked release: audited as 0.2.0"}),
    ("vllm-local-build", "vllm serve m", "0.2.0+cu126", "vllm==0.2.0+cu126", {"notes": "local build of 0.2.0"}),
    ("vllm-development-build", "vllm serve m", "0.11.0.dev3", "vllm==0.11.0.dev3", {"notes": "development build"}),
    ("vllm-older-than-tracked", "vllm serve m", "0.0.9", "vllm==0.0.9", {"notes": "older than the oldest"}),
    ("vllm-unknown-flags", "vllm serve m --no-such-flag 3 --swap-space 4", "0.10.0", "vllm==0.10.0",
     {"notes": "--swap-space is not a flag of vLLM 0.10.0 (it is in 0.1.0)"}),
    ("vllm-choice-refused", "vllm serve m --scheduling-policy lifo", "0.2.0", "vllm==0.2.0",
     {"notes": "is not one of its choices", "dropped": {"config-policy-example"}}),
    ("vllm-config-file", "python -m vllm.entrypoints.openai.api_server --model m --config c.yaml", "0.2.0",
     "vllm==0.2.0", {"notes": "--config c.yaml are not read"}),
    ("vllm-flags-without-a-program", "--scheduling-policy priority", "vllm==0.2.0", "vllm==0.2.0",
     {"dropped": {"config-policy-example"}}),
    ("vllm-no-command-line", "", "vllm==0.2.0", "vllm==0.2.0",
     {"bites only if": {"config-policy-example", "perf-prefix-example", "memory-tp-example", "config-v1-example"}}),
    ("sglang-alias-and-default", "python -m sglang.launch_server --model-path m --tensor-parallel-size 2",
     "SGLang 0.5.0", "sglang==0.5.0", {"bites": {"ops-sglang-tp-example", "api-sglang-report-example"}}),
    ("sglang-boolean-given", "sglang serve --model-path m --enable-cache-report", "sglang==0.5.0", "sglang==0.5.0",
     {"dropped": {"api-sglang-report-example", "ops-sglang-tp-example"}}),
    ("sglang-unverified-and-changed", "python3 -m sglang.launch_server --model-path m --tp-size 4", "0.4.0",
     "sglang==0.4.0", {"unverified": {"ops-sglang-tp-example"}, "notes": "`changed`"}),
    ("settings-of-another-engine", "python -m sglang.launch_server --model-path m --tp-size 4", "vllm==0.2.0",
     "vllm==0.2.0", {"notes": "settings of sglang, which no audited version is of"}),
    ("unclosed-quote", "vllm serve m --chat-template '{{ x }}", "0.2.0", "vllm==0.2.0",
     {"error": "No closing quotation"}),
    ("no-engine-to-tell", "serve-it --scheduling-policy priority", "0.2.0", "0.2.0",
     {"error": "cannot tell the engine of 'serve-it --scheduling-policy priority'"}),
]


@pytest.mark.parametrize("case_id,command,typed,engine_version,must", CASES, ids=[c[0] for c in CASES])
def test_the_box_shows_what_the_cli_shows(page, base_url, audit_site, compiled_kb, capsys, monkeypatch, case_id,
                                          command, typed, engine_version, must):
    kb, _ = audit_site
    expected = cli(capsys, monkeypatch, kb, compiled_kb, command, engine_version)
    page.goto(base_url)
    shown = box(page, command, typed)
    if "error" in expected:
        assert must["error"] in expected["error"]
        assert shown["error"] == expected["error"]
        return
    assert shown == expected
    for group, ids in must.items():
        if group == "dropped":
            assert ids <= {d[0] for d in expected["dropped"]}, expected["dropped"]
        elif group == "notes":
            assert any(ids in note for note in expected["notes"]), expected["notes"]
        else:
            assert ids <= {f["id"] for f in expected["groups"].get(group, [])}, expected["groups"]


def test_the_words_and_the_ranking_are_the_clis(page, base_url, audit_site, compiled_kb, capsys, monkeypatch):
    """A case with every group and a reason in the code's words, spelt out: severities rank within a group."""
    kb, _ = audit_site
    command = "vllm serve m -tp 2 --scheduling-policy priority"
    expected = cli(capsys, monkeypatch, kb, compiled_kb, command, "vllm==0.2.0")
    page.goto(base_url)
    assert box(page, command, "0.2.0") == expected
    assert expected["heading"] == "vLLM 0.2.0 (--engine): 3 gotchas; upgrading to 0.10.0 clears 0 of 3"
    assert [f["id"] for f in expected["groups"]["bites"]] == ["config-v1-example", "ops-example"]  # security first
    assert expected["groups"]["bites only if"][0]["only_if"] == ["the GPUs share one PCIe switch"]
    assert expected["dropped"] == [
        ["config-policy-example", "vllm", "0.2.0", "--scheduling-policy is priority (--serve)"],
        ["perf-prefix-example", "vllm", "0.2.0", page.evaluate(
            "() => document.querySelector('[data-group=dropped] [data-entry=perf-prefix-example] .audit-reason')"
            ".textContent")]]
    assert re.fullmatch(r"--enable-prefix-caching is not set: default false in 0\.2\.0, vllm/engine/arg_utils\.py:\d+",
                        expected["dropped"][1][3])
    assert expected["groups"]["bites"][0]["workaround"] == "Add capacity."
    workaround = page.locator("[data-entry=config-policy-example] .audit-workaround code")
    assert workaround.count() == 0  # dropped here; where it is listed, its `code` is a code element:
    page.fill("#audit-serve", "vllm serve m")
    page.click("#audit-form button[type=submit]")
    page.wait_for_function("() => document.querySelector('[data-entry=config-policy-example] .audit-workaround code')")
    assert page.locator("[data-entry=config-policy-example] .audit-workaround code").inner_text() == (
        "--scheduling-policy priority")


# --- the JSON the box reads ----------------------------------------------------------------------------------------

def test_the_json_unpacks_to_the_compiled_kb_the_cli_audits(page, base_url, audit_site, compiled_kb):
    from verifier.site import audit_data

    _, out = audit_site
    raw = (out / "api" / "audit.json").read_bytes()
    assert raw == audit_data.encode(compiled_kb)  # the site's build compiles what `gotchas audit --kb` compiles
    assert raw == json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":")).encode()  # no space
    page.goto(base_url)
    unpacked = page.evaluate("() => fetch('api/audit.json').then((r) => r.json()).then(window.gotchasAudit.unpack)")
    assert unpacked == audit_data.subset(compiled_kb)
    statuses = {e["id"]: e["statuses"] for e in unpacked["entries"]}
    assert statuses["ops-sglang-tp-example"] == {"sglang": {"0.4.0": "unverified", "0.5.0": "holds"}}
    assert statuses["api-sglang-report-example"]["sglang"]["0.4.0"] == "changed"


def test_the_json_is_fetched_only_when_the_box_is_used(page, base_url):
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(base_url)
    page.wait_for_load_state("networkidle")
    assert not [u for u in asked if u.endswith("api/audit.json")]
    page.focus("#audit-serve")
    page.keyboard.type("vllm serve m")
    page.wait_for_load_state("networkidle")
    assert [u for u in asked if u.endswith("api/audit.json")] == [base_url + "api/audit.json"]


# --- the box on the page --------------------------------------------------------------------------------------------

def test_without_javascript_the_page_says_which_command_to_run(browser, base_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(base_url)
    assert not page.locator("#audit-form").is_visible()
    assert page.locator("#paste-deployment").is_visible()
    assert "gotchas audit --serve" in page.locator("#audit-nojs").inner_text()
    context.close()


def test_results_take_the_focus_and_problems_are_announced(page, base_url):
    page.goto(base_url)
    assert not page.locator("#audit-nojs").is_visible()  # the box says it itself
    page.get_by_label("Serve command line").fill("vllm serve m --scheduling-policy priority")
    page.get_by_label("Engine version").fill("0.10.0")
    page.get_by_role("button", name="List the gotchas that bite it").click()
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'audit-heading'")
    assert page.locator("#audit-heading").inner_text().startswith("vLLM 0.10.0 (--engine): ")
    assert page.locator("#audit-result").get_attribute("hidden") is None
    assert "--engine vllm==0.10.0" in page.locator(".audit-cli").inner_text()
    page.get_by_label("Engine version").fill("")
    page.get_by_role("button", name="List the gotchas that bite it").click()
    status = page.locator("#audit-status")
    page.wait_for_function("() => document.getElementById('audit-status').classList.contains('audit-problem')")
    assert status.get_attribute("role") == "status" and "Give the engine version" in status.inner_text()


def test_a_llama_server_line_is_sent_to_the_cli_not_misread(page, base_url):
    """The box has no port of llama-server's per-release flag declarations: it says where such a line is read,
    instead of reading `-c 8192` the way a vLLM line would be."""
    page.goto(base_url)
    page.get_by_label("Serve command line").fill("./build/bin/llama-server -m model.gguf -c 8192 --parallel 4")
    page.get_by_label("Engine version").fill("0.3.16")
    page.get_by_role("button", name="List the gotchas that bite it").click()
    page.wait_for_function("() => document.getElementById('audit-status').classList.contains('audit-problem')")
    text = page.locator("#audit-status").inner_text()
    assert "a llama-server line is read by `gotchas audit --serve`" in text
    assert page.locator("#audit-result").get_attribute("hidden") is not None


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_accessibility_violations_with_results_shown(browser, base_url, width, scheme):
    for page in _watched(browser, viewport={"width": width, "height": 900}, color_scheme=scheme):
        page.goto(base_url)
        box(page, "VLLM_USE_V1=1 vllm serve m -tp 2 --scheduling-policy lifo --foo", "0.2.0")
        assert page.locator("#audit-result [data-group=bites] li").count() > 0
        assert page.locator("#audit-result [data-group=dropped] li").count() > 0
        assert page.locator("#audit-result .audit-notes li").count() > 0
        assert violations(page) == []
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width  # nothing wider than the screen
        box(page, "vllm serve m --x 'unclosed", "0.2.0")  # a problem said
        assert violations(page) == []


# --- the real KB --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_box_url(real_kb, audit_site, tmp_path_factory):
    """The fixture's front page, with api/audit.json of the real KB and its committed ledger (as `gotchas site`
    writes it: audit_data.encode of the KB compiled for audit) instead of the fixture's."""
    from verifier.site import audit_data

    _, out = audit_site
    folder = tmp_path_factory.mktemp("real-box") / "_site"
    shutil.copytree(out, folder)
    raw = audit_data.encode(real_kb)
    (folder / "api" / "audit.json").write_bytes(raw)
    assert len(gzip.compress(raw)) < len(raw) / 3
    with serve(folder) as url:
        yield url


def _real_cli(audit_cli, command: str, engine_version: str) -> dict:
    code, out, _ = audit_cli("--serve", command, "--engine", engine_version, "--format", "json")
    assert code in (0, 1)
    data = json.loads(out)
    return {"dropped": [[d["id"], d["reason"]] for d in data["dropped"]], "notes": data["notes"],
            "groups": [[g["id"], g["status"], g["only_if"], g["fixed_in"]] for g in data["targets"][0]["gotchas"]]}


def _real_box(page, command: str, version: str) -> dict:
    shown = box(page, command, version)
    return {"dropped": [[d[0], d[3]] for d in shown["dropped"]], "notes": shown["notes"],
            "groups": [[f["id"], group, f["only_if"], f["fixed"].removeprefix("fixed in ") if f["fixed"] and
                        f["fixed"].startswith("fixed in ") else None]
                       for group in ("bites", "bites only if", "unverified") for f in shown["groups"].get(group, [])]}


def test_real_kb_priority_at_vllm_0_10_0_drops_what_the_cli_drops(page, real_box_url, audit_cli):
    """The done-when case."""
    command = "vllm serve m --scheduling-policy priority"
    expected = _real_cli(audit_cli, command, "vllm==0.10.0")
    page.goto(real_box_url)
    shown = _real_box(page, command, "vllm==0.10.0")
    assert [d[0] for d in shown["dropped"]] == [d[0] for d in expected["dropped"]]
    assert shown == expected
    priority = ["config-request-priority-ignored-under-fcfs", "--scheduling-policy is priority (--serve)"]
    assert priority in shown["dropped"]


@pytest.mark.parametrize("command,version", [
    ("python -m sglang.launch_server --model-path m --tp 2 --enable-cache-report", "sglang==0.5.10"),
    ("VLLM_USE_V1=0 vllm serve m --enable-auto-tool-choice --tool-call-parser hermes -tp 2 --kv-cache-dtype fp8",
     "vllm==0.10.1.1"),
    ("vllm serve m \\\n  --api-key k --enable-prefix-cach --max-model-len=-1 --no-async-scheduling", "vllm==0.12.5"),
])
def test_real_kb_other_deployments_as_the_cli(page, real_box_url, audit_cli, command, version):
    expected = _real_cli(audit_cli, command, version)
    page.goto(real_box_url)
    assert _real_box(page, command, version) == expected


def test_real_kb_json_unpacks_to_the_compiled_kb(page, real_box_url, real_kb):
    from verifier.site import audit_data

    page.goto(real_box_url)
    unpacked = page.evaluate("() => fetch('api/audit.json').then((r) => r.json()).then(window.gotchasAudit.unpack)")
    assert unpacked == audit_data.subset(real_kb)
