"""Settings from HOST_* variables: defaults, parsing, and clear errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.settings import Settings, SettingsError
from host.web.app import origin_allowed


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.specs_dir == Path("specs")
    assert settings.handlers_path == Path("handlers")
    assert settings.secrets == ()
    assert settings.state_ttl_s == 600
    assert settings.data_dir == Path(".host")
    assert settings.store == "sqlite:///.host/store.db"
    assert settings.allowed_origins == ()
    assert settings.max_body == 1024 * 1024


NEW, OLD = "new-key-" + "n" * 24, "old-key-" + "o" * 24


def test_every_variable() -> None:
    settings = Settings.from_env(
        {
            "HOST_SPECS": "/srv/desk/specs",
            "HOST_HANDLERS": "/srv/desk/code",
            "HOST_SECRET": f" {NEW} , {OLD} ,",
            "HOST_STATE_TTL": "90",
            "HOST_STORE": "redis://127.0.0.1:6379/2",
            "HOST_DATA_DIR": "/var/lib/host",
            "HOST_ALLOWED_ORIGINS": "https://a.example, https://b.example",
            "HOST_MAX_BODY": "4096",
        }
    )
    assert settings.specs_dir == Path("/srv/desk/specs")
    assert settings.handlers_path == Path("/srv/desk/code")
    assert settings.secrets == (NEW, OLD)
    assert settings.state_ttl_s == 90
    assert settings.store == "redis://127.0.0.1:6379/2"
    assert settings.allowed_origins == ("https://a.example", "https://b.example")
    assert settings.max_body == 4096


def test_handlers_default_to_beside_the_specs_and_the_store_to_the_data_dir() -> None:
    settings = Settings.from_env({"HOST_SPECS": "/srv/desk/specs", "HOST_DATA_DIR": "/var/h"})
    assert settings.handlers_path == Path("/srv/desk/handlers")
    assert settings.store == "sqlite:////var/h/store.db"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HOST_STATE_TTL", "ten"),
        ("HOST_STATE_TTL", "0"),
        ("HOST_STATE_TTL", "-5"),
        ("HOST_STATE_TTL", "inf"),
        ("HOST_MAX_BODY", "1.5"),
        ("HOST_MAX_BODY", "0"),
        ("HOST_MAX_BODY", "1MB"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({name: value})
    assert name in info.value.message
    assert repr(value) in info.value.message


@pytest.mark.parametrize(
    ("origin", "allowed", "expected"),
    [
        (None, (), True),
        ("http://localhost:8080", (), True),
        ("HTTP://LOCALHOST", (), True),
        ("http://127.0.0.1", (), True),
        ("http://[::1]:9", (), True),
        ("http://localhost.example", (), False),
        ("https://example.com", (), False),
        ("null", (), False),
        ("https://example.com", ("https://example.com/",), True),
        ("http://localhost", ("https://example.com",), False),
        ("https://anything.example", ("*",), True),
    ],
)
def test_origin_rules(origin: str | None, allowed: tuple[str, ...], expected: bool) -> None:
    assert origin_allowed(origin, allowed) is expected


def test_log_level() -> None:
    assert Settings.from_env({}).log_level == "INFO"
    assert Settings.from_env({"HOST_LOG_LEVEL": "warning"}).log_level == "WARNING"
    with pytest.raises(SettingsError, match="HOST_LOG_LEVEL must be one of DEBUG, INFO"):
        Settings.from_env({"HOST_LOG_LEVEL": "loud"})


@pytest.mark.parametrize("value", ["x" * 10, "short-key", f"{NEW},tiny-key"])
def test_a_secret_shorter_than_32_characters_is_refused(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"HOST_SECRET": value})
    assert caught.value.variable == "HOST_SECRET"
    assert "at least 32 characters" in caught.value.message
    assert "comma-separated" in caught.value.message
    assert value.split(",")[-1] not in caught.value.message  # a secret is never echoed
