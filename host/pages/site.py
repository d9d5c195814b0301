"""What every page resource shares: the renderer, the sessions, the service, and sign-in's parts."""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import falcon

from host.auth import Authenticator, AuthError
from host.errors import StoreError
from host.pages.render import Pages
from host.pages.service import Inbox
from host.pages.session import Session, Sessions

if TYPE_CHECKING:
    # NOTE: only for the annotation: the sign-in's libraries (the auth extra) are imported when
    # a host with an issuer mounts it, so a host without the extra serves as before.
    from host.auth.browser import OidcSignIn

__all__ = ["SIGNED_OUT", "Site", "guarded", "safe_next"]

log = logging.getLogger("host.pages")

#: What the sign-in page says to a person whose session ended because its token no longer holds.
SIGNED_OUT = (
    "You were signed out: the token you signed in with was revoked or has expired. Sign in again."
)


def guarded(responder: Callable[..., None]) -> Callable[..., None]:
    """A responder whose unexpected failure is a 500 page (and a log line), never a traceback;
    a store that cannot be used now is a 503 page with ``Retry-After``."""

    @functools.wraps(responder)
    def run(self: Any, req: falcon.Request, resp: falcon.Response, **params: Any) -> None:
        site: Site
        try:
            responder(self, req, resp, **params)
        except falcon.HTTPError:
            raise  # the framework's own answers (a malformed form: 400)
        except StoreError as exc:
            log.error(
                "page unavailable: %s", exc.message,
                extra={"event": "store_unavailable", "path": req.path},
            )  # fmt: skip
            site = self.site
            site.refuse(
                resp, 503, "Try again shortly",
                "The host cannot reach its store now. Try again in a few seconds: a "
                "decision sent again is recorded once.",
            )  # fmt: skip
            resp.set_header("Retry-After", str(StoreError.RETRY_AFTER_S))
        except Exception:
            log.exception("page failed", extra={"event": "page_failed", "path": req.path})
            site = self.site
            site.refuse(resp, 500, "Something went wrong", "The host could not show this page.")

    return run


def safe_next(path: object) -> str:
    """``path`` when it is one of the pages' own (never another site's), else the inbox."""
    if not isinstance(path, str) or not path.startswith("/approvals"):
        return "/approvals"
    # NOTE: "//" or "\\" would make a browser read the rest as another host.
    own = "//" not in path and "\\" not in path and all(c.isprintable() for c in path)
    return path if own else "/approvals"


@dataclass
class Site:
    """The pages' shared parts.

    Attributes:
        pages: Renders templates with the security headers.
        sessions: The cookies and CSRF tokens.
        service: The approval requests.
        authenticator: Checks tokens (the token form's, and the issuer's access tokens).
        oidc: Signs people in at the issuer; None without a client id.
        public_url: ``HOST_PUBLIC_URL``, or None for each request's own base.
    """

    pages: Pages
    sessions: Sessions
    service: Inbox
    authenticator: Authenticator
    oidc: OidcSignIn | None
    public_url: str | None

    @property
    def token_form(self) -> bool:
        """Whether people may sign in with their own static token."""
        return self.authenticator.settings.tokens_file is not None

    def base(self, req: falcon.Request) -> str:
        """The host's base URL for ``req``: ``HOST_PUBLIC_URL``, or the request's own."""
        return self.public_url or req.prefix

    def sign_in_page(
        self, req: falcon.Request, resp: falcon.Response, status: int = 401, problem: str = ""
    ) -> None:
        """The sign-in page (401 where a page needed a session), coming back to ``req``'s page."""
        signin = self.sessions.signin(req) or {}
        signin_id = signin.get("id") or secrets.token_urlsafe(16)
        own = req.path.startswith("/approvals/sign-")
        back = signin.get("next") if own or req.method != "GET" else req.relative_uri
        self.sessions.set_signin(req, resp, {"id": signin_id, "next": safe_next(back)})
        self.pages.render(
            resp, "sign_in.html", status, title="Sign in", problem=problem, session=None,
            oidc=self.oidc is not None, token_form=self.token_form,
            csrf=self.sessions.csrf(signin_id),
        )  # fmt: skip

    def session(self, req: falcon.Request, resp: falcon.Response) -> Session | None:
        """The signed-in person as they are now; None after answering with the sign-in page.

        NOTE: the person is established again at every page (:meth:`Inbox.current`, the check
        each decision makes too), so a revoked token signs its sessions out at once, and the
        scopes shown are the ones held now.
        """
        session = self.sessions.read(req)
        if session is None:
            self.sign_in_page(req, resp)
            return None
        try:
            now = self.service.current(session.identity)
        except AuthError as exc:
            log.info(
                "signed out: the session's token no longer holds",
                extra={"event": "pages_signed_out", "principal": session.principal,
                       "reason": exc.reason},
            )  # fmt: skip
            self.sessions.end(req, resp)
            self.sign_in_page(req, resp, 401, SIGNED_OUT)
            return None
        return replace(session, principal=now.principal, scopes=now.scopes)

    def refuse(self, resp: falcon.Response, status: int, title: str, text: str) -> None:
        """An error page (403, 404, 409) for a signed-in person."""
        self.pages.render(resp, "error.html", status, title=title, text=text, session=None)

    def csrf_ok(self, req: falcon.Request, resp: falcon.Response, bound_to: str) -> bool:
        """Whether the posted form's CSRF token is ``bound_to``'s; False after a 403 page."""
        form = req.get_media(default_when_empty={})
        if isinstance(form, dict) and self.sessions.csrf_ok(form.get("csrf"), bound_to):
            return True
        self.refuse(
            resp, 403, "Form refused",
            "This form did not come from this page (or it is too old). Go back, reload the "
            "page and try again.",
        )  # fmt: skip
        return False
