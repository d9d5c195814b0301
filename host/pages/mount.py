"""The pages' routes on the app: served only where callers authenticate."""

from __future__ import annotations

from importlib.resources import files

import falcon

from host.auth import INSTALL_HINT, Authenticator, AuthSettingsError
from host.auth.browser_settings import BrowserSettings
from host.pages.asks import ASK_PAGE, AskPageResource, AskRedirectResource
from host.pages.inbox import HistoryResource, InboxResource, RequestResource
from host.pages.render import Pages, secure_headers
from host.pages.service import Inbox
from host.pages.session import Sessions
from host.pages.signin import (
    CALLBACK,
    CallbackResource,
    SignInResource,
    SignOutResource,
    StartResource,
)
from host.pages.site import Site
from host.protocol.url_asks import ASK_PATH, UrlAskBook
from host.store import Store

__all__ = ["STYLESHEET", "mount_pages"]

STYLESHEET = "/approvals/static/pages.css"


class StylesheetResource:
    """The pages' one stylesheet, served by the host (the CSP allows no other)."""

    def __init__(self) -> None:
        self.css = files("host.pages").joinpath("static", "pages.css").read_bytes()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The CSS, cacheable for an hour."""
        secure_headers(resp)
        resp.cache_control = ["public", "max-age=3600"]
        resp.content_type = "text/css; charset=utf-8"
        resp.data = self.css


class NotFoundSink:
    """Any other path under ``/approvals``: a 404 page, not the framework's default."""

    def __init__(self, site: Site) -> None:
        self.site = site

    def __call__(self, req: falcon.Request, resp: falcon.Response, **_: str) -> None:
        """The 404 page."""
        self.site.refuse(resp, 404, "Not found", "There is no such page.")


def mount_pages(
    app: falcon.App[falcon.Request, falcon.Response],
    authenticator: Authenticator,
    service: Inbox,
    keys: tuple[str, ...],
    settings: BrowserSettings,
    asks: UrlAskBook | None = None,
    store: Store | None = None,
) -> None:
    """Add the sign-in and inbox pages to ``app`` (nothing without auth settings).

    Raises:
        host.auth.AuthSettingsError: A sign-in client is configured but Authlib is missing.

    Args:
        app: The host's app.
        authenticator: Checks the people signing in.
        service: The approval requests.
        keys: Signing keys for the cookies, newest first.
        settings: The sign-in client and the public URL.
        asks: The URL asks, whose pages are served too.
        store: Where the sessions live (required where the pages are served).
    """
    if not authenticator.enabled:
        return
    if store is None:
        raise ValueError("the pages keep their sessions in the store: give one")
    oidc = None
    if settings.oidc and authenticator.settings.issuer is not None:
        try:
            from host.auth.browser import OidcSignIn
        except ImportError as exc:
            raise AuthSettingsError(
                f"HOST_AUTH_CLIENT_ID is set, so people sign in with the issuer, which needs "
                f"Authlib ({exc}); install it: {INSTALL_HINT}"
            ) from None
        oidc = OidcSignIn(authenticator, settings)
    secure = None if settings.public_url is None else settings.secure_cookies(settings.public_url)
    sessions = Sessions(keys, secure, store.sessions)
    site = Site(
        Pages(settings.public_url or ""), sessions, service, authenticator, oidc,
        settings.public_url,
    )  # fmt: skip
    app.add_route("/approvals", InboxResource(site))
    app.add_route("/approvals/history", HistoryResource(site))
    app.add_route("/approvals/requests/{request_id}", RequestResource(site))
    app.add_route("/approvals/sign-in", SignInResource(site))
    app.add_route("/approvals/sign-in/start", StartResource(site))
    app.add_route(CALLBACK, CallbackResource(site))
    app.add_route("/approvals/sign-out", SignOutResource(site))
    app.add_route(STYLESHEET, StylesheetResource())
    if asks is not None:
        app.add_route(ASK_PATH + "{ask_id}", AskRedirectResource(site))
        app.add_route(ASK_PAGE + "{ask_id}", AskPageResource(site, asks))
    app.add_sink(NotFoundSink(site), r"/approvals/(?!api(/|$))")
