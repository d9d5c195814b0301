"""docs/approvers.md: the terminal session it shows is what ``host approvals`` does.

The change-control example is served with static tokens; alice makes two production restarts
that wait, and bob runs the page's commands in order. Ids and seconds left differ from run to
run: the page's ids stand for the real ones in the order ``pending`` lists them.
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from host.auth.tokenfile import create_token
from support.approvals import round_trip
from support.paths import ROOT
from support.servers import Server, clean_env, host_serve
from support.waiting import wait_until

pytestmark = pytest.mark.served

PAGE = (ROOT / "docs" / "approvers.md").read_text()
EXAMPLE = ROOT / "examples" / "change-control"
BASE = "https://tools.example.com"
ID = re.compile(r"apr_[A-Za-z0-9_-]+")


def session() -> list[tuple[str, list[str]]]:
    """The page's console block: each command (after ``$ host ``) with the lines it prints."""
    (block,) = re.findall(r"```console\n(.*?)```", PAGE, re.S)
    shown: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ host "):
            shown.append((line.removeprefix("$ host "), []))
        else:
            shown[-1][1].append(line)
    return shown


def plain(lines: list[str]) -> list[str]:
    return [re.sub(r"\d+s left", "Ns left", ID.sub("apr_ID", line)) for line in lines]


def restart(server: Server, token: str, service: str) -> None:
    """A production restart by ``token``, confirmed; it waits for a decision."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=90)
    arguments = {"service": service, "environment": "production"}
    asked = round_trip(conn, token, "restart_service", arguments)
    yes = {"restart": {"action": "accept", "content": {"confirm": True}}}
    round_trip(conn, token, "restart_service", arguments, inputResponses=yes,
               requestState=asked["requestState"])  # fmt: skip


def pending(server: Server, token: str) -> list[dict[str, Any]]:
    done = run("approvals pending --format json", server, token)
    return list(json.loads(done.stdout or "[]")) if done.returncode == 0 else []


def run(command: str, server: Server, token: str) -> subprocess.CompletedProcess[str]:
    argv = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)]
    argv = [server.url if a == BASE else a for a in argv]
    return subprocess.run(
        [sys.executable, "-m", "host", *argv], capture_output=True, text=True, timeout=60,
        env=clean_env(HOST_TOKEN=token, HOST_PUBLIC_URL=server.url),
    )  # fmt: skip


def test_the_session_is_what_host_approvals_does(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    alice = create_token(tokens, "alice", [])[0]
    bob = create_token(tokens, "bob", ["ops:approve"])[0]
    with host_serve(
        tmp_path, "host", "--workers", "2", specs=EXAMPLE / "specs",
        HOST_AUTH_TOKENS=str(tokens), OPS_DB=str(tmp_path / "ops.db"),
    ) as server:  # fmt: skip
        calls = []
        for count, service in enumerate(["billing", "web"], 1):  # newest first: web, billing
            calls.append(threading.Thread(target=restart, args=(server, alice, service)))
            calls[-1].start()
            assert wait_until(lambda n=count: len(pending(server, bob)) == n, 20, 0.1)
        real = [r["id"] for r in pending(server, bob)]
        named: dict[str, str] = {}
        for command, lines in session():
            for doc_id in ID.findall(command):
                if doc_id not in named:
                    named[doc_id] = real[len(named)]
                command = command.replace(doc_id, named[doc_id])
            done = run(command, server, bob)
            printed = (done.stdout or done.stderr).splitlines()
            assert plain(printed) == plain(lines), command
            assert done.returncode == (1 if "refused" in "".join(lines) else 0), done.stderr
        for call in calls:
            call.join(30)
