"""``host serve`` for real: gunicorn workers, two instances on one Redis, at most one act.

Each server here is the real command line (``host serve``) on a free 127.0.0.1 port, stopped at
the end of its test. Rounds of one call are sent on different connections that are known to be
held by different worker processes (found from the ``pid`` of the JSON log lines), so "the second
round landed on another worker" is a fact the test checks, not a hope.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from host.assembly import ensure_secret
from host.serve.start import ServeOptions, gunicorn_argv, worker_env
from support.modern import call
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve
from support.workers import connections_on_two_workers

pytestmark = pytest.mark.served


def final_round(first: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    (key,) = first["inputRequests"]
    return {
        "inputResponses": {key: {"action": "accept", "content": content}},
        "requestState": first["requestState"],
    }


def outbox(conn: http.client.HTTPConnection) -> list[str]:
    emails: list[str] = call(conn, "list_outbox", {})["structuredContent"]["emails"]
    return emails


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("serve")
    with host_serve(tmp_path, "host", "--workers", "2", "--threads", "8") as server:
        yield server


def test_a_question_asked_by_one_worker_is_answered_by_another(two_workers: Server) -> None:
    a, b = connections_on_two_workers(two_workers)
    first = call(a, "close_ticket", {"id": "T-1"})
    assert first["resultType"] == "input_required"
    done = call(b, "close_ticket", {"id": "T-1"}, **final_round(first, {"confirm": True}))
    assert done["resultType"] == "complete"
    assert done["structuredContent"] == {"id": "T-1", "closed": True}
    rounds = [c for c in two_workers.calls() if c["tool"] == "close_ticket"]
    assert [c["round"] for c in rounds[-2:]] == [1, 2]
    assert rounds[-2]["pid"] != rounds[-1]["pid"]
    assert outbox(a) == ['To the customer of T-1: "Cannot log in" is resolved.']


def test_fifty_concurrent_final_rounds_act_once(two_workers: Server) -> None:
    conn = two_workers.connect()
    seen = len(two_workers.calls())
    first = call(conn, "close_ticket", {"id": "T-2"})
    final = final_round(first, {"confirm": True})

    def retry(_: int) -> dict[str, Any]:
        mine = two_workers.connect()
        try:
            return call(mine, "close_ticket", {"id": "T-2"}, **final)
        finally:
            mine.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(retry, range(50)))
    assert all(r["structuredContent"] == {"id": "T-2", "closed": True} for r in results)
    finals = [c for c in two_workers.calls()[seen:] if c["round"] == 2]
    assert len(finals) == 50
    assert len({c["pid"] for c in finals}) == 2, "the copies should reach both workers"
    assert sum(1 for c in finals if c["acted"]) == 1
    assert all(c["outcome"] == "complete" for c in finals)
    about_t2 = [e for e in outbox(conn) if "T-2" in e]
    assert about_t2 == ['To the customer of T-2: "Invoice total is wrong" is resolved.']


def test_two_instances_share_a_secret_and_a_redis_store(tmp_path: Path, redis_url: str) -> None:
    shared = {
        "HOST_SECRET": "one-secret-for-every-instance-0123456789abcdef0123456789",
        "HOST_STORE": redis_url,
        # Both instances act on one database, as two machines would on a shared one.
        "HELPDESK_DB": str(tmp_path / "helpdesk.db"),
    }
    with (
        host_serve(tmp_path, "one", "--workers", "1", **shared) as one,
        host_serve(tmp_path, "two", "--workers", "1", **shared) as two,
    ):
        first = call(one.connect(), "delete_ticket", {"id": "T-3"})
        assert first["resultType"] == "input_required"
        final = final_round(first, {"confirm": True})

        def retry(_: int) -> dict[str, Any]:
            conn = two.connect()
            try:
                return call(conn, "delete_ticket", {"id": "T-3"}, **final)
            finally:
                conn.close()

        with ThreadPoolExecutor(max_workers=10) as pool:
            results = list(pool.map(retry, range(10)))
        # A late retry on the first instance gets the same recorded result.
        results.append(call(one.connect(), "delete_ticket", {"id": "T-3"}, **final))
        assert all(r["structuredContent"] == {"id": "T-3", "deleted": True} for r in results)
        acts = [c for c in one.calls() + two.calls() if c["tool"] == "delete_ticket"]
        assert sum(1 for c in acts if c.get("acted")) == 1
        assert sum(1 for c in acts if c.get("replayed")) == 10
        gone = call(two.connect(), "delete_ticket", {"id": "T-3"})
        assert gone["isError"] is True


def test_serve_refuses_broken_specs_and_prints_where(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("kind: tool\nname: x\ndescription: d\nsteps: []\nbogus: 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(specs)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1
    assert f"{specs / 'bad.yaml'}:5:1: error:" in proc.stderr
    assert "not serving" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_generated_secret_is_kept_and_reused(tmp_path: Path) -> None:
    first = ensure_secret(tmp_path)
    assert ensure_secret(tmp_path) == first
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
    env = worker_env(ServeOptions(data_dir=tmp_path), {})
    assert env["HOST_SECRET"] == first
    assert env["HOST_STORE"] == f"sqlite:///{tmp_path.resolve() / 'store.db'}"
    assert worker_env(ServeOptions(data_dir=tmp_path), {"HOST_SECRET": "k"})["HOST_SECRET"] == "k"


def test_reload_watches_the_specs() -> None:
    argv = gunicorn_argv(ServeOptions(specs=ROOT / "specs", reload=True))
    assert "--reload" in argv
    assert str(ROOT / "specs" / "tickets.yaml") in argv


def test_host_call_drives_a_running_host(two_workers: Server, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{two_workers.port}/mcp"
    done = subprocess.run(
        [sys.executable, "-m", "host", "call", "assign_ticket", "--arg", "id=T-4", "--url", url],
        input="y\n3\n", capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"id": "T-4", "assigned": True, "agent": "Priya"}
    assert "Who should take T-4" in done.stderr


def test_serve_refuses_bad_settings_with_one_clear_line(tmp_path: Path) -> None:
    env = clean_env(HOST_DATA_DIR=str(tmp_path / "data"), HOST_STORE="mysql://db/host")
    proc = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(ROOT / "specs")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "host: not serving: store URL 'mysql://db/host'" in proc.stderr
    assert "gunicorn" not in proc.stderr.lower() and "Traceback" not in proc.stderr
