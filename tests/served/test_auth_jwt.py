"""JWT access tokens, issued by a real authorization server, accepted or refused by host.auth.

Every token a test accepts comes from oauth2-mock-server's token endpoint. Refused ones come from
it too where it can make them (expired, wrong audience, wrong issuer, missing claims); the rest are
what an attacker would forge (no signature, a shared-secret signature keyed with the public key,
another key under the issuer's key id).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from host.auth import Authenticator, AuthError, AuthSettings, Identity
from host.auth.fetch import FetchError, fetch_json
from support.oauth import AUDIENCE, MockAuthServer
from support.servers import free_port

pytestmark = pytest.mark.served


def authenticator(server: MockAuthServer, **options: Any) -> Authenticator:
    """An Authenticator for tokens of ``server`` issued for AUDIENCE."""
    settings = AuthSettings.from_env(server.env())
    return Authenticator(settings, **options)


def fetch_failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The ``error`` of each key-fetch failure logged for the operator."""
    return [
        str(getattr(r, "error", ""))
        for r in caplog.records
        if getattr(r, "event", "") == "auth_jwks_fetch_failed"
    ]


def refused(auth: Authenticator, token: str) -> AuthError:
    with pytest.raises(AuthError) as caught:
        auth.authenticate(f"Bearer {token}")
    assert caught.value.kind == "invalid_token"
    return caught.value


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], sign: Any = None) -> str:
    """A JWT with any header and claims, signed by ``sign(signing_input)`` (or unsigned)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = sign(signing_input.encode()) if sign else b""
    return f"{signing_input}.{b64(signature)}"


def claims_of(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


@pytest.fixture(scope="module")
def auth(oauth_server: MockAuthServer) -> Authenticator:
    return authenticator(oauth_server)


# --- accepted -----------------------------------------------------------------------------------


def test_a_token_from_the_issuer_for_this_host_is_the_callers_identity(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(sub="alice", scopes=["tickets:read", "tickets:write"])
    identity = auth.authenticate(f"Bearer {token}")
    assert identity == Identity(
        principal="alice", scopes=frozenset({"tickets:read", "tickets:write"}), method="jwt"
    )
    assert identity.claims["iss"] == oauth_server.issuer
    assert identity.claims["aud"] == AUDIENCE
    with pytest.raises(TypeError):
        identity.claims["sub"] = "mallory"  # type: ignore[index]


def test_scopes_come_from_scope_and_scp_together(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(scopes=["a"], scp="b c:d")
    assert auth.authenticate(f"Bearer {token}").scopes == {"a", "b", "c:d"}


def test_the_scheme_is_case_insensitive(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    token = oauth_server.token(sub="bob")
    assert auth.authenticate(f"bearer  {token}").principal == "bob"


def test_an_audience_list_holding_this_host(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(audience=["https://other.example.com", AUDIENCE])
    assert claims_of(token)["aud"] == ["https://other.example.com", AUDIENCE]
    assert auth.authenticate(f"Bearer {token}").principal == "alice"


def test_another_issuer_with_es256_keys_found_through_rfc8414_metadata(
    other_oauth_server: MockAuthServer,
) -> None:
    auth = authenticator(other_oauth_server)
    token = other_oauth_server.token(sub="carol", scopes=["x"])
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    assert auth.authenticate(f"Bearer {token}").principal == "carol"


def test_a_token_that_expired_within_the_leeway_is_still_accepted(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(expires_in=-5)  # the default leeway is 30 s
    assert auth.authenticate(f"Bearer {token}").principal == "alice"


# --- refused: the header ------------------------------------------------------------------------


@pytest.mark.parametrize("header", [None, "", "   "])
def test_no_token_is_missing(auth: Authenticator, header: str | None) -> None:
    with pytest.raises(AuthError) as caught:
        auth.authenticate(header)
    assert caught.value.kind == "missing"


def test_another_scheme_counts_as_no_token(auth: Authenticator) -> None:
    with pytest.raises(AuthError) as caught:
        auth.authenticate("Basic YWxpY2U6c2VjcmV0")
    assert caught.value.kind == "missing"


@pytest.mark.parametrize("value", ["Bearer", "Bearer a b", 'Bearer "quoted"', "Bearer a,b"])
def test_malformed_bearer_credentials_are_an_invalid_token(auth: Authenticator, value: str) -> None:
    with pytest.raises(AuthError) as caught:
        auth.authenticate(value)
    assert caught.value.kind == "invalid_token"


def test_garbage_is_an_invalid_token(auth: Authenticator) -> None:
    assert "not a JWT" in refused(auth, "not.a.jwt").reason


def test_an_oversized_token_is_not_parsed(auth: Authenticator) -> None:
    assert "longer than" in refused(auth, "a" * 20_000).reason


# --- refused: signature and algorithm -----------------------------------------------------------


def test_a_bad_signature(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    token = oauth_server.token()
    head, payload, signature = token.split(".")
    flipped = b64(bytes([base64.urlsafe_b64decode(signature + "==")[0] ^ 1]))[:2]
    assert "bad signature" in refused(auth, f"{head}.{payload}.{flipped}{signature[2:]}").reason


def test_changed_claims_under_the_issuers_signature(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    token = oauth_server.token(scopes=["tickets:read"])
    head, _, signature = token.split(".")
    claims = claims_of(token) | {"scope": "tickets admin"}
    assert (
        "bad signature"
        in refused(auth, f"{head}.{b64(json.dumps(claims).encode())}.{signature}").reason
    )


def test_another_key_under_the_issuers_key_id(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    claims = claims_of(oauth_server.token())
    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = jwt.encode(claims, mine, algorithm="RS256", headers={"kid": oauth_server.kid})
    assert "bad signature" in refused(auth, token).reason


def test_another_issuers_token_even_when_it_claims_to_be_ours(
    auth: Authenticator, oauth_server: MockAuthServer, other_oauth_server: MockAuthServer
) -> None:
    theirs = other_oauth_server.token(iss=oauth_server.issuer)
    assert "no key" in refused(auth, theirs).reason
    plain = other_oauth_server.token()
    refused(auth, plain)


def test_alg_none_is_never_accepted(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    claims = claims_of(oauth_server.token())
    for alg in ("none", "None", "NONE"):
        token = forge({"alg": alg, "typ": "JWT", "kid": oauth_server.kid}, claims)
        assert "not allowed" in refused(auth, token).reason
        assert "not allowed" in refused(auth, token.rstrip(".") + ".").reason


def test_hs256_keyed_with_the_issuers_public_key_is_refused(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    claims = claims_of(oauth_server.token())
    jwk = next(k for k in oauth_server.jwks()["keys"] if k["kid"] == oauth_server.kid)
    public = jwt.PyJWK(jwk).key
    for encoding, fmt in (
        (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        (serialization.Encoding.PEM, serialization.PublicFormat.PKCS1),
        (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
    ):
        secret = public.public_bytes(encoding, fmt)
        for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
            token = forge(
                {"alg": alg, "typ": "JWT", "kid": oauth_server.kid},
                claims,
                lambda data, s=secret, d=digest: hmac.new(s, data, d).digest(),
            )
            assert "not allowed" in refused(auth, token).reason
    token = forge(
        {"alg": "HS256", "kid": oauth_server.kid},
        claims,
        lambda data: hmac.new(json.dumps(jwk).encode(), data, hashlib.sha256).digest(),
    )
    refused(auth, token)


def test_an_algorithm_outside_the_allow_list(oauth_server: MockAuthServer) -> None:
    settings = AuthSettings.from_env(oauth_server.env() | {"HOST_AUTH_ALGORITHMS": "ES256"})
    auth = Authenticator(settings)
    assert "'RS256' is not allowed" in refused(auth, oauth_server.token()).reason


def test_a_key_published_for_one_algorithm_does_not_verify_another(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    # The issuer's key says alg RS256; the same RSA key signing PS256 is not what it published.
    claims = claims_of(oauth_server.token())
    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = jwt.encode(claims, mine, algorithm="PS256", headers={"kid": oauth_server.kid})
    assert "no key" in refused(auth, token).reason


def test_unknown_critical_headers_are_refused(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    head, payload, signature = oauth_server.token().split(".")
    header = json.loads(base64.urlsafe_b64decode(head + "==")) | {"crit": ["exp2"], "exp2": 1}
    token = f"{b64(json.dumps(header).encode())}.{payload}.{signature}"
    refused(auth, token)


# --- refused: claims ----------------------------------------------------------------------------


def test_wrong_issuer(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    token = oauth_server.token(iss="https://evil.example.com")
    assert "iss is not" in refused(auth, token).reason
    slash = oauth_server.token(iss=oauth_server.issuer + "/")
    assert "iss is not" in refused(auth, slash).reason


def test_wrong_audience(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    other = oauth_server.token(audience="https://other.example.com/mcp")
    assert "aud does not contain" in refused(auth, other).reason
    prefix = oauth_server.token(audience="https://tools.example.com")
    assert "aud does not contain" in refused(auth, prefix).reason
    several = oauth_server.token(audience=["https://a.example.com", AUDIENCE + "/"])
    assert "aud does not contain" in refused(auth, several).reason


def test_no_audience(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    assert "no aud claim" in refused(auth, oauth_server.token(audience=None)).reason


def test_expired(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    assert refused(auth, oauth_server.token(expires_in=-120)).reason == "expired"


def test_not_yet_valid(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    token = oauth_server.token(not_before=600)
    assert "not valid yet" in refused(auth, token).reason


@pytest.mark.parametrize("claim", ["exp", "sub", "iss"])
def test_a_required_claim_missing(
    auth: Authenticator, oauth_server: MockAuthServer, claim: str
) -> None:
    token = oauth_server.token(omit=claim)
    assert claim not in claims_of(token)
    assert f"no {claim} claim" in refused(auth, token).reason


def test_an_empty_subject(auth: Authenticator, oauth_server: MockAuthServer) -> None:
    assert "sub" in refused(auth, oauth_server.token(sub="")).reason


def test_the_reason_never_reaches_the_message(
    auth: Authenticator, oauth_server: MockAuthServer
) -> None:
    error = refused(auth, oauth_server.token(expires_in=-120))
    assert str(error) == "invalid bearer token"


# --- the issuer's keys --------------------------------------------------------------------------


def test_an_unknown_key_id_refetches_the_keys_at_a_bounded_rate(
    fresh_oauth_server: MockAuthServer,
) -> None:
    server = fresh_oauth_server
    auth = authenticator(server, jwks_refetch_interval=1.0)
    auth.authenticate(f"Bearer {server.token()}")
    assert server.jwks_fetches() == 1
    # The issuer rotates: its new key is not in the cached set, so the first token signed with
    # it makes the host fetch again (once the interval since the last fetch has passed).
    new_kid = server.rotate()
    token = server.token(sub="after-rotation")
    assert jwt.get_unverified_header(token)["kid"] == new_kid
    deadline = 5.0
    identity = None
    while deadline > 0 and identity is None:
        try:
            identity = auth.authenticate(f"Bearer {token}")
        except AuthError:
            threading.Event().wait(0.2)
            deadline -= 0.2
    assert identity is not None and identity.principal == "after-rotation"
    fetched = server.jwks_fetches()
    assert fetched >= 2
    # An attacker sending made-up key ids gets no fetch per request: at most one per interval.
    claims = claims_of(token)
    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = [
        jwt.encode(claims, mine, algorithm="RS256", headers={"kid": secrets.token_hex(8)})
        for _ in range(30)
    ]
    for token_with_unknown_kid in forged:
        refused(auth, token_with_unknown_kid)
    assert server.jwks_fetches() - fetched <= 1
    # Old and new keys both still verify.
    assert auth.authenticate(f"Bearer {token}").principal == "after-rotation"


def test_keys_already_fetched_keep_working_while_the_key_set_fails(
    fresh_oauth_server: MockAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = fresh_oauth_server
    auth = authenticator(server, jwks_refetch_interval=0.0, jwks_retry_interval=0.0)
    good = server.token(sub="still-good")
    assert auth.authenticate(f"Bearer {good}").principal == "still-good"
    server.fail_jwks(503)
    server.rotate()
    with caplog.at_level(logging.ERROR, logger="host.auth"):
        error = refused(auth, server.token())
    assert "no key" in error.reason
    [failure] = fetch_failures(caplog)
    assert "HTTP 503" in failure
    assert auth.authenticate(f"Bearer {good}").principal == "still-good"


def test_an_unreachable_key_set_refuses_tokens_and_tells_the_operator(
    oauth_server: MockAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/jwks"
    env = oauth_server.env() | {"HOST_AUTH_JWKS_URI": closed}
    auth = Authenticator(AuthSettings.from_env(env), fetch_timeout=2.0)
    with caplog.at_level(logging.ERROR, logger="host.auth"):
        error = refused(auth, oauth_server.token())
        # Retried only after the retry interval: a second token gets no second attempt at once.
        refused(auth, oauth_server.token())
    assert "not available" in error.reason
    [failure] = fetch_failures(caplog)
    assert closed in failure


def test_an_unreachable_issuer_fails_discovery(
    oauth_server: MockAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    env = oauth_server.env() | {"HOST_AUTH_ISSUER": f"http://127.0.0.1:{free_port()}"}
    auth = Authenticator(AuthSettings.from_env(env), fetch_timeout=2.0)
    with caplog.at_level(logging.ERROR, logger="host.auth"):
        assert auth.warm_up() is not None
    [failure] = fetch_failures(caplog)
    assert "no metadata found for HOST_AUTH_ISSUER" in failure


def test_metadata_naming_another_issuer_is_not_used(
    oauth_server: MockAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A trailing slash makes another issuer identifier; the operator is told the exact one.
    env = oauth_server.env() | {"HOST_AUTH_ISSUER": oauth_server.issuer + "/"}
    auth = Authenticator(AuthSettings.from_env(env))
    with caplog.at_level(logging.ERROR, logger="host.auth"):
        assert auth.warm_up() is not None
        refused(auth, oauth_server.token(iss=oauth_server.issuer + "/"))
    [failure] = fetch_failures(caplog)
    assert f"names issuer {oauth_server.issuer!r}, not HOST_AUTH_ISSUER" in failure


def test_warm_up_fetches_the_keys_once_for_all_requests(
    fresh_oauth_server: MockAuthServer,
) -> None:
    auth = authenticator(fresh_oauth_server)
    assert auth.warm_up() is None
    for _ in range(5):
        auth.authenticate(f"Bearer {fresh_oauth_server.token()}")
    assert fresh_oauth_server.jwks_fetches() == 1


# --- fetching -----------------------------------------------------------------------------------


@pytest.fixture
def redirecting(oauth_server: MockAuthServer) -> Iterator[str]:
    """A 127.0.0.1 server that redirects every GET to the mock server's key set."""

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", oauth_server.jwks_uri)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/jwks"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_redirects_are_not_followed(redirecting: str) -> None:
    with pytest.raises(FetchError, match="redirects are not followed"):
        fetch_json(redirecting, 2.0)


@pytest.mark.parametrize(
    "url", ["http://example.com/jwks", "ftp://127.0.0.1/jwks", "https://a@example.com/jwks"]
)
def test_fetching_refuses_urls_the_settings_would(url: str) -> None:
    with pytest.raises(FetchError):
        fetch_json(url, 1.0)
