"""The release surface as plain values: what an operator can set or read in one release of an engine.

An `Item` is one command-line flag, environment variable, Prometheus metric or request field, with its default as
the code writes it, where it is defined, and what the code says of it. A `Surface` is every item of one release.
Nothing here reads files; `extract` makes items from source text, `store` keeps them beside the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLAG, ENV, METRIC, REQUEST = "flag", "env", "metric", "request"
#: The kinds of item, in the order they are shown; `--kind` takes the plural (`flags`, `env`, ...).
KINDS = (FLAG, ENV, METRIC, REQUEST)
KIND_WORDS = {"flags": FLAG, "flag": FLAG, "env": ENV, "envs": ENV, "metrics": METRIC, "metric": METRIC,
              "requests": REQUEST, "request": REQUEST}


class _NoValue:
    """`Item.value` when the default is not a literal (computed at run time) or there is none: never a JSON value,
    so that `value is NO_VALUE` tells it apart from a default of None."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = _NoValue()


@dataclass(frozen=True)
class Item:
    """One setting or signal of a release.

    `default` is the default as the code writes it (its Python, C or C++ source, whitespace folded), None when
    there is none (a required flag, a metric). `value` is that default's value when it is a literal (a JSON value:
    None, a bool, a number, a string, a list), else NO_VALUE; a default that is not a literal is `computed`: the
    engine derives it when it runs (from another setting, the environment, the hardware), and `default` shows from
    what.
    """

    kind: str
    name: str  # flag: "--gpu-memory-utilization"; env: "VLLM_USE_V1"; metric: "vllm:num_preemptions";
    #            request: "ChatCompletionRequest.max_tokens"
    default: str | None = None
    value: object = NO_VALUE
    aliases: tuple[str, ...] = ()  # other spellings of a flag ("-tp", "--no-enable-prefix-caching")
    choices: tuple[str, ...] = ()
    help: str = ""  # what the code says of it (help text, docstring, documentation), folded, bounded
    detail: str = ""  # flag: the config field it sets; env: how it is read; metric: its type; request: its type
    deprecated: bool = False
    path: str = ""  # the file that defines it (repository path) and the line
    line: int = 0
    default_path: str = ""  # where its default is written, when elsewhere (a config class's field)
    default_line: int = 0

    @property
    def computed(self) -> bool:
        return self.default is not None and self.value is NO_VALUE

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name

    def body(self) -> dict:
        """The item without where it is (its place changes with every edit of the file; what it says seldom)."""
        found: dict = {"kind": self.kind, "name": self.name}
        if self.default is not None:
            found["default"] = self.default
        if self.value is not NO_VALUE:
            found["value"] = self.value
        for key in ("aliases", "choices"):
            if getattr(self, key):
                found[key] = list(getattr(self, key))
        for key in ("help", "detail"):
            if getattr(self, key):
                found[key] = getattr(self, key)
        if self.deprecated:
            found["deprecated"] = True
        return found

    def to_json(self) -> dict:
        found = {**self.body(), "path": self.path, "line": self.line}
        if self.default_path:
            found.update(default_path=self.default_path, default_line=self.default_line)
        return found

    @property
    def default_place(self) -> str:
        """`path:line` of the line that gives the default: its own, or the config field's."""
        if self.default_path:
            return f"{self.default_path}:{self.default_line}"
        return f"{self.path}:{self.line}" if self.path else ""

    @classmethod
    def from_json(cls, data: dict, path: str = "", line: int = 0) -> Item:
        return cls(data["kind"], data["name"], data.get("default"), data["value"] if "value" in data else NO_VALUE,
                   tuple(data.get("aliases", ())), tuple(data.get("choices", ())), data.get("help", ""),
                   data.get("detail", ""), bool(data.get("deprecated", False)), data.get("path", path),
                   data.get("line", line), data.get("default_path", ""), data.get("default_line", 0))

    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def describe_default(self) -> str:
        if self.default is None:
            return "no default" if self.kind != METRIC else ""
        return f"computed: {self.default}" if self.computed else self.default


@dataclass
class Surface:
    """Every item of one release, by (kind, name); `files` are the files read, with their sha256."""

    engine: str
    version: str
    items: dict[tuple[str, str], Item] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    identity: str = ""

    def of_kind(self, kind: str | None = None) -> list[Item]:
        order = {k: i for i, k in enumerate(KINDS)}
        return sorted((i for i in self.items.values() if kind is None or i.kind == kind),
                      key=lambda i: (order.get(i.kind, 9), i.name))

    def flag(self, spelling: str) -> Item | None:
        """The flag spelt `spelling` (`--x-y`, `--x_y`, `--no-x` of a boolean flag, an alias), or None."""
        wanted = flag_key(spelling)
        for item in self.items.values():
            if item.kind == FLAG and any(flag_key(s) == wanted for s in item.spellings()):
                return item
        return None

    def counts(self) -> dict[str, int]:
        return {kind: sum(1 for i in self.items.values() if i.kind == kind) for kind in KINDS}


def flag_key(name: str) -> str:
    """One spelling of a flag: `--max-model-len` and `--max_model_len` are one; `-tp` and `--tp` are two, as
    argparse reads them."""
    rest = name.lstrip("-")
    return name[:len(name) - len(rest)] + rest.replace("_", "-").lower()
