"""A large result in-process: what a call costs against one JSON encoding of its value.

A read-only tool returns 1,500 ticket-like items (about 170 KB of JSON). MCP sends a structured
result twice, as ``structuredContent`` and as its JSON text, so a host that encodes the value for
each spends most of such a call encoding. The figure is the host's whole call (the WSGI app
called directly, as in :mod:`bench.machinery`) over one ``json.dumps`` of the value: the bytes
the host has to write once, whatever else it does.

Run inside ``bench/run.py`` (with the machinery section), or alone: ``python -m bench.large``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from bench.loadgen import build_request
from bench.machinery import body_of, call_app, environ, per_op

__all__ = ["ITEMS", "measure"]

#: How many items the tool returns.
ITEMS = 1500

_SERVER = "kind: server\nname: large\nversion: 0.0.1\n"
_TOOL = """\
kind: tool
name: large
description: Every ticket, as one large result.
input: {}
output:
  type: object
  properties:
    items: {type: array}
  required: [items]
steps:
  - read: items
    call: bench_large:items
"""
_HANDLER = f"""\
ITEMS = {{"items": [
    {{"id": f"T-{{n}}", "title": f"Ticket {{n}}: the printer on floor 3 is out of toner",
      "status": "open", "agent": None, "n": n}}
    for n in range({ITEMS})
]}}


def items():
    return ITEMS
"""


def measure(n: int = 100) -> dict[str, Any]:
    """Time ``n`` calls of the large tool and ``n`` encodings of its value; µs and bytes."""
    from host.assembly import assemble
    from host.auth import Authenticator
    from host.settings import Settings
    from host.web.app import build_app

    with tempfile.TemporaryDirectory(prefix="bench-large-") as tmp:
        root = Path(tmp)
        (root / "specs").mkdir()
        (root / "handlers").mkdir()
        (root / "specs" / "server.yaml").write_text(_SERVER)
        (root / "specs" / "large.yaml").write_text(_TOOL)
        (root / "handlers" / "bench_large.py").write_text(_HANDLER)
        settings = Settings.from_env(
            {
                "HOST_SPECS": str(root / "specs"),
                "HOST_HANDLERS": str(root / "handlers"),
                "HOST_DATA_DIR": str(root / "data"),
                "HOST_SECRET": "bench-large-" + "x" * 32,
            }
        )
        served = assemble(settings)
        app = build_app(served, Authenticator(settings.auth))
        body = body_of(build_request(8000, "tools/call", {"name": "large", "arguments": {}}))
        env = environ(body, "large")
        try:
            reply = call_app(app, env, body)
            value = json.loads(reply)["result"]["structuredContent"]
            per_op(lambda: call_app(app, env, body), max(5, n // 10), 1)
            host_s = per_op(lambda: call_app(app, env, body), n)
        finally:
            # NOTE: the audit records of the last few ms are written, and the store let go,
            # before the folder goes: else each is logged as refused by a deleted store.
            served.close()
    encode_s = per_op(lambda: json.dumps(value, ensure_ascii=False), n)
    return {
        "items": ITEMS,
        "value_bytes": len(json.dumps(value, ensure_ascii=False).encode()),
        "reply_bytes": len(reply),
        "host_us": 1e6 * host_s,
        "one_encode_us": 1e6 * encode_s,
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
