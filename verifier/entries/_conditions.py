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
    from ._values import Problem

#: The keys of a condition, an item of `when` (docs/format.md, "Conditions").
CONDITION_FIELDS = ("engine", "flag", "env", "request", "endpoint", "only-if", "any", "is", "is-not", "set",
                    "default", "witness", *BOUNDS)
#: The keys that say what a condition is about: exactly one per condition.
SUBJECTS = ("flag", "env", "request", "endpoint", "only-if", "any")
_SHAPE = ("a mapping naming one of flag or env (a setting, with is or is-not), request (a field clients send), "
          "endpoint, only-if (a fact in words) or any (alternatives)")


def _conditions(node: _yaml.Node, entry: Entry, problem: Problem, result: LoadedEntry) -> list[Condition]:
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
            if condition.any:  # every member is well-formed when the whole is: one node each
                result.condition_nodes.extend(zip(condition.any, item.value["any"].value))
    return found


def _condition(node: _yaml.Node, entry: Entry, problem, nested: bool = False) -> Condition | None:
    if not node.is_mapping:
        problem(node.line, "G203", f"a condition must be {_SHAPE}")
        return None
    fields = node.value
    ok = True
    for key in fields:
        if key not in CONDITION_FIELDS:
            problem(node.key_lines[key], "G201",
                    f"unknown condition key {key!r}; keys are: {', '.join(CONDITION_FIELDS)}")
            ok = False
    line = node.key_lines.get
    subjects = [key for key in SUBJECTS if key in fields]
    if not subjects:
        problem(node.line, "G202", f"a condition needs what it is about: {', '.join(SUBJECTS)}")
        return None
    if len(subjects) > 1:
        problem(line(subjects[1], node.line), "G203",
                f"a condition is about one thing: {' and '.join(map(repr, subjects))} are given; write two "
                "conditions (all must be met) or 'any' (one must be)")
        return None
    subject = subjects[0]
    setting = subject in ("flag", "env")
    allowed = {"flag": CONDITION_FIELDS, "env": CONDITION_FIELDS,
               "request": ("engine", "request", "is", "is-not", *BOUNDS),
               "endpoint": ("engine", "endpoint", *BOUNDS), "only-if": ("engine", "only-if", *BOUNDS),
               "any": ("engine", "any", *BOUNDS)}[subject]
    for key in fields:
        if key in CONDITION_FIELDS and key not in allowed and key not in SUBJECTS:
            problem(node.key_lines[key], "G203", f"{key!r} does not go with {subject!r}: a condition on "
                                                 f"{subject} takes {', '.join(k for k in allowed if k != subject)}")
            ok = False
    given = None
    if "set" in fields:
        if not setting:
            problem(line("set"), "G203", f"'set' does not go with {subject!r}: it says whether a flag or a variable "
                                         "is given at all")
            ok = False
        elif "is" in fields or "is-not" in fields or "default" in fields or "witness" in fields:
            clash = next(k for k in ("is", "is-not", "default", "witness") if k in fields)
            problem(line(clash), "G203", f"{clash!r} does not go with 'set': a condition says whether the setting is "
                                         "given (set: true or false), or which values it has (is or is-not)")
            ok = False
        elif not isinstance(fields["set"].value, bool) or str(fields["set"].raw).lower() not in ("true", "false"):
            problem(line("set"), "G203", "'set' is true (the gotcha bites when the setting is given) or false (when "
                                         "it is left out)")
            ok = False
        else:
            given = fields["set"].value
    elif setting and ("is" in fields) == ("is-not" in fields) or ("is" in fields and "is-not" in fields):
        problem(line("is-not", node.line) if "is" in fields else node.line, "G203" if "is" in fields else "G202",
                "a condition gives the values that make the gotcha bite ('is') or those that spare it ('is-not'), "
                "not both" if "is" in fields else "a condition needs 'is', 'is-not' or 'set'")
        ok = False
    # Both left out: the default comes from the release surface. A default written needs its witness, and a
    # witness pins a default.
    if setting and given is None and ("default" in fields) != ("witness" in fields):
        missing = "witness" if "default" in fields else "default"
        problem(node.line, "G202",
                f"a condition needs {missing!r} with {'default' if missing == 'witness' else 'witness'}"
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
    named: dict[str, str | None] = {}
    for key, pattern, example in (("env", _ENV, "a variable name like VLLM_USE_V1"),
                                  ("request", _FIELD, "a request field like priority or stream_options"),
                                  ("endpoint", _ENDPOINT, "a path like /v1/chat/completions"),
                                  ("only-if", _FACT, "a phrase, like 'the GPU is a Blackwell GPU'")):
        if key in fields:
            text = _text(fields[key], key, problem)
            if text is not None and not pattern.fullmatch(text):
                problem(fields[key].line, "G203", f"{key} {text!r} must be {example}")
                text = None
            named[key] = text
            ok = ok and text is not None
    alternatives: list[Condition] = []
    if "any" in fields:
        any_node = fields["any"]
        if nested:
            problem(any_node.line, "G203", "'any' inside 'any': list every alternative in one 'any'")
            ok = False
        elif not any_node.is_sequence or len(any_node.value) < 2:
            problem(any_node.line, "G210" if any_node.is_sequence else "G203",
                    "'any' must be a list of two or more conditions, one of which must be met")
            ok = False
        else:
            for item in any_node.value:
                member = _condition(item, entry, problem, nested=True)
                if member is None:
                    ok = False
                else:
                    alternatives.append(member)
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
    if "default" in fields and setting:
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
    witness = _text(fields["witness"], "witness", problem) if "witness" in fields and setting else None
    engine_value = _text(fields["engine"], "engine", problem) if "engine" in fields else None
    if "engine" not in fields and len(entry.engines) != 1 and entry.engines and not nested:
        problem(node.line, "G202", f"the entry names several engines ({', '.join(entry.engines)}); say which with "
                                   "'engine:'")
        ok = False
    if "engine" in fields and engine_value is None or "witness" in fields and setting and witness is None:
        ok = False
    if not ok:
        return None
    engine = engine_value or (entry.engines[0] if len(entry.engines) == 1 else "")
    members = tuple(alternatives)
    if members:
        engine = engine_value or next((m.engine for m in members if m.engine), engine)
        # An alternative takes the engine of its `any`; one that names another engine is lint's (G304).
        members = tuple(m if m.engine and "engine" in item.value else _with_engine(m, engine)
                        for m, item in zip(members, fields["any"].value))
    return Condition(engine, tuple(flags), named.get("env"), tuple(values), key == "is-not", default, witness,
                     bounds.get("since"), bounds.get("until"), node.line, named.get("request"),
                     named.get("endpoint"), named.get("only-if"), members, given)


def _with_engine(condition: Condition, engine: str) -> Condition:
    from dataclasses import replace
    return replace(condition, engine=engine)


_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_ENDPOINT = re.compile(r"/[A-Za-z0-9_./{}-]*")
_FACT = re.compile(r"\S.{2,199}", re.DOTALL)


def _setting(node: _yaml.Node, key: str, problem: Problem) -> object | None:
    """A value of a setting: true/false as bools, anything else as the text written (`0.10` stays `0.10`)."""
    if isinstance(node.value, bool) and isinstance(node.raw, str) and node.raw.lower() not in ("true", "false"):
        problem(node.line, "G203", f"{key!r}: write true or false, not {node.raw!r} (YAML reads it both ways)")
        return None
    if isinstance(node.value, bool):
        return node.value
    return _text(node, key, problem)
