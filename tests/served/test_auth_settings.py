"""HOST_AUTH_* settings: what is accepted, and a clear refusal naming the variable otherwise.

Also: the host imports and runs without PyJWT unless an issuer is configured, and says what to
install when one is.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from host.auth import AuthSettings, AuthSettingsError
from host.auth.settings import ASYMMETRIC_ALGORITHMS
from host.auth.urls import authorization_server_metadata_urls
from support.paths import ROOT
from support.servers import clean_env

pytestmark = pytest.mark.served

ISSUER = "https://login.example.com/"
AUDIENCE = "https://tools.example.com/mcp"


def settings(**env: str) -> AuthSettings:
    return AuthSettings.from_env(env)


def refusal(**env: str) -> str:
    with pytest.raises(AuthSettingsError) as caught:
        settings(**env)
    return caught.value.message


def test_nothing_set_is_no_auth() -> None:
    empty = settings()
    assert not empty.enabled and not empty.jwt
    assert settings(HOST_AUTH_ISSUER=" ", HOST_AUTH_TOKENS="").enabled is False


def test_an_issuer_with_its_audience() -> None:
    s = settings(HOST_AUTH_ISSUER=ISSUER, HOST_AUTH_AUDIENCE=AUDIENCE)
    assert s.enabled and s.jwt
    assert (s.issuer, s.audience, s.jwks_uri, s.tokens_file) == (ISSUER, AUDIENCE, None, None)
    assert s.algorithms == ASYMMETRIC_ALGORITHMS and s.leeway_s == 30


def test_a_tokens_file_alone_is_a_complete_set_up() -> None:
    s = settings(HOST_AUTH_TOKENS="/etc/host/tokens")
    assert s.enabled and not s.jwt and s.tokens_file == Path("/etc/host/tokens")


def test_everything_set() -> None:
    s = settings(
        HOST_AUTH_ISSUER="https://idp.example.com/realms/tools",
        HOST_AUTH_AUDIENCE=AUDIENCE,
        HOST_AUTH_JWKS_URI="https://idp.example.com/keys",
        HOST_AUTH_TOKENS="tokens",
        HOST_AUTH_ALGORITHMS="es256, RS256 ,EdDSA",
        HOST_AUTH_LEEWAY="5",
    )
    assert s.algorithms == ("ES256", "RS256", "EdDSA") and s.leeway_s == 5.0


def test_an_issuer_without_an_audience_is_refused() -> None:
    message = refusal(HOST_AUTH_ISSUER=ISSUER)
    assert "HOST_AUTH_AUDIENCE is not" in message and "https://tools.example.com/mcp" in message


@pytest.mark.parametrize(
    "name", ["HOST_AUTH_AUDIENCE", "HOST_AUTH_JWKS_URI", "HOST_AUTH_ALGORITHMS"]
)
def test_jwt_settings_without_an_issuer_are_refused(name: str) -> None:
    value = "RS256" if name == "HOST_AUTH_ALGORITHMS" else "https://x.example.com/"
    message = refusal(**{name: value, "HOST_AUTH_TOKENS": "t"})
    assert name in message and "HOST_AUTH_ISSUER" in message


@pytest.mark.parametrize(
    ("name", "url", "why"),
    [
        ("HOST_AUTH_ISSUER", "http://login.example.com", "https://"),
        ("HOST_AUTH_ISSUER", "http://10.0.0.1:8080", "loopback"),
        ("HOST_AUTH_ISSUER", "http://127.0.0.1.nip.io", "loopback"),
        ("HOST_AUTH_ISSUER", "login.example.com", "absolute https:// URL"),
        ("HOST_AUTH_ISSUER", "https://login.example.com/?tenant=1", "?query"),
        ("HOST_AUTH_ISSUER", "https://login.example.com/#x", "#fragment"),
        ("HOST_AUTH_ISSUER", "https://user:pw@login.example.com", "user name"),
        ("HOST_AUTH_AUDIENCE", "http://tools.example.com/mcp", "https://"),
        ("HOST_AUTH_AUDIENCE", "https://tools.example.com/mcp#frag", "#fragment"),
        ("HOST_AUTH_AUDIENCE", 'https://tools.example.com/"mcp', "not a valid URL"),
        ("HOST_AUTH_AUDIENCE", "api://tools", "absolute https:// URL"),
        ("HOST_AUTH_JWKS_URI", "http://login.example.com/jwks", "https://"),
        ("HOST_AUTH_JWKS_URI", "file:///etc/keys.json", "absolute https:// URL"),
        ("HOST_AUTH_JWKS_URI", "https://login.example.com:port/jwks", "not a valid URL"),
    ],
)
def test_unsafe_or_malformed_urls_are_refused(name: str, url: str, why: str) -> None:
    env = {"HOST_AUTH_ISSUER": ISSUER, "HOST_AUTH_AUDIENCE": AUDIENCE, name: url}
    message = refusal(**env)
    assert message.startswith(name) and why in message


@pytest.mark.parametrize(
    "host", ["127.0.0.1:9000", "127.1.2.3", "localhost:8080", "LOCALHOST", "[::1]:9000"]
)
def test_plain_http_is_allowed_on_loopback(host: str) -> None:
    s = settings(
        HOST_AUTH_ISSUER=f"http://{host}",
        HOST_AUTH_AUDIENCE=f"http://{host}/mcp",
        HOST_AUTH_JWKS_URI=f"http://{host}/jwks",
    )
    assert s.issuer == f"http://{host}"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("none", "unsigned tokens are never accepted"),
        ("RS256,none", "unsigned tokens are never accepted"),
        ("HS256", "shared-secret algorithms are not accepted"),
        ("hs512", "shared-secret algorithms are not accepted"),
        ("RS257", "unknown algorithm 'RS257'"),
        (",", "at least one algorithm"),
    ],
)
def test_algorithms_allow_only_public_key_ones(value: str, why: str) -> None:
    env = {"HOST_AUTH_ISSUER": ISSUER, "HOST_AUTH_AUDIENCE": AUDIENCE}
    message = refusal(**env, HOST_AUTH_ALGORITHMS=value)
    assert message.startswith("HOST_AUTH_ALGORITHMS") and why in message


def test_algorithms_given_directly_are_checked_too() -> None:
    with pytest.raises(AuthSettingsError, match="none"):
        AuthSettings(issuer=ISSUER, audience=AUDIENCE, algorithms=("none",))
    assert AuthSettings(tokens_file=Path("t"), algorithms=("rs256",)).algorithms == ("RS256",)


@pytest.mark.parametrize("value", ["-1", "301", "nan", "inf", "soon"])
def test_leeway_is_a_small_number_of_seconds(value: str) -> None:
    env = {"HOST_AUTH_ISSUER": ISSUER, "HOST_AUTH_AUDIENCE": AUDIENCE}
    assert refusal(**env, HOST_AUTH_LEEWAY=value).startswith("HOST_AUTH_LEEWAY")


def test_metadata_addresses_follow_mcp_discovery_order() -> None:
    assert authorization_server_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://auth.example.com/tenant1/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]


# --- without PyJWT ------------------------------------------------------------------------------

_WITHOUT_JWT = """
import sys
sys.modules["jwt"] = None  # as if PyJWT were not installed
"""


def run_without_pyjwt(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_JWT + textwrap.dedent(code)],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_the_host_runs_without_pyjwt_when_no_issuer_is_set(tmp_path: Path) -> None:
    done = run_without_pyjwt(
        f"""
        from pathlib import Path
        from host.auth import Authenticator, AuthSettings, ANONYMOUS
        from host.cli import main
        assert Authenticator(AuthSettings()).authenticate(None) is ANONYMOUS
        path = Path({str(tmp_path / "tokens")!r})
        assert main(["token", "create", "ci", "--file", str(path)]) == 0
        assert "jwt" not in sys.modules or sys.modules["jwt"] is None
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("ok\n")


def test_an_issuer_without_pyjwt_says_what_to_install(tmp_path: Path) -> None:
    done = run_without_pyjwt(
        """
        from host.auth import Authenticator, AuthSettings, AuthSettingsError
        settings = AuthSettings(issuer="https://login.example.com", audience="https://t.example.com")
        try:
            Authenticator(settings)
        except AuthSettingsError as exc:
            print(exc.message)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "HOST_AUTH_ISSUER is set" in done.stdout
    assert "pip install 'pyjwt[crypto]>=2.10' " in done.stdout
    assert "(the auth extra; in a clone of the host: pip install -e '.[auth]')" in done.stdout


def test_host_serve_and_the_app_need_no_auth_extra() -> None:
    # The README's first command installs no extra: PyJWT, Authlib and httpx may all be missing.
    code = (
        "import sys\n"
        "for name in ('jwt', 'authlib', 'httpx'):\n"
        "    sys.modules[name] = None\n"
        "import host.commands.serve, host.web.app, host.pages\n"
        "print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "ok", done.stderr


def test_importing_host_auth_does_not_import_pyjwt() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, host.auth; print('jwt' in sys.modules)"],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "False", done.stderr
