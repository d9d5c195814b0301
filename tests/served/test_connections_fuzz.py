"""Kept-alive connections under early refusals and a fuzz: ``host serve``, two workers, static
tokens, the approve fixture.

A request refused before its body is read (401 without a token, 406, 413, 415) used to leave
the rest of a large body on the connection; gunicorn then closed it after a response that said
``keep-alive``, and the client's next request on it was lost without an answer. Now the body is
drained (bounded) or the response says ``Connection: close``: every request gets an answer.

The fuzz sends seeded mutations of MCP and approvals requests (methods, paths, headers, tokens,
bodies: flipped bytes, cut JSON, values of the wrong type, large and deep bodies, chunked
framing) over kept-alive connections, several at once. Nothing may answer 5xx but the documented
503, every request gets an answer, and the host's log holds no traceback. ``HOST_FUZZ_REQUESTS``
sets how many (CI: 20000, seven to twenty seconds; run it by hand with 100000 for a longer
exercise), ``HOST_FUZZ_SEED`` the seed (a failure prints the request that found it).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

from support.approvals import SPECS, VERSION, make_tokens, round_trip
from support.servers import Server, host_serve

pytestmark = pytest.mark.served

REQUESTS = int(os.environ.get("HOST_FUZZ_REQUESTS") or 20000)
SEED = int(os.environ.get("HOST_FUZZ_SEED") or 20261204)
#: Connections sending at once.
CONNECTIONS = 4
#: How long one request may take to be answered (the fixture's tools never wait long).
ANSWER_S = 20.0


@dataclass
class Fuzzed:
    server: Server
    tokens: dict[str, str]
    pending: str


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    folder = tmp_path_factory.mktemp("connections")
    path, tokens = make_tokens(folder)
    with host_serve(
        folder, "host", "--workers", "2", specs=SPECS,
        HOST_AUTH_TOKENS=str(path), OPS_ACTS=str(folder / "acts.jsonl"),
    ) as server:  # fmt: skip
        yield Fuzzed(server, tokens, _a_pending_request(server, tokens["alice"]))


def _a_pending_request(server: Server, token: str) -> str:
    """The id of a request of alice's left pending (``purge_cache`` does not wait)."""
    conn = server.connect()
    asked = round_trip(conn, token, "purge_cache", {"service": "fuzz"})
    answers = {"inputResponses": {"sure": _YES}, "requestState": asked["requestState"]}
    done = round_trip(conn, token, "purge_cache", {"service": "fuzz"}, **answers)
    request: str = done["_meta"]["host/approval"]["request"]
    return request


_YES = {"action": "accept", "content": {"confirm": True}}


def _call(tool: str, arguments: Any, responses: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    }
    if responses is not None:
        params["inputResponses"] = responses
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def _mcp_headers(token: str | None, name: str = "") -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
    }
    if name:
        headers["Mcp-Name"] = name
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _exchange(
    conn: http.client.HTTPConnection, method: str, path: str, headers: dict[str, str], body: Any
) -> tuple[int, Any, bool]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request(method, path, data, headers)
    response = conn.getresponse()
    raw = response.read()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw
    return response.status, parsed, response.will_close


# -- the refused large body, then a request on the same raw connection -------------------------


def _read_response(stream: Any) -> tuple[int, dict[str, str]] | None:
    status = stream.readline()
    if not status:
        return None
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    stream.read(int(headers.get("content-length", "0")))
    return int(status.split()[1]), headers


