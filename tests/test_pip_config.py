"""pip's configuration read without pip's internals (verifier.sources.pypi.pip_config._pip_setting).

pip's own `Configuration` is the oracle where both should agree, and `pip config debug` (pip's command line)
for which files are read; the precedence tests use only files under tmp_path (the machine's own
/etc/pip.conf and the venv's pip.conf are filtered out), so they do not depend on the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.sources.pypi import configured_cert, configured_index_url, pip_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the layouts below are pip's Linux ones")

MIRROR = "http://127.0.0.1:9/mirror/simple"
OTHER = "http://127.0.0.1:9/other/simple"
THIRD = "http://127.0.0.1:9/third/simple"


def pip_files() -> list[str]:
    """The files pip's Configuration loads, lowest precedence first (the oracle for `_pip_config_files`)."""
    from pip._internal.configuration import OVERRIDE_ORDER, Configuration

    configuration = Configuration(isolated=False)
    files = dict(configuration.iter_config_files())
    if files.get("env", [])[0:1] == [os.devnull]:
        return []
    return [f for kind in OVERRIDE_ORDER for f in files.get(kind, [])]


def pip_setting(name: str) -> str | None:
    """The old `_pip_setting`, through pip's own Configuration: the oracle for the values."""
    from pip._internal.configuration import Configuration

    configuration = Configuration(isolated=False)
    configuration.load()
    values = dict(configuration.items())
    for section in ("install", "global"):
        value = values.get(f"{section}.{name}")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh HOME with no XDG settings and no PIP_* variables; returns the tmp folder."""
    for key in list(os.environ):
        if key.startswith("PIP_") or key.startswith("XDG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return tmp_path


@pytest.fixture
def isolated(home, monkeypatch):
    """As `home`, and only configuration files under tmp_path are read."""
    real = pip_config._pip_config_files
    monkeypatch.setattr(pip_config, "_pip_config_files",
                        lambda: [f for f in real() if Path(f).is_relative_to(home)])
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(home / "xdg1") + os.pathsep + str(home / "xdg2"))
    return home


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- which files -----------------------------------------------------------------------------------

@pytest.mark.parametrize("setup", ["plain", "xdg", "xdg-blank", "env-file", "env-missing", "env-empty", "devnull"])
def test_the_files_are_pips_files_in_pips_order(home, monkeypatch, setup):
    if setup == "xdg":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
        monkeypatch.setenv("XDG_CONFIG_DIRS", f"{home / 'a'}{os.pathsep}~/b{os.pathsep}{home / 'c'}")
    elif setup == "xdg-blank":
        monkeypatch.setenv("XDG_CONFIG_HOME", "  ")
        monkeypatch.setenv("XDG_CONFIG_DIRS", " ")
    elif setup == "env-file":
        monkeypatch.setenv("PIP_CONFIG_FILE", str(write(home / "env.conf", "[global]\n")))
    elif setup == "env-missing":
        monkeypatch.setenv("PIP_CONFIG_FILE", str(home / "missing.conf"))
    elif setup == "env-empty":
        monkeypatch.setenv("PIP_CONFIG_FILE", "")
    elif setup == "devnull":
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert pip_config._pip_config_files() == pip_files()


def pip_config_debug() -> list[str]:
    """The files `pip config debug` lists, in the order pip applies them (its OVERRIDE_ORDER: global, user, site,
    env), as pip's own command line prints them; none when PIP_CONFIG_FILE is os.devnull (pip then loads none)."""
    said = subprocess.run([sys.executable, "-m", "pip", "config", "debug"], capture_output=True, text=True,
                          check=True).stdout
    files: dict[str, list[str]] = {}
    kind = None
    for line in said.splitlines():
        if not line.startswith(" "):
            kind = line.rstrip(":")
        elif line.startswith("  ") and not line.startswith("   ") and kind != "env_var":
            files.setdefault(kind, []).append(line.strip().rsplit(", exists: ", 1)[0])
    if files.get("env", [])[0:1] == [os.devnull]:
        return []
    return [f for kind in ("global", "user", "site", "env") for f in files.get(kind, [])]


@pytest.mark.parametrize("setup", ["plain", "xdg", "env-file", "devnull"])
def test_the_files_are_the_ones_pip_config_debug_lists(home, monkeypatch, setup):
    """pip's command line names the same files, in the same order: the XDG folders, /etc, the user's ~/.pip and
    XDG (or ~/.config) files, the environment's, and PIP_CONFIG_FILE's (an existing one skips the user's)."""
    if setup == "xdg":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
        monkeypatch.setenv("XDG_CONFIG_DIRS", f"{home / 'a'}{os.pathsep}{home / 'c'}")
    elif setup == "env-file":
        monkeypatch.setenv("PIP_CONFIG_FILE", str(write(home / "env.conf", "[global]\n")))
    elif setup == "devnull":
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    files = pip_config._pip_config_files()
    assert files == pip_config_debug()
    if setup == "plain":
        assert files == ["/etc/xdg/pip/pip.conf", "/etc/pip.conf", str(home / "home" / ".pip" / "pip.conf"),
                         str(home / "home" / ".config" / "pip" / "pip.conf"), os.path.join(sys.prefix, "pip.conf")]


