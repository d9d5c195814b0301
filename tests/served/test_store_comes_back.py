"""A store that refused writes for a while, then takes them again: every worker recovers by itself.

``host serve`` with two workers on SQLite, then on Redis; the store's files are made immutable
(``chattr +i``, as root: file modes do not stop root; Redis then refuses writes, and even PING,
with MISCONF), calls are refused meanwhile, and a worker dies and is replaced during the outage:
its replacement boots (not ready) instead of stopping the host. Then the files are freed and ten
final rounds in a row must all succeed, on whichever worker they land, with no restart.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import noting
from support.modern import Mcp, call
from support.noting import HANDLERS, YES
from support.redis import RedisServer
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import Served
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

SPECS = noting.specs("back")


def immutable(paths: list[Path], on: bool) -> None:
    flag = "+i" if on else "-i"
    subprocess.run(["chattr", flag, *map(str, paths)], check=True, capture_output=True)


@pytest.fixture(params=["sqlite", "redis"])
def serving(
    request: pytest.FixtureRequest, tmp_path: Path, redis_server: Callable[..., RedisServer]
) -> Iterator[tuple[Server, Path]]:
    """The served host, and the folder its store keeps its files in."""
    if shutil.which("chattr") is None:
        pytest.skip("needs chattr")
    for name, file, text in (("specs", "note.yaml", SPECS), ("handlers", "n.py", HANDLERS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(text)
    env, folder = {}, tmp_path / "host"
    if request.param == "redis":
        # NOTE: everysec: with "always" an AOF write error makes Redis exit, not refuse writes.
        redis = redis_server("--appendonly", "yes", "--appendfsync", "everysec")
        env, folder = {"HOST_STORE": redis.url}, redis.folder
    specs = tmp_path / "specs"
    with host_serve(tmp_path, "host", "--workers", "2", specs=specs, **env) as server:
        yield server, folder


def store_files(folder: Path) -> list[Path]:
    """The store's folder and files, but SQLite's -shm file (see below) and Redis's log."""
    # NOTE: SQLite maps its -shm file (and the metrics theirs): an immutable mapping kills the
    # process (SIGBUS), which is not the failure under test.
    if (folder / "store.db").exists():
        return [folder, *(f for f in sorted(folder.glob("store.db*")) if f.suffix != ".db-shm")]
    return [folder, *(f for f in sorted(folder.rglob("*")) if f.suffix != ".log")]


def workers(server: Server) -> list[int]:
    """The pids of the master's workers now."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text()
    return [int(pid) for pid in children.split()]


def replace_a_worker(server: Server) -> None:
    """Kill a worker, as the kernel's OOM killer would, and wait for its replacement to boot."""
    before = workers(server)
    os.kill(before[0], signal.SIGKILL)
    assert wait_until(lambda: len(set(workers(server)) - set(before)) == 1, 10), workers(server)
    time.sleep(3)  # the new worker's boot, which used to stop the whole host


def alive(server: Server) -> bool:
    """Whether the master still runs (not a zombie) and the host answers ``/healthz``."""
    stat = Path(f"/proc/{server.pid}/stat")
    if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
        return False
    conn = server.connect()
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def ready(server: Server) -> int:
    conn = server.connect()
    conn.request("GET", "/readyz")
    response = conn.getresponse()
    response.read()
    return response.status


def final_round(server: Server, word: str) -> tuple[int, dict[str, Any]]:
    """A whole call (first and final round) on fresh connections; the final's status and body."""
    first = call(server.connect(), "note", {"word": word})
    client = Mcp(Served(server.connect()))
    params = {"name": "note", "arguments": {"word": word}, "inputResponses": YES,
              "requestState": first["requestState"]}  # fmt: skip
    response = client.request("tools/call", params)
    return response.status_code, response.json


