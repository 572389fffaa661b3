"""Reading the conditions of `when` into `Condition`: the shape of each item (G201-G203, G210); what needs the
checks and the registry is lint's."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import _yaml
from ..model import COMPUTED, Condition, Entry
from ._values import BOUNDS, _text

if TYPE_CHECKING:
    from . import LoadedEntry

#: The keys of a condition, an item of `when` (FORMAT.md, "Conditions").
CONDITION_FIELDS = ("engine", "flag", "env", "is", "is-not", "default", "witness", *BOUNDS)


def _conditions(node: _yaml.Node, entry: Entry, problem, result: LoadedEntry) -> list[Condition]:
    """The items of `when`. The shape is judged here (G201-G203, G210); what needs the checks and the registry
    (the witness, the engine, the bounds) is lint's. A malformed item is left out of the entry, so that `audit`
    never reads a condition half-understood."""
    if not node.is_sequence or not node.value:
        problem(node.line, "G210" if node.is_sequence else "G203",
                "'when' must be a list of conditions, each a mapping (engine, flag or env, is or is-not, "
                "default, witness)")
        return []
    found = []
    for item in node.value:
        condition = _condition(item, entry, problem)
        if condition is not None:
            found.append(condition)
            result.condition_nodes.append((condition, item))
    return found


def _condition(node: _yaml.Node, entry: Entry, problem) -> Condition | None:
    if not node.is_mapping:
        problem(node.line, "G203", "a condition must be a mapping (engine, flag or env, is or is-not, default, "
                                   "witness)")
        return None
    fields = node.value
    ok = True
    for key in fields:
        if key not in CONDITION_FIELDS:
            problem(node.key_lines[key], "G201",
                    f"unknown condition key {key!r}; keys are: {', '.join(CONDITION_FIELDS)}")
            ok = False
    line = node.key_lines.get
    if ("flag" in fields) == ("env" in fields):
        problem(line("env", node.line) if "flag" in fields else node.line, "G203" if "flag" in fields else "G202",
                "a condition names one setting: 'flag' (with its aliases) or 'env', not both"
                if "flag" in fields else "a condition needs 'flag' or 'env'")
        ok = False
    if ("is" in fields) == ("is-not" in fields):
        problem(line("is-not", node.line) if "is" in fields else node.line, "G203" if "is" in fields else "G202",
                "a condition gives the values that make the gotcha bite ('is') or those that spare it ('is-not'), "
                "not both" if "is" in fields else "a condition needs 'is' or 'is-not'")
        ok = False
    # Both left out: the default comes from the release surface. A default written needs its witness, and a
    # witness pins a default.
    if ("default" in fields) != ("witness" in fields):
        missing = "witness" if "default" in fields else "default"
        problem(node.line, "G202", f"a condition needs {missing!r} with {'default' if missing == 'witness' else 'witness'}"
                + (": the check of this entry that pins the default" if missing == "witness" else
                   ": what a deployment that does not set it gets (or 'computed')")
                + "; or leave both out to take the default from the release surface of each release")
        ok = False
    flags: list[str] = []
    if "flag" in fields:
        flag_node = fields["flag"]
        items = flag_node.value if flag_node.is_sequence else [flag_node]
        for item in items:
            text = _text(item, "flag", problem)
            if text is None:
                ok = False
            elif not _FLAG.fullmatch(text):
                problem(item.line, "G203", f"flag {text!r} must be written as on the command line: '--name' or '-n'")
                ok = False
            elif text.startswith("--no-"):
                problem(item.line, "G203", f"flag {text!r}: name the flag itself and give false "
                                           f"('{'--' + text[5:]}' is false)")
                ok = False
            elif text in flags:
                problem(item.line, "G210", f"flag {text!r} is listed twice")
                ok = False
            else:
                flags.append(text)
        if flag_node.is_sequence and not items:
            problem(flag_node.line, "G210", "'flag' needs at least one flag")
            ok = False
    env = None
    if "env" in fields:
        env = _text(fields["env"], "env", problem)
        if env is not None and not _ENV.fullmatch(env):
            problem(fields["env"].line, "G203", f"env {env!r} must be a variable name like VLLM_USE_V1")
            env = None
        ok = ok and env is not None
    key = "is" if "is" in fields else "is-not"
    values: list[object] = []
    if key in fields:
        values_node = fields[key]
        if not values_node.is_sequence:
            problem(values_node.line, "G203", f"{key!r} must be a list of values, like [fcfs] or [true]")
            ok = False
        elif not values_node.value:
            problem(values_node.line, "G210", f"{key!r} needs at least one value")
            ok = False
        else:
            for item in values_node.value:
                value = _setting(item, key, problem)
                if value is None:
                    ok = False
                elif value in values:
                    problem(item.line, "G210", f"{key!r} lists {value!r} twice")
                    ok = False
                else:
                    values.append(value)
    kinds = {isinstance(v, bool) for v in values}
    if len(kinds) > 1:
        problem(fields[key].line, "G203", f"{key!r} mixes true/false with other values: a boolean flag takes "
                                          "true or false only")
        ok = False
    default: object = None
    if "default" in fields:
        default = _setting(fields["default"], "default", problem)
        if default is None:
            ok = False
        elif default != COMPUTED and values and isinstance(default, bool) != isinstance(values[0], bool):
            problem(fields["default"].line, "G203",
                    f"default {default!r} and the values of {key!r} must both be true/false, or both be values "
                    "(or the default 'computed')")
            ok = False
    bounds: dict[str, str | None] = {}
    for bound in BOUNDS:
        if bound in fields:
            bounds[bound] = _text(fields[bound], bound, problem)
            ok = ok and bounds[bound] is not None
    witness = _text(fields["witness"], "witness", problem) if "witness" in fields else None
    engine_value = _text(fields["engine"], "engine", problem) if "engine" in fields else None
    if "engine" not in fields and len(entry.engines) != 1 and entry.engines:
        problem(node.line, "G202", f"the entry names several engines ({', '.join(entry.engines)}); say which with "
                                   "'engine:'")
        ok = False
    if "engine" in fields and engine_value is None or "witness" in fields and witness is None:
        ok = False
    if not ok:
        return None
    engine = engine_value or (entry.engines[0] if len(entry.engines) == 1 else "")
    return Condition(engine, tuple(flags), env, tuple(values), key == "is-not", default, witness,
                     bounds.get("since"), bounds.get("until"), node.line)


_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _setting(node: _yaml.Node, key: str, problem) -> object | None:
    """A value of a setting: true/false as bools, anything else as the text written (`0.10` stays `0.10`)."""
    if isinstance(node.value, bool) and isinstance(node.raw, str) and node.raw.lower() not in ("true", "false"):
        problem(node.line, "G203", f"{key!r}: write true or false, not {node.raw!r} (YAML reads it both ways)")
        return None
    if isinstance(node.value, bool):
        return node.value
    return _text(node, key, problem)
