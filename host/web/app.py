"""The WSGI app: MCP Streamable HTTP on ``/mcp`` (:mod:`host.web.mcp`), the probes
(:mod:`host.web.probes`), the approvals API and the pages, put together for one spec directory.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import falcon

from host.approvals.probe import PROBE_PATH, StoreProbeResource
from host.assembly import Assembly, assemble, ensure_secret
from host.auth import Authenticator, protected_resource_paths
from host.errors import SettingsError
from host.machine import Machine
from host.machine.timing import RUNNER
from host.pages import EMPTY_INBOX, Inbox, mount_pages
from host.settings import Settings
from host.spec.model import Project
from host.web.approvals_api import add_approvals_api
from host.web.auth import Gate, MetadataResource
from host.web.front import HostApp
from host.web.mcp import EnvironHeaders, McpResource, origin_allowed, request_context
from host.web.probes import HealthResource, MetricsResource, ReadyResource

__all__ = [
    "EnvironHeaders",
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
    app = HostApp(McpResource(served.endpoint, settings, gate))
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
