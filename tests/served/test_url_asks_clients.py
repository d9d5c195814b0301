"""URL asks end to end: the official Python SDK client over ``host serve`` with two workers.

The SDK's elicitation callback takes its URL branch: it gets the page's URL (and, on the legacy
handshake, an ``elicitationId``), a browser signs in as the caller and submits the page, the
callback accepts, and the same call goes on: the handler gets the value, and only its hash is
kept. The key is searched for afterwards in every file the host wrote, and in its log.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ElicitResult

from support.asks import (
    ASK_FIXTURE,
    HttpBrowser,
    ServedAsks,
    files_holding,
    rotate_with_python_sdk,
    serve_asks,
)
from support.servers import clean_env

pytestmark = pytest.mark.served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAsks]:
    with serve_asks(tmp_path_factory.mktemp("url-asks")) as served:
        yield served


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_python_sdk_gets_the_url_the_page_is_submitted_and_the_call_goes_on(
    served: ServedAsks, mode: str
) -> None:
    key = f"sdk-{mode}-" + hashlib.sha256(mode.encode()).hexdigest()[:16]
    seen: list[Any] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        assert params.mode == "url" and params.url.startswith(served.url + "/asks/ask_")
        browser = HttpBrowser(served.url).sign_in(served.tokens["alice"])
        # NOTE: the browser submits while the client's accept is on its way (consent only).
        threading.Timer(0.3, lambda: browser.submit(params.url, {"api_key": key})).start()
        return ElicitResult(action="accept")

    digest = hashlib.sha256(key.encode()).hexdigest()
    result = rotate_with_python_sdk(served.url, served.tokens["alice"], mode, on_elicit, mode)
    assert result == {"rotated": True, "service": mode, "sha256": digest[:12]}
    assert len(seen) == 1
    if mode == "legacy":
        assert seen[0].elicitation_id.startswith("eli_")
    kept = (served.folder / "host").rglob("rotated.jsonl")
    rows = [json.loads(line) for path in kept for line in path.read_text().splitlines()]
    assert {"service": mode, "sha256": digest, "note": None} in rows
    assert list(files_holding(served.folder, key)) == []


def test_host_call_prints_the_link_and_goes_on_once_the_page_is_submitted(
    served: ServedAsks,
) -> None:
    key = "host-call-" + hashlib.sha256(b"host call").hexdigest()[:16]
    argv = [sys.executable, "-m", "host", "call", "rotate_key", "--url", served.url,
            "--arg", "service=cli"]  # fmt: skip
    env = clean_env(HOST_TOKEN=served.tokens["alice"])
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, cwd=served.folder,
    ) as call:  # fmt: skip
        assert call.stdin is not None and call.stderr is not None
        said = ""
        while "open http" not in said:
            line = call.stderr.readline()
            assert line, said
            said += line
        url = said.split("open ", 1)[1].split()[0]
        HttpBrowser(served.url).sign_in(served.tokens["alice"]).submit(url, {"api_key": key})
        out, err = call.communicate("y\n", timeout=60)
    assert call.returncode == 0, err
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert json.loads(out) == {"rotated": True, "service": "cli", "sha256": digest[:12]}
    assert key not in out + err + said


def test_host_serve_refuses_url_asks_without_auth_and_says_why(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "host", "serve", "--specs", str(ASK_FIXTURE / "specs")],
        capture_output=True, text=True, timeout=60, env=clean_env(HOST_DATA_DIR=str(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 1
    assert "URL asks (rotate_key, rotate_prod_key)" in done.stderr
    assert "nobody could sign in to the pages that ask them" in done.stderr
    assert "HOST_AUTH_TOKENS" in done.stderr and "Traceback" not in done.stderr