def test_the_default_index_is_pips_constant_and_none_without_pip(home, monkeypatch):
    from pip._internal.models.index import PyPI

    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert pip_config.PIP_DEFAULT_INDEX == PyPI.simple_url
    assert configured_index_url() == PyPI.simple_url
    monkeypatch.setattr(pip_config, "_pip_installed", lambda: False)
    assert configured_index_url() is None  # as when pip could not be imported
    monkeypatch.setenv("PIP_INDEX_URL", MIRROR)
    assert configured_index_url() == MIRROR


def test_site_wide_files_include_etc_and_the_environments_file(home):
    files = pip_config._pip_config_files()
    assert files[:2] == ["/etc/xdg/pip/pip.conf", "/etc/pip.conf"]
    assert files[-1] == os.path.join(sys.prefix, "pip.conf")


# -- precedence ------------------------------------------------------------------------------------

def test_install_section_overrides_global_in_one_file(isolated, monkeypatch):
    config = write(isolated / "env.conf", f"[global]\nindex-url = {MIRROR}\n[install]\nindex-url = {OTHER}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == OTHER


def test_install_section_overrides_global_from_a_later_file(isolated, monkeypatch):
    # as pip applies sections: every `global` value first, then every `install` value
    write(isolated / "xdg1" / "pip" / "pip.conf", f"[install]\nindex-url = {OTHER}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(write(isolated / "env.conf", f"[global]\nindex-url = {MIRROR}\n")))
    assert configured_index_url() == OTHER


def test_an_empty_install_value_leaves_the_global_one(isolated, monkeypatch):
    config = write(isolated / "env.conf", f"[global]\nindex-url = {MIRROR}\n[install]\nindex-url =\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == MIRROR


def test_later_files_override_earlier_ones(isolated, monkeypatch):
    write(isolated / "xdg1" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\ncert = /nowhere\n")
    assert configured_index_url() == MIRROR
    write(isolated / "xdg2" / "pip" / "pip.conf", f"[global]\nindex-url = {OTHER}\n")
    assert configured_index_url() == OTHER  # the second XDG_CONFIG_DIRS folder over the first
    write(isolated / "home" / ".pip" / "pip.conf", f"[global]\nindex-url = {THIRD}\n")
    assert configured_index_url() == THIRD  # the user's legacy file over the site-wide ones
    write(isolated / "home" / ".config" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    assert configured_index_url() == MIRROR  # ~/.config/pip over ~/.pip
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated / "cfg"))
    assert configured_index_url() == THIRD  # XDG_CONFIG_HOME replaces ~/.config
    write(isolated / "cfg" / "pip" / "pip.conf", f"[global]\nindex-url = {OTHER}\n")
    assert configured_index_url() == OTHER
    monkeypatch.setenv("PIP_CONFIG_FILE", str(write(isolated / "env.conf", f"[global]\nindex-url = {MIRROR}\n")))
    assert configured_index_url() == MIRROR  # PIP_CONFIG_FILE last
    assert pip_config._pip_setting("cert") == "/nowhere"  # keys no later file sets stay


def test_an_existing_pip_config_file_skips_the_users_files(isolated, monkeypatch):
    write(isolated / "home" / ".config" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(isolated / "missing.conf"))
    assert configured_index_url() == MIRROR  # a missing one does not
    monkeypatch.setenv("PIP_CONFIG_FILE", str(write(isolated / "env.conf", "[global]\ntimeout = 3\n")))
    assert pip_config._pip_setting("index-url") is None


def test_environment_variables_override_files(isolated, monkeypatch):
    cert = write(isolated / "ca.pem", "not really a bundle\n")
    file_cert = write(isolated / "file-ca.pem", "nor this\n")
    config = write(isolated / "env.conf", f"[install]\nindex-url = {MIRROR}\ncert = {file_cert}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == MIRROR
    assert configured_cert() == str(file_cert)
    monkeypatch.setenv("PIP_INDEX_URL", f" {OTHER} ")
    monkeypatch.setenv("PIP_CERT", str(cert))
    assert configured_index_url() == OTHER
    assert configured_cert() == str(cert)
    monkeypatch.setenv("PIP_INDEX_URL", " ")  # blank: as unset
    assert configured_index_url() == MIRROR


def test_a_cert_that_is_no_file_is_not_used(isolated, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", str(write(isolated / "env.conf", f"[global]\ncert = {isolated}/none.pem\n")))
    assert configured_cert() is None


def test_devnull_disables_every_file(isolated, monkeypatch):
    from pip._internal.models.index import PyPI

    write(isolated / "home" / ".config" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    write(isolated / "xdg1" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    assert configured_index_url() == MIRROR
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert pip_config._pip_config_files() == []
    assert configured_index_url() == PyPI.simple_url


def test_option_names_are_normalised_as_pip_does(isolated, monkeypatch):
    config = write(isolated / "env.conf", f"[global]\nINDEX_URL = {MIRROR}\n[install]\n--Index-Url = {OTHER}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == OTHER


def test_a_default_section_applies_to_the_other_sections(isolated, monkeypatch):
    config = write(isolated / "env.conf", f"[DEFAULT]\nindex-url = {MIRROR}\n[global]\ntimeout = 3\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == MIRROR


# -- broken files ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    b"index-url = http://127.0.0.1:9/no-section\n",  # MissingSectionHeaderError
    b"[global]\nindex-url = http://127.0.0.1:9/a\nindex-url = http://127.0.0.1:9/b\n",  # DuplicateOptionError
    b"[global]\n[global]\n",  # DuplicateSectionError
    b"[global]\nindex-url = http://127.0.0.1:9/a\n!!! not an option line\n",  # ParsingError
    b"[global]\nindex-url = http://127.0.0.1:9/\xff\xfe\n",  # not in the locale's encoding (UTF-8 here)
])
def test_a_malformed_file_is_ignored_and_the_others_still_count(isolated, monkeypatch, text):
    # pip itself stops with "Configuration file could not be loaded"; the verifier reads on without that file
    write(isolated / "xdg1" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    broken = isolated / "env.conf"
    broken.write_bytes(text)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(broken))
    assert configured_index_url() == MIRROR
    assert configured_cert() is None


def test_an_unreadable_or_folder_config_is_skipped(isolated, monkeypatch):
    write(isolated / "xdg1" / "pip" / "pip.conf", f"[global]\nindex-url = {MIRROR}\n")
    (isolated / "xdg2" / "pip" / "pip.conf").mkdir(parents=True)  # a folder where the file would be
    assert configured_index_url() == MIRROR


# -- the same answers as pip -----------------------------------------------------------------------

SETUPS = {
    "nothing": {},
    "user-new": {"home/.config/pip/pip.conf": f"[global]\nindex-url = {MIRROR}\n"},
    "user-both": {"home/.pip/pip.conf": f"[global]\nindex-url = {MIRROR}\n[install]\ncert = /a\n",
                  "home/.config/pip/pip.conf": f"[global]\nindex-url = {OTHER}\ncert = /b\n"},
    "xdg-dirs": {"xdg1/pip/pip.conf": f"[install]\nindex_url = {MIRROR}\n",
                 "xdg2/pip/pip.conf": f"[global]\nindex-url = {OTHER}\n[install]\nindex-url =\n"},
    "env-file": {"home/.config/pip/pip.conf": f"[install]\nindex-url = {MIRROR}\n",
                 "env.conf": f"[global]\nindex-url = {OTHER}\n\n[freeze]\nindex-url = {THIRD}\n"},
    "defaults": {"env.conf": f"[DEFAULT]\ncert = /c\n[install]\n--INDEX-URL = {THIRD}\n  continued\n"},
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_settings_are_the_ones_pip_reads(home, monkeypatch, setup):
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(home / "xdg1") + os.pathsep + str(home / "xdg2"))
    for name, text in SETUPS[setup].items():
        write(home / name, text)
    if (home / "env.conf").exists():
        monkeypatch.setenv("PIP_CONFIG_FILE", str(home / "env.conf"))
    assert pip_config._pip_config_files() == pip_files()
    for name in ("index-url", "cert", "timeout"):
        assert pip_config._pip_setting(name) == pip_setting(name), name


def test_the_default_index_is_pips_and_pips_configuration_module_is_not_imported():
    code = ("import os, sys; os.environ['PIP_CONFIG_FILE'] = os.devnull; os.environ.pop('PIP_INDEX_URL', None)\n"
            "from verifier.sources.pypi import configured_index_url, configured_cert\n"
            "url = configured_index_url(); configured_cert()\n"
            "from pip._internal.models.index import PyPI\n"
            "assert url == PyPI.simple_url, url\n"
            "assert 'pip._internal.configuration' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)


def test_nothing_of_pip_is_imported():
    code = ("import os, sys; os.environ['PIP_CONFIG_FILE'] = os.devnull; os.environ.pop('PIP_INDEX_URL', None)\n"
            "from verifier.sources.pypi import configured_index_url, configured_cert\n"
            "url = configured_index_url(); configured_cert()\n"
            "assert url == 'https://pypi.org/simple', url\n"
            "imported = [m for m in sys.modules if m == 'pip' or m.startswith('pip.')]\n"
            "assert not imported, imported\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)
