"""Build hook: compile the knowledge base into the wheel (`verifier/kb.json`), so that `gotchas audit` works from
an installed wheel with no checkout, on the entries and ledger the wheel was built from.

Everything else about the package is in pyproject.toml. The compilation imports the verifier from this tree,
so the build environment needs the package's own dependencies (pyproject.toml's build-system requires them).
An editable install compiles nothing: it reads its checkout.
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithKB(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or self.dry_run:
            return
        if not (ROOT / "gotchas" / "engines.yaml").is_file():
            raise SystemExit("gotchas: no gotchas/ folder to compile into the wheel (build from a checkout or "
                             "the sdist)")
        sys.path.insert(0, str(ROOT))
        try:
            from verifier import compiled
        finally:
            sys.path.remove(str(ROOT))
        target = Path(self.build_lib) / "verifier" / compiled.PACKAGED
        data = compiled.write(ROOT, target)
        print(f"gotchas: compiled {len(data['entries'])} entries and the ledger into {target}")


setup(cmdclass={"build_py": BuildWithKB})
