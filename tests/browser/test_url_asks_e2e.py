"""URL asks end to end in a real Chromium: ``host serve`` with two workers, official clients.

The official Python SDK client (2026-07-28 and its legacy handshake) and the TypeScript client 2.x
(pinned to 2026-07-28, and on its legacy handshake) each call ``rotate_key``: their elicitation
handler takes the URL branch and accepts (consent only), Chromium opens the URL, signs in as the
caller with the token form, and submits the page; the same call goes on and the handler gets the
key (only its SHA-256 is kept). The clients run in threads of their own: Playwright's sync driver
holds the main thread. ``HOST_TEST_SCREENSHOTS=1`` writes the manual's screenshots (docs/images/).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ElicitResult
from playwright.sync_api import Browser, Page, expect

from support.asks import ServedAsks, files_holding, rotate_with_python_sdk, serve_asks
from support.browser import chromium, new_context, playwright
from support.node import TS_V2_PACKAGES, run_script
from support.paths import ROOT

__all__ = ["chromium", "playwright"]  # the fixtures, used by name

pytestmark = [pytest.mark.browser, pytest.mark.served]

SHOTS = ROOT / "docs" / "images"

TS_V2_SCRIPT = """
import { writeFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.HOST_TOKEN}` } },
});
const pinned = process.env.MCP_MODE === "legacy" ? "legacy" : { pin: "2026-07-28" };
const client = new Client(
  { name: "url-ask-test", version: "1.0.0" },
  { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: pinned } },
);
client.setRequestHandler("elicitation/create", async (request) => {
  writeFileSync(process.env.URL_FILE, JSON.stringify(request.params));
  return { action: "accept" };
});
await client.connect(transport);
const result = await client.callTool(
  { name: "rotate_key", arguments: { service: process.env.SERVICE } },
  { timeout: 60000 },
);
console.log(JSON.stringify(result.structuredContent));
await client.close();
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAsks]:
    with serve_asks(
        tmp_path_factory.mktemp("url-asks-e2e"), HOST_PUBLIC_URL="http://127.0.0.1:{port}"
    ) as served:
        yield served


def in_thread(run: Callable[[], Any]) -> Callable[[], Any]:
    """Run ``run`` in a thread of its own; a function that joins it and returns its value."""
    results: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(run())
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def joined() -> Any:
        thread.join(90)
        if errors:
            raise errors[0]
        (value,) = results
        return value

    return joined


def shot(page: Page, tmp_path: Path, name: str) -> None:
    # NOTE: in CSS pixels, so a phone's screenshot is 390 wide whatever its pixel ratio.
    where = SHOTS if os.environ.get("HOST_TEST_SCREENSHOTS") == "1" else tmp_path
    page.screenshot(path=str(where / name), full_page=True, scale="css")


def answer_in_browser(
    chromium: Browser, served: ServedAsks, url: str, key: str, tmp_path: Path, phone: bool = False
) -> None:
    """Chromium opens the client's URL, signs in as alice, and submits the key."""
    context = new_context(chromium, phone=phone)
    try:
        page = context.new_page()
        page.goto(url)
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.get_by_label("Your token").fill(served.tokens["alice"])
        page.get_by_role("button", name="Sign in with token").click()
        expect(page.get_by_text("Enter the new API key for")).to_be_visible()
        expect(page.locator("header .brand")).to_have_text("A question for you")
        field = page.get_by_label("New API key")
        assert field.get_attribute("type") == "password"
        field.fill(key)
        shot(page, tmp_path, "url-ask-phone.png" if phone else "url-ask.png")
        page.get_by_role("button", name="Submit").click()
        expect(page.get_by_role("heading", name="Done: return to your client")).to_be_visible()
        if phone:
            shot(page, tmp_path, "url-ask-done-phone.png")
        assert key not in page.content()
    finally:
        context.close()


def wait_for(found: Callable[[], Any], timeout_s: float = 30) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("the client never got the URL")


def kept(served: ServedAsks, service: str, key: str) -> None:
    digest = hashlib.sha256(key.encode()).hexdigest()
    rows = [
        json.loads(line)
        for path in (served.folder / "host").rglob("rotated.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert {"service": service, "sha256": digest, "note": None} in rows
    assert list(files_holding(served.folder, key)) == []


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_python_sdk_and_a_person_in_chromium(
    chromium: Browser, served: ServedAsks, tmp_path: Path, mode: str
) -> None:
    key, service = f"py-{mode}-{os.urandom(8).hex()}", f"py-{mode}"
    urls: queue.Queue[Any] = queue.Queue()

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        urls.put(params)
        return ElicitResult(action="accept")

    alice = served.tokens["alice"]
    result = in_thread(lambda: rotate_with_python_sdk(served.url, alice, service, on_elicit, mode))
    params = urls.get(timeout=30)
    assert params.mode == "url" and params.url.startswith(served.url + "/asks/ask_")
    if mode == "legacy":
        assert params.elicitation_id.startswith("eli_")
    answer_in_browser(chromium, served, params.url, key, tmp_path, phone=mode == "legacy")
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert result() == {"rotated": True, "service": service, "sha256": digest[:12]}
    kept(served, service, key)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_typescript_client_2x_and_a_person_in_chromium(
    chromium: Browser, served: ServedAsks, tmp_path: Path, mode: str
) -> None:
    key, service = f"ts-{mode}-{os.urandom(8).hex()}", f"ts-{mode}"
    url_file = tmp_path / "url.json"
    done = in_thread(
        lambda: run_script(
            tmp_path,
            TS_V2_PACKAGES,
            TS_V2_SCRIPT,
            HOST_TOKEN=served.tokens["alice"],
            MCP_URL=f"{served.url}/mcp",
            SERVICE=service,
            URL_FILE=str(url_file),
            MCP_MODE="legacy" if mode == "legacy" else "pinned",
        )
    )
    params = json.loads(wait_for(lambda: url_file.exists() and url_file.read_text()))
    assert params["mode"] == "url" and params["url"].startswith(served.url + "/asks/ask_")
    assert ("elicitationId" in params) == (mode == "legacy")
    answer_in_browser(chromium, served, params["url"], key, tmp_path)
    finished = done()
    assert finished.returncode == 0, finished.stderr
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == {
        "rotated": True,
        "service": service,
        "sha256": digest[:12],
    }
    kept(served, service, key)