@pytest.mark.parametrize(
    ("extra", "size", "refused"),
    [
        ("", 70_000, 401),  # no token
        ("Authorization: Bearer host_revoked\r\n", 70_000, 401),
        ("Authorization: Bearer {token}\r\nContent-Type: text/plain\r\n", 70_000, 415),
        ("Authorization: Bearer {token}\r\n", 3_000_000, 413),  # over HOST_MAX_BODY
    ],
)
def test_a_body_refused_before_it_is_read_leaves_the_next_request_answered(
    host: Fuzzed, extra: str, size: int, refused: int
) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"' + b"a" * size + b'"}'
    extra = extra.format(token=host.tokens["alice"])
    media = "" if "Content-Type" in extra else "Content-Type: application/json\r\n"
    first = (
        f"POST /mcp HTTP/1.1\r\nHost: h\r\n{media}{extra}Accept: application/json, "
        f"text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/list\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    then = b"GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n"
    answered = 0
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", host.server.port), timeout=15) as sock:
            stream = sock.makefile("rb")
            # NOTE: a server that answered and closed may refuse the rest of a huge body
            with contextlib.suppress(OSError):
                sock.sendall(first)
            got = _read_response(stream)
            assert got is not None and got[0] == refused, got
            if got[1].get("connection") == "close":
                answered += 1  # told: the client opens a new connection for its next request
                continue
            sock.sendall(then)
            after = _read_response(stream)
            answered += after is not None and after[0] == 200
    assert answered == 30


# -- the fuzz --------------------------------------------------------------------------------


@dataclass
class Outcome:
    sent: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def test_a_seeded_fuzz_of_mcp_and_approvals_requests_gets_answers_and_no_5xx(
    host: Fuzzed,
) -> None:
    """REQUESTS (20000 in CI) mutated requests over CONNECTIONS kept-alive connections."""
    outcome = Outcome()
    share = REQUESTS // CONNECTIONS
    threads = [
        threading.Thread(target=_fuzz, args=(host, random.Random(SEED + i), share, outcome))
        for i in range(CONNECTIONS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not outcome.failures, "\n".join(outcome.failures[:5])
    assert outcome.sent == share * CONNECTIONS
    assert not [s for s in outcome.statuses if s >= 500 and s != 503], outcome.statuses
    assert len(outcome.statuses) > 5  # the mutations reach many answers, not one refusal
    log = host.server.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:6000]


def _fuzz(host: Fuzzed, rng: random.Random, count: int, outcome: Outcome) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", host.server.port, timeout=ANSWER_S)
    try:
        for _ in range(count):
            method, path, headers, body = _mutated(host, rng)
            try:
                status, _, closing = _exchange(conn, method, path, headers, body)
            except (OSError, http.client.HTTPException) as exc:
                shown = body[:200] if isinstance(body, bytes) else body
                with outcome.lock:
                    outcome.sent += 1
                    outcome.failures.append(
                        f"no answer ({exc!r}) to {method} {path} {headers} {shown!r}"
                    )
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", host.server.port, timeout=ANSWER_S)
                continue
            with outcome.lock:
                outcome.sent += 1
                outcome.statuses[status] = outcome.statuses.get(status, 0) + 1
                if status >= 500 and status != 503:
                    outcome.failures.append(f"{status} for {method} {path} {headers} {body!r}")
            if closing:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", host.server.port, timeout=ANSWER_S)
    finally:
        conn.close()


_TOOLS = ("delete_database", "purge_cache", "nope", "")
_MCP_METHODS = ("initialize", "tools/list", "tools/call", "ping", "resources/list",
                "notifications/initialized", "prompts/get", "tools/cal")  # fmt: skip
_VERSIONS = (VERSION, VERSION, "2099-01-01", "", "2026-07-28\u00e9", "banana")


def _mutated(host: Fuzzed, rng: random.Random) -> tuple[str, str, dict[str, str], bytes]:
    """One request: a plausible MCP or approvals request, then mutated."""
    token = rng.choice([host.tokens["alice"], host.tokens["bob"], host.tokens["dave"], None,
                        "host_not-a-token", "eyJhbGciOiJub25lIn0.e30."])  # fmt: skip
    if rng.random() < 0.6:
        method, path, headers, body = "POST", "/mcp", _mcp_headers(token), _mcp_body(rng)
        named = body.get("method", "") if isinstance(body, dict) else "x"
        headers["Mcp-Method"] = _header(str(named))
        if rng.random() < 0.2:
            headers["MCP-Protocol-Version"] = rng.choice(_VERSIONS)
    else:
        method, path, headers, body = _approvals_request(host, rng, token)
    raw = json.dumps(body, ensure_ascii=rng.random() < 0.5).encode()
    return _mutate_http(rng, method, path, headers, _mutate_bytes(rng, raw))


def _mcp_body(rng: random.Random) -> Any:
    method = rng.choice(_MCP_METHODS)
    if method == "tools/call":
        tool = rng.choice(_TOOLS)
        responses = rng.choice([None, {"sure": _YES}, {"sure": {"action": "decline"}}, {"x": 1}])
        body: Any = _call(tool, {"service": _junk(rng, 2)}, responses)
    else:
        body = {"jsonrpc": "2.0", "id": rng.choice([1, "a", None, 2**80, 1.5]), "method": method,
                "params": {"protocolVersion": VERSION, "capabilities": {},
                           "clientInfo": {"name": "fuzz", "version": "1"}}}  # fmt: skip
    return _mutate_json(rng, body, 3)


def _approvals_request(
    host: Fuzzed, rng: random.Random, token: str | None
) -> tuple[str, str, dict[str, str], Any]:
    request = rng.choice([host.pending, "apr_unknown", "", "../x", "%00", "apr_" + "a" * 300])
    path = rng.choice([
        "/approvals/api/requests", "/approvals/api/requests?status=pending",
        "/approvals/api/requests?status=" + quote(_text(rng)), f"/approvals/api/requests/{request}",
        f"/approvals/api/requests/{request}/approve", f"/approvals/api/requests/{request}/reject",
        f"/approvals/api/requests/{request}/maybe", "/approvals", "/approvals/sign-in",
        "/approvals/history", f"/approvals/requests/{request}", "/approvals/sign-out",
    ])  # fmt: skip
    method = rng.choice(["GET", "POST", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"])
    headers = {
        "Content-Type": rng.choice(["application/json", "application/x-www-form-urlencoded"])
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = _mutate_json(rng, {"reason": _junk(rng, 2)}, 2)
    return method, path, headers, body


def _junk(rng: random.Random, depth: int) -> Any:
    """A value of any JSON type, sometimes hostile (big, deep, odd characters)."""
    pick = rng.randrange(12)
    if pick == 0 and depth > 0:
        return [_junk(rng, depth - 1) for _ in range(rng.randrange(4))]
    if pick == 1 and depth > 0:
        return {_text(rng): _junk(rng, depth - 1) for _ in range(rng.randrange(4))}
    if pick == 2:
        return rng.choice([0, -1, 2**63, 10**400 if rng.random() < 0.1 else 1e308, 3.5])
    if pick == 3:
        return rng.choice([True, False, None])
    if pick == 4:
        return "x" * rng.choice([1000, 70_000])
    return _text(rng)


def _text(rng: random.Random) -> str:
    alphabet = "abc-_./<>&\"'\\ \n\u00e9\u0456\u202e\u200b\U0001f600"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))


def _header(text: str) -> str:
    """``text`` as a header value can carry it (a line of its own, in Latin-1)."""
    one_line = " ".join(text[:200].split())
    return one_line.encode("latin-1", "replace").decode("latin-1")


def _mutate_json(rng: random.Random, value: Any, times: int) -> Any:
    """``value`` with up to ``times`` of its parts replaced by junk, dropped or duplicated."""
    for _ in range(rng.randrange(times + 1)):
        value = _mutate_once(rng, value)
    return value


def _mutate_once(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        copy = dict(value)
        roll = rng.random()
        if roll < 0.2:
            del copy[key]
        elif roll < 0.6:
            copy[key] = _mutate_once(rng, copy[key])
        else:
            copy[key] = _junk(rng, 3)
        return copy
    if isinstance(value, list) and value and rng.random() < 0.8:
        index = rng.randrange(len(value))
        return [*value[:index], _junk(rng, 2), *value[index + 1 :]]
    return _junk(rng, 3)


def _mutate_bytes(rng: random.Random, raw: bytes) -> bytes:
    roll = rng.random()
    if roll < 0.08:
        return raw[: rng.randrange(len(raw) + 1)]  # cut short
    if roll < 0.16:
        data = bytearray(raw)
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if roll < 0.19:
        return b"[" * 5000 + b"]" * 5000  # deep
    if roll < 0.21:
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\\ud800","y":NaN}'
    if roll < 0.23:
        return b""
    return raw


def _mutate_http(
    rng: random.Random, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[str, str, dict[str, str], bytes]:
    roll = rng.random()
    if roll < 0.05:
        headers.pop("Content-Type", None)
    elif roll < 0.1:
        headers["Content-Type"] = rng.choice(
            ["text/plain", "application/json; charset=latin-1", "multipart/form-data", "x/json"]
        )
    elif roll < 0.15:
        headers["Accept"] = rng.choice(["text/html", "application/xml", "*/*", ""])
    elif roll < 0.18:
        headers["Mcp-Name"] = _header(_text(rng))
    elif roll < 0.2:
        method = rng.choice(["GET", "DELETE", "PATCH"])
    elif roll < 0.23:
        path = path + rng.choice(["?access_token=x", "/../mcp", "%2F", "?a=" + "b" * 3000])
    return method, path, headers, body