@pytest.fixture
def on_a_small_disk(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The served host on SQLite, its data folder on a 4 MiB tmpfs of its own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("needs to mount a tmpfs (root)")
    try:
        for name, file, text in (("specs", "note.yaml", SPECS), ("handlers", "n.py", HANDLERS)):
            (tmp_path / name).mkdir()
            (tmp_path / name / file).write_text(text)
        specs = tmp_path / "specs"
        with host_serve(
            tmp_path, "host", "--workers", "2", specs=specs, HOST_DATA_DIR=str(disk)
        ) as server:
            yield server, disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_workers_recover_by_themselves_once_a_full_disk_has_room_again(
    on_a_small_disk: tuple[Server, Path],
) -> None:
    server, disk = on_a_small_disk
    assert final_round(server, "before")[0] == 200
    filler = disk / "filler"
    # NOTE: unbuffered, so the write that finds the disk full is the only one that fails: a
    # buffered file keeps the bytes it could not write and raises again when it is closed.
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 65536)
        except OSError:
            pass  # full
    words = [f"during-{n}-" + "x" * 20000 for n in range(4)]
    try:
        refused = [final_round(server, word)[0] for word in words]
        assert 503 in refused, refused
    finally:
        filler.unlink()
    time.sleep(2)  # "within seconds"

    rounds = [final_round(server, f"after-{n}") for n in range(10)]

    assert [status for status, _ in rounds] == [200] * 10, rounds

    # No act ran without its audit record: each final round that acted left its own (held while
    # the disk was full, written once it had room), and each refused one ran nothing.
    def acted_records() -> list[str]:
        with sqlite3.connect(disk / "store.db") as db:
            query = "SELECT body FROM store_audit_chain WHERE kind = 'call' ORDER BY seq"
            return [body for (body,) in db.execute(query)]

    # NOTE: a record keeps a long argument bounded (its hash, size and first bytes), so each
    # call is found by the word's start: a whole 20 KB word is never in a record.
    marks = [w[: w.index("-", len("during-")) + 1] for w in words]
    acted = [m for m, status in zip(marks, refused, strict=True) if status == 200]
    assert wait_until(lambda: all(any(m in b for b in acted_records()) for m in acted), 15)
    bodies = acted_records()
    for mark, status in zip(marks, refused, strict=True):
        assert any(mark in body for body in bodies) == (status == 200), (mark, status)
    verified = subprocess.run(
        [sys.executable, "-m", "host", "audit", "verify", "--data-dir", str(disk)],
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr
    assert "chain intact from seq 1 to" in verified.stdout
    # A metrics file the full disk could not hold was removed, not left empty: a scrape, and
    # the master folding in an exited worker, would fail on an empty one.
    assert [p.name for p in (disk / "metrics").rglob("*.db") if p.stat().st_size == 0] == []


def test_workers_recover_by_themselves_once_the_store_takes_writes_again(
    serving: tuple[Server, Path],
) -> None:
    server, folder = serving
    assert final_round(server, "before")[0] == 200
    files = store_files(folder)
    try:
        immutable(files, True)
    except subprocess.CalledProcessError:
        pytest.skip("chattr does not work on this filesystem")
    try:
        refused = [final_round(server, f"during-{n}")[0] for n in range(4)]
        time.sleep(6)  # past a lease: the workers' lease keepers and sweeps meet the refusals too
        refused += [final_round(server, f"later-{n}")[0] for n in range(4)]
        assert 503 in refused, refused
        replace_a_worker(server)
        assert alive(server), "the host stopped"
        assert len(workers(server)) == 2
        assert {ready(server) for _ in range(4)} == {503}
    finally:
        immutable(files, False)
    time.sleep(2)  # "within seconds"

    rounds = [final_round(server, f"after-{n}") for n in range(10)]

    assert [status for status, _ in rounds] == [200] * 10, rounds
    assert [body["result"]["structuredContent"] for _, body in rounds] == [
        {"noted": f"after-{n}"} for n in range(10)
    ]
    assert wait_until(lambda: {ready(server) for _ in range(4)} == {200}, 10)


def test_a_worker_replaced_while_redis_is_down_leaves_the_host_running(
    tmp_path: Path, redis_server: Callable[..., RedisServer]
) -> None:
    for name, file, text in (("specs", "note.yaml", SPECS), ("handlers", "n.py", HANDLERS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(text)
    redis = redis_server("--appendonly", "yes", "--appendfsync", "always")
    specs = tmp_path / "specs"
    with host_serve(
        tmp_path, "host", "--workers", "2", specs=specs, HOST_STORE=redis.url
    ) as server:
        assert final_round(server, "before")[0] == 200
        # NOTE: both workers serving before the outage: under load the second one can boot
        # late, find Redis gone and leave no worker to answer /healthz.
        for conn in connections_on_two_workers(server, "note", {"word": "up"}):
            conn.close()
        redis.stop()
        try:
            before = workers(server)
            os.kill(before[0], signal.SIGKILL)
            # NOTE: waited for, not slept: under load a replacement takes seconds to boot.
            assert wait_until(lambda: len(set(workers(server)) - set(before)) == 1, 30)
            replacement = (set(workers(server)) - set(before)).pop()
            time.sleep(3)  # the replacement lives on through the outage, serving probes
            assert alive(server), "the host stopped"
            assert replacement in workers(server), "the replacement died of the outage"
            assert {ready(server) for _ in range(4)} == {503}
            assert final_round(server, "during")[0] == 503
        finally:
            redis.start()
        assert "cannot open the store" not in server.log.read_text()
        assert wait_until(lambda: len(workers(server)) == 2, 10)
        time.sleep(2)  # "within seconds"

        rounds = [final_round(server, f"after-{n}")[0] for n in range(10)]

        assert rounds == [200] * 10, rounds
        assert wait_until(lambda: {ready(server) for _ in range(4)} == {200}, 10)
