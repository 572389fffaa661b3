"""Lint that binds prose to evidence (G501, G504, G505): what the title, Symptom, Root cause and Workaround name must
be true at every release where the entry holds and the text applies (its bounds, `verifier.prose`).

- G501: a flag, engine variable or metric must exist there: in the release surface, or written in the pattern of
  a check that holds there;
- G504: a number must be pinned there: written as a number in the pattern (or `after`) of the form of a check that
  held, bound by one of its values, or the literal default the surface gives a flag or variable named in the same
  paragraph;
- G505: a quoted message (a code span of three or more words that is not code or a command line) must be in the
  pattern of a check that holds there.

It reads the committed ledger (where each entry and check holds, in which form, with which values) and the
surface files beside it, so it runs offline; `gotchas check` runs it unless `--offline`. An entry about several
engines looks for an unbounded name or number only in the engines that ever have it (a vLLM flag in an entry
about both engines is not looked for in SGLang); one that no engine of the entry ever has is reported too (a typo,
a number nothing pins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import prose
from ..model import HOLDS, Diagnostic, bound_word, release_spans
from .model import ENV, FLAG, METRIC, Surface

if TYPE_CHECKING:
    from ..model import Entry

FLAG_CODE, NUMBER_CODE, MESSAGE_CODE = "G501", "G504", "G505"
SECTIONS = ("Symptom", "Root cause", "Workaround")

_FLAG = re.compile(r"(?<![\w/.-])--[a-z0-9][a-z0-9_-]*[a-z0-9]")
_ENV = re.compile(r"\b(?:VLLM|SGLANG|SGL)_[A-Z0-9_]*[A-Z0-9]\b")
_METRIC = re.compile(r"\b(?:vllm|sglang):[a-z0-9_:]*[a-z0-9]\b")
#: What Prometheus adds to a metric's name when it is exported (a counter's `_total`, a histogram's series).
_METRIC_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")

#: What is not a number of the prose: URLs, references (`#123`, `owner/repo#123`), versions (three parts or more,
#: or two with a pre/post suffix), dates, list numbering, `{NAME}` values. Masked before numbers are read.
_NOT_NUMBERS = re.compile(
    r"https?://\S+"
    r"|[\w.-]*#\d+"
    r"|\b(?:PRs?|[Ii]ssues?|RFC|[Pp]ull requests?|commit)[ \t]+#?\d+(?![\w.])"
    r"(?:(?:,[ \t]*|[ \t]+and[ \t]+)#?\d+(?![\w.]))*"
    r"|(?<![\w.])v?\d+(?:\.\d+){2,}(?:[.-]?(?:post|rc|dev|a|b)\d*)*(?![\w])"
    r"|(?<![\w.])\d+\.\d+(?:[.-]?(?:post|rc|dev)\d*)+"
    r"|(?<![\w.])v?\d+\.\d+\.(?:x|\*)(?![\w])"
    r"|\b\d{4}-\d{2}-\d{2}\b"
    r"|^[ \t]*\d+[.)](?=[ \t])"
    r"|\{[A-Z][A-Z0-9_]*\}", re.M)
#: A number of the prose: digits (with `_` or `,` groups, a decimal part, an exponent) not inside a name, a flag,
#: a path or a longer number, with an optional unit.
_NUMBER = re.compile(
    r"(?<![\w$/:#-])(?<!(?<!\.)\.)(?<!\w-)(\d{1,3}(?:,\d{3})+|\d+(?:_\d+)*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"(%|x|s|ms|k|K|M|G|GB|GiB|MB|MiB|KB|KiB)?(?![\w/]|\.\d|-\w)")
#: A number in a check's pattern (code): a literal, not inside a name.
#: A number as code writes it: Python's `1_000`, and C/C++'s digit separators and suffixes (`1'000`, `0.80f`, `4096u`).
_CODE_NUMBER = re.compile(r"(?<![\w.])\d+(?:[_']\d+)*(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[fFlLuU]{1,3})?(?![\w])")
_WORD = re.compile(r"[A-Za-z][a-z]+")
#: A code span that starts so is a command line, not a message.
_COMMANDS = ("vllm ", "python", "sglang", "curl ", "docker ", "pip ", "export ", "kubectl ", "uv ", "bash ",
             "sh ", "nvidia-smi", "git ", "gotchas ")
_FOREIGN = ("docker ", "kubectl ", "curl ", "nvidia-smi", "git ", "pip ", "helm ", "uv ")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0-9.]*[sdifrx]|\$\$\$|\$[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Mention:
    """One thing the prose names: where, what kind, the name as written, and the bound it is in (or None)."""

    line: int
    kind: str  # flag | env | metric | number | message
    name: str
    values: tuple[str, ...]  # for a number: the values it may stand for, canonical; for a message: its text folded
    bound: prose.Bound | None
    paragraph: str  # the paragraph it is in (a number's flags)


def _number_values(text: str, unit: str | None) -> tuple[str, ...]:
    plain = text.replace(",", "").replace("_", "")
    try:
        value = float(plain)
    except ValueError:
        return ()
    found = [_canonical(value)]
    if unit == "%":
        found.append(_canonical(value / 100))
    return tuple(found)


def _canonical(value: float) -> str:
    return repr(float(value)).removesuffix(".0")


def _fold(text: str) -> str:
    return " ".join(text.split())


def _is_message(span: str) -> bool:
    """Whether a code span quotes a message: three or more words, mostly words, not code nor a command line."""
    text = span.strip()
    if len(text.split()) < 3 or text.startswith(_COMMANDS) or text.startswith(
            ("-", "$", "{", "[", "(", '"', "'")) or re.search(r"[×*/+]|\bnot in\b", text):
        return False
    if re.search(r"\s--?[a-z]|[=()\[\]{}<>]|\w\.\w+\(|\bNone\b|\bself\.", text):
        return False
    words = _WORD.findall(text)
    return len(words) >= 3 and len(words) * 2 >= len(text.split())


def mentions(entry: Entry, engines=()) -> list[Mention]:
    """Every flag, variable, metric, number and quoted message of the entry's title, Symptom, Root cause and
    Workaround, and of the facts of its conditions (`only-if`: audit and the release pages print them), with its
    line and bound (a condition's own engine and since/until bound its fact)."""
    texts: list[tuple[str, str, int, prose.Bound | None]] = [(*text, None) for text in prose.texts(entry, SECTIONS)]
    for top in entry.conditions:
        for condition in (top.any or (top,)):
            if condition.fact:
                since = condition.since or top.since
                until = condition.until or top.until
                texts.append(("only-if", condition.fact, condition.line or top.line,
                              prose.Bound(0, 0, 0, len(condition.fact), condition.engine, since, until)))
    found: list[Mention] = []
    for _, text, first, outer in texts:
        parsed = prose.parse(text, engines, entry.engines)
        examples = [(b.body_start, b.body_end) for b in parsed.bounds if b.example]

        def bound_at(offset: int, outer: prose.Bound | None = outer,
                     parsed: prose.Parsed = parsed) -> prose.Bound | None:
            return next((b for b in parsed.bounds if b.body_start <= offset < b.body_end and not b.example), outer)

        def paragraph_at(offset: int, text: str = text) -> str:
            start = text.rfind("\n\n", 0, offset)
            end = text.find("\n\n", offset)
            return text[start + 1 if start >= 0 else 0:end if end >= 0 else len(text)]

        def add(offset: int, kind: str, name: str, values: tuple[str, ...] = (), *, first: int = first,
                parsed: prose.Parsed = parsed) -> None:
            found.append(Mention(first + parsed.line_of(offset), kind, name, values, bound_at(offset),
                                 paragraph_at(offset)))

        # (start, end, text) of each code span, as the renderer reads them (CommonMark's backtick runs)
        spans = [(a, b, text[a:b].strip("`")) for a, b in prose.code_spans(text)]
        # A flag in a command line of another program (`docker run --restart=...`) is not the engine's.
        foreign = [(a, b) for a, b, inner in spans if inner.strip().lower().startswith(_FOREIGN)]
        for kind, pattern in ((FLAG, _FLAG), (ENV, _ENV), (METRIC, _METRIC)):
            for m in pattern.finditer(text):
                if kind == FLAG and any(a <= m.start() < b for a, b in foreign):
                    continue
                add(m.start(), kind, m.group())
        masked = _NOT_NUMBERS.sub(lambda m: " " * len(m.group()), text)
        masked = _FLAG.sub(lambda m: " " * len(m.group()), masked)
        for a, b in examples:
            masked = masked[:a] + " " * (b - a) + masked[b:]
        for m in _NUMBER.finditer(masked):
            values = _number_values(m.group(1), m.group(2))
            if values:
                add(m.start(), "number", m.group(), values)
        for start, _, inner in spans:
            if _is_message(inner) and not any(a <= start < b for a, b in examples):
                add(start, "message", inner.strip(), (_fold(inner),))
    return found


def _has(surface: Surface, kind: str, name: str) -> bool:
    if kind == FLAG:
        return surface.flag(name) is not None
    if kind == ENV:
        return (ENV, name) in surface.items
    names = {name} | {name[:-len(s)] for s in _METRIC_SUFFIXES if name.endswith(s)}
    return any((METRIC, n) in surface.items for n in names)


_RAISED = re.compile(r"([A-Z]\w*(?:Error|Exception|Warning)):\s+(.+)", re.S)
_LITERAL = re.compile(r"""[rfbuRFBU]{0,2}("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
_WILD = object()


def _words(text: str) -> list:
    """A message's words, each placeholder of the code (`{x}`, `%s`, `$NAME`) one wildcard."""
    out: list = []
    for i, piece in enumerate(_PLACEHOLDER.split(text)):
        if i:
            out.append(_WILD)
        out += piece.split()
    return out


def _quotes(quoted: str, pattern: str) -> bool:
    """Whether a quote is a run of words of one string literal of the pattern, a placeholder there standing for one
    or more of the quote's words (`compatible with flashinfer attention` in `f"... with {backend} attention ..."`).
    Words at the quote's ends may be cut (`reset` quotes `reset.`)."""
    said = quoted.split()
    literals = [m.group(1)[1:-1] for m in _LITERAL.finditer(pattern)] or [pattern]  # `string:`: the text itself
    for literal in literals:
        words = _words(literal)
        for start in range(len(words)):
            if words[start] is not _WILD and _run(said, 0, words, start):
                return True
    return False


def _run(said: list[str], i: int, words: list, j: int) -> bool:
    """Whether said[i:] is words[j:]'s start (said[:i] matched already, beginning with a fixed word)."""
    if i == len(said):
        return True
    if j == len(words):
        return False
    if words[j] is _WILD:  # one or more of the quote's words; the quote may end within it
        return any(_run(said, k, words, j + 1) for k in range(i + 1, len(said) + 1))
    word, quote = words[j], said[i]
    edge_ok = (i == 0 and word.endswith(quote)) or (i == len(said) - 1 and word.startswith(quote))
    return (word == quote or edge_ok) and _run(said, i + 1, words, j + 1)


def _message_pattern(pattern: str) -> re.Pattern:
    """A check's pattern as a search for a quoted message: whitespace folded, its placeholders any text."""
    pieces = _PLACEHOLDER.split(_fold(pattern))
    return re.compile("(?:.*?)".join(re.escape(p) for p in pieces), re.S)


class _Evidence:
    """What the checks of one entry pin at each release of one engine: the patterns of the forms that held, and the
    values they bound; and the release surface there."""

    def __init__(self, entry: Entry, engine: str, ledger, stored) -> None:
        self.engine = engine
        self.versions = stored.versions() if stored is not None and stored.releases else (
            ledger.versions() if ledger is not None else [])
        checks = {c.id: c for c in entry.checks if c.engine == engine}
        self.holds: list[str] = []
        self.patterns: dict[str, list[str]] = {}
        self.values: dict[str, set[str]] = {}
        self._stored = stored
        self._surfaces: dict[str, Surface | None] = {}
        for version in (ledger.versions() if ledger is not None else []):
            record = ledger.entry(version, entry.id)
            if record is None:
                continue
            if record.status == HOLDS:
                self.holds.append(version)
            texts, values = [], set()
            for check_id, found in record.checks.items():
                check = checks.get(check_id)
                if check is None or found.verdict != HOLDS or found.form is None or found.form >= len(check.forms):
                    continue
                form = check.forms[found.form]
                texts += [form.pattern] + ([form.after] if form.after else [])
                for _, text in found.values or ():
                    values.add(bound_word(text))
            self.patterns[version] = texts
            self.values[version] = values

    def surface(self, version: str) -> Surface | None:
        if version not in self._surfaces:
            self._surfaces[version] = (self._stored.surface(version) if self._stored is not None
                                       and version in self._stored.releases else None)
        return self._surfaces[version]

    def pins(self, mention: Mention, version: str) -> bool:
        patterns = self.patterns.get(version, [])
        if mention.kind in (FLAG, ENV, METRIC):
            surface = self.surface(version)
            if surface is not None and _has(surface, mention.kind, mention.name):
                return True
            spelled = {mention.name, mention.name.lstrip("-").replace("-", "_")}
            return any(s in p for p in patterns for s in spelled)
        if mention.kind == "number":
            wanted = set(mention.values)
            found = {_canonical(float(n.replace("_", "").replace("'", "").rstrip("fFlLuU")))
                     for p in patterns for n in _CODE_NUMBER.findall(p)}
            found |= {_canonical(n) for p in patterns for n in _range_ends(p)}
            found |= {_canonical(float(v)) for v in self.values.get(version, ()) if _is_float(v)}
            if wanted & found:
                return True
            status = _http_status(mention.values[0])  # `HTTP 400` is pinned by HTTPStatus.BAD_REQUEST too
            if status is not None and any(status in p for p in patterns):
                return True
            surface = self.surface(version)
            if surface is None:
                return False
            for name in _FLAG.findall(mention.paragraph) + _ENV.findall(mention.paragraph):
                item = surface.flag(name) if name.startswith("-") else surface.items.get((ENV, name))
                value = getattr(item, "value", None)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and _canonical(value) in wanted:
                    return True
                if isinstance(value, str) and _is_float(value) and _canonical(float(value)) in wanted:
                    return True
            return False
        quoted = mention.values[0]
        raised = _RAISED.match(quoted)  # `ValueError: message`: the class is raised where the message is written
        if raised:
            quoted = raised.group(2)
        pieces = [p.strip() for p in re.split(r"\.\.\.|…", quoted) if p.strip()]
        if raised and not any(raised.group(1) in p for p in patterns):
            return False
        for pattern in patterns:
            folded = _fold(pattern)
            search = _message_pattern(pattern)  # a `string:` message with placeholders: the quote fills them in
            if all(piece in folded or search.fullmatch(piece) or _message_pattern(piece).search(folded)
                   or _quotes(piece, pattern) for piece in pieces):
                return True
        return False

    def ever(self, mention: Mention) -> bool:
        """Whether any recorded release of the engine has it (for a two-engine entry: whose name it is)."""
        versions = set(self.patterns) | (set(self.versions) if mention.kind in (FLAG, ENV, METRIC) else set())
        return any(self.pins(mention, v) for v in versions)


_RANGE = re.compile(r"\brange\(\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")


def _range_ends(pattern: str) -> list[int]:
    """The first and the last number a `range()` of literals in the pattern yields (`range(8, 513, 8)`: 8, 512)."""
    found = []
    for m in _RANGE.finditer(pattern):
        start, stop, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        if step > 0 and stop > start:
            found += [start, start + (stop - 1 - start) // step * step]
    return found


def _http_status(value: str) -> str | None:
    """The name `http.HTTPStatus` gives a number that is an HTTP status (`BAD_REQUEST` for 400), else None."""
    import http

    try:
        return http.HTTPStatus(int(float(value))).name if float(value).is_integer() else None
    except (ValueError, OverflowError):
        return None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_WORDS = {FLAG: "flag", ENV: "environment variable", METRIC: "metric", "number": "number",
          "message": "quoted message"}
_CODES = {FLAG: FLAG_CODE, ENV: FLAG_CODE, METRIC: FLAG_CODE, "number": NUMBER_CODE, "message": MESSAGE_CODE}


def prose_problems(entry: Entry, ledgers: dict, surfaces: dict, engines=()) -> list[Diagnostic]:
    """G501, G504 and G505 for one entry: `ledgers` and `surfaces` by engine (ledger.EngineLedger,
    store.EngineSurfaces)."""
    named = mentions(entry, engines or entry.engines)
    if not named:
        return []
    evidence = {e: _Evidence(entry, e, ledgers.get(e), surfaces.get(e)) for e in entry.engines
                if ledgers.get(e) is not None}
    if not evidence:
        return []
    found, reported = [], set()
    for mention in named:
        key = (mention.kind, mention.name, mention.bound.start if mention.bound else None)
        if key in reported:
            continue
        if mention.bound is not None and mention.bound.engine is not None:
            owners = [mention.bound.engine] if mention.bound.engine in evidence else []
        else:
            owners = [e for e, ev in evidence.items() if ev.ever(mention)]
        word = _WORDS[mention.kind]
        code = _CODES[mention.kind]
        shown = mention.name if mention.kind != "message" else f"`{_short(mention.name)}`"
        if not owners:
            where = {FLAG: "exists in no recorded release", ENV: "exists in no recorded release",
                     METRIC: "exists in no recorded release"}.get(mention.kind, "is pinned by no check in any release")
            found.append(Diagnostic(entry.file, mention.line, code,
                                    f"{word} {shown} {where} of {', '.join(evidence)}; "
                                    + ("check its spelling" if code == FLAG_CODE else _ADVICE[code])))
            reported.add(key)
            continue
        for engine in owners:
            ev = evidence[engine]
            applies = [v for v in ev.holds if mention.bound is None or mention.bound.applies(engine, v)]
            lacking = [v for v in applies if not ev.pins(mention, v)]
            if lacking:
                verb = "does not exist in" if code == FLAG_CODE else "is not pinned in"
                found.append(Diagnostic(entry.file, mention.line, code,
                                        f"{word} {shown} {verb} {engine} {release_spans(lacking, ev.holds)}, where "
                                        f"the entry holds and its text applies; " + _ADVICE[code]))
                reported.add(key)
    return found


_ADVICE = {
    FLAG_CODE: "bound the text to the releases that have it ({since V: ...}), or say what the others have",
    NUMBER_CODE: "pin it with a check (or a check's values), bound the text to where it is true, or, if it only "
                 "illustrates, write it as {example: ...}",
    MESSAGE_CODE: "pin it with a check (a `string:` of the message), or bound the text to where the message is so",
}


def _short(text: str) -> str:
    text = _fold(text)
    return text if len(text) <= 60 else text[:57] + "..."
