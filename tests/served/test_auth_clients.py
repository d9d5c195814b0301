"""Calling a protected host: ``host call --token`` and the test kit's callers.

``host call`` takes a bearer token (``--token`` or ``HOST_TOKEN``) for a running host and says
clearly when it has none or the wrong one. The test kit calls as ``anonymous`` holding every scope
the specs name, and as any principal with any scopes a test asks for, through the real gate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.auth.tokenfile import create_token
from host.testing.harness import serve
from support.protected import SCOPED, WHO
from support.servers import Server, host_serve

pytestmark = pytest.mark.served


@pytest.fixture
def scoped_dir(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "desk.yaml").write_text(SCOPED)
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "who.py").write_text(WHO)
    return tmp_path


def test_the_kit_calls_as_anyone_through_the_gate(scoped_dir: Path) -> None:
    with serve(scoped_dir / "specs", data_dir=scoped_dir / "data") as mcp:
        peek = mcp.tools.call("peek")
        assert peek.json()["principal"] == "anonymous"
        assert peek.json()["scopes"] == ["tickets:read", "tickets:write"]
        ann = mcp.client(principal="ann", scopes=["tickets:read"])
        assert ann.tools.call("peek").json()["principal"] == "ann"
        refused = ann.tools.call("wipe")
        assert refused.error is not None and refused.error.code == -31002
        assert refused.error.data["requiredScopes"] == ["tickets:read", "tickets:write"]
        writer = mcp.client(principal="wes", scopes=["tickets"])
        writer.on_elicitation({"action": "accept", "content": {"confirm": True}})
        assert writer.tools.call("wipe").json()["principal"] == "wes"
        nobody = mcp.client(token="")
        assert nobody.raw.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status == 401


@pytest.fixture
def protected(scoped_dir: Path) -> Iterator[tuple[Server, str, str]]:
    tokens = scoped_dir / "tokens"
    reader, _ = create_token(tokens, "reader", ["tickets:read"])
    owner, _ = create_token(tokens, "owner", ["tickets"])
    with host_serve(
        scoped_dir, "host", specs=scoped_dir / "specs", HOST_AUTH_TOKENS=str(tokens)
    ) as server:
        yield server, reader, owner


def host_call(
    cwd: Path, *args: str, answers: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
    return subprocess.run(
        [sys.executable, "-m", "host", "call", *args],
        input=answers, capture_output=True, text=True, env={**clean, **env}, cwd=cwd, timeout=60,
    )  # fmt: skip


def test_host_call_with_a_token(protected: tuple[Server, str, str], tmp_path: Path) -> None:
    server, reader, owner = protected
    url = f"{server.url}/mcp"
    done = host_call(tmp_path, "peek", "--url", url, "--token", reader)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["principal"] == "reader"
    wiped = host_call(tmp_path, "wipe", "--url", url, answers="y\n", HOST_TOKEN=owner)
    assert wiped.returncode == 0, wiped.stderr
    assert json.loads(wiped.stdout)["principal"] == "owner"


def test_host_call_says_what_is_missing(protected: tuple[Server, str, str], tmp_path: Path) -> None:
    server, reader, _ = protected
    url = f"{server.url}/mcp"
    missing = host_call(tmp_path, "peek", "--url", url)
    assert missing.returncode == 1
    assert "needs a bearer token" in missing.stderr and "--token" in missing.stderr
    assert "Traceback" not in missing.stderr
    wrong = host_call(tmp_path, "peek", "--url", url, "--token", "host_nope")
    assert "refused the token" in wrong.stderr
    short = host_call(tmp_path, "wipe", "--url", url, "--token", reader)
    assert short.returncode == 1
    assert "tickets:write" in short.stderr


def test_host_call_in_process_calls_as_the_local_user(scoped_dir: Path) -> None:
    env = {"HOST_DATA_DIR": str(scoped_dir / "data")}
    done = host_call(scoped_dir, "peek", "--specs", str(scoped_dir / "specs"), **env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scopes"] == ["tickets:read", "tickets:write"]


def test_host_serve_refuses_scopes_without_auth(scoped_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(scoped_dir / "specs")],
        capture_output=True, text=True, cwd=scoped_dir, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
        | {"HOST_DATA_DIR": str(scoped_dir / "data")},
    )  # fmt: skip
    assert done.returncode == 1
    assert "not serving: the specs name scopes (tickets:read, tickets:write)" in done.stderr
    assert "Traceback" not in done.stderr
