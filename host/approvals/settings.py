"""The deployment's approval settings: where requests are announced, and how many may wait."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from host.errors import SettingsError

__all__ = ["DEFAULT_PENDING_LIMIT", "ApprovalSettings"]

#: The most approval requests one authenticated caller may have pending at once, by default.
DEFAULT_PENDING_LIMIT = 20


@dataclass(frozen=True)
class ApprovalSettings:
    """``HOST_APPROVALS_WEBHOOK``, its secret, the links' base and the pending limit.

    Attributes:
        webhook: Where each new request and each decision is POSTed; None: nowhere.
        webhook_secret: The key of the ``X-Host-Signature`` HMAC; None: the body is unsigned.
        public_url: The host's base URL (``HOST_PUBLIC_URL``, read with the sign-in's settings
            in :mod:`host.auth.browser_settings`), the base of every link; None: no links.
        pending_limit: The most requests one authenticated caller may have pending.
    """

    webhook: str | None = None
    webhook_secret: str | None = None
    public_url: str | None = None
    pending_limit: int = DEFAULT_PENDING_LIMIT

    @classmethod
    def from_env(cls, env: Mapping[str, str], public_url: str | None = None) -> ApprovalSettings:
        """The settings from ``env``; ``public_url`` is the host's base URL, checked elsewhere.

        Raises:
            SettingsError: A URL that is not http(s), or a limit that is not a whole number.
        """
        webhook = _url(env, "HOST_APPROVALS_WEBHOOK")
        raw = env.get("HOST_LIMIT_PENDING_APPROVALS", "").strip()
        limit = DEFAULT_PENDING_LIMIT
        if raw:
            if not raw.isdigit() or int(raw) < 1:
                raise SettingsError(
                    f"HOST_LIMIT_PENDING_APPROVALS must be a whole number from 1, got {raw!r}",
                    "HOST_LIMIT_PENDING_APPROVALS",
                )
            limit = int(raw)
        secret = env.get("HOST_APPROVALS_WEBHOOK_SECRET", "").strip() or None
        return cls(webhook, secret, public_url, limit)


def _url(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    if not value:
        return None
    if not value.startswith(("https://", "http://")):
        raise SettingsError(f"{name} must be an http(s):// URL, got {value!r}", name)
    return value
