"""URL asks in the tests: a host serving the key-rotation fixture with static tokens, a browser
stand-in that signs in and submits an ask's page, and where to look for a leaked secret."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import falcon
import falcon.testing
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.types import ElicitResult

from host.auth import AuthSettings, Identity
from host.auth.browser_settings import BrowserSettings
from host.auth.tokenfile import create_token
from host.client.wire import WsgiTransport
from host.pages.session import SESSION_COOKIE, Sessions
from host.settings import Settings
from host.store import open_store
from host.testing import McpClient
from support.paths import FIXTURES
from support.servers import host_serve
from support.visitor import Visitor, csrf_of

__all__ = [
    "ASK_SPECS",
    "PUBLIC_URL",
    "AskHost",
    "HttpBrowser",
    "ServedAsks",
    "files_holding",
    "make_tokens",
    "rotate_with_python_sdk",
    "serve_asks",
    "url_host",
]

ASK_FIXTURE = FIXTURES / "url"
ASK_SPECS = ASK_FIXTURE / "specs"
PUBLIC_URL = "https://keys.example"
URL_CAPS = {"elicitation": {"form": {}, "url": {}}}
SECRET_KEY = "test-key-1-0123456789abcdef0123456789"


def make_tokens(path: Path) -> dict[str, str]:
    """Static tokens for alice and bob (bob holds ops:approve, as an approver would)."""
    made = {
        name: create_token(path, name, scopes)[0]
        for name, scopes in [("alice", []), ("bob", ["ops:approve"])]
    }
    return {**made, "file": str(path)}


@dataclass(frozen=True)
class ServedAsks:
    """A served key-rotation host: its URL, alice's and bob's tokens, and its folder."""

    url: str
    tokens: dict[str, str]
    folder: Path


@contextlib.contextmanager
def serve_asks(folder: Path, **env: str) -> Iterator[ServedAsks]:
    """``host serve`` with two workers on the key-rotation fixture and static tokens."""
    tokens = make_tokens(folder / "tokens")
    with host_serve(
        folder, "host", "--workers", "2", "--threads", "8", specs=ASK_SPECS,
        HOST_AUTH_TOKENS=tokens["file"], **env,
    ) as server:  # fmt: skip
        yield ServedAsks(server.url, tokens, folder)


def rotate_with_python_sdk(
    url: str,
    token: str,
    service: str,
    on_elicit: Callable[[Any, Any], Awaitable[ElicitResult]],
    mode: str | None = None,
) -> Any:
    """``rotate_key`` of ``service`` called by the official Python SDK client, as the bearer of
    ``token``, with ``on_elicit`` for its questions; the call's structured result.

    Args:
        mode: The client's protocol era (``2026-07-28`` or ``legacy``); the SDK's default if None.
    """
    era: dict[str, Any] = {} if mode is None else {"mode": mode}

    async def main() -> Any:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        transport = streamable_http_client(f"{url}/mcp", http_client=client)
        with anyio.fail_after(60):
            async with Client(transport, elicitation_callback=on_elicit, **era) as session:
                result = await session.call_tool("rotate_key", {"service": service})
                return result.structured_content

    return anyio.run(main)


def page_path(url: str) -> str:
    """The path of an ask's URL, as the in-process app serves it."""
    assert url.startswith(PUBLIC_URL + "/asks/ask_"), url
    return url[len(PUBLIC_URL) :]


