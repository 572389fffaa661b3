"""A condition's default from the release surface: what a deployment that leaves the setting alone gets, read
from the code of each release instead of one witness check (docs/format.md, "Conditions")."""

from __future__ import annotations

import json

from ..model import BOOL_WORDS, COMPUTED, Condition
from .model import ENV, NO_VALUE, Item, Surface


def setting_item(condition: Condition, surface: Surface) -> Item | None:
    """The flag (by any spelling the condition gives) or variable of the condition in a release's surface."""
    if condition.env is not None:
        return surface.items.get((ENV, condition.env))
    for flag in condition.flags:
        found = surface.flag(flag)
        if found is not None:
            return found
    return None


def surface_default(condition: Condition, surface: Surface) -> tuple[object, str] | None:
    """(value, "path:line") the release's code gives the setting when it is not set: a bool for a true/false
    condition, else the value as text, or COMPUTED when the code derives it (an expression, or None: the engine
    decides later); None when the release's surface does not have the setting."""
    item = setting_item(condition, surface)
    return None if item is None else item_default(condition, item)


def item_default(condition: Condition, item: Item) -> tuple[object, str]:
    """`surface_default` of the setting's item, once it is found."""
    where = f"{item.path}:{item.line}" if item.path else ""
    value = item.value
    if value is NO_VALUE or value is None:
        return COMPUTED, where
    if condition.boolean:
        if isinstance(value, bool):
            return value, where
        if isinstance(value, (str, int)) and str(value).strip().lower() in BOOL_WORDS:
            return BOOL_WORDS[str(value).strip().lower()], where
        return COMPUTED, where
    if isinstance(value, bool):
        return value, where
    if isinstance(value, (list, dict)):
        return json.dumps(value), where
    return str(value), where
