"""The ceiling: a bare Falcon WSGI endpoint that does only what any MCP server must.

``POST /mcp`` reads the body, decodes the JSON-RPC request, and answers with a JSON result of the
same size as the real server's answer to the same request: ``list_outbox`` gets the size of a
finished plain call; ``close_ticket`` without ``requestState`` the size of an ``input_required``
result (with a fixed ``requestState`` the client echoes); with ``requestState`` the size of the
finished exchange. No header checks, no validation, no state, no database. Served under the very
same gunicorn settings as the host, the gap between the two is the host's own cost.

``CEILING_SIZES`` is ``PLAIN,ASK,DONE``: the byte sizes of the three response bodies to imitate
(defaults are the help-desk host's sizes measured once; ``bench/run.py`` passes the sizes it
measured in the same run).

Run: ``CEILING_SIZES=255,889,290 gunicorn -k gthread bench.ceiling:app``
"""

from __future__ import annotations

import json
import os
from typing import Any

import falcon

__all__ = ["DEFAULT_SIZES", "Ceiling", "app", "make_app"]

DEFAULT_SIZES = (255, 889, 290)
_STATE = "ceiling-state"


def _padded(result: dict[str, Any], size: int) -> dict[str, Any]:
    """``result`` with a ``_meta`` pad so the JSON-RPC response body is ``size`` bytes long."""
    out = {**result, "_meta": {"pad": ""}}
    base = len(json.dumps({"jsonrpc": "2.0", "id": 1, "result": out}, separators=(",", ":")))
    out["_meta"] = {"pad": "x" * max(0, size - base)}
    return out


class Ceiling:
    """``POST /mcp``: parse the request, answer a same-sized result."""

    def __init__(self, sizes: tuple[int, int, int]) -> None:
        plain, ask, done = sizes
        text = {"content": [{"type": "text", "text": "{}"}], "isError": False}
        self._plain = _padded({"resultType": "complete", **text}, plain)
        self._ask = _padded(
            {"resultType": "input_required", "inputRequests": {}, "requestState": _STATE}, ask
        )
        self._done = _padded({"resultType": "complete", **text}, done)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Answer one JSON-RPC request."""
        message = json.loads(req.bounded_stream.read())
        params = message.get("params") or {}
        if "requestState" in params:
            result = self._done
        elif params.get("name") == "close_ticket":
            result = self._ask
        else:
            result = self._plain
        body = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
        resp.data = json.dumps(body, separators=(",", ":")).encode()
        resp.content_type = falcon.MEDIA_JSON


def make_app(sizes: tuple[int, int, int] = DEFAULT_SIZES) -> falcon.App[Any, Any]:
    """The WSGI app with the one route."""
    wsgi = falcon.App()
    wsgi.add_route("/mcp", Ceiling(sizes))
    return wsgi


def _sizes() -> tuple[int, int, int]:
    raw = os.environ.get("CEILING_SIZES")
    if not raw:
        return DEFAULT_SIZES
    parts = tuple(int(x) for x in raw.split(","))
    if len(parts) != 3:
        raise SystemExit(f"CEILING_SIZES must be PLAIN,ASK,DONE byte sizes, not {raw!r}")
    return parts[0], parts[1], parts[2]


app = make_app(_sizes())
