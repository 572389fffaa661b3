"""The commands that make things from the KB: `site`, `new`, `schema`, and `audit` for a deployment."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import kb as kb_module
from ..ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR
from ..ledger import Ledger
from ._common import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_NOTHING_AUDITED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _display,
    _kb,
    _load_clean,
)


def run_site(args: argparse.Namespace) -> int:
    import os
    from urllib.parse import quote

    from .. import site
    from ..safety import inside

    kb = _kb(args)
    loaded, diagnostics, entries = _load_clean(kb, [])
    edit = args.edit_url
    if edit is None and os.environ.get("GITHUB_REPOSITORY"):
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
        ref = quote(os.environ.get("GITHUB_REF_NAME") or "main", safe="/")  # a branch name may hold '"' or '<'
        edit = f"{server}/{quote(os.environ['GITHUB_REPOSITORY'], safe='/')}/edit/{ref}/"
    out = Path(args.out)
    # LedgerError, SiteError, PathError (exit 2): the data, or --out, --base-url; nothing is built
    data = site.load(kb, entries, Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR), args.base_url, edit)
    builder = site.build(data, inside(kb.root, "site/templates"), inside(kb.root, "site/assets"), out)
    print(f"built {len(builder.pages)} pages and {len(builder.files)} other files into {out}")
    return EXIT_OK


def run_new(args: argparse.Namespace) -> int:
    from .. import scaffold

    kb = _kb(args)
    given = {k: getattr(args, k) for k in ("id", "title", "scheme", "severity", "engines", "concepts")
             if getattr(args, k)}
    ask = input if sys.stdin.isatty() else None
    try:
        fields = scaffold.gather(kb, given, ask)
    except scaffold.ScaffoldError as exc:
        raise UsageError(f"{exc} (give it as an option, or run `gotchas new` at a terminal)") from None
    except EOFError:
        raise UsageError("no answer") from None
    path = scaffold.write(kb, fields)  # PathError (2): a file or a link is there; WriteError (3)
    print(f"wrote {_display(kb, path)}; fill it in, then run `gotchas check {fields['id']}`")
    return EXIT_OK


def run_schema(args: argparse.Namespace) -> int:
    from .. import docs, schema
    from ..safety import write_text_atomically

    kb = _kb(args)
    text = schema.render(kb)
    if not args.write:
        sys.stdout.write(text)
        return EXIT_OK
    write_text_atomically(kb.entries_dir / schema.SCHEMA_FILE, text, kb.root,  # never through a link
                          display=_display(kb, kb.entries_dir / schema.SCHEMA_FILE))
    docs_path = kb.root / docs.DOCS_FILE
    if docs_path.is_file() and not docs_path.is_symlink():  # a KB without the format's docs has none to update
        written, problems = docs.sync(docs_path.read_text(encoding="utf-8"), docs.tables(kb, EXIT_CODES))
        if problems:
            raise UsageError(f"{docs.DOCS_FILE}: " + "; ".join(problems))
        write_text_atomically(docs_path, written, kb.root, display=docs.DOCS_FILE)
        print(f"wrote {_display(kb, kb.entries_dir / schema.SCHEMA_FILE)} and the tables of {docs.DOCS_FILE}")
    return EXIT_OK


def run_audit(args: argparse.Namespace) -> int:
    from .. import audit, compiled, deployment
    from ..report import terminal

    # CompiledKBError (exit 3): the compiled KB cannot be read or made
    if args.kb:
        if kb_module.find_root(args.kb) != Path(args.kb).resolve():
            raise UsageError(f"--kb {args.kb}: not a checkout of the knowledge base (no gotchas/engines.yaml)")
        data = compiled.compile_kb(args.kb)
    else:
        packaged = compiled.load_packaged()
        if packaged is not None:
            data = packaged
        else:  # an editable install, or a run from a checkout: its own KB
            root = kb_module.find_root(Path(__file__).resolve().parents[2])
            if root is None:
                print("gotchas: this installation ships no compiled knowledge base; give --kb DIR",
                      file=sys.stderr)
                return EXIT_ERROR
            data = compiled.compile_kb(root)
    packages = {key: engine["package"] for key, engine in data["engines"].items()}
    known = {e["id"] for e in data["entries"]}
    unknown = [i for i in args.ignore if i not in known]
    if unknown:
        raise UsageError(f"--ignore: no entry {', '.join(map(repr, unknown))}")
    notes: list[str] = []
    # DeploymentError (2) and EnvironmentFailed (3): what was given cannot be read, or asked
    settings: dict[str, deployment.Settings] = {}
    given = [deployment.parse_log(path) for path in args.serve_log]
    only = args.engines[0].partition("==")[0].strip().lower() if len(args.engines) == 1 else None
    newest = {key: engine["releases"][-1] for key, engine in data["engines"].items() if engine["releases"]}
    from_images: list = []
    for line in args.serve:
        container = deployment.from_docker_run(line, "--serve", notes, newest)
        if container is None:
            given.append(deployment.parse_serve(line, only if only in packages else None))
            continue
        if not container.installed and not container.settings:
            raise UsageError(f"--serve: the docker run line runs no image of {', '.join(packages)} and no serve "
                             "command")
        given += [i.settings for i in container.installed if i.settings is not None] + container.settings
        from_images += container.installed
    for found in given:
        if not found.has_flags:  # a llama.cpp log: its build (below), and no flags to decide a condition
            notes.extend(n for n in found.notes if n not in notes)
            continue
        if found.engine in settings:
            raise UsageError(f"{found.origin}: a second set of {found.engine} settings "
                             f"(after {settings[found.engine].origin}); audit one deployment at a time")
        settings[found.engine] = found
    installed = deployment.from_specs(args.engines, packages)
    if not args.engines:  # the image of a `docker run` serve line names the version
        installed += [i for i in from_images if i.engine in packages]
    if args.python:
        installed += deployment.from_python(args.python, packages)
    for path in args.requirements:
        installed += deployment.from_file(path, packages, notes)
    loose: list = []  # settings the files give with no version of their own (a script's serve line)
    unread: list[str] = []  # a folder's files that may declare an engine and could not be read
    for path in args.files:  # files and folders of any kind the deployment declares itself in
        if not Path(path).exists():
            raise UsageError(f"{path}: no such file or folder")
        declared = deployment.read_path(path, packages, notes, newest)
        installed += declared.installed
        loose.extend(declared.settings)
        unread += declared.unread
    installed = deployment.one_per_serve_line(installed, loose, settings, notes)
    if not (args.engines or args.python or args.requirements or args.files or from_images):
        logged = [deployment.Installed(s.engine, s.version or "unknown", s.origin, commit=s.commit)
                  for s in given if s.version or s.commit]
        installed = logged or deployment.from_environment(packages)
    result = audit.audit(data, installed, settings, set(args.ignore))
    result.notes[:0] = notes
    sys.stdout.write(audit.render(args.format, data, result, args.site_url))
    if unread:  # the answer above leaves them out: never a success
        shown = "; ".join(unread[:3]) + (f"; and {len(unread) - 3} more" if len(unread) > 3 else "")
        print(terminal(f"gotchas: audit is incomplete: {len(unread)} file(s) that may declare an engine could not "
                       f"be read ({shown})", lines=False), file=sys.stderr)
        return EXIT_USAGE
    if not result.audited:
        return EXIT_OK if args.nothing_ok else EXIT_NOTHING_AUDITED
    return EXIT_FINDINGS if audit.failing(result, args.fail_on) else EXIT_OK
