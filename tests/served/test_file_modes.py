"""The tokens file is trusted only when nobody but the serving user (or root) can change it.

As in the attack on ``host serve``: a tokens file owned by another user (0644, in a 1777 folder)
was accepted, so that user decided who got in. Now ``host serve`` refuses to start, in one line
that names the file, the owner and mode found, and the command that fixes it; so does every
other reader of the file. As ssh's StrictModes, every folder up to ``/`` counts, links resolved.
The tests run as root, so they can hand a file or folder to uid 12345.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from host.auth.tokenfile import create_token, read_tokens
from host.errors import AuthSettingsError
from support.paths import ROOT
from support.servers import clean_env

pytestmark = pytest.mark.served

STRANGER = 12345

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def _serve(tmp_path: Path, tokens: Path) -> subprocess.CompletedProcess[str]:
    """``host serve`` with ``tokens`` as HOST_AUTH_TOKENS; expected to refuse at once."""
    return subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs"),
         "--bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env=clean_env(HOST_DATA_DIR=str(tmp_path / "data"), HOST_AUTH_TOKENS=str(tokens),
                      HOST_SECRET="s" * 32),
    )  # fmt: skip


def _refused(tmp_path: Path, tokens: Path, *words: str) -> None:
    done = _serve(tmp_path, tokens)
    assert done.returncode == 1, done
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("host: not serving: ")]
    assert str(tokens) in line
    for word in words:
        assert word in line, line
    assert "Traceback" not in done.stderr
    with pytest.raises(AuthSettingsError):
        read_tokens(tokens)


def _tokens(folder: Path) -> Path:
    path = folder / "tokens"
    create_token(path, "ci", [])
    return path


@needs_root
def test_a_tokens_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    tokens = _tokens(tmp_path)
    os.chown(tokens, STRANGER, STRANGER)
    _refused(tmp_path, tokens, f"owned by uid {STRANGER}", "mode 0600", f"chown root {tokens}")


@needs_root
def test_the_attack_a_strangers_0644_file_in_a_1777_folder_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    tokens = _tokens(shared)
    tokens.chmod(0o644)
    os.chown(tokens, STRANGER, STRANGER)
    _refused(tmp_path, tokens, f"owned by uid {STRANGER}", "mode 0644")


def test_a_tokens_file_writable_by_others_is_refused_at_start(tmp_path: Path) -> None:
    tokens = _tokens(tmp_path)
    tokens.chmod(0o666)
    _refused(tmp_path, tokens, "writable by group or others", "mode 0666", f"chmod 600 {tokens}")


def test_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    tokens = _tokens(open_folder)
    open_folder.chmod(0o777)
    _refused(tmp_path, tokens, f"in {open_folder}", "mode 0777", f"chmod go-w {open_folder}")


@needs_root
def test_a_sticky_folder_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    tokens = _tokens(shared)
    shared.chmod(0o1777)
    os.chown(shared, STRANGER, STRANGER)
    _refused(tmp_path, tokens, "a shared folder (mode 1777)", f"owned by uid {STRANGER}")


def test_a_file_of_ones_own_in_a_sticky_folder_of_root_or_ones_own_is_accepted(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    tokens = _tokens(shared)
    shared.chmod(0o1777)
    tokens.chmod(0o644)  # readable is fine: it holds digests only
    assert [r.name for r in read_tokens(tokens)] == ["ci"]


def test_no_tokens_file_yet_in_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(AuthSettingsError, match="chmod go-w"):
        create_token(open_folder / "tokens", "ci", [])


def test_a_folder_above_the_tokens_folder_that_others_may_write_is_refused(
    tmp_path: Path,
) -> None:
    # as ssh's StrictModes: every folder up to / counts, not only the file's own
    upper = tmp_path / "upper"
    (upper / "deep" / "er").mkdir(parents=True)
    tokens = _tokens(upper / "deep" / "er")
    upper.chmod(0o775)
    _refused(tmp_path, tokens, f"inside {upper}", "mode 0775", f"chmod go-w {upper}")


@needs_root
def test_a_folder_above_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    (upper / "deep").mkdir(parents=True)
    tokens = _tokens(upper / "deep")
    os.chown(upper, STRANGER, STRANGER)  # mode 0755: its owner alone may write it, enough
    _refused(tmp_path, tokens, f"inside {upper}", f"owned by uid {STRANGER}", f"chown root {upper}")


@needs_root
def test_the_tokens_folder_owned_by_another_user_is_refused_even_if_closed(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    tokens = _tokens(theirs)
    os.chown(theirs, STRANGER, STRANGER)
    _refused(tmp_path, tokens, f"in {theirs}", f"owned by uid {STRANGER}")


def test_a_link_to_a_tokens_file_in_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    real = _tokens(open_folder)
    open_folder.chmod(0o777)
    safe = tmp_path / "safe"
    safe.mkdir(mode=0o700)
    link = safe / "tokens"
    link.symlink_to(real)
    _refused(tmp_path, link, f"inside {open_folder}", f"chmod go-w {open_folder}")


def test_ones_own_folder_inside_a_sticky_shared_folder_is_accepted(tmp_path: Path) -> None:
    # like a home under /tmp: others may write the sticky folder, but not rename what is ours
    shared = tmp_path / "shared"
    (shared / "mine" / "deeper").mkdir(parents=True)
    shared.chmod(0o1777)
    (shared / "mine").chmod(0o700)
    tokens = _tokens(shared / "mine" / "deeper")
    assert [r.name for r in read_tokens(tokens)] == ["ci"]
