"""SVG status badges, one per entry, from the badge template (text and colour, never colour alone)."""

from __future__ import annotations

from ..model import CHANGED, HOLDS, NOT_AFFECTED, UNVERIFIED
from .words import STATUS_ICONS, word
from .writer import Builder

_COLOURS = {HOLDS: "#1e6b34", CHANGED: "#a4262c", UNVERIFIED: "#555555", NOT_AFFECTED: "#2f5580", None: "#555555"}


def badge(b: Builder, label: str, parts: list[tuple[str, str | None]]) -> str:
    width = 6 * len(label) + 12
    x = width
    boxes = []
    for name, status in parts:
        text = f"{name} {STATUS_ICONS.get(status, '?')} {word(status)}"
        w = 6 * len(text) + 12
        boxes.append({"x": x, "width": w, "colour": _COLOURS.get(status, "#555555"), "text": text})
        x += w
    title = f"{label}: {', '.join(f'{name} {word(status)}' for name, status in parts)}"
    return b.render("badge.svg", label=label, label_width=width, width=x, boxes=boxes, title=title)


def build(b: Builder) -> None:
    site = b.site
    for entry in site.entries:
        parts = [(site.engine_name(e), site.status(entry, e).latest) for e in entry.engines]
        b.add(("badges", f"{entry.id}.svg"), badge(b, "gotcha", parts))
