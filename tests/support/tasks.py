"""The tasks tests' host: the tasks fixture with static tokens, and a client that speaks tasks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.auth import AuthSettings
from host.auth.browser_settings import BrowserSettings
from host.auth.tokenfile import create_token
from host.client.wire import WsgiTransport
from host.settings import Settings
from host.testing import McpClient
from support.paths import FIXTURES
from support.visitor import Visitor, csrf_of

__all__ = [
    "EXT",
    "PUBLIC_URL",
    "TASKS",
    "TASK_CAPS",
    "TASK_SPECS",
    "TaskHost",
    "make_tokens",
    "poll",
    "task_host",
]

TASK_FIXTURE = FIXTURES / "tasks"
TASK_SPECS = TASK_FIXTURE / "specs"
TASK_HANDLERS = TASK_FIXTURE / "handlers"
PUBLIC_URL = "https://ops.example"
EXT = "io.modelcontextprotocol/tasks"
TASKS = {"extensions": {EXT: {}}}
TASK_CAPS = {"elicitation": {"form": {}, "url": {}}, **TASKS}
PEOPLE = {"alice": [], "mallory": [], "bob": ["ops:approve"], "carol": ["ops:approve"]}


def make_tokens(path: Path) -> dict[str, str]:
    """Static tokens: alice and mallory call, bob and carol approve."""
    return {name: create_token(path, name, scopes)[0] for name, scopes in PEOPLE.items()}


def poll(
    get: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool], timeout: float = 15
) -> dict[str, Any]:
    """``get()`` until ``done`` says so (a wait for a condition, not a sleep).

    Raises:
        AssertionError: ``timeout`` seconds passed first; it shows what ``get()`` said last.
    """
    deadline = time.monotonic() + timeout
    while True:
        seen = get()
        if done(seen):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"not so after {timeout} s; last seen: {seen!r}"[:4000])
        time.sleep(0.05)


@dataclass
class TaskHost:
    """The app in process, its data directory and tokens."""

    app: Any
    data_dir: Path
    tokens: dict[str, str]

    def mcp(self, who: str = "alice", capabilities: Any = None) -> McpClient:
        """A modern client calling as ``who``; by default one that declares tasks."""
        return McpClient(
            WsgiTransport(self.app, token=self.tokens[who]),
            capabilities=TASK_CAPS if capabilities is None else capabilities,
        )

    def api(self, who: str, method: str, path: str, body: Any = None) -> Any:
        """The approvals API as ``who``."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return Visitor(self.app).client.simulate_request(
            method, "/approvals/api/requests" + path, headers=headers,
            body=None if body is None else json.dumps(body),
        )  # fmt: skip

    def acts(self) -> list[dict[str, Any]]:
        path = self.data_dir / "acts.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def submit(self, url: str, values: dict[str, str], who: str = "alice") -> Any:
        """Open a URL ask's page as ``who`` and submit ``values``."""
        browser = Visitor(self.app).sign_in(self.tokens[who])
        on = browser.get(url[len(PUBLIC_URL) :])
        assert on.status_code == 303, on.status_code
        path = on.headers["Location"].replace(PUBLIC_URL, "")
        form = browser.get(path)
        assert form.status_code == 200, form.text
        return browser.post(path, {"csrf": csrf_of(form), **values})


def task_host(
    tmp_path: Path, specs: Path = TASK_SPECS, tokens: dict[str, str] | None = None
) -> TaskHost:
    """The tasks fixture served in process with static tokens and a public URL (``tokens``:
    those made for an earlier host of the same ``tmp_path``, as a reload keeps them)."""
    from host.web.app import create_app

    tokens = tokens or make_tokens(tmp_path / "tokens")
    auth = AuthSettings(
        tokens_file=tmp_path / "tokens", browser=BrowserSettings(public_url=PUBLIC_URL)
    )
    data = tmp_path / "data"
    settings = Settings(
        specs_dir=specs,
        handlers_dir=TASK_HANDLERS,
        secrets=("test-key-1-0123456789abcdef0123456789",),
        data_dir=data,
        auth=auth,
    )
    return TaskHost(create_app(settings=settings), data, tokens)
