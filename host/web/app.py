"""The Falcon WSGI app: MCP Streamable HTTP on ``/mcp``, plus the probes (:mod:`host.web.probes`).

This module adapts HTTP to the protocol layer and nothing more: it checks what only HTTP knows
(``Origin``, body size, media types), hands the body and headers to the endpoint, and writes the
reply. Every JSON-RPC rule lives in :mod:`host.protocol`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import falcon

from host import jsonvalues
from host.approvals.probe import PROBE_PATH, StoreProbeResource
from host.assembly import Assembly, assemble, ensure_secret
from host.auth import Authenticator, Identity, protected_resource_paths
from host.errors import ProtocolError, SettingsError
from host.limits import CALLER, note_refused
from host.machine import Machine
from host.machine.timing import RUNNER
from host.pages import EMPTY_INBOX, Inbox, mount_pages
from host.protocol import Endpoint, Reply, RequestContext
from host.protocol.context import media_types
from host.protocol.jsonrpc import INVALID_REQUEST, error, failure, request_id_of
from host.settings import Settings
from host.spec.model import Project
from host.web.admission import Admission, Held
from host.web.approvals_api import add_approvals_api
from host.web.auth import Gate, MetadataResource
from host.web.lifecycle import STOPPING, client_gone, until_gone
from host.web.probes import HealthResource, MetricsResource, ReadyResource

__all__ = [
    "McpResource",
    "build_app",
    "create_app",
    "no_sign_in",
    "origin_allowed",
    "request_context",
]

log = logging.getLogger("host.web")

#: Why a host with scoped tools and no auth settings does not serve over HTTP.
UNPROTECTED = (
    "the specs name scopes ({scopes}) but no auth is configured, so over HTTP they would protect "
    "nothing: set HOST_AUTH_ISSUER and HOST_AUTH_AUDIENCE (an identity provider) or "
    "HOST_AUTH_TOKENS (static tokens made by `host token create`), or remove the scopes"
)

NO_APPROVERS = (
    "the specs have approve steps ({tools}) but no auth is configured, so nobody could sign in "
    "to decide: set HOST_AUTH_ISSUER and HOST_AUTH_AUDIENCE (an identity provider) or "
    "HOST_AUTH_TOKENS (static tokens made by `host token create`)"
)

NO_ANSWERERS = (
    "the specs have URL asks ({tools}) but no auth is configured, so nobody could sign in to "
    "the pages that ask them: set HOST_AUTH_ISSUER and HOST_AUTH_AUDIENCE (an identity "
    "provider) or HOST_AUTH_TOKENS (static tokens made by `host token create`)"
)


def no_sign_in(approving: Sequence[str], asking: Sequence[str]) -> str | None:
    """Why tools whose steps need a person signed in (``approving`` tools with approve steps,
    ``asking`` tools with URL asks) cannot be served without auth; None when there are none."""
    reasons = [
        text.format(tools=", ".join(tools))
        for text, tools in ((NO_APPROVERS, approving), (NO_ANSWERERS, asking))
        if tools
    ]
    return "; and ".join(reasons) or None


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


class EnvironHeaders(Mapping[str, str]):
    """A request's headers by lower-case name, read from the WSGI environ when asked for.

    NOTE: the protocol looks up a handful of headers per request; copying all of them into a
    dict first cost more than every lookup together.
    """

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str):
            raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        """The header's value, or ``default`` when the request has none.

        NOTE: Mapping's own ``get`` raises and catches a KeyError for each absent header, and
        most of those the protocol asks for (trace context, a session id) are absent.
        """
        key = _ENVIRON_KEYS.get(name)
        if key is None:
            key = name.upper().replace("-", "_")
            key = _ENVIRON_KEYS[name] = key if key in _UNPREFIXED else "HTTP_" + key
        value = self._environ.get(key)
        return value if isinstance(value, str) else default

    def __iter__(self) -> Iterator[str]:
        for key, value in self._environ.items():
            if isinstance(value, str) and (key.startswith("HTTP_") or key in _UNPREFIXED):
                yield key.removeprefix("HTTP_").replace("_", "-").lower()

    def __len__(self) -> int:
        return sum(1 for _ in self)


_UNPREFIXED = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})
#: Each header name the protocol asked for, and its key in the WSGI environ (a few dozen names).
_ENVIRON_KEYS: dict[str, str] = {}


def request_context(req: falcon.Request, identity: Identity) -> RequestContext:
    """The protocol's view of an HTTP request: its headers and who is calling."""
    return RequestContext.http(EnvironHeaders(req.env), identity)


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether a request's ``Origin`` may call.

    No ``Origin`` (not a browser) is allowed. With no list configured, only local origins
    (``http(s)://localhost``, ``127.0.0.1``, ``[::1]``, any port) are; with a list, exactly
    those (``*`` allows any).
    """
    if origin is None:
        return True
    origin = origin.strip().rstrip("/").lower()
    if allowed:
        return "*" in allowed or origin in {a.rstrip("/").lower() for a in allowed}
    try:
        parts = urlsplit(origin)
        host = parts.hostname
        _ = parts.port  # NOTE: raises ValueError for a malformed port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or host is None:
        return False
    return host in _LOCAL_HOSTS or f"[{host}]" in _LOCAL_HOSTS


def _json_error(resp: falcon.Response, status: int, message: str) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(failure(None, error(INVALID_REQUEST, message)))


class McpResource:
    """``/mcp``: one JSON-RPC message per POST, from a caller the gate let in.

    Args:
        endpoint: The protocol endpoint.
        settings: For the allowed origins, the body limit and the limits per caller.
        gate: Who may call (every request, every method, authenticated first).
    """

    def __init__(self, endpoint: Endpoint, settings: Settings, gate: Gate) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self.gate = gate
        self.admission = Admission(settings.limits, gate.authenticator.enabled)

    def _admit(
        self, resp: falcon.Response, identity: Identity, session: str | None, body: bytes | None
    ) -> Held | None:
        """The slots of a request within its caller's limits; None after answering 429 (with
        the id of ``body``'s request, when it has one: it is read only then)."""
        try:
            return self.admission.enter(identity, session)
        except ProtocolError as exc:
            log.info(
                "request over a limit",
                extra={"event": "limit_refused", "principal": identity.principal,
                       "reason": exc.message},
            )  # fmt: skip
            note_refused()
            resp.status = exc.http_status
            resp.set_header("Retry-After", str(exc.data["retryAfter"]))
            resp.content_type = falcon.MEDIA_JSON
            request_id = request_id_of(body) if body is not None else None
            resp.text = json.dumps(failure(request_id, exc))
            return None

    def _caller(self, req: falcon.Request, resp: falcon.Response) -> Identity | None:
        """The caller, once the origin and the token are checked; None when refused."""
        if not self._origin_ok(req, resp):
            return None
        return self.gate.identify(req, resp)

    def _origin_ok(self, req: falcon.Request, resp: falcon.Response) -> bool:
        if origin_allowed(req.env.get("HTTP_ORIGIN"), self.settings.allowed_origins):
            return True
        log.warning(
            "origin refused", extra={"event": "origin_refused", "origin": req.get_header("Origin")}
        )
        _json_error(resp, 403, "Forbidden: this Origin may not call this server")
        return False

    def _not_allowed(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self._caller(req, resp) is None:
            return
        resp.set_header("Allow", "POST")
        _json_error(resp, 405, f"Method not allowed: {req.method} /mcp; send JSON-RPC with POST")

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """A legacy session's stream of server messages; 405 without a session.

        NOTE: the modern revision has no server-to-client stream, so a GET that names no
        session has nothing to open.
        """
        if req.get_header("Mcp-Session-Id") is None:
            self._not_allowed(req, resp)
            return
        identity = self._caller(req, resp)
        if identity is None:
            return
        resp.set_header("Cache-Control", "no-store")
        accept = req.get_header("Accept") or ""
        if "text/event-stream" not in accept.lower():
            _json_error(resp, 406, "Not acceptable: the Accept header must allow text/event-stream")
            return
        held = self._admit(resp, identity, req.get_header("Mcp-Session-Id"), None)
        if held is None:
            return
        gone = client_gone(req.env)
        try:
            reply = self.endpoint.listen(request_context(req, identity), STOPPING, gone)
        except BaseException:
            held.close()
            raise
        if reply is None:
            held.close()
            self._not_allowed(req, resp)
            return
        self._write(req, resp, reply, held)

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        """End the legacy session ``Mcp-Session-Id`` names (204); 405 without one.

        NOTE: the modern revision has no sessions, so a DELETE that names none has nothing to end.
        """
        if req.get_header("Mcp-Session-Id") is None:
            self._not_allowed(req, resp)
            return
        identity = self._caller(req, resp)
        if identity is None:
            return
        resp.set_header("Cache-Control", "no-store")
        reply = self.endpoint.end_session(request_context(req, identity))
        if reply is None:
            self._not_allowed(req, resp)
            return
        self._write(req, resp, reply)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """One JSON-RPC message in, one reply out."""
        resp.set_header("Cache-Control", "no-store")
        identity = self._caller(req, resp)
        if identity is None:
            return
        # NOTE: the headers read from the environ as Falcon's own accessors read them, without
        # their per-call name mangling: every request reads each of them.
        if not _accepts_json(req.env.get("HTTP_ACCEPT")):
            _json_error(resp, 406, "Not acceptable: the Accept header must allow application/json")
            return
        content_type = req.content_type
        if content_type and content_type.split(";")[0].strip().lower() != falcon.MEDIA_JSON:
            _json_error(resp, 415, "Unsupported media type: send application/json")
            return
        body = self._read_body(req, resp)
        if body is None:
            return
        held = self._admit(resp, identity, None, body)
        if held is None:
            return
        token = CALLER.set(held.principal)
        try:
            reply = self.endpoint.handle(body, request_context(req, identity))
        except BaseException:
            held.close()
            raise
        finally:
            CALLER.reset(token)
        self._write(req, resp, reply, held)

    def _read_body(self, req: falcon.Request, resp: falcon.Response) -> bytes | None:
        limit = self.settings.max_body
        length = req.content_length
        if length is not None and length > limit:
            _json_error(resp, 413, f"Request body too large: the limit is {limit} bytes")
            return None
        if length is not None:
            # NOTE: what Falcon's bounded stream reads (at most Content-Length), without making
            # one per request.
            body: bytes = req.stream.read(length) if length else b""
            return body
        # NOTE: a chunked body has no Content-Length, and Falcon's bounded stream would read it
        # as empty; the server's own stream knows where a chunked body ends.
        if "chunked" not in req.env.get("HTTP_TRANSFER_ENCODING", "").lower():
            return b""
        body = req.stream.read(limit + 1)
        if len(body) > limit:
            _json_error(resp, 413, f"Request body too large: the limit is {limit} bytes")
            return None
        return body

    def _write(
        self, req: falcon.Request, resp: falcon.Response, reply: Reply, held: Held | None = None
    ) -> None:
        if held is not None and reply.stream is None:
            held.close()
        if reply.status == 429:
            note_refused()  # NOTE: a limit the protocol applies (handler threads, approvals)
        resp.status = reply.status
        if reply.scopes:
            self.gate.forbid(resp, reply.scopes)
        for name, value in reply.headers.items():
            resp.set_header(name, value)
        if reply.stream is not None:
            resp.content_type = "text/event-stream"
            stream = until_gone(reply.stream, client_gone(req.env))
            resp.stream = held.stream(stream) if held is not None else stream
        elif reply.body is not None:
            resp.content_type = falcon.MEDIA_JSON
            resp.text = jsonvalues.dumps(reply.body)


def _accepts_json(accept: str | None) -> bool:
    return not accept or bool(media_types(accept) & {"application/json", "application/*", "*/*"})


def create_app(
    specs_dir: str | Path | None = None,
    handlers_dir: str | Path | None = None,
    *,
    settings: Settings | None = None,
    project: Project | None = None,
    machines: Mapping[str, Machine] | None = None,
    authenticator: Authenticator | None = None,
    approvals: Inbox | None = None,
    store_checked: bool = False,
) -> falcon.App[falcon.Request, falcon.Response]:
    """The WSGI app serving one spec directory.

    Args:
        specs_dir: The spec directory (overrides ``settings``).
        handlers_dir: The handlers directory (overrides ``settings``).
        settings: Deployment settings; read from ``HOST_*`` variables when None.
        project: An already checked project to serve instead of loading ``specs_dir``.
        machines: ``project`` already compiled.
        authenticator: Checks callers' tokens; built from ``settings.auth`` when None.
        approvals: The approval requests the inbox pages show (none when None).
        store_checked: The master checked the store (see :func:`host.assembly.assemble`).

    Raises:
        host.errors.SpecError: The specs have problems (every diagnostic is attached).
        host.errors.StoreError: The store cannot be opened.
        host.errors.SettingsError: The specs name scopes but no auth is configured (over HTTP
            they would protect nothing).
    """
    settings = settings or Settings.from_env()
    if specs_dir is not None:
        settings = replace(settings, specs_dir=Path(specs_dir))
    if handlers_dir is not None:
        settings = replace(settings, handlers_dir=Path(handlers_dir))
    if not settings.secrets:
        log.warning(
            "HOST_SECRET is not set: requestState and legacy session ids are signed with the "
            "secret kept in the data directory, which only processes on this machine share. "
            "Set HOST_SECRET to the same value on every instance.",
            extra={"event": "generated_secret"},
        )
    authenticator = authenticator or _authenticator(settings)
    served = assemble(settings, project, machines=machines, store_checked=store_checked)
    return build_app(served, authenticator, approvals)


def build_app(
    served: Assembly, authenticator: Authenticator, approvals: Inbox | None = None
) -> falcon.App[falcon.Request, falcon.Response]:
    """The WSGI app serving an assembled host, its callers checked by ``authenticator``.

    The pages (:mod:`host.pages`) are served where callers authenticate, on ``approvals``.

    Raises:
        host.errors.SettingsError: The specs name scopes but no auth is configured (the store
            is closed then).
    """
    settings = served.settings
    scopes = {s for m in served.machines.values() for s in m.scopes}
    if scopes and not authenticator.enabled:
        served.store.close()
        raise SettingsError(
            UNPROTECTED.format(scopes=", ".join(sorted(scopes))), "HOST_AUTH_ISSUER"
        )
    machines = served.machines.values()
    refused = no_sign_in(
        [m.name for m in machines if m.approves], [m.name for m in machines if m.asks_on_pages]
    )
    if refused is not None and not authenticator.enabled:
        served.store.close()
        raise SettingsError(refused, "HOST_AUTH_ISSUER")
    gate = Gate(authenticator, scopes, observers=served.observers)
    RUNNER.limit_callers(settings.limits.handler_threads if authenticator.enabled else None)
    app: falcon.App[falcon.Request, falcon.Response] = falcon.App()
    app.add_route("/mcp", McpResource(served.endpoint, settings, gate))
    if authenticator.enabled and served.approvals is not None:
        # NOTE: every decision establishes the person again, now. Without auth no route of
        # this app decides (no pages, no API): only in-process callers, such as the test kit,
        # whose identities are taken as given.
        served.approvals.authenticator = authenticator
        add_approvals_api(app, served.approvals, gate)
    if authenticator.enabled:  # NOTE: where the pages are: host stdio asks (probe)
        app.add_route(PROBE_PATH + "{name}", StoreProbeResource(served.store))
    for path in protected_resource_paths(settings.auth):
        app.add_route(path, MetadataResource(gate))
    app.add_route("/healthz", HealthResource())
    app.add_route("/readyz", ReadyResource(served.store, len(served.machines), served.metrics))
    if served.metrics is not None:
        app.add_route("/metrics", MetricsResource(served.metrics))
    keys = settings.secrets or (ensure_secret(settings.data_dir),)
    inbox = approvals if approvals is not None else served.approvals or EMPTY_INBOX
    mount_pages(
        app, authenticator, inbox, keys, settings.auth.browser, served.url_asks, served.store
    )
    return app


def _authenticator(settings: Settings) -> Authenticator:
    """The worker's authenticator; a problem reaching the issuer now is logged, not fatal."""
    authenticator = Authenticator(settings.auth)
    problem = authenticator.warm_up()
    if problem is not None:
        log.warning(
            "the issuer's keys could not be fetched at start-up: %s",
            problem,
            extra={"event": "auth_warm_up_failed"},
        )
    return authenticator
