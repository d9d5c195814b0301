"""``host audit`` reads the store ``host serve`` serves, says which, and follows it.

After an incident ``host audit`` in the host's folder printed an old SQLite trail while the host
served Redis, with no hint. It now finds the store with the function ``host serve`` uses, names
it on stderr, and says when the data directory's host serves another one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from host.cli import main
from host.serve.start import ServeOptions, worker_env
from host.store import open_store
from host.store.records import ENDED, AuditRecord
from host.store.where import locate_store, note_serving


@pytest.mark.parametrize(
    ("given", "env"),
    [
        ((None, None), {}),
        ((None, None), {"HOST_STORE": "redis://127.0.0.1:1/0"}),
        (("redis://127.0.0.1:2/0", None), {"HOST_STORE": "redis://127.0.0.1:1/0"}),
        ((None, "elsewhere"), {"HOST_DATA_DIR": "ignored"}),
    ],
)
def test_host_audit_finds_the_store_host_serve_serves(
    given: tuple[str | None, str | None], env: dict[str, str], tmp_path: Path
) -> None:
    store, folder = given
    data_dir = tmp_path / folder if folder else None
    options = ServeOptions(specs=tmp_path, store=store, data_dir=data_dir)
    served = worker_env(options, {"HOST_SECRET": "x" * 32, "HOST_AUDIT_SIGNING_KEY": "k", **env})
    assert locate_store(store, data_dir, env).url == served["HOST_STORE"]


def test_it_names_the_store_it_read_and_the_one_the_host_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    open_store(f"sqlite:///{data / 'store.db'}").close()
    assert main(["audit", "--data-dir", str(data)]) == 0
    err = capsys.readouterr().err
    assert (
        f"reading the store sqlite:///{data.resolve() / 'store.db'} (the data directory's)" in err
    )

    note_serving(locate_store("redis://user:pw@127.0.0.1:6390/0", data, {}))
    assert main(["audit", "--data-dir", str(data)]) == 0
    err = capsys.readouterr().err
    assert f"the host of {data.resolve()} serves redis://user:***@127.0.0.1:6390/0" in err
    assert "pw" not in err


def test_follow_prints_records_as_they_are_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = open_store(f"sqlite:///{data / 'store.db'}")
    store.write_audits([(AuditRecord("old", time.time(), "a", "t", "acted"), ENDED)], keep_s=60)
    follower = subprocess.Popen(
        [sys.executable, "-m", "host", "audit", "--follow", "--format", "json",
         "--data-dir", str(data)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    guard = threading.Timer(30, follower.kill)  # NOTE: a readline never blocks the suite for good
    guard.start()
    try:
        assert follower.stdout is not None
        assert json.loads(follower.stdout.readline())["id"] == "old"
        for n in range(2):
            record = AuditRecord(f"new-{n}", time.time(), "bob", "t", "acted")
            store.write_audits([(record, ENDED)], keep_s=60)
        lines = [json.loads(follower.stdout.readline()) for _ in range(2)]
    finally:
        guard.cancel()
        follower.kill()
        follower.wait()
        store.close()
    assert [(r["id"], r["seq"]) for r in lines] == [("new-0", 2), ("new-1", 3)]
