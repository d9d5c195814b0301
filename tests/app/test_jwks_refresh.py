"""The issuer's keys, fetched off the request path: a slow JWKS stalls no caller that need not wait.

The first version fetched under a lock every verification needed, with a timeout per read: a JWKS
that trickled a byte a second, plus tokens with made-up key ids (no valid signature needed), made
every JWT caller wait 15-22 s. Here the JWKS is a real server on 127.0.0.1 that does exactly that,
and static-token callers and tokens signed with a known key are answered at once meanwhile.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from host.auth import Authenticator, AuthError, AuthSettings, AuthSettingsError, Identity
from host.auth.fetch import MAX_DOCUMENT_BYTES, FetchError, fetch_json
from host.auth.tokenfile import create_token

AUDIENCE = "https://tools.example.com/mcp"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    """A key set on 127.0.0.1 that answers at once, a byte a second, or without end."""

    def __init__(self) -> None:
        self.mode = "fast"
        self.fetches = 0
        self.stop = threading.Event()
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
        self.document = json.dumps({"keys": [{**public, "kid": "k1", "use": "sig"}]}).encode()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                issuer.answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.document)}\r\n\r\n".encode()
        try:
            if self.mode == "fast":
                request.wfile.write(head + self.document)
            elif self.mode == "trickle":
                for byte in head + self.document:
                    if self.stop.wait(1.0):
                        return
                    request.wfile.write(bytes([byte]))
                    request.wfile.flush()
            else:  # huge: a body without end, as fast as it goes
                request.wfile.write(b"HTTP/1.1 200 OK\r\n\r\n" + b'{"keys": [')
                while not self.stop.is_set():
                    request.wfile.write(b" " * 65536)
        except OSError:
            pass  # the host hung up, as it should

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    running = Issuer()
    yield running
    running.close()


def token(issuer: Issuer, kid: str = "k1", sub: str = "ann") -> str:
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 300}
    return jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": kid})


def host_auth(
    issuer: Issuer, tmp_path: Path, refetch_s: float = 30.0, **env: str
) -> tuple[Authenticator, str]:
    """An Authenticator for ``issuer``'s tokens and one static token, and that token."""
    tokens = tmp_path / "tokens"
    static, _ = create_token(tokens, "ci", [])
    settings = AuthSettings.from_env(
        {
            "HOST_AUTH_ISSUER": issuer.url,
            "HOST_AUTH_AUDIENCE": AUDIENCE,
            "HOST_AUTH_JWKS_URI": issuer.url + "/jwks",
            "HOST_AUTH_TOKENS": str(tokens),
            **env,
        }
    )
    return Authenticator(settings, jwks_refetch_interval=refetch_s), static


def timed(auth: Authenticator, bearer: str) -> tuple[float, Identity | AuthError]:
    """Seconds the authentication took, and its identity or refusal."""
    started = time.monotonic()
    try:
        outcome: Identity | AuthError = auth.authenticate(f"Bearer {bearer}")
    except AuthError as exc:
        outcome = exc
    return time.monotonic() - started, outcome


def test_random_kids_against_a_trickling_jwks_stall_no_known_key_or_static_caller(
    issuer: Issuer, tmp_path: Path
) -> None:
    auth, static = host_auth(issuer, tmp_path, refetch_s=0.5)
    assert auth.warm_up() is None
    known = token(issuer)
    time.sleep(0.6)  # an unknown kid may make the host look for new keys again
    issuer.mode = "trickle"
    forged = [token(issuer, kid=secrets.token_hex(8)) for _ in range(20)]
    with ThreadPoolExecutor(max_workers=24) as pool:
        attackers = [pool.submit(timed, auth, bearer) for bearer in forged]
        time.sleep(0.3)  # the refresh they caused is trickling now
        callers = []
        for _ in range(10):
            callers += [pool.submit(timed, auth, known), pool.submit(timed, auth, static)]
            time.sleep(0.1)
        answered = [future.result() for future in callers]
        refused = [future.result() for future in attackers]
    for seconds, outcome in answered:
        assert isinstance(outcome, Identity), outcome
        assert seconds < 1.0  # no waiting on the fetch (the slowest part is this busy machine)
    assert {outcome.principal for _, outcome in answered} == {"ann", "ci"}  # type: ignore[union-attr]
    for seconds, outcome in refused:
        assert isinstance(outcome, AuthError) and outcome.kind == "invalid_token"
        assert seconds < 3.5  # at most HOST_AUTH_JWKS_WAIT (2 s), not the whole trickle
    assert max(seconds for seconds, _ in refused) > 1.0  # they did wait for the refetch
    assert issuer.fetches == 2  # the warm-up, and one refetch for twenty unknown kids


