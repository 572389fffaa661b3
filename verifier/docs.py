"""The tables of docs/format.md that a registry of the code defines, written from that registry.

docs/format.md is the entry format in the project's own words. Its prose is written by hand; the tables that the
code defines (the front-matter fields and keys, from the JSON Schema; the matchers, from `matchers.REGISTRY`; the
lint codes, from `lint.RULES`; the exit codes, from `cli._common.EXIT_CODES`) sit between
`<!-- generated: NAME -->` and `<!-- end: NAME -->` and are rewritten by `gotchas schema --write`. A test fails when
the file and the code disagree, so the docs never describe a field, matcher or code that the verifier does not
have (datasette's model: the documentation of a registry is generated from it and checked in CI).
"""

from __future__ import annotations

import re

from . import md
from .kb import KB
from .model import LANGUAGE_WORDS

DOCS_FILE = "docs/format.md"
_BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md.inline(c) for c in row) + " |" for row in rows]  # cells are Markdown
    return "\n".join(lines) + "\n"


def _keys(properties: dict, required=(), skip=()) -> list[tuple]:
    return [(f"`{key}`", "yes" if key in required else "no", spec.get("description", ""))
            for key, spec in properties.items() if key not in skip]


def tables(kb: KB, exit_codes: dict[int, str]) -> dict[str, str]:
    """Every generated table of docs/format.md, by name; `exit_codes` are the command line's (`cli._common.EXIT_CODES`:
    the library does not import the command line)."""
    from .lint import RULES
    from .matchers import NAMES, REGISTRY
    from .schema import entry_schema

    schema = entry_schema(kb)
    check = schema["properties"]["checks"]["items"]
    form = check["properties"]["earlier"]["items"]
    condition = schema["properties"]["when"]["items"]

    def languages(matcher) -> str:
        words = [w for language in matcher.languages for w in LANGUAGE_WORDS[language]]
        return ", ".join(words) + (", other files as text" if "text" in matcher.languages else "")

    return {
        "entry-fields": _table(("field", "required", "meaning"),
                               _keys(schema["properties"], schema["required"])),
        "check-keys": _table(("key", "required", "meaning"),
                             _keys(check["properties"], check["required"], skip=NAMES)),
        "matchers": _table(("matcher", "files", "takes `in`", "takes `after`/`adjacent`", "meaning"),
                           [(f"`{name}`", languages(REGISTRY[name]), "yes" if REGISTRY[name].scoped else "no",
                             "yes" if REGISTRY[name].modifiers else "no", REGISTRY[name].help) for name in NAMES]),
        "form-keys": _table(("key", "meaning"), [(k, m) for k, _, m in _keys(form["properties"], skip=NAMES)]
                            + [("a matcher", "the form's code; it replaces the check's matcher and modifiers "
                                             "whole, which are inherited whole when the form gives none")]),
        "condition-keys": _table(("key", "meaning"), [(k, m) for k, _, m in _keys(condition["properties"])]),
        "lint-codes": _table(("code", "what it catches"), [(f"`{code}`", text) for code, text in RULES.items()]),
        "exit-codes": _table(("code", "meaning"), [(str(code), text) for code, text in exit_codes.items()]),
    }


def sync(text: str, generated: dict[str, str]) -> tuple[str, list[str]]:
    """`text` with each generated block replaced by its table, and the problems: a block that names no table, a
    table that has no block (each table is written once)."""
    problems, seen = [], set()

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in generated:
            problems.append(f"<!-- generated: {name} --> names no table (known: {', '.join(generated)})")
            return match[0]
        if name in seen:
            problems.append(f"the table {name} is written twice")
        seen.add(name)
        return match[1] + generated[name] + match[4]

    out = _BLOCK.sub(replace, text)
    problems += [f"the table {name} has no <!-- generated: {name} --> block" for name in generated
                 if name not in seen]
    return out, problems
