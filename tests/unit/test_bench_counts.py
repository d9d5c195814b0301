"""The benchmark harness measures the checkout it names, and reads callgrind's dumps right.

A comparison that serves the wrong tree reads as "no change" and hides every real one: until
2026-12-05 ``bench/compare.py`` served this checkout on every side. These pin the parts that say
which tree ran and which counts belong to it; the served runs themselves are in
``tests/served/test_bench_smoke.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bench import servers
from bench.compare import in_order
from bench.instructions import callgrind_total
from bench.served_instructions import newest_dump

_DUMP = "events: Ir\nfn=main\n1 10\ntotals: {total}\n"


def test_the_bytecode_prefix_names_each_checkout_a_host_was_imported_from(tmp_path: Path) -> None:
    prefix = tmp_path / "pyc"
    for tree in ("srv/a", "srv/b"):
        folder = prefix / tree / "host"
        folder.mkdir(parents=True)
        (folder / "__init__.cpython-311.pyc").write_bytes(b"")
    (prefix / "srv/a/host/web").mkdir()
    (prefix / "srv/a/host/web/__init__.cpython-311.pyc").write_bytes(b"")
    (prefix / "venv/site").mkdir(parents=True)
    (prefix / "venv/site/other.cpython-311.pyc").write_bytes(b"")
    assert servers.imported_from(prefix) == {Path("/srv/a").resolve(), Path("/srv/b").resolve()}
    assert servers.imported_from(tmp_path / "nothing") == set()


def test_a_host_is_served_with_its_own_checkout_and_none_of_the_callers_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_SPECS", "/elsewhere/specs")
    monkeypatch.setenv("HOST_AUDIT_STORE", "/elsewhere/audit.db")
    monkeypatch.setenv("SDK_BENCH_CONFIG", "default")
    env = servers.host_env(tmp_path / "tree", tmp_path / "data", "k" * 64)
    assert env["PYTHONPATH"] == str(tmp_path / "tree")
    assert env["HOST_SPECS"] == str(tmp_path / "tree" / "specs")
    assert env["HOST_STORE"] == f"sqlite:///{tmp_path / 'data' / 'store.db'}"
    assert "HOST_AUDIT_STORE" not in env and "SDK_BENCH_CONFIG" not in env


def test_a_server_starts_in_the_folder_it_is_given(tmp_path: Path) -> None:
    # NOTE: gunicorn's first --chdir is the folder it starts in: the tree served must be it.
    log = tmp_path / "log"
    cmd = ["sh", "-c", "pwd; sleep 5"]
    with servers.Server("pwd", cmd, 0, {"PATH": "/usr/bin:/bin"}, None, log, tmp_path):
        deadline = time.monotonic() + 5
        while not log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert log.read_text().strip() == str(tmp_path)


def test_the_newest_complete_dump_of_the_process_is_read(tmp_path: Path) -> None:
    (tmp_path / "cg.41.1").write_text(_DUMP.format(total=500))
    (tmp_path / "cg.41.10").write_text(_DUMP.format(total=900))
    (tmp_path / "cg.41.2").write_text(_DUMP.format(total=700))
    (tmp_path / "cg.42.11").write_text(_DUMP.format(total=1))  # another process's
    (tmp_path / "cg.41").write_text(_DUMP.format(total=2))  # the final dump at exit
    assert callgrind_total(newest_dump(tmp_path, 41).read_text()) == 900


def test_a_dump_still_being_written_is_waited_for(tmp_path: Path) -> None:
    dump = tmp_path / "cg.7.3"
    dump.write_text("events: Ir\nfn=main\n")

    def finish() -> None:
        time.sleep(0.3)
        dump.write_text(_DUMP.format(total=1234))

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        assert callgrind_total(newest_dump(tmp_path, 7).read_text()) == 1234
    finally:
        writer.join()


def test_no_dump_is_an_error_that_names_the_process(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="process 9 in"):
        newest_dump(tmp_path, 9, wait_s=0.1)


def test_compare_measures_plain_calls_before_exchanges_however_asked() -> None:
    # NOTE: each exchange adds to the example's outbox, which list_outbox returns whole.
    assert in_order("exchange,plain") == ["plain", "exchange"]
    assert in_order("exchange") == ["exchange"]
    assert in_order("plain,,plain") == ["plain"]
    assert in_order("plain,exchanges") == []
    assert in_order("") == []
