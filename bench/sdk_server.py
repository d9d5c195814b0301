"""The help-desk tools on the official MCP Python SDK (2.3.0), the benchmark's baseline.

Serves ``list_outbox`` (read-only, no question) and ``close_ticket`` (read the ticket, ask a yes/no
question, then act) with the SDK's own machinery: ``MCPServer``, its ``input_required`` rounds on
2026-07-28, its sealed ``requestState`` and its Streamable HTTP app. The tools call the very same
SQLite handlers as the host, so both servers do the same work per call.

Run it as the SDK's docs do, with uvicorn::

    SDK_BENCH_CONFIG=fastest uvicorn bench.sdk_server:app --host 127.0.0.1 --port 8001

Environment:

- ``SDK_BENCH_CONFIG``: ``fastest`` (``json_response=True, stateless_http=True``) or ``default``
  (the SDK's defaults). On 2026-07-28 only ``json_response`` changes the path a request takes.
- ``SDK_BENCH_ELICIT``: how ``close_ticket`` asks. ``manual`` (default) returns an
  ``InputRequiredResult`` from the tool, as the SDK's deployment guide does; it is the faster of
  the two. ``resolver`` hangs the question on a parameter with ``Resolve(...)`` and ``Elicit(...)``,
  the form the SDK's elicitation guide recommends.
- ``SDK_BENCH_SECRET``: hex key (at least 32 bytes) that seals ``requestState``; shared by all
  workers, as the SDK's deployment guide asks. Random when unset.
- ``SDK_BENCH_HANDLERS``: the handlers directory (default: the example's ``handlers/``).

Tools and resolvers are ``async def``: a plain ``def`` runs in a worker thread, which costs the
SDK about a quarter of its throughput here; the SQLite calls are short enough to run inline.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

# NOTE: a handlers directory is not a package; put it on sys.path as the host does, so both
# servers import the very same module.
_HANDLERS = os.environ.get("SDK_BENCH_HANDLERS") or str(
    Path(__file__).resolve().parent.parent / "handlers"
)
sys.path.insert(0, _HANDLERS)
helpdesk: Any = importlib.import_module("helpdesk")

__all__ = ["CONFIGS", "ELICIT", "app", "build_server"]

CONFIGS: dict[str, dict[str, bool]] = {
    "fastest": {"json_response": True, "stateless_http": True},
    "default": {"json_response": False, "stateless_http": False},
}
ELICIT = ("manual", "resolver")
_LABEL = "Tick to close the ticket"
_NO = {"closed": False, "reason": "The user said no. Leave the ticket open."}
_UNTICKED = {"closed": False, "reason": "The user didn't tick the box."}


class Confirm(BaseModel):
    """The yes/no form: one boolean named ``confirm``, like the host's ``confirm:`` step."""

    confirm: bool = Field(description=_LABEL)


def _message(id: str, ticket: dict[str, Any]) -> str:
    return f'Close {id} ("{ticket["title"]}") and email the customer that it\'s resolved?'


async def read_ticket(id: str) -> dict[str, Any]:
    """The ticket, or a tool error the model can read (the spec's ``missing:``)."""
    ticket = helpdesk.get_ticket(id)
    if ticket is None:
        raise ToolError(f"There's no ticket {id}.")
    return dict(ticket)


async def ask_close(
    id: str, ticket: Annotated[dict[str, Any], Resolve(read_ticket)]
) -> Elicit[Confirm]:
    """Always ask; the question depends only on the arguments and the ticket, so it is stable."""
    return Elicit(_message(id, ticket), Confirm)


def _add_close_manual(mcp: MCPServer) -> None:
    schema = {
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "description": _LABEL}},
        "required": ["confirm"],
    }

    @mcp.tool(title="Close ticket", annotations=ToolAnnotations(destructive_hint=True))
    async def close_ticket(id: str, ctx: Context) -> dict[str, Any] | InputRequiredResult:
        """Close a support ticket and email the customer that it's resolved. Asks first."""
        ticket = await read_ticket(id)
        # NOTE: the SDK seals and checks the state (method, tool, arguments, expiry); our own
        # tag says which question the answer belongs to, as its guide asks.
        if ctx.input_responses is None or ctx.request_state != f"close:{id}":
            form = ElicitRequestFormParams(message=_message(id, ticket), requested_schema=schema)
            return InputRequiredResult(
                input_requests={"close": ElicitRequest(params=form)}, request_state=f"close:{id}"
            )
        answer = ctx.input_responses.get("close")
        if not isinstance(answer, ElicitResult) or answer.action != "accept":
            return {"id": id, **_NO}
        if not (answer.content or {}).get("confirm"):
            return {"id": id, **_UNTICKED}
        return dict(helpdesk.close_ticket(id, ticket))


def _add_close_resolver(mcp: MCPServer) -> None:
    @mcp.tool(title="Close ticket", annotations=ToolAnnotations(destructive_hint=True))
    async def close_ticket(
        id: str,
        ticket: Annotated[dict[str, Any], Resolve(read_ticket)],
        answer: Annotated[ElicitationResult[Confirm], Resolve(ask_close)],
    ) -> dict[str, Any]:
        """Close a support ticket and email the customer that it's resolved. Asks first."""
        if not isinstance(answer, AcceptedElicitation):
            return {"id": id, **_NO}
        if not answer.data.confirm:
            return {"id": id, **_UNTICKED}
        return dict(helpdesk.close_ticket(id, ticket))


def build_server(secret: bytes, elicit: str = "manual") -> MCPServer:
    """The SDK server with the two benchmark tools."""
    mcp = MCPServer(
        "help-desk",
        version="1.0.0",
        instructions="Tools for the support desk.",
        request_state_security=RequestStateSecurity(keys=[secret]),
        # NOTE: nothing per request at WARNING, like the host and gunicorn's defaults.
        log_level="WARNING",
    )

    @mcp.tool(title="List outbox", annotations=ToolAnnotations(read_only_hint=True))
    async def list_outbox() -> dict[str, Any]:
        """List the emails sent to customers."""
        return dict(helpdesk.list_outbox())

    if elicit == "resolver":
        _add_close_resolver(mcp)
    else:
        _add_close_manual(mcp)
    return mcp


def _app() -> Any:
    config = os.environ.get("SDK_BENCH_CONFIG", "fastest")
    if config not in CONFIGS:
        raise SystemExit(f"SDK_BENCH_CONFIG must be one of {sorted(CONFIGS)}, not {config!r}")
    elicit = os.environ.get("SDK_BENCH_ELICIT", "manual")
    if elicit not in ELICIT:
        raise SystemExit(f"SDK_BENCH_ELICIT must be one of {list(ELICIT)}, not {elicit!r}")
    raw = os.environ.get("SDK_BENCH_SECRET")
    secret = bytes.fromhex(raw) if raw else os.urandom(32)
    options = CONFIGS[config]
    return build_server(secret, elicit).streamable_http_app(
        json_response=options["json_response"], stateless_http=options["stateless_http"]
    )


app = _app()
