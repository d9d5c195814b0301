"""The pages of URL asks: ``/asks/ID``, where a caller types what a tool asks on a host page.

The URL a client is given is ``/asks/ID``; it sends the browser on to ``/approvals/asks/ID``,
under the path the pages' cookies are scoped to (so the session cookie never travels to ``/mcp``
or anywhere else). The page is shown only to the principal who made the call, signed in as for
the inbox: anyone else gets 403, and an id that is unknown, expired or already submitted gets one
and the same page, so a guesser learns nothing. Secret fields are password inputs; nothing typed
is ever shown back, not even after an error. Every response carries the pages' strict CSP and
``Cache-Control: no-store`` (:mod:`host.pages.render`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import falcon

from host.errors import AnswerMismatch, Forbidden, NotFound
from host.pages.session import Session
from host.pages.site import Site, guarded
from host.protocol.url_asks import UrlAskBook
from host.store.asks import UrlAsk

__all__ = ["ASK_PAGE", "AskPageResource", "AskRedirectResource"]

#: Where an ask's page is served (the client's ``/asks/ID`` leads here).
ASK_PAGE = "/approvals/asks/"

_INPUT_TYPES = {"email": "email", "uri": "url", "date": "date"}


class AskRedirectResource:
    """``/asks/ID``: on to the page, under the pages' own path."""

    def __init__(self, site: Site) -> None:
        self.site = site

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response, ask_id: str) -> None:
        """303 to ``/approvals/asks/ID`` (the id is only ever URL-safe characters)."""
        safe = "".join(c for c in ask_id if c.isalnum() or c in "-_")[:64]
        self.site.pages.redirect(resp, ASK_PAGE + safe)


class AskPageResource:
    """``/approvals/asks/ID``: the form (GET), and its values (POST)."""

    def __init__(self, site: Site, book: UrlAskBook) -> None:
        self.site = site
        self.book = book

    @guarded
    def on_get(self, req: falcon.Request, resp: falcon.Response, ask_id: str) -> None:
        """The form, for the caller only."""
        session = self.site.session(req, resp)
        if session is None:
            return
        ask = self._ask(resp, session, ask_id)
        if ask is not None:
            self._form(resp, session, ask)

    @guarded
    def on_post(self, req: falcon.Request, resp: falcon.Response, ask_id: str) -> None:
        """Keep the values (encrypted) for the call, then the "done" page."""
        session = self.site.session(req, resp)
        if session is None or not self.site.csrf_ok(req, resp, session.sid):
            return
        form = req.get_media(default_when_empty={})
        try:
            ask = self.book.submit(ask_id, session.owner, form if isinstance(form, dict) else {})
        except (NotFound, Forbidden) as exc:
            self._refused(resp, exc)
            return
        except AnswerMismatch as exc:
            found = self._ask(resp, session, ask_id)
            if found is not None:
                problem = "; ".join(f"{e['field']}: {e['message']}" for e in exc.errors)
                self._form(resp, session, found, 400, f"Please fix: {problem}.")
            return
        self.site.pages.render(
            resp, "ask_done.html", title="Done", session=session, ask=ask,
            csrf=self.site.sessions.csrf(session.sid),
        )  # fmt: skip

    def _ask(self, resp: falcon.Response, session: Session, ask_id: str) -> UrlAsk | None:
        try:
            return self.book.page(ask_id, session.owner)
        except (NotFound, Forbidden) as exc:
            self._refused(resp, exc)
            return None

    def _refused(self, resp: falcon.Response, exc: Exception) -> None:
        if isinstance(exc, Forbidden):
            self.site.refuse(
                resp, 403, "Not yours to answer",
                "This page asks the person who called the tool, and only them. Sign in as "
                "that person, or ask them to open the link.",
            )  # fmt: skip
            return
        self.site.pages.render(resp, "ask_gone.html", 404, title="Not open", session=None)

    def _form(
        self, resp: falcon.Response, session: Session, ask: UrlAsk, status: int = 200,
        problem: str = "",
    ) -> None:  # fmt: skip
        self.site.pages.render(
            resp, "ask.html", status, title=ask.title or ask.tool, session=session, ask=ask,
            problem=problem, csrf=self.site.sessions.csrf(session.sid), choices=choices,
            input_type=input_type,
        )  # fmt: skip


def choices(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """A choice field's options as ``(value, label)``: ``enum`` or titled ``oneOf``/``anyOf``."""
    for option in schema.get("enum") or ():
        yield str(option), str(option)
    for option in schema.get("oneOf") or schema.get("anyOf") or ():
        if isinstance(option, Mapping):
            yield str(option.get("const")), str(option.get("title", option.get("const")))


def input_type(schema: Mapping[str, Any]) -> str:
    """The HTML input type of a text field (by its ``format``)."""
    return _INPUT_TYPES.get(str(schema.get("format", "")), "text")
