"""Lint: one case per rule code, asserting the code and the line it points at."""

from __future__ import annotations

import pytest

from verifier import kb as kb_module
from verifier import lint
from verifier.entries import load_entry

from .conftest import VALID_ENTRY


def lint_text(kb_root, text: str | bytes, name: str = "ops-example"):
    path = kb_root / "gotchas" / f"{name}.md"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    loaded = load_entry(path, display=f"gotchas/{name}.md")
    return lint.lint(loaded, kb_module.load(kb_root)), loaded


def test_valid_entry_is_clean(kb_root):
    diagnostics, loaded = lint_text(kb_root, VALID_ENTRY)
    assert diagnostics == []
    entry = loaded.entry
    assert [c.id for c in entry.checks] == ["zero", "metric"]
    assert entry.checks[0].engine == "vllm" and entry.checks[0].adjacent is True
    assert entry.checks[0].line == 12 and entry.checks[1].line == 19
    assert list(entry.sections) == ["Symptom", "Root cause", "Workaround", "Notes"]
    assert entry.line_of("section:Workaround") == 34


# (rule code, text replaced in VALID_ENTRY, replacement, expected line)
CASES = [
    ("G315", "    contains: request.num_computed_tokens = 0\n",
     "    contains: request.num_computed_tokens = $ZERO\n    values: {ZERO: [0]}\n", 17),
    ("G316", '    string: "vllm:num_preemptions"\n', '    string: "vllm:num_preemptions"\n    part: nowhere\n', 23),
    ("G601", "Latency climbs.", "Latency climbs. {since 0.9.0 until 0.8.0: only then.}", 28),
    ("G602", "Latency climbs.", "Latency climbs past {CAP} requests.", 28),
    ("G101", "---\nid: ops-example", "id: ops-example", 1),
    ("G102", "---\n\n## Symptom", "\n## Symptom", 1),
    ("G103", "title: An example", "title: [An example", 4),
    ("G104", "scheme: ops", "scheme: &s ops\nalias: *s", 4),
    ("G104", "scheme: ops", "scheme: !!python/name:os.system ops", 4),
    ("G106", "scheme: ops", "scheme: ops\nscheme: config", 5),
    ("G201", "scheme: ops", "scheme: ops\nrank: high", 5),
    ("G211", "severity: performance", "severity: high", 23),
    ("G201", "    adjacent: true", "    adjacent: true\n    note: unknown in a check", 19),
    ("G201", '{date: 2026-10-04, note: "Written."}', '{date: 2026-10-04, note: "Written.", by: me}', 10),
    ("G202", "title: An example gotcha that is well-formed\n", "", 1),
    ("G202", "    claim: The metric exists.\n", "", 19),
    ("G203", "concepts: [kv-cache, preemption]", "concepts: kv-cache", 5),
    ("G203", "    adjacent: true", "    adjacent: yes please", 18),
    ("G203", "{date: 2026-10-04,", "{date: last tuesday,", 10),
    ("G203", "  - id: metric\n", "  - just a string\n  - id: metric\n", 19),
    ("G204", "id: ops-example", "id: Ops_Example", 2),
    ("G204", "  - id: metric", "  - id: Metric Check", 19),
    ("G205", "id: ops-example", "id: ops-other", 2),
    ("G206", "scheme: ops", "scheme: operations", 4),
    ("G207", "concepts: [kv-cache, preemption]", "concepts: [kv-cache,\n  preemptoin]", 6),
    ("G208", "engines: [vllm]", "engines: [vllm, tgi]", 6),
    ("G209", "https://example.org/issue/1", "http://example.org/issue/1", 8),
    ("G210", "concepts: [kv-cache, preemption]", "concepts: []", 5),
    ("G210", "concepts: [kv-cache, preemption]", "concepts: [kv-cache, kv-cache]", 5),
    ("G301", "  - id: metric", "  - id: zero", 19),
    ("G302", '    string: "vllm:num_preemptions"', '    string: "vllm:num_preemptions"\n    contains: x', 23),
    ("G302", '    string: "vllm:num_preemptions"\n', "", 19),
    ("G303", '    string: "vllm:num_preemptions"', '    string: "vllm:num_preemptions"\n    after: x', 23),
    ("G303", "    after: request.status = PREEMPTED\n", "", 17),
    ("G303", '    string: "vllm:num_preemptions"', "    defines: Scheduler\n    in: Scheduler", 23),
    ("G304", "engines: [vllm]", "engines: [vllm, sglang]", 12),
    ("G304", "    path: pkg/metrics.py", "    engine: sglang\n    path: pkg/metrics.py", 21),
    ("G305", "    path: pkg/metrics.py", "    path: ../outside/metrics.py", 21),
    ("G305", "    path: pkg/metrics.py", "    path: /etc/passwd", 21),
    ("G306", "    path: pkg/sched.py", "    path: docker/Dockerfile", 15),
    ("G307", '    string: "vllm:num_preemptions"', "    matches: '(unclosed'", 22),
    ("G308", '    string: "vllm:num_preemptions"', "    query: '((call) @c'", 22),
    ("G308", '    string: "vllm:num_preemptions"', "    query: '((identifier) @x (#match? @x \"a+\"))'", 22),
    ("G309", "    in: Scheduler.preempt", "    in: Scheduler::preempt", 15),
    ("G310", "    contains: request.num_computed_tokens = 0", "    contains: $$$", 16),
    ("G310", "    after: request.status = PREEMPTED", "    after: '  '", 17),
    ("G311", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - in: Scheduler.schedule\n        after: x\n", 21),
    ("G312", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - until: 0.11.x\n        in: Scheduler.schedule\n", 20),
    ("G312", "    adjacent: true\n",
     "    adjacent: true\n    earlier:\n      - since: 0.12.0\n        until: 0.11.2\n        in: Scheduler.schedule\n", 20),
    ("G312", "checks:\n", "introduced: {vllm: soon}\nchecks:\n", 11),
    ("G313", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - until: 0.11.2\n", 20),
    ("G313", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - until: 0.11.2\n        in: Scheduler.schedule\n"
     "      - since: 0.9.0\n        until: 0.10.0\n        in: Scheduler.schedule\n", 22),
    ("G314", "checks:\n", "introduced: {sglang: 0.4.0}\nchecks:\n", 11),
    ("G314", "checks:\n", "introduced: {vllm: 0.9.0}\nfixed: {vllm: 0.8.0}\nchecks:\n", 12),
    ("G201", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - until: 0.11.2\n        claim: no\n", 21),
    ("G302", "    adjacent: true\n",
     "    adjacent: true\n    earlier:\n      - until: 0.11.2\n        contains: a\n        absent: b\n", 22),
    ("G305", "    adjacent: true\n", "    adjacent: true\n    earlier:\n      - path: ../up.py\n", 20),
    ("G401", "## Workaround\n\nAdd capacity.\n\n", "", 34),
    ("G402", "## Root cause\n\nThe scheduler preempts.\n\n## Workaround\n\nAdd capacity.",
     "## Workaround\n\nAdd capacity.\n\n## Root cause\n\nThe scheduler preempts.", 34),
    ("G403", "## Notes", "## Remarks", 38),
    ("G404", "Latency climbs.\n", "", 26),
    ("G405", "---\n\n## Symptom", "---\n\nStray text.\n\n## Symptom", 25),
]


@pytest.mark.parametrize("code,old,new,line", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule(kb_root, code, old, new, line):
    assert old in VALID_ENTRY, old
    diagnostics, _ = lint_text(kb_root, VALID_ENTRY.replace(old, new, 1))
    found = [(d.code, d.line) for d in diagnostics]
    assert (code, line) in found, diagnostics


def test_every_rule_code_has_a_case():
    from verifier.model import Diagnostic  # noqa: F401

    # G501 needs a ledger and its surface files: tests/test_surface.py
    tested = {case[0] for case in CASES} | {"G107", "G105", "G501", "G502", "G503", "G504", "G505"}
    assert tested == set(lint.RULES)


def test_not_utf8_is_G107_with_line(kb_root):
    data = VALID_ENTRY.replace("Latency climbs.", "Latency climbs \udcff.").encode("utf-8", "surrogateescape")
    diagnostics, loaded = lint_text(kb_root, data)
    assert [(d.code, d.line) for d in diagnostics] == [("G107", 28)]
    assert loaded.entry is None


def test_binary_and_huge_files_are_G107(kb_root):
    diagnostics, _ = lint_text(kb_root, b"---\x00\x01")
    assert [d.code for d in diagnostics] == ["G107"]
    diagnostics, _ = lint_text(kb_root, VALID_ENTRY + "x" * (1024 * 1024))
    assert [d.code for d in diagnostics] == ["G107"]


@pytest.mark.parametrize("front", ["- a list\n- of things", "just a string", ""])
def test_front_matter_not_a_mapping_is_G105(kb_root, front):
    body = "## Symptom\n\nx\n\n## Root cause\n\ny\n\n## Workaround\n\nz\n"
    diagnostics, _ = lint_text(kb_root, f"---\n{front}\n---\n\n{body}")
    assert [d.code for d in diagnostics] == ["G105"]


def test_yaml_syntax_error_names_where_the_construct_began(kb_root):
    diagnostics, _ = lint_text(kb_root, VALID_ENTRY.replace("title: An example", "title: [An example"))
    assert "line 3" in diagnostics[0].message


def test_yaml_bomb_is_refused_without_expanding(kb_root):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    diagnostics, loaded = lint_text(kb_root, f"---\n{bomb}---\n")
    assert [(d.code, d.line) for d in diagnostics if d.code.startswith("G1")] == [("G104", 2)]


def test_malformed_entry_reports_every_problem_with_lines(kb_root):
    text = VALID_ENTRY.replace("scheme: ops", "scheme: nope\nrank: 3").replace(
        "    path: pkg/metrics.py", "    path: ../../etc/passwd.py").replace("## Notes", "## Trivia")
    diagnostics, _ = lint_text(kb_root, text)
    assert {(d.code, d.line) for d in diagnostics} == {("G206", 4), ("G201", 5), ("G305", 22), ("G403", 39)}
    assert all(d.path == "gotchas/ops-example.md" for d in diagnostics)


def test_fragments_keep_their_text_as_written(kb_root):
    text = VALID_ENTRY.replace("    contains: request.num_computed_tokens = 0", "    contains: 0.10")
    _, loaded = lint_text(kb_root, text)
    assert loaded.entry.checks[0].pattern == "0.10"


def test_malformed_check_is_not_evaluated_but_others_are(kb_root):
    text = VALID_ENTRY.replace('    string: "vllm:num_preemptions"\n', "")
    diagnostics, loaded = lint_text(kb_root, text)
    assert [c.id for c in loaded.entry.checks] == ["zero"]


@pytest.mark.parametrize("name", ["contains", "absent", "string", "matches", "defines", "query"])
def test_lint_and_schema_read_what_the_registry_says_of_each_matcher(kb_root, name):
    """One registry (verifier/matchers.py): lint's G303 and G306 and the schema follow each matcher's facts."""
    from verifier import schema
    from verifier.matchers import REGISTRY

    matcher = REGISTRY[name]
    text = {"defines": "Scheduler.preempt", "query": "(identifier) @x", "matches": "x"}.get(name, "x = 1")
    checks = (f"  - id: one\n    claim: A claim.\n    path: pkg/notes.txt\n    {name}: '{text}'\n"
              "    after: y\n")
    entry = VALID_ENTRY[:VALID_ENTRY.index("checks:\n")] + "checks:\n" + checks + VALID_ENTRY[VALID_ENTRY.index("severity: performance\n---\n\n## Symptom"):]
    found = [(d.code, d.message.split(": ", 1)[1]) for d in lint_text(kb_root, entry)[0]]
    assert any(c == "G306" and m.startswith(f"'{name}' needs") for c, m in found) is ("text" not in matcher.languages)
    assert any(c == "G303" for c, _ in found) is not matcher.modifiers  # `after` where the matcher takes none
    properties = schema.entry_schema(kb_module.load(kb_root))["properties"]["checks"]["items"]["properties"]
    assert properties[name]["description"] == matcher.help
