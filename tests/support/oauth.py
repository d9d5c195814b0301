"""A real OAuth 2 authorization server for the tests: oauth2-mock-server under Node.js 22.

It issues real signed JWTs from its token endpoint (``client_credentials``), publishes its keys at
``/jwks`` and its metadata at a well-known address, all on 127.0.0.1. The session fixtures
``oauth_server`` (RS256, OpenID Connect discovery) and ``other_oauth_server`` (ES256, RFC 8414
discovery: another issuer with other keys) are shared; ``fresh_oauth_server`` is a private one for
tests that rotate its keys or break its key set. Any test file can use them (conftest imports them).

Installed by ``tests/oauth/install`` (which ``.ci/run`` runs); without it the fixtures fail, never
skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.paths import ROOT
from support.servers import stop

__all__ = [
    "AUDIENCE",
    "MockAuthServer",
    "fresh_oauth_server",
    "oauth_server",
    "other_oauth_server",
    "start_mock_auth_server",
]

#: The audience the tests' host is configured with unless a test says otherwise.
AUDIENCE = "https://tools.example.com/mcp"

_SCRIPT = ROOT / "tests" / "oauth" / "mock_server.mjs"
_INSTALL = "tests/oauth/install"


def _node() -> Path:
    given = os.environ.get("HOST_TEST_NODE")
    if given:
        return Path(given)
    cache = Path(os.environ.get("CONFORMANCE_CACHE") or ROOT / ".cache" / "conformance")
    return cache / "node22" / "node_modules" / ".bin" / "node"


def _packages() -> Path:
    return ROOT / ".cache" / "oauth"


@dataclass
class MockAuthServer:
    """One running mock authorization server.

    Attributes:
        issuer: Its issuer identifier (``http://127.0.0.1:PORT``), the ``iss`` of its tokens.
        jwks_uri: Its key set's URL.
        kid: The id of the key it signs with now.
        process: The Node.js process.
    """

    issuer: str
    jwks_uri: str
    kid: str
    process: subprocess.Popen[bytes]

    def token(
        self,
        sub: str | None = "alice",
        scopes: Iterable[str] = (),
        audience: str | list[str] | None = AUDIENCE,
        **extra: str | int,
    ) -> str:
        """A new access token from the server's token endpoint (``client_credentials``).

        Args:
            sub: The token's ``sub`` (None: the client id, ``test-client``).
            scopes: Its ``scope`` claim (none: no claim).
            audience: Its ``aud``, sent as the RFC 8707 ``resource`` (a list: several ``resource``
                parameters, and an ``aud`` list; None: no ``aud``).
            extra: Test parameters the server applies before signing: ``scp`` (space-separated),
                ``expires_in`` and ``not_before`` (seconds from now), ``iss``, ``omit`` (claims to
                leave out, comma-separated).
        """
        form: dict[str, str | int | list[str]] = {
            "grant_type": "client_credentials",
            "client_id": "test-client",
        }
        if sub is not None:
            form["sub"] = sub
        if scopes:
            form["scope"] = " ".join(scopes)
        if audience is not None:
            form["resource"] = audience
        form.update(extra)
        answer = self._request("POST", "/token", urllib.parse.urlencode(form, doseq=True).encode())
        return str(answer["access_token"])

    def login(self, sub: str = "johndoe", scopes: Iterable[str] = ()) -> None:
        """Make the next codes of ``/authorize`` (browser sign-ins) for ``sub`` and ``scopes``."""
        query = urllib.parse.urlencode(
            {"sub": sub, **({"scope": " ".join(scopes)} if scopes else {})}
        )
        self._request("POST", f"/_test/login?{query}", b"")

    def rotate(self) -> str:
        """Sign with a new key from now on, still publishing the old one; the new key's id."""
        self.kid = str(self._request("POST", "/_test/rotate", b"")["kid"])
        return self.kid

    def jwks_fetches(self) -> int:
        """How many times its key set was fetched so far."""
        return int(self._request("GET", "/_test/stats")["jwks"])

    def fail_jwks(self, code: int) -> None:
        """Answer key set fetches with HTTP ``code`` from now on (200 restores the keys)."""
        self._request("POST", f"/_test/jwks-status?code={code}", b"")

    def jwks(self) -> dict[str, Any]:
        """Its published key set."""
        return self._request("GET", "/jwks")

    def env(self, audience: str = AUDIENCE) -> dict[str, str]:
        """The ``HOST_AUTH_*`` variables of a host that accepts this server's tokens."""
        return {"HOST_AUTH_ISSUER": self.issuer, "HOST_AUTH_AUDIENCE": audience}

    def _request(self, method: str, path: str, body: bytes | None = None) -> dict[str, Any]:
        request = urllib.request.Request(self.issuer + path, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer


def start_mock_auth_server(
    log_dir: Path, alg: str = "RS256", discovery: str = "oidc"
) -> MockAuthServer:
    """Start a mock authorization server; stop it with ``stop(server.process, 5)``.

    Args:
        log_dir: Where its log goes (``oauth-<alg>.log``).
        alg: The algorithm of its keys (RS256, ES256, PS256, EdDSA, ...).
        discovery: ``oidc`` (``/.well-known/openid-configuration``) or ``oauth`` (RFC 8414).
    """
    node, packages = _node(), _packages()
    if not node.exists() or not (packages / "node_modules" / "oauth2-mock-server").is_dir():
        pytest.fail(
            f"the auth tests need Node.js 22 and oauth2-mock-server: run {_INSTALL} (as .ci/run "
            "does), or set HOST_TEST_NODE to a Node.js 22 binary",
            pytrace=False,
        )
    log_path = log_dir / f"oauth-{alg}-{discovery}.log"
    log = log_path.open("wb")
    # NOTE: stdin is a pipe held by this process: the server exits when it closes, so it cannot
    # outlive the tests even if they are killed.
    proc = subprocess.Popen(
        [str(node), str(_SCRIPT), "--alg", alg, "--discovery", discovery],
        cwd=packages, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
    )  # fmt: skip
    log.close()
    assert proc.stdout is not None
    line: list[bytes] = []
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(30)
    if not line or not line[0]:
        stop(proc, 5)
        pytest.fail(f"oauth2-mock-server did not start; its log:\n{log_path.read_text()}")
    ready = json.loads(line[0])
    return MockAuthServer(ready["issuer"], ready["jwks_uri"], ready["kid"], proc)


@pytest.fixture(scope="session")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockAuthServer]:
    """A mock authorization server for the session: RS256 keys, OpenID Connect discovery."""
    server = start_mock_auth_server(tmp_path_factory.mktemp("oauth"), "RS256", "oidc")
    try:
        yield server
    finally:
        stop(server.process, 5)


@pytest.fixture(scope="session")
def other_oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockAuthServer]:
    """Another issuer for the session, with other keys: ES256, RFC 8414 discovery."""
    server = start_mock_auth_server(tmp_path_factory.mktemp("oauth"), "ES256", "oauth")
    try:
        yield server
    finally:
        stop(server.process, 5)


@pytest.fixture
def fresh_oauth_server(tmp_path: Path) -> Iterator[MockAuthServer]:
    """A private mock authorization server (RS256, OpenID Connect) to rotate or break."""
    server = start_mock_auth_server(tmp_path, "RS256", "oidc")
    try:
        yield server
    finally:
        stop(server.process, 5)
