"""The published JSON Schema agrees with the KB's vocabularies and with the linter."""

from __future__ import annotations

import datetime as dt

import jsonschema
import pytest

from verifier import kb as kb_module
from verifier import schema
from verifier.entries import load_entry

from .conftest import REPO, VALID_ENTRY
from .test_lint import CASES


def front_matter_as_json(loaded):
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value.isoformat() if isinstance(value, dt.date) else value
    return plain(loaded.front.plain())


def validator(kb):
    return jsonschema.Draft202012Validator(schema.entry_schema(kb))


def test_published_schema_is_current():
    kb = kb_module.load(REPO)
    published = (REPO / "gotchas" / schema.SCHEMA_FILE).read_text()
    assert published == schema.render(kb), "run `gotchas schema --write` and commit the result"


def test_every_entry_of_the_kb_validates():
    kb = kb_module.load(REPO)
    for path in kb.entry_files():
        loaded = load_entry(path)
        errors = list(validator(kb).iter_errors(front_matter_as_json(loaded)))
        assert not errors, (path, errors[0].message)


def test_valid_fixture_validates(kb_root):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(VALID_ENTRY)
    assert not list(validator(kb_module.load(kb_root)).iter_errors(front_matter_as_json(load_entry(path))))


# Rules a schema can express; the others (file name, Python-only keys, compiling
# patterns, body sections, YAML-level problems) are the linter's alone.
SCHEMA_RULES = {"G201", "G202", "G203", "G204", "G206", "G207", "G208", "G209", "G210", "G302", "G303", "G305", "G309"}


@pytest.mark.parametrize("code,old,new,line", [c for c in CASES if c[0] in SCHEMA_RULES])
def test_schema_rejects_what_the_linter_rejects(kb_root, code, old, new, line):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(VALID_ENTRY.replace(old, new, 1))
    loaded = load_entry(path)
    if loaded.front is None:
        pytest.skip("YAML-level problem")
    errors = list(validator(kb_module.load(kb_root)).iter_errors(front_matter_as_json(loaded)))
    assert errors, f"schema accepts what {code} rejects"