def test_before_the_first_keys_arrive_a_jwt_waits_briefly_and_a_static_token_not_at_all(
    issuer: Issuer, tmp_path: Path
) -> None:
    issuer.mode = "trickle"
    auth, static = host_auth(
        issuer, tmp_path, HOST_AUTH_JWKS_TIMEOUT="2", HOST_AUTH_JWKS_WAIT="0.5"
    )
    seconds, outcome = timed(auth, token(issuer))
    assert isinstance(outcome, AuthError) and 0.4 < seconds < 2.5
    seconds, outcome = timed(auth, static)
    assert isinstance(outcome, Identity) and seconds < 1.0
    time.sleep(2.0)  # the trickling fetch has been given up, on its total deadline
    issuer.mode = "fast"
    time.sleep(5.0)  # the retry interval
    seconds, outcome = timed(auth, token(issuer))
    assert isinstance(outcome, Identity) and outcome.principal == "ann"


def test_a_fetch_has_one_deadline_for_all_its_reads(issuer: Issuer) -> None:
    issuer.mode = "trickle"
    started = time.monotonic()
    with pytest.raises(FetchError, match="longer than"):
        fetch_json(issuer.url + "/jwks", 1.5)
    assert time.monotonic() - started < 2.5


def test_a_key_set_without_end_is_cut_off_at_the_size_cap(issuer: Issuer) -> None:
    issuer.mode = "huge"
    started = time.monotonic()
    with pytest.raises(FetchError, match=f"more than {MAX_DOCUMENT_BYTES} bytes"):
        fetch_json(issuer.url + "/jwks", 5.0)
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"HOST_AUTH_JWKS_TIMEOUT": "0"}, "HOST_AUTH_JWKS_TIMEOUT must be more than 0"),
        ({"HOST_AUTH_JWKS_TIMEOUT": "61"}, "at most 60 seconds"),
        ({"HOST_AUTH_JWKS_TIMEOUT": "soon"}, "HOST_AUTH_JWKS_TIMEOUT must be a number"),
        ({"HOST_AUTH_JWKS_WAIT": "6"}, "HOST_AUTH_JWKS_WAIT must be between 0 and"),
        ({"HOST_AUTH_JWKS_WAIT": "nan"}, "HOST_AUTH_JWKS_WAIT must be a number"),
    ],
)
def test_the_jwks_settings_are_checked(env: dict[str, str], words: str) -> None:
    base = {"HOST_AUTH_ISSUER": "https://id.example.com", "HOST_AUTH_AUDIENCE": AUDIENCE}
    with pytest.raises(AuthSettingsError, match=words):
        AuthSettings.from_env(base | env)


def test_the_jwks_settings_have_defaults_and_need_an_issuer() -> None:
    settings = AuthSettings.from_env(
        {"HOST_AUTH_ISSUER": "https://id.example.com", "HOST_AUTH_AUDIENCE": AUDIENCE}
    )
    assert (settings.jwks_timeout_s, settings.jwks_wait_s) == (5.0, 2.0)
    with pytest.raises(AuthSettingsError, match="HOST_AUTH_JWKS_WAIT is set but HOST_AUTH_ISSUER"):
        AuthSettings.from_env({"HOST_AUTH_JWKS_WAIT": "1"})
