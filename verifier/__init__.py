"""gotchas: verify LLM serving-engine gotchas against engine source code.

How the package is laid out, from the bottom up (a module imports only from the
layers below it):

- `model`: the plain values every stage shares (entries, checks, forms, verdicts), and the one order of
  releases (`version_key`, PEP 440) every list of them is sorted by.
- `md`, `urls`: the one Markdown escaper every Markdown output is written through, and the one builder of the
  addresses of the site's pages (an entry's, a release's) that the site, audit and the reports link to.
- `kb`, `entries`, `lint`, `schema`, `_yaml`: the knowledge base read from its files
  and checked against docs/format.md, with the file and line of every problem.
- `sources`: where engine code comes from (the package index, git, a folder: `sources.pypi` with the
  archive readers of `sources.archive`, `sources.git`, `sources.directory`); each release opens as a
  `Snapshot` that reads repository paths.
- `code`, `matchers`, `evaluate`: the matching core, a form and a file's content in,
  a verdict out; nothing is read or cached there.
- `reading`: the one place where checks meet files: reading a snapshot, the parse
  cache, and the verdict cache (`verdicts`), read and written.
- `verify`, `helper`, `locate`: one release's checks, evaluated here and in worker
  processes, with the lines shown as evidence and where moved code now lives (`locate.Places`: the one place
  search of `locate`, relocation hints, `trace` and `follow`).
- `ledger`, `history`: what held where (`ledger.records`, its JSON `ledger.codec`, on disk `ledger.folder`),
  and what changed between releases.
- `surface`: each release's flags, environment variables, metrics and request fields, read from its code
  (`extract`, pure; `read`, from a snapshot), kept beside the ledger (`store`), compared (`diff`), and used by
  lint (`surface.lint`: G501, G502) and audit's conditions (`surface.conditions`).
- `run`: the runs of the commands over engines and releases; `cli`: arguments,
  output and exit codes, and nothing else; `report`, `site`, `audit`, `trace`,
  `bisect`, `mutate`: what the other commands make of it all (every command's output formats and their writers:
  one table, `report.OUTPUT_FORMATS`).
- `stats`: counts of what a run did, for the benchmarks.
"""

__version__ = "0.5.0"