@dataclass
class AskHost:
    """The app, its data directory, its tokens, and clients of it."""

    app: Any
    data_dir: Path
    tokens: dict[str, str]

    def mcp(self, who: str = "alice", capabilities: Any = None) -> McpClient:
        """A modern client calling as ``who`` (by default one that declares URL mode)."""
        return McpClient(
            WsgiTransport(self.app, token=self.tokens[who]),
            capabilities=URL_CAPS if capabilities is None else capabilities,
        )

    def browser(self, who: str = "alice") -> Visitor:
        """A browser signed in as ``who``."""
        return Visitor(self.app).sign_in(self.tokens[who])

    def browser_as(self, identity: Identity) -> Visitor:
        """A browser whose session is ``identity``'s, as a sign-in at an issuer makes it."""
        store = open_store(f"sqlite:///{self.data_dir / 'store.db'}")
        try:
            sessions = Sessions([SECRET_KEY], secure=False, book=store.sessions)
            resp = falcon.Response()
            sessions.begin(falcon.testing.create_req(), resp, identity)
        finally:
            store.close()
        visitor = Visitor(self.app)
        visitor.jar[SESSION_COOKIE] = resp._cookies[SESSION_COOKIE].value
        return visitor

    def submit(self, url: str, values: dict[str, str], who: str = "alice") -> Any:
        """Open the ask's page as ``who`` and submit ``values``: the page that comes back."""
        browser = self.browser(who)
        on = browser.get(page_path(url))
        assert on.status_code == 303, on.status_code
        path = on.headers["Location"].replace(PUBLIC_URL, "")
        form = browser.get(path)
        assert form.status_code == 200, form.text
        return browser.post(path, {"csrf": csrf_of(form), **values})


def url_host(tmp_path: Path, wait: str | None = None) -> AskHost:
    """The key-rotation fixture served in-process with static tokens and a public URL.

    Args:
        wait: The URL ask's ``wait:`` instead of the fixture's (10s), in a copy of its specs.
    """
    from host.web.app import create_app

    specs = ASK_SPECS
    if wait is not None:
        specs = tmp_path / "specs"
        specs.mkdir()
        text = (ASK_SPECS / "keys.yaml").read_text().replace("wait: 10s", f"wait: {wait}")
        (specs / "keys.yaml").write_text(text)

    tokens = make_tokens(tmp_path / "tokens")
    auth = AuthSettings(
        tokens_file=Path(tokens["file"]), browser=BrowserSettings(public_url=PUBLIC_URL)
    )
    data = tmp_path / "data"
    settings = Settings(
        specs_dir=specs,
        handlers_dir=ASK_FIXTURE / "handlers",
        secrets=(SECRET_KEY,),
        data_dir=data,
        auth=auth,
    )
    return AskHost(create_app(settings=settings), data, tokens)


def files_holding(root: Path, secret: str) -> Iterator[Path]:
    """Every file under ``root`` whose bytes hold ``secret`` (SQLite files, WAL, logs...)."""
    needle = secret.encode()
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            yield path


class HttpBrowser:
    """A browser stand-in over real HTTP (cookies kept, redirects followed) for a served host."""

    def __init__(self, base: str) -> None:
        import http.cookiejar
        import urllib.request

        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def open(self, url: str, form: dict[str, str] | None = None) -> tuple[int, str, str]:
        """GET (or POST ``form`` to) ``url``: the status, the final URL and the page."""
        import urllib.error
        import urllib.request

        body = None if form is None else urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(url if "://" in url else self.base + url, data=body)
        try:
            with self.opener.open(request, timeout=30) as reply:
                return reply.status, reply.url, reply.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.url, exc.read().decode()

    def sign_in(self, token: str) -> HttpBrowser:
        _, _, page = self.open("/approvals/sign-in")
        status, _, _ = self.open("/approvals/sign-in", {"token": token, "csrf": _csrf(page)})
        assert status == 200, status
        return self

    def submit(self, url: str, values: dict[str, str]) -> str:
        """Open an ask's page (its URL as the client got it) and submit ``values``."""
        status, final, page = self.open(url)
        assert status == 200 and "/approvals/asks/" in final, (status, final, page)
        status, _, done = self.open(final, {"csrf": _csrf(page), **values})
        assert status == 200 and "Done: return to your client" in done, (status, done)
        return done


def _csrf(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, page
    return match.group(1)
