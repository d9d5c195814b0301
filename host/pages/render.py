"""Pages out: Jinja2 templates (autoescaped) rendered with the headers every page carries.

Every page, redirect and error gets a strict Content-Security-Policy (nothing but the host's own
stylesheet, forms that post only to the host, never framed), ``X-Frame-Options: DENY``,
``Referrer-Policy: no-referrer`` (an inbox URL names a request) and ``Cache-Control: no-store``
(a shared computer's back button must not show someone's inbox).
"""

from __future__ import annotations

import time
from typing import Any

import falcon
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from host.auth.names import shown

__all__ = ["CSP", "Pages", "age", "secure_headers"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}


def secure_headers(resp: falcon.Response) -> None:
    """Set the headers every page response carries."""
    for name, value in _HEADERS.items():
        resp.set_header(name, value)


def age(seconds: float) -> str:
    """A duration as people say it: ``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(s // 3600, 24)
    return f"{d} d {h} h" if h else f"{d} d"


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


class Pages:
    """Renders the templates in ``host/pages/templates``.

    Args:
        base: The host's public base URL (``HOST_PUBLIC_URL``), or "" for links relative to
            the request's own host.
    """

    def __init__(self, base: str = "") -> None:
        self.base = base
        self._env = Environment(
            loader=PackageLoader("host.pages", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.filters["age"] = age
        self._env.filters["clock"] = _clock
        self._env.filters["who"] = shown  # NOTE: names as they are, non-ASCII made visible

    def link(self, path: str) -> str:
        """The URL of the host's ``path`` (which starts with ``/``)."""
        return self.base + path

    def render(
        self, resp: falcon.Response, template: str, status: int = 200, **values: Any
    ) -> None:
        """Answer with ``template`` rendered from ``values`` (and ``link``, ``now``)."""
        secure_headers(resp)
        resp.status = status
        resp.content_type = "text/html; charset=utf-8"
        page = self._env.get_template(template)
        resp.text = page.render(link=self.link, now=time.time(), **values)

    def redirect(self, resp: falcon.Response, location: str) -> None:
        """Answer 303 See Other to ``location`` (a path of the host's, or a full URL)."""
        secure_headers(resp)
        resp.status = 303
        resp.location = self.link(location) if location.startswith("/") else location
