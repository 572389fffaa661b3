"""The JSON Schema of an entry's front matter, with the KB's vocabularies as enums.

Published as `gotchas/entry.schema.json` (regenerate with `gotchas schema`) so
that editors can validate and complete front matter. The linter remains the
judge: it also checks what a schema cannot (id equals file name, Python-only
keys, regexes that compile, the body's sections).
"""

from __future__ import annotations

import json
from typing import Any

from .entries import CHECK_FIELDS, CONDITION_FIELDS, ENTRY_FIELDS, ENTRY_REQUIRED, FORM_FIELDS
from .kb import KB
from .matchers import NAMES as MATCHERS
from .matchers import REGISTRY
from .safety import KEBAB, MAX_NAME

SCHEMA_FILE = "entry.schema.json"
_KEBAB = f"^{KEBAB.pattern}$"
_DATE = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_SYMBOL = r"^[^\W\d]\w*(\.[^\W\d]\w*)*$"
#: A release as PEP 440 writes it (the linter, with `packaging`, is the judge of the rest). YAML reads `0.10`
#: as a number; the linter takes it as written, so a number is allowed here too.
_VERSION = {"type": ["string", "number"],
            "pattern": r"^v?([0-9]+!)?[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$"}


def _described_enum(terms: dict[str, str]) -> dict:
    return {"oneOf": [{"const": term, "description": description} for term, description in terms.items()]}


