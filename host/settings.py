"""Deployment settings, read from the environment (``HOST_*``) or given directly.

Specs say what the tools do; these say where and how one deployment runs them, so the same spec
directory runs unchanged everywhere.

=====================  ==========================================================================
Variable               Meaning (default)
=====================  ==========================================================================
HOST_SPECS             The spec directory (``specs``).
HOST_HANDLERS          The handlers directory (``handlers`` beside the spec directory).
HOST_SECRET            Keys that sign ``requestState`` and legacy session ids, comma-separated,
                       newest first: the first signs, all verify (to rotate, put the new key
                       first, and drop the old one a state lifetime later). Each key is at
                       least 32 characters and holds no comma. Every worker and instance must
                       share them. Unset: a key generated once in the data directory, shared
                       by the processes of this machine only.
HOST_STATE_TTL         Seconds a ``requestState`` stays valid (600).
HOST_STORE             ``sqlite:///path`` or ``redis://...`` (an SQLite file in the data directory).
HOST_STORE_VOLATILE_OK ``1`` serves from a store that can forget act claims (a Redis without
                       persistence, or one whose persistence cannot be checked): a restart may
                       then let a retried final round act again. Unset: such a store is refused.
HOST_DATA_DIR          Where the host keeps files (``.host``).
HOST_ALLOWED_ORIGINS   Browser origins allowed to call, comma-separated; ``*`` allows any. Unset:
                       ``http(s)://localhost``, ``127.0.0.1`` and ``[::1]`` on any port. Requests
                       without an ``Origin`` header (not from a browser) are always allowed.
HOST_MAX_BODY          Largest request body in bytes (1048576); larger gets HTTP 413.
HOST_LIMIT_*           Limits per caller, and HOST_RECORD_MAX (see :mod:`host.limits`).
HOST_ELICITATION       ``off``: no tool may ask the user, whatever the specs say (the kill switch
                       for a whole deployment); ``on`` (the default) leaves it to the specs.
HOST_METRICS           ``off``: no ``/metrics`` route and nothing collected; ``on`` (the default).
HOST_AUDIT_*           The audit trail's keep, signing key, export and bound (see
                       :mod:`host.observers.audit_settings`).
=====================  ==========================================================================
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from host.approvals.settings import ApprovalSettings
from host.auth.settings import AuthSettings
from host.errors import SettingsError
from host.limits import LimitSettings
from host.observers.audit_settings import AuditSettings
from host.protocol.legacy.sessions import LegacyOptions
from host.spec.paths import default_handlers_dir
from host.store.durability import VOLATILE_OK

__all__ = ["Settings", "SettingsError"]

DEFAULT_TTL_S = 600.0
DEFAULT_MAX_BODY = 1024 * 1024
#: The shortest signing key accepted: 32 characters of ``secrets.token_urlsafe`` are 192 bits.
MIN_SECRET = 32


@dataclass(frozen=True)
class Settings:
    """One deployment's settings.

    Attributes:
        specs_dir: The spec directory.
        handlers_dir: The handlers directory; None means ``handlers`` beside ``specs_dir``.
        secrets: Signing keys, newest first; empty means one random key for this process.
        state_ttl_s: Seconds a ``requestState`` stays valid.
        store_url: The store's URL; None means an SQLite file in ``data_dir``.
        data_dir: Where the host keeps its files.
        allowed_origins: Allowed ``Origin`` values; empty means local origins only.
        max_body: Largest accepted request body, in bytes.
        log_level: The least severe log lines written (``INFO`` logs one line per tool call).
        answer_timeout_s: How long a legacy client's question waits for its answer.
        session_ttl_s: How long a legacy session id stays valid.
        auth: Who may call (``HOST_AUTH_*``, :mod:`host.auth.settings`); nothing set: anyone.
        store_volatile_ok: Serve from a store that can forget act claims (acknowledged risk).
        elicitation: False for ``HOST_ELICITATION=off``: no tool may ask, whatever the specs say.
        metrics: False for ``HOST_METRICS=off``: no ``/metrics`` and no collection.
        audit: The audit trail's settings (:mod:`host.observers.audit_settings`).
        approvals: Approval requests' webhook, links and limit (:mod:`host.approvals.settings`).
        limits: Limits per caller, and the audit records' bound (:mod:`host.limits`).
    """

    specs_dir: Path = Path("specs")
    handlers_dir: Path | None = None
    secrets: tuple[str, ...] = ()
    state_ttl_s: float = DEFAULT_TTL_S
    store_url: str | None = None
    data_dir: Path = Path(".host")
    allowed_origins: tuple[str, ...] = ()
    max_body: int = DEFAULT_MAX_BODY
    log_level: str = "INFO"
    answer_timeout_s: float = 300.0
    session_ttl_s: float = 86_400.0
    auth: AuthSettings = field(default_factory=AuthSettings)
    store_volatile_ok: bool = False
    elicitation: bool = True
    metrics: bool = True
    audit: AuditSettings = field(default_factory=AuditSettings)
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)

    def __post_init__(self) -> None:
        short = [i for i, key in enumerate(self.secrets, 1) if len(key) < MIN_SECRET]
        if short:
            which = ", ".join(f"key {i} has {len(self.secrets[i - 1])}" for i in short)
            raise SettingsError(
                f"HOST_SECRET: every key must be at least {MIN_SECRET} characters ({which}). "
                "Keys are comma-separated, newest first; make one with: python3 -c "
                "'import secrets; print(secrets.token_urlsafe(32))'",
                "HOST_SECRET",
            )

    @property
    def audit_retention_s(self) -> float:
        """How long audit records are kept (``HOST_AUDIT_KEEP``)."""
        return self.audit.keep_s

    @property
    def handlers_path(self) -> Path:
        """The handlers directory, with its default applied."""
        if self.handlers_dir is not None:
            return self.handlers_dir
        return default_handlers_dir(self.specs_dir)

    @property
    def store(self) -> str:
        """The store URL, with its default applied."""
        if self.store_url:
            return self.store_url
        return f"sqlite:///{self.data_dir / 'store.db'}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``HOST_*`` variables (``os.environ`` unless ``env`` is given).

        Raises:
            SettingsError: A variable is set to something unusable; the message says which.
        """
        env = os.environ if env is None else env

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        specs = Path(text("HOST_SPECS") or "specs")
        handlers = text("HOST_HANDLERS")
        auth = AuthSettings.from_env(env)
        return cls(
            specs_dir=specs,
            handlers_dir=Path(handlers) if handlers else None,
            secrets=_split(env.get("HOST_SECRET", "")),
            state_ttl_s=_positive(env, "HOST_STATE_TTL", DEFAULT_TTL_S),
            store_url=text("HOST_STORE"),
            data_dir=Path(text("HOST_DATA_DIR") or ".host"),
            allowed_origins=_split(env.get("HOST_ALLOWED_ORIGINS", "")),
            max_body=int(_positive(env, "HOST_MAX_BODY", DEFAULT_MAX_BODY, integer=True)),
            log_level=_level(text("HOST_LOG_LEVEL") or cls.log_level),
            answer_timeout_s=_positive(env, "HOST_ANSWER_TIMEOUT", cls.answer_timeout_s),
            session_ttl_s=_positive(env, "HOST_SESSION_TTL", cls.session_ttl_s),
            auth=auth,
            store_volatile_ok=_flag(env, VOLATILE_OK),
            elicitation=_switch(env, "HOST_ELICITATION", "the specs decide", "no tool asks"),
            metrics=_switch(env, "HOST_METRICS", "serve /metrics", "collect nothing"),
            audit=AuditSettings.from_env(env),
            approvals=ApprovalSettings.from_env(env, auth.browser.public_url),
            limits=LimitSettings.from_env(env),
        )

    def legacy(self) -> LegacyOptions:
        """The legacy-session options these settings give."""
        return LegacyOptions(
            answer_timeout_s=self.answer_timeout_s,
            session_ttl_s=self.session_ttl_s,
            sessions=self.limits.sessions,
            questions_per_session=self.limits.questions_per_session,
        )


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _level(value: str) -> str:
    if value.upper() not in _LEVELS:
        raise SettingsError(
            f"HOST_LOG_LEVEL must be one of {', '.join(_LEVELS)}, got {value!r}", "HOST_LOG_LEVEL"
        )
    return value.upper()


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip()
    if raw not in ("", "0", "1"):
        raise SettingsError(f"{name} must be 1 (yes) or 0 (no), got {raw!r}", name)
    return raw == "1"


def _switch(env: Mapping[str, str], name: str, on: str, off: str) -> bool:
    """An ``on``/``off`` variable (unset: on); ``on`` and ``off`` say what each does."""
    raw = env.get(name, "").strip()
    if not raw or raw.lower() == "on":
        return True
    if raw.lower() == "off":
        return False
    raise SettingsError(f"{name} must be on ({on}) or off ({off}), got {raw!r}", name)


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _positive(env: Mapping[str, str], name: str, default: float, *, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    if not (math.isfinite(value) and value > 0):
        kind = "a positive whole number of bytes" if integer else "a positive number of seconds"
        raise SettingsError(f"{name} must be {kind}, got {raw!r}", name)
    return value
