"""Signing in and out: with the issuer (OpenID Connect), or with one's own static token."""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Mapping
from typing import Any

import falcon

from host.auth import AuthError, Identity
from host.auth.tokenfile import TOKEN_PREFIX
from host.pages.site import Site, guarded, safe_next

__all__ = ["CallbackResource", "SignInResource", "SignOutResource", "StartResource"]

log = logging.getLogger("host.pages")

CALLBACK = "/approvals/sign-in/callback"


class SignInResource:
    """``/approvals/sign-in``: the page (GET), and its token form (POST)."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The sign-in page; the inbox for someone already signed in."""
        if self.site.sessions.read(req) is not None:
            self.site.pages.redirect(resp, "/approvals")
            return
        self.site.sign_in_page(req, resp, 200)

    @guarded
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Sign in with the static token typed into the form."""
        signin = self.site.sessions.signin(req)
        if signin is None:
            self.site.refuse(resp, 403, "Form refused", "Reload the sign-in page and try again.")
            return
        if not self.site.csrf_ok(req, resp, signin["id"]):
            return
        form = req.get_media(default_when_empty={})
        token = str(form.get("token", "")).strip() if isinstance(form, dict) else ""
        if not self.site.token_form or not token.startswith(TOKEN_PREFIX):
            self.site.sign_in_page(req, resp, 401, "That is not a token of this host.")
            return
        try:
            identity = self.site.authenticator.authenticate(f"Bearer {token}")
        except AuthError as exc:
            _refused(self.site, req, resp, exc, "That token is not valid (or was revoked).")
            return
        _signed_in(self.site, req, resp, identity, signin)


class StartResource:
    """``/approvals/sign-in/start``: off to the issuer, with state, nonce and PKCE kept here."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Redirect to the issuer's authorization endpoint."""
        oidc = self.site.oidc
        if oidc is None:
            self.site.refuse(resp, 404, "Not found", "This host has no sign-in with an issuer.")
            return
        try:
            start = oidc.start(self.site.base(req) + CALLBACK)
        except AuthError as exc:
            log.warning(
                "sign-in unavailable", extra={"event": "pages_oidc_down", "reason": exc.reason}
            )
            self.site.sign_in_page(req, resp, 503, "The sign-in service cannot be reached now.")
            return
        signin = self.site.sessions.signin(req) or {}
        self.site.sessions.set_signin(req, resp, {
            "id": signin.get("id") or secrets.token_urlsafe(16),
            "next": safe_next(signin.get("next")),
            "state": start.state, "nonce": start.nonce, "verifier": start.verifier,
        })  # fmt: skip
        self.site.pages.redirect(resp, start.url)


class CallbackResource:
    """``/approvals/sign-in/callback``: the issuer sends the person back with a code."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Check the state, exchange the code, and sign the access token's principal in."""
        oidc, signin = self.site.oidc, self.site.sessions.signin(req)
        state, code = req.get_param("state") or "", req.get_param("code") or ""
        kept = str((signin or {}).get("state", ""))
        if oidc is None or signin is None or not kept or not hmac.compare_digest(kept, state):
            self.site.sign_in_page(req, resp, 401, "That sign-in expired or was not started here.")
            return
        if not code:
            self.site.sign_in_page(req, resp, 401, "The sign-in was not completed.")
            return
        try:
            identity = oidc.finish(
                self.site.base(req) + CALLBACK, code, str(signin.get("verifier")),
                str(signin.get("nonce")),
            )  # fmt: skip
        except AuthError as exc:
            _refused(self.site, req, resp, exc, "The sign-in did not succeed: please try again.")
            return
        _signed_in(self.site, req, resp, identity, signin)


class SignOutResource:
    """``/approvals/sign-out`` (POST, with the session's CSRF token): the session ends."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        """End the session (every copy of its cookie) and show the sign-in page."""
        session = self.site.sessions.read(req)
        if session is not None and not self.site.csrf_ok(req, resp, session.sid):
            return
        self.site.sessions.end(req, resp)
        self.site.pages.redirect(resp, "/approvals/sign-in")

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Back to the inbox: a link or a bookmark may not end a session (only the form may)."""
        self.site.pages.redirect(resp, "/approvals")


def _refused(
    site: Site, req: falcon.Request, resp: falcon.Response, exc: AuthError, problem: str
) -> None:
    """The sign-in page again, saying ``problem``; the log says why, the person is not told."""
    log.info("sign-in refused", extra={"event": "pages_sign_in_refused", "reason": exc.reason})
    site.sign_in_page(req, resp, 401, problem)


def _signed_in(
    site: Site,
    req: falcon.Request,
    resp: falcon.Response,
    identity: Identity,
    signin: Mapping[str, Any],
) -> None:
    """Begin the session of ``identity`` and go back to the page the person came for."""
    site.sessions.begin(req, resp, identity)
    log.info("signed in", extra={"event": "pages_signed_in", "principal": identity.principal})
    site.pages.redirect(resp, safe_next(signin.get("next")))
