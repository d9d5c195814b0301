"""The ``ask`` with ``mode: url``: a question asked on a page of the host's, found through ctx.

A URL ask is how a tool asks for a secret: the client is shown only a message and a link (a URL
elicitation), and the values are typed on the host's own page, shown only to the caller; the
machine finds the page through ``ctx.url_asks`` (:mod:`host.machine.pages`). The client's
``accept`` means only consent: the values come from the page, and a round whose page is not
submitted yet waits up to the step's ``wait`` and then asks again (the same URL).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.machine.forms import Form
from host.machine.pages import PageAsk
from host.machine.types import Ending
from host.spec.templates import Renderer

__all__ = ["UrlAskStep"]


@dataclass(frozen=True)
class UrlAskStep:
    """A compiled ``ask`` with ``mode: url``.

    Attributes:
        deps: Names its message and ``when`` read: it waits while any is pending.
        outputs: Names it binds (its fields and its own name).
        endings: The results for ``declined`` and ``cancelled``.
        secrets: The fields marked ``secret: true``.
        wait_s: How long a round whose page is not submitted yet waits for it.
    """

    name: str
    message: Renderer
    when: Renderer | None
    form: Form
    endings: Mapping[Ending, Renderer]
    deps: frozenset[str]
    outputs: frozenset[str]
    secrets: frozenset[str]
    wait_s: float

    @property
    def fields(self) -> frozenset[str]:
        """The names the page's values bind."""
        return frozenset(self.form.schema["properties"])

    def ask(self, scope: Mapping[str, Any], inputs: Mapping[str, Any]) -> PageAsk:
        """What ``ctx.url_asks`` needs to find or make this call's page."""
        return PageAsk(
            self.name, str(self.message(scope)), self.form.render(scope), self.secrets, inputs
        )
