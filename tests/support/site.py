"""A site whose tools a test changes under calls: specs and handlers to rewrite, and reloads.

Each tool that the definition tests change has a spec file of its own, written from a template
in two versions: version 1 asks before its act, version 2 changed what the act means (another
message and act, or no question at all). ``host serve`` serves it with two workers on SQLite or
Redis; a test writes version 2, sends SIGHUP and waits until every answer comes from the new
workers. Every act appends a line to a file, so a test sees what acted on any worker.

Used as ``from support.site import Site``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.servers import Server
from support.waiting import wait_until
from support.wire import send

__all__ = ["HANDLERS", "SECRET", "Site", "spec"]

SECRET = "defs-secret-for-every-worker-0123456789abcdef0123456789"

HANDLERS = """\
import json
import os


def _acted(what, **fields):
    with open(os.environ["DEFS_ACTS"], "a") as out:
        out.write(json.dumps({"act": what, **fields}) + "\\n")


def restart(service):
    _acted("restart", service=service)
    return {"restarted": service}


def drop(service):
    _acted("drop", service=service)
    return {"dropped": service}


def close(id):
    _acted("close", id=id)
    return {"closed": id}
"""

SERVER = """\
kind: server
name: defs
elicitation: {enabled: true}
"""


def spec(name: str, version: int) -> str:
    """The spec of the tool ``name`` in ``version`` (1, then 2 after the reload).

    ``restart*`` tools remember a yes; version 2 asks another question with another act.
    Any other tool confirms before closing a ticket; its version 2 asks nothing at all.
    """
    head = f"kind: tool\nname: {name}\ndescription: Version {version} of {name}.\n"
    if name.startswith("restart"):
        message, act = (
            ("Restart {{ service }} in prod?", "restart")
            if version == 1
            else ("DROP ALL DATA of {{ service }} in prod and restart it?", "drop")
        )
        return head + (
            "input: {properties: {service: {type: string}}, required: [service]}\n"
            "steps:\n"
            "  - confirm: go\n"
            f'    message: "{message}"\n'
            '    remember: {for: 1h, key: "{{ service }}"}\n'
            f"  - act: ops:{act}\n"
        )
    question = '  - confirm: go\n    message: "Close ticket {{ id }}?"\n' if version == 1 else ""
    return head + (
        "input: {properties: {id: {type: string}}, required: [id]}\n"
        "steps:\n" + question + "  - act: ops:close\n"
    )


@dataclass
class Site:
    """The specs and handlers a server serves, the file its acts append to, and its store."""

    root: Path
    tools: tuple[str, ...]
    store: str

    def __post_init__(self) -> None:
        (self.specs).mkdir(parents=True)
        (self.root / "handlers").mkdir()
        (self.root / "handlers" / "ops.py").write_text(HANDLERS)
        (self.specs / "server.yaml").write_text(SERVER)
        for name in self.tools:
            (self.specs / f"{name}.yaml").write_text(spec(name, 1))

    @property
    def specs(self) -> Path:
        return self.root / "specs"

    @property
    def acts_file(self) -> Path:
        return self.root / "acts.jsonl"

    def env(self) -> dict[str, str]:
        """What ``host serve`` needs in its environment for this site."""
        return {"HOST_SECRET": SECRET, "HOST_STORE": self.store, "DEFS_ACTS": str(self.acts_file)}

    def acts(self, **fields: Any) -> list[dict[str, Any]]:
        """The acts done so far (on every worker) whose fields match ``fields``."""
        if not self.acts_file.exists():
            return []
        done = [json.loads(line) for line in self.acts_file.read_text().splitlines()]
        return [a for a in done if all(a.get(k) == v for k, v in fields.items())]

    def reload(self, server: Server, name: str) -> None:
        """Serve version 2 of ``name``: write it, SIGHUP, wait until only new workers answer."""
        (self.specs / f"{name}.yaml").write_text(spec(name, 2))
        os.kill(server.pid, signal.SIGHUP)

        def served() -> bool:
            tools = _descriptions(server)
            return tools.get(name) == f"Version 2 of {name}."

        assert wait_until(served), (
            f"the reload of {name} was never served:\n{server.log.read_text()}"
        )
        # NOTE: a few more answers from new workers, so no old one is still accepting.
        for _ in range(4):
            assert wait_until(served, 10)
            time.sleep(0.1)


def _descriptions(server: Server) -> dict[str, str]:
    conn = server.connect()
    try:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
        payload = json.loads(send(conn, body, **headers).read())
        return {t["name"]: t["description"] for t in payload["result"]["tools"]}
    except (OSError, ValueError, KeyError):
        return {}
    finally:
        conn.close()
