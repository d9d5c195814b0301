"""Shared helpers for the 2026-07-28 end-to-end tests: the help-desk app and a small raw client.

Every test drives the real Falcon app through ``falcon.testing.TestClient``, with the example
``specs/`` and ``handlers/``, a real SQLite help-desk database and a real SQLite store in
``tmp_path``. The client here speaks raw JSON-RPC so the tests can see (and break) every byte.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from host.settings import Settings
from host.spec import load_project
from host.spec.model import Project
from host.web.app import create_app

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
HANDLERS = ROOT / "handlers"
VERSION = "2026-07-28"
FORM: dict[str, Any] = {"elicitation": {"form": {}}}

Answerer = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]

#: The answers that leave close_ticket's box unconfirmed, each with the reason the tool then gives.
NOT_CONFIRMED = [
    pytest.param({"action": "decline"}, "The user said no. Leave the ticket open.", id="decline"),
    pytest.param(
        {"action": "cancel"}, "The user dismissed the question without answering.", id="cancel"
    ),
    pytest.param(
        {"action": "accept", "content": {"confirm": False}},
        "The user didn't tick the box.",
        id="unticked",
    ),
]


def helpdesk_project() -> Project:
    """The example specs, loaded and checked the way ``host serve`` loads them."""
    return load_project(SPECS, HANDLERS)


def write_project(
    tmp_path: Path,
    server: str,
    tools: str,
    handlers: str,
    *,
    module: str = "work",
    prefix: str = "",
) -> tuple[Path, Path]:
    """A small project in ``tmp_path``: ``server.yaml`` and ``tools.yaml``, one handler module.

    Args:
        tmp_path: where the ``specs`` and ``handlers`` folders go.
        server: the server spec's text.
        tools: the tool specs' text.
        handlers: the handler module's source.
        module: the handler module's name (what the specs' ``module:function`` calls name).
        prefix: put before the folders' names, to keep two projects in one ``tmp_path`` apart.

    Returns:
        The specs folder and the handlers folder.
    """
    specs_dir, handlers_dir = tmp_path / f"{prefix}specs", tmp_path / f"{prefix}handlers"
    specs_dir.mkdir()
    handlers_dir.mkdir()
    (specs_dir / "server.yaml").write_text(server)
    (specs_dir / "tools.yaml").write_text(tools)
    (handlers_dir / f"{module}.py").write_text(handlers)
    return specs_dir, handlers_dir


def settings_for(tmp_path: Path, **changes: Any) -> Settings:
    """Settings for one test: data and store in ``tmp_path``, a fixed signing key."""
    values: dict[str, Any] = {
        "specs_dir": SPECS,
        "handlers_dir": HANDLERS,
        "secrets": ("test-key-1-0123456789abcdef0123456789",),
        "data_dir": tmp_path / "data",
    }
    values.update(changes)
    return Settings(**values)


def use_tmp_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the help-desk handlers at a fresh database in ``tmp_path``; return its path."""
    db = tmp_path / "helpdesk.db"
    monkeypatch.setenv("HELPDESK_DB", str(db))
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    return db


@dataclass
class Mcp:
    """A raw 2026-07-28 client over a Falcon test client."""

    http: falcon.testing.TestClient
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(FORM))
    next_id: int = 1
    token: str | None = None

    def headers(self, method: str, name: str | None = None) -> dict[str, str]:
        """The routing headers a well-behaved client sends (and its bearer token, if any)."""
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": method,
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if name is not None:
            headers["Mcp-Name"] = name
        return headers

    def meta(self, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The per-request ``_meta`` envelope."""
        caps = self.capabilities if capabilities is None else capabilities
        return {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": dict(caps),
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
        }

    def post(
        self,
        body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        raw: bytes | None = None,
    ) -> falcon.testing.Result:
        """POST a body (JSON-encoded unless ``raw``) to ``/mcp``."""
        data = raw if raw is not None else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        return self.http.simulate_post("/mcp", body=data, headers=all_headers)

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        capabilities: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> falcon.testing.Result:
        """Send one well-formed request; returns the raw HTTP result."""
        params = dict(params or {})
        params.setdefault("_meta", self.meta(capabilities))
        name = params.get("name") if method == "tools/call" else None
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        return self.post(body, headers if headers is not None else self.headers(method, name))

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        responses: Mapping[str, Any] | None = None,
        state: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> falcon.testing.Result:
        """One ``tools/call`` round."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if responses is not None:
            params["inputResponses"] = dict(responses)
        if state is not None:
            params["requestState"] = state
        return self.request("tools/call", params, capabilities=capabilities)

    def result(self, response: falcon.testing.Result) -> dict[str, Any]:
        """The JSON-RPC result of a 200 response (fails the test otherwise)."""
        assert response.status_code == 200, response.text
        body = response.json
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    def run(
        self, name: str, arguments: Mapping[str, Any], answer: Answerer, rounds: int = 5
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Call a tool, answering each question with ``answer(key, params)``, to the end.

        Returns:
            The final result, and every ``elicitation/create`` params the tool asked.
        """
        asked: list[dict[str, Any]] = []
        result = self.result(self.call(name, arguments))
        for _ in range(rounds):
            if result["resultType"] != "input_required":
                return result, asked
            requests = result["inputRequests"]
            responses = {}
            for key, request in requests.items():
                assert request["method"] == "elicitation/create"
                asked.append(request["params"])
                responses[key] = dict(answer(key, request["params"]))
            result = self.result(
                self.call(name, arguments, responses=responses, state=result["requestState"])
            )
        raise AssertionError(f"{name} still asks after {rounds} rounds")

    def outbox(self) -> list[str]:
        """The emails sent so far, through the list_outbox tool."""
        result = self.result(self.call("list_outbox"))
        emails: list[str] = result["structuredContent"]["emails"]
        return emails


def app_client(
    tmp_path: Path, project: Project | None = None, **changes: Any
) -> falcon.testing.TestClient:
    """A Falcon test client of a fresh app for the help desk (or ``project``) in ``tmp_path``."""
    app = create_app(settings=settings_for(tmp_path, **changes), project=project or HELPDESK)
    return falcon.testing.TestClient(app)


def make_client(tmp_path: Path, project: Project | None = None, **changes: Any) -> Mcp:
    """A client of a fresh help-desk app in ``tmp_path``."""
    return Mcp(app_client(tmp_path, project, **changes))


def ticket(db: Path, ticket_id: str) -> dict[str, Any] | None:
    """A ticket's row, read straight from the help-desk database."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    return dict(row) if row else None


def emails(db: Path, ticket_id: str) -> int:
    """How many emails the help desk has sent about a ticket, read straight from its database."""
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM outbox WHERE ticket = ?", (ticket_id,)).fetchone()
    return int(row[0])


def accept(content: Mapping[str, Any]) -> Answerer:
    """An answerer that accepts every question with ``content``."""
    return lambda key, params: {"action": "accept", "content": dict(content)}


def reply(action: str) -> Answerer:
    """An answerer that declines or cancels every question."""
    return lambda key, params: {"action": action}


HELPDESK = helpdesk_project()
