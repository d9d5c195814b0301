"""URL asks as calls and pages meet them: the one owner of a question asked on a host page.

A call's ``ctx.url_asks`` (:class:`CallAsks`) finds or makes its ask in the store, by a binding
of the caller, the tool, the step, the arguments and the tool's definition, so the rounds of one
call (and an identical retry after -32042) share one page, and a reload that changes the tool
makes the next call a new one. The page (:mod:`host.pages.asks`) shows the form only to the
caller and submits through :meth:`UrlAskBook.submit`, which checks the values against the form
and keeps them encrypted (:class:`FieldCipher`, a key derived from ``HOST_SECRET``): no store
file, WAL or Redis key holds one in clear, and the values reach only the call's handlers. The
asks a call opened are forgotten when it ends (:meth:`CallAsks.end`); the rest expire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from host.errors import AnswerMismatch, Forbidden, NotFound
from host.machine import Machine
from host.machine.forms import Form
from host.machine.pages import PageAsk, Ticket
from host.protocol.context import RequestContext
from host.protocol.digests import digest
from host.protocol.redaction import FieldCipher
from host.store import Store
from host.store.asks import AskField, UrlAsk, new_ask_id

__all__ = ["ASK_PATH", "ASK_TTL_S", "CallAsks", "UrlAskBook", "ask_of", "elicitation_id"]

log = logging.getLogger("host.protocol")

#: How long a URL ask lives unless its call ends first: longer than a ``requestState``'s life
#: would cut a call short; the page says when it expires.
ASK_TTL_S = 900.0

#: Where the asks' pages are, under the host's base URL.
ASK_PATH = "/asks/"


def ask_of(url: str) -> str:
    """The id of the ask whose page is ``url``."""
    return url.rsplit("/", 1)[-1]


def elicitation_id(ask_id: str) -> str:
    """The ``elicitationId`` a legacy client tracks an ask by (not the page's own id)."""
    return "eli_" + digest(["elicitation", ask_id])[:22]


class UrlAskBook:
    """The URL asks of one host, for its calls and its pages.

    Args:
        store: The shared store.
        cipher: Encrypts the values the pages receive.
        public_url: ``HOST_PUBLIC_URL``; None: each request's own ``Host``.
        ttl_s: How long an ask lives.
    """

    def __init__(
        self,
        store: Store,
        cipher: FieldCipher,
        public_url: str | None = None,
        ttl_s: float = ASK_TTL_S,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.public_url = public_url
        self.ttl_s = ttl_s
        #: Told about each page submitted (the tasks extension carries the task on at once).
        self.submitted: Callable[[UrlAsk], None] | None = None

    def for_call(self, machine: Machine, request: RequestContext, *, hold: bool = True) -> CallAsks:
        """The asks of one round of a call of ``machine`` by ``request``'s caller.

        ``hold=False``: a round never waits for a page (a task's: the task is polled instead).
        """
        return CallAsks(self, machine, request.owner, self._base(request), hold=hold)

    def page(self, ask_id: str, principal: str) -> UrlAsk:
        """The open ask ``ask_id``, for ``principal`` to answer.

        Raises:
            NotFound: No such open ask (never made, submitted, ended or expired): one answer
                for all, so a guesser learns nothing.
            Forbidden: Someone else made the call.
        """
        ask = self.store.ask(ask_id) if ask_id.startswith("ask_") else None
        if ask is None or ask.submitted or ask.expires <= time.time():
            raise NotFound("there is no such open question")
        if ask.principal != principal:
            raise Forbidden("this question is another person's")
        return ask

    def submit(self, ask_id: str, principal: str, form: Mapping[str, Any]) -> UrlAsk:
        """Check the page's ``form`` against the ask, and keep its values, encrypted.

        Raises:
            NotFound: As :meth:`page`; also when it was submitted meanwhile.
            Forbidden: As :meth:`page`.
            AnswerMismatch: A value does not fit its field (the errors never quote it).
        """
        ask = self.page(ask_id, principal)
        values = _checked(ask, form)
        done = self.store.submit_ask(ask.id, self.cipher.hide(values, frozenset(values)))
        if done is None:
            raise NotFound("there is no such open question")
        log.info(
            "url ask submitted",
            extra={"event": "url_ask_submitted", "tool": ask.tool, "step": ask.step,
                   "principal": principal},
        )  # fmt: skip
        if self.submitted is not None:
            self.submitted(done)
        return done

    def _base(self, request: RequestContext) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = request.header("host") or "localhost"
        return f"http://{host}"


class CallAsks:
    """The URL asks of one round of one call: what ``ctx.url_asks`` is when serving."""

    def __init__(
        self, book: UrlAskBook, machine: Machine, principal: str, base: str, *, hold: bool = True
    ) -> None:
        self.book = book
        self.hold = hold
        self.machine = machine
        self.principal = principal
        self.base = base
        self.opened: list[UrlAsk] = []

    def open(self, ask: PageAsk) -> Ticket:
        """Find or make the call's ask for ``ask``, and say where its page is."""
        machine = self.machine
        binding = digest(
            ["url-ask", self.principal, machine.name, ask.step, machine.definition,
             dict(ask.arguments)]
        )  # fmt: skip
        now = time.time()
        fresh = UrlAsk(
            id=new_ask_id(), binding=binding, principal=self.principal, tool=machine.name,
            step=ask.step, message=ask.message, fields=_fields(ask), definition=machine.definition,
            created=now, expires=now + self.book.ttl_s, title=machine.title or "",
        )  # fmt: skip
        found = self.book.store.open_ask(fresh)
        if found.id == fresh.id:
            log.info(
                "url ask opened",
                extra={"event": "url_ask_opened", "tool": machine.name, "step": ask.step,
                       "principal": self.principal},
            )  # fmt: skip
        self.opened.append(found)
        return Ticket(found.id, self.base + ASK_PATH + found.id, elicitation_id(found.id))

    def submitted(self, ticket: Ticket, wait_s: float) -> Mapping[str, Any] | None:
        """The values the page received, waiting up to ``wait_s``; None: not yet (or gone)."""
        ask = self.book.store.wait_ask(ticket.id, wait_s if self.hold else 0.0)
        if ask is None or ask.values is None:
            return None
        return self.book.cipher.show(ask.values)

    def end(self) -> None:
        """The call ended: forget the asks it opened, and the values their pages received."""
        for ask in self.opened:
            self.book.store.end_ask(ask)
        self.opened.clear()


def _fields(ask: PageAsk) -> tuple[AskField, ...]:
    required = set(ask.schema.get("required", ()))
    return tuple(
        AskField(name, dict(schema), name in required, name in ask.secrets)
        for name, schema in ask.schema["properties"].items()
    )


def _checked(ask: UrlAsk, form: Mapping[str, Any]) -> dict[str, Any]:
    """The page's form as the ask's values: typed, checked, and only the ask's fields."""
    values: dict[str, Any] = {}
    for f in ask.fields:
        value = _typed(f, form.get(f.name))
        if value is not None:
            values[f.name] = value
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: dict(f.schema) for f in ask.fields},
    }
    required = [f.name for f in ask.fields if f.required]
    if required:
        schema["required"] = required
    hidden = frozenset(f.name for f in ask.fields)
    return Form(schema, {}, None).check(ask.step, schema, values, hidden)


def _typed(f: AskField, raw: Any) -> Any:
    """A form value (text, or a list of texts) as the field's type; None for an empty one.

    NOTE: a value that is already typed (the test kit submits answers as a test wrote them) is
    kept as it is, for the form's check to judge.
    """
    kind = f.schema.get("type")
    if raw is not None and not isinstance(raw, str | list):
        return raw
    if kind == "array":
        items = raw if isinstance(raw, list) else [] if raw is None else [raw]
        return [str(v) for v in items] or None
    if isinstance(raw, list):
        raw = raw[-1] if raw else None
    if kind == "boolean":
        return raw is not None and str(raw) in ("on", "true", "1")
    if raw is None or str(raw) == "":
        return None
    text = str(raw)
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            problem = {"field": f.name, "message": f"{f.name} must be a number"}
            raise AnswerMismatch(f.name, [problem]) from None
    return text
