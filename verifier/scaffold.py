"""`gotchas new`: a new entry with a valid skeleton, from options or answers at a prompt."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from .errors import EXIT_USAGE, GotchasError
from .kb import KB
from .safety import name_problem, write_text_atomically


class ScaffoldError(GotchasError, exit_code=EXIT_USAGE):
    pass


def _yaml_text(value: str) -> str:
    """A YAML scalar that reads back as `value`."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def skeleton(entry_id: str, title: str, scheme: str, engines: list[str], concepts: list[str],
             severity: str) -> str:
    checks = []
    for engine in engines:
        checks.append(
            f"  - id: {engine}-first-claim\n"
            f"    claim: The sentence of the prose that this check supports.\n"
            f"    engine: {engine}\n"
            f"    path: path/in/the/{engine}/repository.py\n"
            f"    in: Class.method\n"
            f"    contains: the load-bearing line\n")
    return (
        "---\n"
        f"id: {entry_id}\n"
        f"title: {_yaml_text(title)}\n"
        f"scheme: {scheme}\n"
        f"severity: {severity}\n"
        f"concepts: [{', '.join(concepts)}]\n"
        f"engines: [{', '.join(engines)}]\n"
        "references: []\n"
        "checks:\n" + "".join(checks) +
        "---\n\n"
        "## Symptom\n\nWhat an operator sees: latency, errors, log lines, metrics.\n\n"
        "## Root cause\n\nThe code that causes it, in your own words, naming functions and constants.\n\n"
        "## Workaround\n\nThe exact flags or settings, with their defaults.\n\n"
        "## Notes\n\nWhere the behaviour differs between releases, and caveats.\n"
    )


def gather(kb: KB, given: dict, ask: Callable[[str], str] | None, say: Callable[[str], None] = print) -> dict:
    """The fields of a new entry: those given, the rest asked for (or a ScaffoldError when none may be asked).

    `ask` puts a question and returns the answer; `say` tells why an answer was refused.
    """
    fields = dict(given)

    def need(name: str, prompt: str, valid: Callable[[str], str | None], many: bool = False):
        value = fields.get(name)
        while True:
            if value:
                problem = valid(value) if not many else next((valid(v) for v in value if valid(v)), None)
                if problem is None:
                    fields[name] = value
                    return
                if ask is None:
                    raise ScaffoldError(problem)
                say(problem)
            elif ask is None:
                raise ScaffoldError(f"missing --{name.rstrip('s') if many else name}")
            answer = ask(prompt).strip()
            value = [v for v in re.split(r"[,\s]+", answer) if v] if many else answer

    def kebab(value: str) -> str | None:
        problem = name_problem(value)
        if problem:
            return f"{value!r} {problem}"
        if os.path.islink(kb.entries_dir / f"{value}.md"):  # dangling or not: never written through
            return f"gotchas/{value}.md is a symbolic link; refusing to write through it"
        if os.path.lexists(kb.entries_dir / f"{value}.md"):
            return f"gotchas/{value}.md exists already; ids are never reused"
        return None

    def among(terms: dict, what: str) -> Callable[[str], str | None]:
        return lambda v: None if v in terms else f"unknown {what} {v!r}; {what}s: {', '.join(terms)}"

    need("scheme", f"Scheme ({', '.join(kb.schemes)}): ", among(kb.schemes, "scheme"))
    need("severity", f"Severity, the worst it does ({', '.join(kb.severities)}): ",
         among(kb.severities, "severity"))
    need("id", f"Id (kebab-case, e.g. {fields['scheme']}-what-goes-wrong): ", kebab)
    need("title", "Title (one sentence: what goes wrong): ", lambda v: None if v.strip() else "the title is empty")
    need("engines", f"Engines ({', '.join(kb.engines)}), separated by spaces: ", among(kb.engines, "engine"), many=True)
    need("concepts", "Concepts (see gotchas/concepts.yaml), separated by spaces: ", among(kb.concepts, "concept"),
         many=True)
    return fields


def write(kb: KB, fields: dict, display: str | None = None) -> Path:
    """Write the skeleton of `fields` (from `gather`) as a new file `gotchas/<id>.md`: atomically, never through a
    link and never over a file that is there (PathError: a dangling link planted at the name is refused, not
    followed out of the KB); a failed write is a WriteError, and nothing is left behind."""
    path = kb.entries_dir / f"{fields['id']}.md"
    text = skeleton(fields["id"], fields["title"], fields["scheme"], fields["engines"], fields["concepts"],
                    fields["severity"])
    write_text_atomically(path, text, kb.root, exclusive=True, display=display or f"gotchas/{fields['id']}.md")
    return path
