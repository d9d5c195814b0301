"""A browser stand-in on the in-process app: a cookie jar, form posts, the static-token sign-in."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import falcon
import falcon.testing

__all__ = ["Visitor", "csrf_of"]


def csrf_of(page: falcon.testing.Result) -> str:
    """The CSRF token a page's form carries."""
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match, page.text
    return match.group(1)


class Visitor:
    """A test client with a cookie jar, as a browser would be."""

    def __init__(self, app: Any) -> None:
        self.client = falcon.testing.TestClient(app)
        self.jar: dict[str, str] = {}

    def _keep(self, result: falcon.testing.Result) -> falcon.testing.Result:
        for name, cookie in result.cookies.items():
            if cookie.value and (cookie.max_age is None or cookie.max_age > 0):
                self.jar[name] = cookie.value
            else:
                self.jar.pop(name, None)
        return result

    def get(self, path: str, **params: str) -> falcon.testing.Result:
        return self._keep(self.client.simulate_get(path, params=params, cookies=self.jar))

    def post(self, path: str, form: dict[str, str]) -> falcon.testing.Result:
        body = urllib.parse.urlencode(form)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        result = self.client.simulate_post(path, body=body, headers=headers, cookies=self.jar)
        return self._keep(result)

    def sign_in(self, token: str) -> Visitor:
        """Sign in with a static token on the sign-in form."""
        form = self.get("/approvals/sign-in")
        done = self.post("/approvals/sign-in", {"token": token, "csrf": csrf_of(form)})
        assert done.status_code == 303, done.text
        return self
