"""The metrics' files of a real ``host serve`` with two workers: private, few, safe on a full disk.

As in the attack: the files were 0644, every worker that ever ran left its files behind across
reloads, and on a full filesystem the workers died of SIGBUS (their memory-mapped files grew
into pages the disk could not back), dropping requests, while ``/readyz`` said ready. Now the
folder is 0700 and its files 0600; an exited worker's counts are folded into one archive per
type and its files removed, the sums unchanged; and on a full disk metrics stop (logged once),
every call is answered (an act refused with 503, since its record cannot be kept before it starts),
and ``/readyz`` answers 503 with the reason.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.modern import Mcp, call
from support.servers import Server, host_serve
from support.waiting import wait_until
from support.wire import Reply, Served
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served

_CLOSE = {"name": "close_ticket", "arguments": {"id": "T-1"}}
_YES = {"close": {"action": "accept", "content": {"confirm": True}}}


def _rounds(server: Server) -> float:
    """``host_tool_rounds_total`` of list_outbox, as /metrics sums it."""
    conn = server.connect()
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200, text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "host_tool_rounds_total" and sample.labels["tool"] == "list_outbox"
    )


def _listed(server: Server) -> int:
    return sum(1 for line in server.calls() if line["tool"] == "list_outbox")


def _two(server: Server) -> bool:
    return len(_workers(server)) == 2


def _workers(server: Server) -> set[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return {int(pid) for pid in children}


def _call_both(server: Server) -> None:
    for conn in connections_on_two_workers(server):
        call(conn, "list_outbox", {})
        # NOTE: closed, so a worker told to stop is not kept until its keep-alive ends.
        conn.close()


def _close_t1(conn: http.client.HTTPConnection) -> Reply:
    """Both rounds of ``close_ticket`` T-1, the act confirmed: the reply to the second."""
    asked = call(conn, **_CLOSE)
    assert asked["resultType"] == "input_required", asked
    params = {**_CLOSE, "inputResponses": _YES, "requestState": asked["requestState"]}
    return Mcp(Served(conn)).request("tools/call", params)


def _files(folder: Path) -> dict[str, int]:
    return {f.name: stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()}


def test_files_are_private_and_only_live_workers_have_any(tmp_path: Path) -> None:
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "4") as server:
        folder = tmp_path / "host" / "metrics" / str(server.pid)
        _call_both(server)
        for reload in range(3):
            before = _workers(server)
            os.kill(server.pid, signal.SIGHUP)
            assert wait_until(lambda n=reload: len(server.log_lines("specs_reloaded")) > n)
            assert wait_until(
                lambda b=before: not (_workers(server) & b) and len(_workers(server)) == 2
            )
            _call_both(server)
        for how in (signal.SIGTERM, signal.SIGKILL):
            gone = min(_workers(server))
            os.kill(gone, how)
            assert wait_until(
                lambda g=gone: g not in _workers(server) and len(_workers(server)) == 2
            )
            _call_both(server)

        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        files = _files(folder)
        assert files and set(files.values()) == {0o600}, files
        live = {str(pid) for pid in _workers(server)}
        owners = {name.rsplit("_", 1)[1].removesuffix(".db") for name in files}
        assert owners <= live | {"archive"}, (owners, live)
        assert wait_until(lambda: _rounds(server) == _listed(server), timeout_s=10)
        # Five generations of workers, yet at most two sets of files and one archive per type.
        assert len(files) <= 3 * 2 + 2


@contextlib.contextmanager
def _tiny_disk(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> None:
    # NOTE: unbuffered, so the write that finds the disk full raises here, not at close.
    with (disk / "filler").open("ab", buffering=0) as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"\0" * 4096)


def test_a_full_disk_stops_metrics_not_workers(tmp_path: Path) -> None:
    # A real full filesystem: a tmpfs of 4 MiB holding the data directory, metrics and all.
    with _tiny_disk(tmp_path / "disk", "4m") as disk:
        data = disk / "data"
        with host_serve(tmp_path, "host", "--workers", "2", "--threads", "4",
                        HOST_DATA_DIR=str(data)) as server:  # fmt: skip
            _call_both(server)
            _fill(disk)
            # New workers (their files are new) on the full disk, and new label sets on old ones.
            gone = min(_workers(server))
            os.kill(gone, signal.SIGTERM)
            assert wait_until(lambda: gone not in _workers(server) and len(_workers(server)) == 2)
            workers = _workers(server)
            answered = 0
            for _ in range(20):
                conn = server.connect()
                assert call(conn, "service_status", {})["structuredContent"] is not None
                call(conn, "close_ticket", {"id": "T-1"})  # asks: new label sets
                answered += 1
            assert answered == 20
            assert _workers(server) == workers  # none died
            # NOTE: full again: retiring the killed worker removed its files, which freed space.
            _fill(disk)
            conn = server.connect()
            # NOTE: an act needs its claim and record kept before it starts: on the full disk
            # it is refused (503, nothing done), answered, never dropped; a read-only tool is
            # still served. The first few may still fit in the slack of the store's last page.
            statuses = []
            for _ in range(40):
                _fill(disk)  # again each time: the host's own clean-up may free space
                reply = _close_t1(conn)
                statuses.append(reply.status_code)
                if reply.status_code == 503:
                    assert "store" in reply.json["error"]["message"], reply.text
            assert set(statuses) <= {200, 503} and 503 in statuses, statuses
            assert call(conn, "list_outbox", {})["structuredContent"] is not None
            assert call(conn, "service_status", {})["structuredContent"] is not None
            # NOTE: asked again, the disk filled before each ask, until not ready (a few tries):
            # the calls just made still write in the background (the audit writer's batch, a
            # checkpoint), which can free a page between a fill and the probe: a full .ci/run
            # once found room there and answered ready.
            for _ in range(10):
                _fill(disk)
                conn.request("GET", "/readyz")
                response = conn.getresponse()
                body = response.read().decode()
                if response.status == 503:
                    break
            assert response.status == 503, body
            reason = json.loads(body)["reason"]
            assert "the metrics files cannot be written" in reason or (
                "the metrics folder" in reason and "cannot be written" in reason
            ), reason
            degraded = server.log_lines("metrics_degraded")
            assert degraded and len({line["pid"] for line in degraded}) == len(degraded)


def test_ready_names_the_metrics_folder_that_takes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import falcon
    import falcon.testing

    from host.observers.metrics import MULTIPROC_DIR, MetricsObserver
    from host.web.probes import ReadyResource

    class Healthy:
        def health(self) -> None:
            return None

    metrics = MetricsObserver()
    app = falcon.App()
    app.add_route("/readyz", ReadyResource(Healthy(), 1, metrics))  # type: ignore[arg-type]
    client = falcon.testing.TestClient(app)
    monkeypatch.setenv(MULTIPROC_DIR, str(tmp_path))
    assert client.simulate_get("/readyz").status_code == 200
    monkeypatch.setenv(MULTIPROC_DIR, str(tmp_path / "gone"))
    refused = client.simulate_get("/readyz")
    assert refused.status_code == 503
    assert f"the metrics folder {tmp_path / 'gone'} cannot be written" in refused.json["reason"]
    monkeypatch.setenv(MULTIPROC_DIR, str(tmp_path))
    metrics.broken = "the metrics files cannot be written: No space left on device"
    assert client.simulate_get("/readyz").json["reason"] == metrics.broken
