"""``host stdio`` serves approve steps and URL asks only beside a host that shows them to people.

A stdio host has no pages: an approval request it made waited for nobody and ended pending. Now
it refuses such specs at start unless ``HOST_PUBLIC_URL`` names a running host that serves the
approvals pages on the same store (it writes a probe into its store and asks that host for it),
and the message says how to fix it. One served host (two workers, SQLite) for the module.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.errors import SettingsError
from host.stdio import open_endpoint
from support.approvals import SPECS, make_tokens
from support.servers import Server, clean_env, free_port, host_serve

pytestmark = pytest.mark.served

HANDLERS = SPECS.parent / "handlers"
FIX = "start `host serve` with auth settings on the same store"


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("stdio-inbox")
    path, _ = make_tokens(folder)
    with host_serve(folder, "host", "--workers", "2", specs=SPECS,
                    HOST_AUTH_TOKENS=str(path)) as server:  # fmt: skip
        yield server


def _open(monkeypatch: pytest.MonkeyPatch, data_dir: Path, public_url: str | None) -> None:
    monkeypatch.setenv("HOST_DATA_DIR", str(data_dir))
    if public_url is None:
        monkeypatch.delenv("HOST_PUBLIC_URL", raising=False)
    else:
        monkeypatch.setenv("HOST_PUBLIC_URL", public_url)
    open_endpoint(SPECS, HANDLERS)


def test_without_a_public_url_host_stdio_refuses_and_says_how(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "stdio", "--specs", str(SPECS), "--handlers",
         str(HANDLERS)],
        input=b"", capture_output=True, text=False, timeout=60, check=False,
        env=clean_env(HOST_DATA_DIR=str(tmp_path / "data")),
    )  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 1 and done.stdout == b"", err
    assert "delete_database, purge_cache, restart_service, rollback ask people" in err
    assert FIX in err and "HOST_PUBLIC_URL" in err and "Traceback" not in err


def test_beside_a_host_serving_the_pages_on_the_same_store_host_stdio_serves(
    inbox: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(monkeypatch, inbox.log.parent / "host", inbox.url)


def test_a_host_on_another_store_is_refused(
    inbox: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SettingsError) as refused:
        _open(monkeypatch, tmp_path / "elsewhere", inbox.url)
    assert f"the host at {inbox.url} serves its pages on another store" in refused.value.message
    assert FIX in refused.value.message and refused.value.variable == "HOST_PUBLIC_URL"


def test_a_public_url_where_nothing_runs_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SettingsError) as refused:
        _open(monkeypatch, tmp_path / "data", url)
    assert f"HOST_PUBLIC_URL ({url}) cannot be reached" in refused.value.message
    assert FIX in refused.value.message
