"""JSON-RPC 2.0 framing for MCP: parsing one message, building responses, and the error codes.

Every error the protocol layer raises is a :class:`host.errors.ProtocolError` that already knows
its JSON-RPC code and the HTTP status the Streamable HTTP transport should answer with; the helpers
below build them so the table of statuses lives in one place. Other transports (stdio) ignore the
status.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from host import ids
from host.errors import ProtocolError
from host.frozen import quick_init
from host.protocol import ijson

__all__ = [
    "ELICITATION_DISABLED",
    "HEADER_MISMATCH",
    "HTTP_STATUS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CAPABILITY",
    "PARSE_ERROR",
    "UNSUPPORTED_VERSION",
    "URL_ELICITATION_REQUIRED",
    "Message",
    "Notification",
    "Request",
    "Response",
    "error",
    "failure",
    "internal_error",
    "parse",
    "parse_incoming",
    "request_id_of",
    "success",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
#: 2025-11-25: the request can go on only once a URL elicitation (a host page) is completed.
URL_ELICITATION_REQUIRED = -32042

#: The tool needs to ask a question but the ``kind: server`` spec leaves elicitation off.
#: NOTE: an application code, so outside -32768..-32000 (reserved by JSON-RPC, and -32020..-32099
#: by MCP); clients should match on ``data.type == "ELICITATION_DISABLED"``, not on the number.
ELICITATION_DISABLED = -31001

#: HTTP status of each error code on Streamable HTTP; codes not listed are sent with 200.
HTTP_STATUS: Mapping[int, int] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    INTERNAL_ERROR: 500,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
}

RequestId = str | int
# NOTE: a tuple made once: ``str | int`` written in an isinstance builds a new union each call.
_ID_TYPES = (str, int)

log = logging.getLogger("host.protocol")


@quick_init
@dataclass(frozen=True)
class Request:
    """A JSON-RPC request: it has an ``id`` and wants exactly one response."""

    id: RequestId
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notification:
    """A JSON-RPC notification: no ``id``, no response."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)


Message = Request | Notification


@dataclass(frozen=True)
class Response:
    """A JSON-RPC response a client sends back: the answer to a request the server sent it.

    Exactly one of ``result`` and ``error`` is set. Only legacy sessions send server-to-client
    requests, so only they accept responses.
    """

    id: RequestId
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def error(code: int, message: str, data: Any = None) -> ProtocolError:
    """A :class:`ProtocolError` with the HTTP status that goes with ``code``."""
    return ProtocolError(code, message, data, HTTP_STATUS.get(code, 200))


def parse(body: bytes | str) -> Message:
    """Parse one JSON-RPC message sent by a client.

    Raises:
        ProtocolError: -32700 when the body is not I-JSON (:mod:`host.protocol.ijson`); -32600
            when it is JSON but not one request or notification (a batch, a response, a missing
            ``method``, a bad ``id``).
    """
    message = parse_incoming(body)
    if isinstance(message, Response):
        raise error(INVALID_REQUEST, "Invalid request: responses are not accepted here")
    return message


def parse_incoming(body: bytes | str) -> Message | Response:
    """Parse one JSON-RPC message sent by a client, a response included.

    Raises:
        ProtocolError: as :func:`parse`, and -32600 for a malformed response.
    """
    try:
        value = ijson.loads(body)
    except ijson.StrictJsonError as exc:
        raise error(PARSE_ERROR, exc.problem, exc.data) from None
    except (ValueError, RecursionError) as exc:
        # NOTE: ValueError covers UnicodeDecodeError and over-long integer literals too.
        raise error(PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc})") from None
    if isinstance(value, list):
        raise error(INVALID_REQUEST, "Invalid request: batches are not supported")
    if not isinstance(value, dict):
        raise error(INVALID_REQUEST, "Invalid request: a JSON-RPC message must be a JSON object")
    if value.get("jsonrpc") != "2.0":
        raise error(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
    method = value.get("method")
    if not isinstance(method, str) or not method:
        if "result" in value or "error" in value:
            return _response(value)
        raise error(INVALID_REQUEST, 'Invalid request: "method" must be a non-empty string')
    params = value.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise error(INVALID_REQUEST, 'Invalid request: "params" must be an object')
    if "id" not in value:
        return Notification(method, params)
    request_id = value["id"]
    # NOTE: bool is an int subclass; JSON true/false is not a valid id.
    if not isinstance(request_id, _ID_TYPES) or isinstance(request_id, bool):
        raise error(INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer')
    return Request(request_id, method, params)


def _response(value: dict[str, Any]) -> Response:
    request_id = value.get("id")
    if not isinstance(request_id, _ID_TYPES) or isinstance(request_id, bool):
        raise error(INVALID_REQUEST, 'Invalid response: "id" must be a string or an integer')
    result, err = value.get("result"), value.get("error")
    if ("result" in value) == ("error" in value):
        raise error(INVALID_REQUEST, 'Invalid response: it needs one of "result" and "error"')
    if "result" in value and not isinstance(result, dict):
        raise error(INVALID_REQUEST, 'Invalid response: "result" must be an object')
    if "error" in value and not (
        isinstance(err, dict) and isinstance(err.get("code"), int) and "message" in err
    ):
        raise error(INVALID_REQUEST, 'Invalid response: "error" needs a "code" and a "message"')
    return Response(request_id, result, err)


def request_id_of(body: bytes | str) -> RequestId | None:
    """The ``id`` of a body that failed :func:`parse`, when it can be read at all (else None)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        request_id = value.get("id")
        if isinstance(request_id, int) and not isinstance(request_id, bool):
            return request_id
        # NOTE: an id the error response could not carry (a lone surrogate) is not echoed.
        if isinstance(request_id, str):
            try:
                request_id.encode("utf-8")
            except UnicodeEncodeError:
                return None
            return request_id
    return None


def success(request_id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def failure(request_id: RequestId | None, err: ProtocolError) -> dict[str, Any]:
    """A JSON-RPC error response (``id`` null when the request's id could not be read)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": err.to_error()}


def internal_error(method: str | None) -> ProtocolError:
    """The error for an unexpected failure: logged here with its traceback and an incident id.

    Call it inside the ``except`` block that caught the failure; the client learns only the id.
    """
    incident = ids.incident()
    log.exception(
        "internal error", extra={"event": "internal_error", "method": method, "incident": incident}
    )
    return error(
        INTERNAL_ERROR,
        f"Internal error (incident {incident}); the details are in the server log",
        {"incident": incident},
    )