def entry_schema(kb: KB) -> dict:
    matcher_text = {"type": "string", "minLength": 1}
    matcher_props = {m: {**matcher_text, "description": REGISTRY[m].help} for m in MATCHERS}
    with_modifiers = [m for m in MATCHERS if REGISTRY[m].modifiers]
    bounds = {
        "since": {**_VERSION, "description": "the first release (inclusive, PEP 440) in which this form is tried"},
        "until": {**_VERSION, "description": "the last release (inclusive; its post-releases too) in which this "
                                             "form is tried"},
    }
    modifier_rules = [
        {"if": {"required": ["after"]}, "then": {"anyOf": [{"required": [m]} for m in with_modifiers]}},
        {"if": {"required": ["adjacent"]}, "then": {"required": ["after"]}},
    ]
    form: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "description": "another place and shape of the same claim: path and in are inherited when left out; a matcher "
                       "replaces the check's matcher and modifiers, which are inherited whole when it has none",
        "properties": {
            **bounds,
            "path": {"type": "string", "pattern": r"^(?!/)(?!.*(^|/)\.\.?(/|$))[^\\]+$",
                     "description": "the form's file; the check's when left out"},
            "in": {"anyOf": [{"type": "string", "pattern": _SYMBOL}, {"type": "null"}],
                   "description": "a dotted symbol (Python, or a C/C++ qualified name); null drops the check's scope"},
            **matcher_props,
            "after": {**matcher_text, "description": "as the check's; inherited with its matcher when left out"},
            "adjacent": {"type": "boolean", "description": "as the check's; inherited with its matcher when left "
                                                          "out"},
        },
        "not": {"anyOf": [{"required": [a, b]} for i, a in enumerate(MATCHERS) for b in MATCHERS[i + 1:]]},
        "allOf": modifier_rules,
    }
    assert set(form["properties"]) == set(FORM_FIELDS)
    check: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "claim", "path"],
        "properties": {
            "id": {"type": "string", "pattern": _KEBAB, "maxLength": MAX_NAME,
                   "description": "kebab-case, unique in the entry"},
            "claim": {"type": "string", "minLength": 1, "description": "the sentence of the prose this check supports"},
            "engine": {"enum": sorted(kb.engines), "description": "may be left out when the entry has one engine"},
            "path": {"type": "string", "pattern": r"^(?!/)(?!.*(^|/)\.\.?(/|$))[^\\]+$",
                     "description": "the file, relative to the engine's git repository root"},
            "in": {"type": "string", "pattern": _SYMBOL,
                   "description": "a dotted symbol to look inside (Python, or a C/C++ qualified name)"},
            **matcher_props,
            "after": {**matcher_text, "description": "contains only: the match begins after this fragment"},
            "adjacent": {"type": "boolean", "description": "with after: the two statements are consecutive"},
            **bounds,
            "values": {"type": "object", "minProperties": 1, "maxProperties": 8,
                       "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]{0,39}$"},
                       "additionalProperties": {"type": "array", "minItems": 1, "maxItems": 32, "uniqueItems": True,
                                                "items": {"type": ["string", "number", "boolean"]}},
                       "description": "contains only: a $NAME of the fragment read as a value (prose writes "
                                      "{NAME}), with the values the claim allows; another value does not hold"},
            "part": {"type": "string", "pattern": _KEBAB,
                     "description": "the part of the claim (an id of the entry's parts) this check belongs to"},
            "earlier": {"type": "array", "minItems": 1, "items": form,
                        "description": "the other forms the same claim took in other releases"},
        },
        "oneOf": [{"required": [m]} for m in MATCHERS],
        "allOf": [
            *modifier_rules,
            *({"if": {"required": [m]}, "then": {"not": {"required": ["in"]}}}
              for m in MATCHERS if not REGISTRY[m].scoped),
        ],
    }
    assert set(check["properties"]) == set(CHECK_FIELDS)
    setting_value = {"type": ["string", "number", "boolean"]}
    flag = {"type": "string", "pattern": r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$", "not": {"pattern": "^--no-"}}
    values = {"type": "array", "minItems": 1, "uniqueItems": True,
              "anyOf": [{"items": {"type": "boolean"}}, {"items": {"type": ["string", "number"]}}]}
    bounds = {
        "since": {**_VERSION, "description": "the first release (inclusive) in which this condition applies"},
        "until": {**_VERSION, "description": "the last release (inclusive; its post-releases too) in which it "
                                             "applies"},
    }
    engine = {"enum": sorted(kb.engines), "description": "may be left out when the entry has one engine"}

    def only(*keys: str) -> dict:
        """The keys a condition about one subject may carry (the rest are refused)."""
        return {"not": {"anyOf": [{"required": [k]} for k in CONDITION_FIELDS if k not in keys]}}

    condition: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "description": "a condition under which the gotcha bites: it applies when every condition of its engine is "
                       "met. A setting (flag or env) is decided by the deployment's settings; with neither default "
                       "nor witness, its default is the code's at each release (the release surface). A request "
                       "field, an endpoint or a fact (only-if) is never decided by settings: audit says 'bites only "
                       "if'. any: one of its conditions must be met",
        "properties": {
            "engine": engine,
            "flag": {"anyOf": [flag, {"type": "array", "minItems": 1, "uniqueItems": True, "items": flag}],
                     "description": "the command-line flag, or a list of it and its aliases ([--tensor-parallel-size,"
                                    " -tp]); a boolean flag's --no-X form is X: false"},
            "env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "an environment variable"},
            "request": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
                        "description": "a field clients send in a request (with is/is-not: those values of it)"},
            "endpoint": {"type": "string", "pattern": r"^/[A-Za-z0-9_./{}-]*$",
                         "description": "an endpoint clients call"},
            "only-if": {"type": "string", "minLength": 3, "maxLength": 200,
                        "description": "a fact in words that no setting tells (the GPU, the model)"},
            "any": {"type": "array", "minItems": 2, "items": {"$ref": "#/$defs/alternative"},
                    "description": "alternatives: the condition is met when one of them is"},
            "set": {"type": "boolean", "description": "instead of values: the gotcha bites when the setting is given "
                                                      "(true) or left out (false)"},
            "is": {**values, "description": "the values under which the gotcha bites"},
            "is-not": {**values, "description": "the values under which it does not"},
            "default": {**setting_value, "description": "what a deployment that does not set it gets, where the "
                                                        "release surface does not say; 'computed' when the engine "
                                                        "derives it"},
            "witness": {"type": "string", "pattern": _KEBAB, "description": "the check of this entry that pins the "
                                                                            "default"},
            **bounds,
        },
        "oneOf": [
            {"required": ["flag"], **only("engine", "flag", "is", "is-not", "set", "default", "witness", *bounds),
             "oneOf": [{"required": ["is"]}, {"required": ["is-not"]}, {"required": ["set"]}],
             "dependentRequired": {"default": ["witness"], "witness": ["default"]}},
            {"required": ["env"], **only("engine", "env", "is", "is-not", "set", "default", "witness", *bounds),
             "oneOf": [{"required": ["is"]}, {"required": ["is-not"]}, {"required": ["set"]}],
             "dependentRequired": {"default": ["witness"], "witness": ["default"]}},
            {"required": ["request"], "allOf": [only("engine", "request", "is", "is-not", *bounds),
                                                {"not": {"required": ["is", "is-not"]}}]},
            {"required": ["endpoint"], **only("engine", "endpoint", *bounds)},
            {"required": ["only-if"], **only("engine", "only-if", *bounds)},
            {"required": ["any"], **only("engine", "any", *bounds)},
        ],
    }
    alternative = {**condition, "properties": {k: v for k, v in condition["properties"].items() if k != "any"},
                   "oneOf": condition["oneOf"][:-1], "description": "one alternative of 'any' (not itself 'any')"}
    assert set(condition["properties"]) == set(CONDITION_FIELDS)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gotchas.invalid/entry.schema.json",
        "title": "gotchas entry front matter",
        "type": "object",
        "additionalProperties": False,
        "required": list(ENTRY_REQUIRED),
        "$defs": {"alternative": alternative},
        "properties": {
            "id": {"type": "string", "pattern": _KEBAB, "maxLength": MAX_NAME,
                   "description": "equal to the file name without .md"},
            "title": {"type": "string", "minLength": 1, "description": "one sentence: what goes wrong"},
            "scheme": {**_described_enum(kb.schemes),
                       "description": "what kind of gotcha: one of gotchas/schemes.yaml"},
            "severity": {**_described_enum(kb.severities),
                         "description": "the worst it does to a deployment it bites: one of gotchas/severities.yaml"},
            "concepts": {"type": "array", "minItems": 1, "uniqueItems": True, "items": _described_enum(kb.concepts),
                         "description": "what it is about: terms of gotchas/concepts.yaml"},
            "engines": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": sorted(kb.engines)},
                        "description": "the engines it is about: keys of gotchas/engines.yaml"},
            "references": {"type": "array", "uniqueItems": True,
                           "items": {"type": "string", "pattern": r"^https://[^\s/$.?#][^\s]*$"},
                           "description": "https URLs: upstream issues, pull requests, docs"},
            "history": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["date", "note"],
                "properties": {"date": {"type": "string", "pattern": _DATE}, "note": {"type": "string"}}},
                "description": "editorial events, each {date, note}"},
            "withdrawn": {"type": "string", "pattern": _DATE,
                          "description": "a date: the entry is withdrawn; its page stays, with a banner"},
            "introduced": {"type": "object", "propertyNames": {"enum": sorted(kb.engines)},
                           "additionalProperties": _VERSION,
                           "description": "per engine, the release where the gotcha began"},
            "fixed": {"type": "object", "propertyNames": {"enum": sorted(kb.engines)}, "additionalProperties": _VERSION,
                      "description": "per engine, the release where the gotcha ended"},
            "when": {"type": "array", "minItems": 1, "items": condition,
                     "description": "the settings under which the gotcha bites"},
            "parts": {"type": "array", "minItems": 2, "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "says"],
                "properties": {"id": {"type": "string", "pattern": _KEBAB, "maxLength": MAX_NAME},
                               "says": {"type": "string", "minLength": 3, "maxLength": 200,
                                        "description": "when this part bites, completing 'bites ...'"}}},
                      "description": "the parts of a claim that can hold apart: the entry holds where one does"},
            "checks": {"type": "array", "minItems": 1, "items": check,
                       "description": "at least one: each a claim about the engine's code, verified per release"},
        },
    }
    assert set(schema["properties"]) == set(ENTRY_FIELDS)
    return schema



def render(kb: KB) -> str:
    return json.dumps(entry_schema(kb), indent=2) + "\n"
