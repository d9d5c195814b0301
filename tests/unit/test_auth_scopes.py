"""Scopes (hierarchical on ':'), the WWW-Authenticate challenges, and the resource metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.auth import (
    AuthSettings,
    check_scope,
    insufficient_scope_challenge,
    missing_scopes,
    protected_resource_metadata,
    protected_resource_paths,
    resource_metadata_url,
    scopes_from_claims,
    split_scopes,
    unauthorized_challenge,
)

JWT = AuthSettings(issuer="https://login.example.com/", audience="https://tools.example.com/mcp")
ROOTED = AuthSettings(issuer="https://login.example.com", audience="https://tools.example.com")
STATIC = AuthSettings(tokens_file=Path("tokens"))
PRM = "https://tools.example.com/.well-known/oauth-protected-resource/mcp"


# --- scopes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "needed", "missing"),
    [
        ({"tickets"}, ["tickets:read", "tickets:write"], []),
        ({"tickets"}, ["tickets:write:bulk"], []),
        ({"tickets"}, ["tickets"], []),
        ({"tickets:read"}, ["tickets"], ["tickets"]),
        ({"tickets:read"}, ["tickets:write"], ["tickets:write"]),
        ({"tickets:read"}, ["tickets:read:own"], []),
        ({"tick"}, ["tickets:read"], ["tickets:read"]),
        ({"tickets:re"}, ["tickets:read"], ["tickets:read"]),
        ({"tickets:"}, ["tickets:read"], ["tickets:read"]),
        ({""}, ["tickets"], ["tickets"]),
        (set(), ["b", "a", "b"], ["b", "a"]),
        ({"admin"}, [], []),
        ({"ops", "tickets:read"}, ["tickets:read", "deploy", "ops:restart"], ["deploy"]),
    ],
)
def test_missing_scopes_is_hierarchical_on_colons(
    held: set[str], needed: list[str], missing: list[str]
) -> None:
    assert missing_scopes(held, needed) == missing


def test_scope_names() -> None:
    assert check_scope("tickets:read") is None
    assert check_scope("https://api.example.com/read") is None
    for bad in ["", "a b", 'a"b', "a\\b", ":a", "a:", "a::b", "é"]:
        assert check_scope(bad) is not None, bad
    assert split_scopes(" a,b  c,,a ") == ["a", "b", "c"]


def test_scopes_from_claims_read_scope_and_scp_and_ignore_junk() -> None:
    assert scopes_from_claims({"scope": "a b  c"}) == {"a", "b", "c"}
    assert scopes_from_claims({"scp": ["a", "b:c"]}) == {"a", "b:c"}
    assert scopes_from_claims({"scp": "a b"}) == {"a", "b"}
    assert scopes_from_claims({"scope": ["a"], "scp": [1, None, "x", ""]}) == {"a", "x"}
    assert scopes_from_claims({"scope": 7}) == frozenset()


# --- challenges ---------------------------------------------------------------------------------


def test_401_challenges() -> None:
    assert unauthorized_challenge(JWT, "missing") == f'Bearer resource_metadata="{PRM}"'
    assert (
        unauthorized_challenge(JWT, "invalid_token")
        == f'Bearer error="invalid_token", resource_metadata="{PRM}"'
    )
    assert (
        unauthorized_challenge(JWT, "missing", ["tickets:read", "tickets:read", "x"])
        == f'Bearer scope="tickets:read x", resource_metadata="{PRM}"'
    )


def test_403_challenge_names_every_needed_scope_at_once() -> None:
    assert insufficient_scope_challenge(JWT, ["tickets:read", "tickets:write"]) == (
        'Bearer error="insufficient_scope", scope="tickets:read tickets:write", '
        f'resource_metadata="{PRM}"'
    )


def test_challenges_without_an_issuer_have_no_metadata_to_point_at() -> None:
    assert unauthorized_challenge(STATIC, "missing") == "Bearer"
    assert unauthorized_challenge(STATIC, "invalid_token") == 'Bearer error="invalid_token"'
    assert (
        insufficient_scope_challenge(STATIC, ["a"])
        == 'Bearer error="insufficient_scope", scope="a"'
    )


# --- protected resource metadata ----------------------------------------------------------------


def test_metadata_paths_and_url_follow_the_audience() -> None:
    assert protected_resource_paths(JWT) == (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    )
    assert resource_metadata_url(JWT) == PRM
    assert protected_resource_paths(ROOTED) == ("/.well-known/oauth-protected-resource",)
    assert (
        resource_metadata_url(ROOTED)
        == "https://tools.example.com/.well-known/oauth-protected-resource"
    )
    nested = AuthSettings(issuer="https://l.example", audience="https://t.example/team/a/mcp/")
    assert protected_resource_paths(nested)[0] == "/.well-known/oauth-protected-resource/team/a/mcp"
    assert protected_resource_paths(STATIC) == () and resource_metadata_url(STATIC) is None


def test_the_metadata_document() -> None:
    assert protected_resource_metadata(JWT, ["tickets:write", "tickets:read", "tickets:read"]) == {
        "resource": "https://tools.example.com/mcp",
        "authorization_servers": ["https://login.example.com/"],
        "scopes_supported": ["tickets:read", "tickets:write"],
        "bearer_methods_supported": ["header"],
    }
    assert "scopes_supported" not in protected_resource_metadata(JWT, [])
    with pytest.raises(ValueError):
        protected_resource_metadata(STATIC, [])
