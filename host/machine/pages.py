"""What a URL ask asks of the host, and what it hears back: its page, then the page's values.

The machine never sees the store or the pages: the protocol layer hands it :class:`UrlAsks` in
``ctx`` (as it does the approvals gate), bound to the caller, the tool, its definition and the
call. It finds or makes the call's page and, when asked, says what the page received.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from host.errors import ToolError

__all__ = ["NO_URL_ASKS", "PageAsk", "Ticket", "UrlAsks"]


@dataclass(frozen=True)
class PageAsk:
    """One URL ask as a call reaches it.

    Attributes:
        step: The step's name.
        message: The rendered message the page (and the client) shows.
        schema: The form, as an MCP ``requestedSchema`` (the page renders it).
        secrets: The fields the page shows as password fields.
        arguments: The call's inputs (defaults filled in).
    """

    step: str
    message: str
    schema: Mapping[str, Any]
    secrets: frozenset[str]
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Ticket:
    """Where the page of one ask is: its id, its URL, and the id legacy clients track it by."""

    id: str
    url: str
    handle: str


class UrlAsks(Protocol):
    """Opens a call's URL asks and hands back what their pages received."""

    def open(self, ask: PageAsk) -> Ticket:
        """The page for ``ask``: the call's own one, made on its first round."""
        ...

    def submitted(self, ticket: Ticket, wait_s: float) -> Mapping[str, Any] | None:
        """The values the page received, waiting up to ``wait_s``; None: not yet."""
        ...


class _NoUrlAsks:
    """No pages: a call that must ask on one cannot go on."""

    def open(self, ask: PageAsk) -> Ticket:
        raise ToolError(
            f"The step {ask.step} asks on a page of the host's, and this host serves no pages "
            "(it needs auth settings and a store). Nothing was done."
        )

    def submitted(self, ticket: Ticket, wait_s: float) -> Mapping[str, Any] | None:
        return None


NO_URL_ASKS: UrlAsks = _NoUrlAsks()
"""The URL asks of a call with no pages to ask on (tests of the machine alone)."""
