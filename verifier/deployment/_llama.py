"""llama.cpp's llama-server: its arguments and `LLAMA_ARG_*` variables, read as llama.cpp's own parser reads them.

The parser (common/arg.cpp `common_params_parse_ex`; `gpt_params_parse_ex` in 0.3.0), the same in every tracked
release (read in 0.3.0, 0.3.9, 0.3.16, 0.3.17, 0.3.24 and 0.3.36):

- an argument is looked up by its exact spelling, short (`-c`) or long (`--ctx-size`), after `_` is made `-` in
  a long one; there is no `--flag=value` and no unique prefix: anything else is `error: invalid argument`, and
  the server does not start;
- the flag's declaration decides what follows it: nothing (a switch, `--metrics`, or either spelling of a
  negatable pair, `--context-shift`/`--no-context-shift`, 0.3.17 on), one value (`-c 8192`) or two
  (`--lora-scaled FNAME SCALE`); so which flags take a value comes from each release's surface (its items of kind
  flag), and only where none is recorded from the generic rule (a word that does not start with `-` is the value
  of the flag before it), with a note;
- environment variables (`.set_env("LLAMA_ARG_CTX_SIZE")`) are read first and the command line overrides them;
  a switch's variable turns it on when it is `1` or `true` (0.3.17 on also `on` or `enabled`,
  `common_arg_utils::is_truthy`); a pair's reads true or false, and `LLAMA_ARG_NO_X` turns it off;
- a repeated argument: the last one counts.

A serve line is read once when it is found (by the generic rule, or the newest recorded release's declarations
when the caller has them) and again for each release audited (`for_release`), since a flag may take a value in
one release and not in another (`-fa` was a switch until 0.3.16 and takes on|off|auto from 0.3.17).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ._settings import UNKNOWN, Settings, flag_key

ENGINE = "llama-cpp"
_NUMBER = re.compile(r"-\d+(\.\d*)?([eE][-+]?\d+)?")
#: What a switch's variable must be to turn it on: `value == "1" || value == "true"` ([0.3.16] common/arg.cpp:903),
#: then `is_truthy` ([0.3.17] common/arg.cpp:452, [0.3.36] :1334-1336), which pairs' variables also read.
_TRUTHY_UNTIL_0_3_16 = frozenset({"1", "true"})
_TRUTHY = frozenset({"on", "enabled", "true", "1"})
_FALSEY = frozenset({"off", "disabled", "false", "0"})
_NO_SURFACE = ("no release surface of llama.cpp {release} is recorded: which of its flags take a value is read by "
               "the generic rule (a word that does not start with `-` is the value of the flag before it), and "
               "LLAMA_ARG_* variables are not read as the flags they set")


@dataclass(frozen=True)
class Flag:
    """One spelling of a llama-server flag, as a release declares it."""

    key: str  # the setting's key: flag_key of the flag's long spelling (`ctx_size`)
    spelling: str  # as written (`-c`)
    values: int  # how many words follow it: 0 (a switch, or a pair's spelling), 1 or 2
    negative: bool = False  # this spelling turns a negatable pair off (`--no-context-shift`)
    pair: bool = False  # the flag is a negatable pair (--x / --no-x)
    env: str | None = None  # the variable that sets it (`LLAMA_ARG_CTX_SIZE`)


@dataclass
class Grammar:
    """The flags one release of llama-server declares: by exact spelling, and by the variable that sets each."""

    release: str
    spellings: dict[str, Flag] = field(default_factory=dict)
    env: dict[str, Flag] = field(default_factory=dict)

    @classmethod
    def of(cls, release: str, flags: list[dict]) -> Grammar:
        """From plain records (`{"spellings": [...], "negatives": [...], "values": N, "env": "LLAMA_ARG_X"}`),
        as `_builds.grammars` keeps them."""
        grammar = cls(release)
        for record in flags:
            spellings = list(record["spellings"])
            negatives = list(record.get("negatives", ()))
            long = next((s for s in spellings if s.startswith("--")), spellings[0])
            key = flag_key(long)
            pair = bool(negatives)
            for spelling in spellings:
                grammar.spellings[spelling] = Flag(key, spelling, record["values"], False, pair, record.get("env"))
            for spelling in negatives:
                grammar.spellings[spelling] = Flag(key, spelling, 0, True, True, record.get("env"))
            if record.get("env"):
                grammar.env[record["env"]] = grammar.spellings[long]
        return grammar

    def truthy(self) -> frozenset[str]:
        from packaging.version import InvalidVersion, Version
        try:
            return _TRUTHY if Version(self.release) >= Version("0.3.17") else _TRUTHY_UNTIL_0_3_16
        except InvalidVersion:
            return _TRUTHY


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not _NUMBER.fullmatch(token) and token not in ("-", "--")


def _spelt(token: str) -> str:
    """What llama.cpp looks up: a long argument with `_` made `-` (common/arg.cpp, `std::replace`)."""
    return "--" + token[2:].replace("_", "-") if token.startswith("--") else token


def parse_args(args: list[str], origin: str, env: dict[str, str] | None = None,
               grammar: Grammar | None = None) -> Settings:
    """The settings of llama-server's arguments (what follows the program, or an image whose entrypoint is it), by
    the release's declarations (`grammar`) or, without them, by the generic rule. The arguments are kept
    (`argv`), so that each release audited reads them again (`for_release`)."""
    settings = Settings(ENGINE, origin, env=dict(env or {}), argv=list(args))
    given: set[str] = set()
    stray: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        flag = grammar.spellings.get(_spelt(token)) if grammar is not None else None
        if flag is None and _is_flag(token) and "=" in token:
            i = _with_equals(settings, token, args, i, grammar, given)
            continue
        if flag is not None and grammar is not None:  # a flag: found in the grammar
            i = _declared(settings, flag, args, i, given, grammar)
            continue
        if _is_flag(token):
            i = _generic(settings, token, args, i, given)
            continue
        stray.append(token)
        i += 1
    if stray and grammar is not None:
        settings.notes.append(f"{origin}: {' '.join(stray)}: not an argument of llama-server {grammar.release}, "
                              "which takes no positional arguments (it refuses to start: error: invalid argument)")
    if grammar is not None:
        _from_env(settings, grammar, given)
    return settings


def _record(settings: Settings, key: str, value: object, given: set[str], spelling: str) -> None:
    settings.flags[key] = value
    settings.written[key] = spelling
    settings.implied.discard(key)
    given.add(key)
    if key.startswith("no_") and value is None and key[3:] not in given:
        settings.flags[key[3:]] = False  # 0.3.0-0.3.16: `--no-context-shift` is a switch of its own
        settings.implied.add(key[3:])


def _declared(settings: Settings, flag: Flag, args: list[str], i: int, given: set[str], grammar: Grammar) -> int:
    """A flag the release declares: its spelling decides how many words follow it (llama.cpp takes the next words
    whatever they are, a flag's spelling too)."""
    if flag.values == 0:
        _record(settings, flag.key, False if flag.negative else (True if flag.pair else None), given, flag.spelling)
        return i + 1
    values = args[i + 1:i + 1 + flag.values]
    if len(values) < flag.values:
        settings.notes.append(f"{settings.origin}: {flag.spelling} expects {flag.values} value"
                              f"{'s' if flag.values > 1 else ''} and the line ends (llama-server refuses to start: "
                              "expected value for argument)")
    swallowed = [v for v in values if _spelt(v) in grammar.spellings]
    if swallowed:
        settings.notes.append(f"{settings.origin}: {flag.spelling} takes a value in llama-server {grammar.release}, "
                              f"and here takes {' '.join(swallowed)}, a flag of its own")
    _record(settings, flag.key, " ".join(values) if values else None, given, flag.spelling)
    return i + 1 + flag.values


def _generic(settings: Settings, token: str, args: list[str], i: int, given: set[str]) -> int:
    """A flag no recorded declaration knows: a word that does not start with `-` is its value."""
    following = args[i + 1] if i + 1 < len(args) else None
    if following is not None and not _is_flag(following):
        _record(settings, flag_key(token), following, given, token)
        return i + 2
    _record(settings, flag_key(token), None, given, token)
    return i + 1


def _with_equals(settings: Settings, token: str, args: list[str], i: int, grammar: Grammar | None,
                 given: set[str]) -> int:
    """`--ctx-size=8192`: what the operator meant, read as the flag and its value, with the note that llama-server
    itself does not read it so."""
    name, _, value = token.partition("=")
    flag = grammar.spellings.get(_spelt(name)) if grammar is not None else None
    _record(settings, flag.key if flag is not None else flag_key(name), value, given, name)
    settings.notes.append(f"{settings.origin}: llama-server reads `{token}` as one argument, which it does not "
                          f"know, and refuses to start (error: invalid argument): write `{name} {value}`")
    return i + 1


def _from_env(settings: Settings, grammar: Grammar, given: set[str]) -> None:
    """The flags the LLAMA_ARG_* variables set, where the command line does not give them (it overrides them)."""
    read = []
    for variable, value in settings.env.items():
        negated = variable.startswith("LLAMA_ARG_NO_") and variable.replace("LLAMA_ARG_NO_", "LLAMA_ARG_", 1)
        flag = grammar.env.get(variable)
        if flag is None and negated and grammar.env.get(negated) is not None and grammar.env[negated].pair:
            flag, value = grammar.env[negated], "0"  # `LLAMA_ARG_NO_X` turns a pair off, whatever its value
        if flag is None or flag.key in given:
            continue
        if flag.pair:
            word = value.strip().lower()
            if word not in _TRUTHY | _FALSEY:
                settings.notes.append(f"{settings.origin}: {variable}={value} is not a boolean llama-server reads "
                                      "(it refuses to start: invalid boolean value)")
                continue
            settings.flags[flag.key] = word in _TRUTHY
        elif flag.values == 0:
            if value.strip().lower() not in grammar.truthy():
                continue  # the switch stays off
            settings.flags[flag.key] = None
            if flag.key.startswith("no_") and flag.key[3:] not in given:  # 0.3.0-0.3.16: LLAMA_ARG_NO_CONTEXT_SHIFT
                settings.flags[flag.key[3:]] = False
                settings.implied.add(flag.key[3:])
        else:
            settings.flags[flag.key] = value
        settings.implied.discard(flag.key)
        read.append(f"{variable}={value} as {_long(grammar, flag)}")
    if read:
        settings.notes.append(f"{settings.origin}: read {', '.join(read)} (llama-server {grammar.release} reads the "
                              "variable when the command line does not give the flag)")


def _long(grammar: Grammar, flag: Flag) -> str:
    return next((s for s, f in grammar.spellings.items() if f.key == flag.key and s.startswith("--")
                 and not f.negative), flag.spelling)


def for_release(settings: Settings | None, grammar: Grammar | None, release: str) -> Settings | None:
    """The settings of a llama-server line as `release` reads them: its arguments read again by that release's
    declarations (and its variables as the flags they set); without declarations, as found, with a note."""
    if settings is None or settings.engine != ENGINE or settings.argv is None:
        return settings
    if grammar is None:
        note = f"{settings.origin}: {_NO_SURFACE.format(release=release)}"
        return replace(settings, notes=[*settings.notes, note]) if note not in settings.notes else settings
    again = parse_args(settings.argv, settings.origin, settings.env, grammar)
    if settings.unread_variables:  # as the file's reader left them: a value naming a variable is unreadable
        again.flags = {k: UNKNOWN if isinstance(v, str) and "$" in v else v for k, v in again.flags.items()}
    notes = [*settings.notes, *(n for n in again.notes if n not in settings.notes)]
    return replace(settings, flags=again.flags, implied=again.implied, written=again.written, notes=notes)
