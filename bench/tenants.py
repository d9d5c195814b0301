"""Many tenants on one host: another principal's latency while one saturates its limits.

Starts ``host serve`` (its defaults: two gthread workers of 1,024 threads, the default limits per
caller) on 127.0.0.1 with static tokens for two principals and a tool whose act hangs. ``mallory``
opens ``--callers`` connections that each send the hanging call again as soon as it is answered;
meanwhile ``alice`` makes ``--calls`` quick calls one after another and ``/healthz`` is asked
each second; and one more of mallory's threads opens legacy sessions (``initialize``, never
ended) as fast as it can, past HOST_LIMIT_SESSIONS, each one past it evicting mallory's least
recently used. It prints alice's latencies, ``/healthz``'s, what mallory's calls and sessions were
answered, how many sessions were evicted (the host's ``session_evicted`` log lines) and how many
places the store kept.

Loopback only; at most ``--seconds`` of flood (the server and every thread stop by then). It
prints figures and asserts nothing. Run it as ``python bench/tenants.py``; ``--quick`` is smaller.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["alice_line", "main"]

SPECS = """\
kind: server
name: tenants
---
kind: tool
name: hang
description: An act that hangs for as many seconds as asked.
input: {properties: {seconds: {type: number}}, required: [seconds]}
steps:
  - act: tenants:hang
    timeout: 5s
---
kind: tool
name: ping
description: Answers at once.
input: {properties: {text: {type: string}}, required: [text]}
steps:
  - act: tenants:ping
"""

HANDLERS = """\
import time


def hang(seconds):
    time.sleep(seconds)
    return {"slept": seconds}


def ping(text):
    return {"size": len(text)}
"""

VERSION = "2026-07-28"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _post(port: int, body: str, headers: dict[str, str]) -> tuple[int, str]:
    """One POST /mcp on a new connection: its status (0 if it failed) and the limit a refusal
    names (or, for a failed connection, the error's type)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/mcp", body, headers)
        response = conn.getresponse()
        payload = json.loads(response.read())
        if response.status == 200:
            return 200, ""
        return response.status, str(payload.get("error", {}).get("data", {}).get("limit", ""))
    except OSError as exc:
        return 0, type(exc).__name__
    finally:
        conn.close()


def _call(port: int, token: str, tool: str, arguments: dict[str, Any]) -> tuple[int, str]:
    """One tools/call on a new connection: its status and, for a 429, the limit named."""
    params = {
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Authorization": f"Bearer {token}",
    }
    return _post(port, body, headers)


def _initialize(port: int, token: str) -> str:
    """One legacy ``initialize`` on a new connection: its status and, for a 429, the limit."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    status, limit = _post(port, body, headers)
    return "200" if status == 200 else f"{status} {limit}"


def _serve(folder: Path, port: int) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    specs, handlers = folder / "specs", folder / "handlers"
    specs.mkdir()
    handlers.mkdir()
    (specs / "tenants.yaml").write_text(SPECS)
    (handlers / "tenants.py").write_text(HANDLERS)
    tokens_file = folder / "tokens"
    tokens = {}
    for name in ("alice", "mallory"):
        made = subprocess.run(
            [sys.executable, "-m", "host", "token", "create", name, "--file", str(tokens_file)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        tokens[name] = made.stdout.strip()
    env = {**os.environ, "HOST_AUTH_TOKENS": str(tokens_file), "HOST_DATA_DIR": str(folder / "d")}
    log = (folder / "host.log").open("wb")
    argv = [sys.executable, "-m", "host", "serve", "--specs", str(specs)]
    proc = subprocess.Popen(
        [*argv, "--bind", f"127.0.0.1:{port}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                return proc, tokens
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("host serve did not start; see " + str(folder / "host.log"))


def _healthz(port: int) -> float:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10):
            pass
    except OSError:
        return float("inf")
    return time.monotonic() - started


def _evictions(folder: Path) -> tuple[int, int]:
    """Sessions evicted (the host's log lines) and session places left in the store."""
    evicted = 0
    for line in (folder / "host.log").read_text(errors="replace").splitlines():
        try:
            evicted += json.loads(line).get("event") == "session_evicted"
        except (ValueError, AttributeError):
            continue  # gunicorn's own lines are not JSON
    with sqlite3.connect(folder / "d" / "store.db") as db:
        kept: int = db.execute(
            "SELECT COUNT(*) FROM store_places WHERE grp LIKE 'sessions:%' AND expires > ?",
            (time.time(),),
        ).fetchone()[0]
    return evicted, kept


def _alice(port: int, token: str, calls: int, ends: float) -> tuple[list[float], list[float]]:
    """Alice's calls during the flood, until ``ends``: each one's ms (inf when refused), and
    ``/healthz``'s ms every fifth call."""
    took: list[float] = []
    health: list[float] = []
    for n in range(calls):
        if time.monotonic() > ends:
            break
        started = time.monotonic()
        status, _ = _call(port, token, "ping", {"text": str(n)})
        took.append((time.monotonic() - started) * 1000 if status == 200 else float("inf"))
        if n % 5 == 0:
            health.append(_healthz(port) * 1000)
    return took, health


def alice_line(callers: int, took: list[float], health: list[float]) -> str:
    """The report's line on alice's calls (ms each, inf when refused) and ``/healthz``."""
    ok = [t for t in took if t != float("inf")]
    # NOTE: a flood that starves alice entirely is a result too, not a traceback.
    timing = f"p50 {statistics.median(ok):.1f} ms, max {max(ok):.1f} ms" if ok else "none answered"
    healthz = f"{max(health):.1f} ms" if health else "not asked"
    return (
        f"mallory: {callers} connections flooding a hanging act; alice: {len(took)} calls, "
        f"{len(ok)} answered, {timing}; /healthz max {healthz}"
    )


def main(argv: list[str] | None = None) -> None:
    """Run the flood and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=300, help="mallory's connections (300)")
    parser.add_argument("--calls", type=int, default=20, help="alice's calls (20)")
    parser.add_argument("--seconds", type=float, default=30, help="the most seconds of flood (30)")
    parser.add_argument("--quick", action="store_true", help="100 callers, 15 s at most")
    args = parser.parse_args(argv)
    callers, seconds = (100, 15.0) if args.quick else (args.callers, args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        proc, tokens = _serve(Path(tmp), port)
        stop = threading.Event()
        seen: collections.Counter[str] = collections.Counter()

        def flood() -> None:
            while not stop.is_set():
                status, limit = _call(port, tokens["mallory"], "hang", {"seconds": 60})
                seen[f"{status} {limit}".strip()] += 1

        sessions: collections.Counter[str] = collections.Counter()

        def open_sessions() -> None:
            while not stop.is_set():
                sessions[_initialize(port, tokens["mallory"])] += 1

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(callers)]
        threads.append(threading.Thread(target=open_sessions, daemon=True))
        try:
            for thread in threads:
                thread.start()
            time.sleep(min(5.0, seconds / 3))  # the flood takes hold
            took, health = _alice(port, tokens["alice"], args.calls, time.monotonic() + seconds)
        finally:
            stop.set()
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        evicted, kept = _evictions(Path(tmp))
    print(alice_line(callers, took, health))
    print(
        "mallory's answers: " + ", ".join(f"{k or 'no reply'} x{v}" for k, v in seen.most_common())
    )
    print(
        "mallory's sessions: "
        + ", ".join(f"{k.strip()} x{v}" for k, v in sessions.most_common())
        + f"; {evicted} evicted, {kept} places kept"
    )


if __name__ == "__main__":
    main()
