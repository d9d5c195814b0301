"""Static tokens: ``host token create|list|revoke`` end to end, and what a running host accepts.

The CLI runs as a real subprocess against a real tokens file; a running host is an Authenticator
kept alive across the file's changes, as a gunicorn worker keeps one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from host.auth import ANONYMOUS, Authenticator, AuthError, AuthSettings, AuthSettingsError
from host.auth.tokenfile import TOKEN_PREFIX, create_token, read_tokens
from host.cli import main
from support.servers import clean_env

pytestmark = pytest.mark.served

#: How long a running host may keep accepting a revoked token ("within seconds").
WITHIN = 5.0


def host_token(path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``host token ARGS --file path``: in this process, or with ``process`` as a real command."""
    argv = ["token", *args, "--file", str(path)]
    if process:
        return subprocess.run(
            [sys.executable, "-m", "host", *argv],
            env=clean_env(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def create(path: Path, name: str, scopes: str = "", *, process: bool = False) -> str:
    done = host_token(path, "create", name, "--scopes", scopes, process=process)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def static_auth(path: Path) -> Authenticator:
    return Authenticator(AuthSettings(tokens_file=path), tokens_check_interval=0.2)


def eventually(check: Callable[[], bool]) -> float:
    """Seconds until ``check()`` held; fails after WITHIN seconds."""
    start = time.monotonic()
    while time.monotonic() - start < WITHIN:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    pytest.fail(f"still not so after {WITHIN} s")


def accepted(auth: Authenticator, token: str) -> bool:
    try:
        auth.authenticate(f"Bearer {token}")
    except AuthError:
        return False
    return True


# --- the CLI ------------------------------------------------------------------------------------


def test_create_prints_the_token_once_and_stores_only_its_digest(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    done = host_token(path, "create", "ci", "--scopes", "tickets:read,tickets:write", process=True)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert done.stdout == token + "\n"  # nothing else on stdout: TOKEN=$(host token create ...)
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40
    assert "ci" in done.stderr and token not in done.stderr
    content = path.read_text()
    assert token not in content and token[len(TOKEN_PREFIX) :] not in content
    [entry] = json.loads(content)["tokens"]
    assert entry["name"] == "ci" and entry["scopes"] == ["tickets:read", "tickets:write"]
    assert time.strptime(entry["created"], "%Y-%m-%dT%H:%M:%SZ")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    second = create(path, "other")
    assert second != token


def test_list_shows_names_scopes_and_times_never_digests(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    create(path, "ci", "tickets:read")
    create(path, "ops", "tickets")
    text = host_token(path, "list")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CREATED", "SCOPES"]
    assert [line.split()[0] for line in lines[1:]] == ["ci", "ops"]
    assert lines[1].split()[2] == "tickets:read"
    as_json = json.loads(host_token(path, "list", "--format", "json").stdout)
    assert [(t["name"], t["scopes"]) for t in as_json] == [
        ("ci", ["tickets:read"]),
        ("ops", ["tickets"]),
    ]
    assert all(set(t) == {"name", "scopes", "created"} for t in as_json)
    digest = json.loads(path.read_text())["tokens"][0]["sha256"]
    assert digest not in text.stdout


def test_list_of_no_file_is_empty(tmp_path: Path) -> None:
    done = host_token(tmp_path / "tokens", "list", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout) == []


def test_revoke_removes_the_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    create(path, "ci")
    create(path, "ops")
    done = host_token(path, "revoke", "ci")
    assert done.returncode == 0, done.stderr
    assert [r.name for r in read_tokens(path)] == ["ops"]
    again = host_token(path, "revoke", "ci")
    assert again.returncode == 1 and "no token named 'ci'" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create", "bad name"], "not a valid token name"),
        (["create", "x", "--scopes", 'a"b'], "not a valid scope"),
        (["create", "x", "--scopes", "a::b"], "not a valid scope"),
    ],
)
def test_create_refuses_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    done = host_token(tmp_path / "tokens", *args)
    assert done.returncode == 1 and message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "tokens").exists()


def test_a_name_cannot_be_taken_twice(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    create(path, "ci")
    done = host_token(path, "create", "ci")
    assert done.returncode == 1 and "already exists" in done.stderr and done.stdout == ""


def test_the_file_comes_from_host_auth_tokens_or_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HOST_AUTH_TOKENS", raising=False)
    assert main(["token", "list"]) == 2
    err = capsys.readouterr().err
    assert "HOST_AUTH_TOKENS" in err and "--file" in err
    from_env = tmp_path / "from-env"
    monkeypatch.setenv("HOST_AUTH_TOKENS", str(from_env))
    assert main(["token", "create", "ci"]) == 0
    assert [r.name for r in read_tokens(from_env)] == ["ci"]
    given = tmp_path / "given"
    assert main(["token", "create", "ops", "--file", str(given)]) == 0
    assert [r.name for r in read_tokens(given)] == ["ops"]


def test_concurrent_creates_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    names = [f"t{i}" for i in range(12)]
    threads = [threading.Thread(target=create_token, args=(path, n, [])) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.name for r in read_tokens(path)) == sorted(names)


# --- a running host -----------------------------------------------------------------------------


def test_a_static_token_is_its_names_identity(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci-bot", "tickets:read,deploy")
    identity = static_auth(path).authenticate(f"Bearer {token}")
    assert identity.principal == "ci-bot"
    assert identity.scopes == {"tickets:read", "deploy"}
    assert identity.method == "static"
    assert identity.claims["sub"] == "ci-bot"


@pytest.mark.parametrize(
    "change",
    [
        lambda t: TOKEN_PREFIX + "x" * (len(t) - len(TOKEN_PREFIX)),
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t + "A",
        lambda t: t[:-1],
        lambda t: t.upper(),
    ],
)
def test_a_wrong_static_token_is_refused(tmp_path: Path, change: Callable[[str], str]) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci")
    with pytest.raises(AuthError) as caught:
        static_auth(path).authenticate(f"Bearer {change(token)}")
    assert caught.value.kind == "invalid_token"


def test_the_digest_itself_is_not_a_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    create(path, "ci")
    digest = json.loads(path.read_text())["tokens"][0]["sha256"]
    auth = static_auth(path)
    for guess in (digest, TOKEN_PREFIX + digest):
        with pytest.raises(AuthError):
            auth.authenticate(f"Bearer {guess}")


def test_a_revoked_token_is_refused_within_seconds_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci")
    keep = create(path, "ops")
    auth = Authenticator(AuthSettings(tokens_file=path))  # the default check interval
    assert auth.authenticate(f"Bearer {token}").principal == "ci"
    assert host_token(path, "revoke", "ci", process=True).returncode == 0
    eventually(lambda: not accepted(auth, token))
    assert auth.authenticate(f"Bearer {keep}").principal == "ops"


def test_a_token_created_while_running_is_accepted_within_seconds(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    auth = static_auth(path)  # no file yet: nothing is accepted
    token = create(path, "late")
    eventually(lambda: accepted(auth, token))
    # Revoke and re-create the same name within the same second: a new file, a new token.
    assert host_token(path, "revoke", "late").returncode == 0
    again = create(path, "late")
    eventually(lambda: accepted(auth, again) and not accepted(auth, token))


def test_a_tokens_file_writable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci")
    for mode in (0o620, 0o602, 0o666):
        path.chmod(mode)
        with pytest.raises(AuthSettingsError, match="chmod 600"):
            static_auth(path)
        done = host_token(path, "create", "more")
        assert done.returncode == 1 and "writable by group or others" in done.stderr
    path.chmod(0o640)  # readable by a group is fine: it holds digests only
    assert static_auth(path).authenticate(f"Bearer {token}").principal == "ci"


def test_a_running_host_stops_trusting_a_file_opened_to_others(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci")
    auth = static_auth(path)
    assert accepted(auth, token)
    path.chmod(0o666)
    eventually(lambda: not accepted(auth, token))
    path.chmod(0o600)
    eventually(lambda: accepted(auth, token))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"tokens": []}', "not a tokens file"),
        ('{"format": "host-tokens/1", "tokens": [{"name": "x"}]}', "entry 1 is malformed"),
        (
            '{"format": "host-tokens/1", "tokens": [{"name": "x", "scopes": [], "created": "",'
            ' "sha256": "abcd"}]}',
            "entry 1 is malformed",
        ),
    ],
)
def test_a_malformed_file_is_refused_at_start(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(AuthSettingsError, match=message):
        static_auth(path)


def test_static_tokens_and_jwts_side_by_side(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = create(path, "ci")
    auth = static_auth(path)
    assert auth.authenticate(f"Bearer {token}").principal == "ci"
    with pytest.raises(AuthError) as caught:
        auth.authenticate("Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
    assert "HOST_AUTH_ISSUER is not set" in caught.value.reason


def test_without_auth_everyone_is_anonymous(tmp_path: Path) -> None:
    auth = Authenticator(AuthSettings())
    assert not auth.enabled
    assert auth.authenticate(None) is ANONYMOUS
    assert auth.authenticate("Bearer whatever") is ANONYMOUS


def test_the_file_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    create(path, "a")
    before = path.stat().st_ino
    create(path, "b")
    assert path.stat().st_ino != before
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("tokens", "tokens.lock")]
    assert leftovers == []
    assert os.access(path, os.R_OK)
