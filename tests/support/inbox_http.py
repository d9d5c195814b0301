"""A person signed in to a served host's inbox over real HTTP: cookies kept, forms posted."""

from __future__ import annotations

import re
import urllib.parse

from support.servers import Server

__all__ = ["Browser", "csrf"]


class Browser:
    """A person signed in to the inbox over real HTTP (cookies kept by hand)."""

    def __init__(self, server: Server, token: str) -> None:
        self.server = server
        self.cookies: dict[str, str] = {}
        page = self.request("GET", "/approvals/sign-in")
        status, _, _ = self.request(
            "POST", "/approvals/sign-in", {"token": token, "csrf": csrf(page[2])}
        )
        assert status == 303

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], str]:
        conn = self.server.connect()
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body, headers)
        response = conn.getresponse()
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        text = response.read().decode()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text


def csrf(text: str) -> str:
    """The CSRF token a page's form carries."""
    match = re.search(r'name="csrf" value="([^"]+)"', text)
    assert match, text
    return match.group(1)
