"""The audit trail's settings: how long it is kept, who signs its checkpoints, where it goes.

``HOST_AUDIT_KEEP`` (``HOST_AUDIT_RETENTION``, its older name, still counts) is how long entries
are kept; ``HOST_AUDIT_SIGNING_KEY`` the PEM file of the Ed25519 key that signs checkpoints
(unset: a key derived from ``HOST_SECRET``, :meth:`host.store.signing.Signer.derived`);
``HOST_AUDIT_EXPORT`` where the trail is also sent (``file:PATH``, rotated past
``HOST_AUDIT_EXPORT_MAX`` bytes, or ``otlp``: :mod:`host.observers.export`);
``HOST_AUDIT_HELD_MAX`` how many records a process holds while the store refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from host.errors import SettingsError
from host.spec.durations import DurationError, parse_duration
from host.store.signing import Signer

__all__ = [
    "DEFAULT_EXPORT_MAX",
    "DEFAULT_HELD_MAX",
    "DEFAULT_KEEP_S",
    "AuditSettings",
    "signer_of",
]

#: The size past which an export file is rotated, by default: 64 MiB.
DEFAULT_EXPORT_MAX = 64 * 1024 * 1024
#: How long audit records are kept by default: 90 days.
DEFAULT_KEEP_S = 90 * 86400.0
#: The most records one process holds while the store refuses them, by default.
DEFAULT_HELD_MAX = 10_000


@dataclass(frozen=True)
class AuditSettings:
    """The audit trail's settings.

    Attributes:
        keep_s: How long entries are kept (pruned from a checkpoint older than this).
        signing_key: The PEM file of the checkpoints' Ed25519 key; None: derived from the secret.
        export: ``file:PATH`` or ``otlp``; None: the trail stays in the store alone.
        held_max: The most records one process holds while the store refuses them.
        export_max: The size in bytes past which an export file is rotated.
    """

    keep_s: float = DEFAULT_KEEP_S
    signing_key: Path | None = None
    export: str | None = None
    held_max: int = DEFAULT_HELD_MAX
    export_max: int = DEFAULT_EXPORT_MAX

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuditSettings:
        """The settings from ``env``.

        Raises:
            SettingsError: A value that is not a duration, a count, or an export it knows.
        """
        keep = DEFAULT_KEEP_S
        for name in ("HOST_AUDIT_RETENTION", "HOST_AUDIT_KEEP"):  # NOTE: the newer name wins
            keep = _duration(env, name, keep)
        key = env.get("HOST_AUDIT_SIGNING_KEY", "").strip()
        export = env.get("HOST_AUDIT_EXPORT", "").strip() or None
        if export is not None and export != "otlp" and not export.startswith("file:"):
            raise SettingsError(
                f"HOST_AUDIT_EXPORT must be file:PATH or otlp, got {export!r}", "HOST_AUDIT_EXPORT"
            )
        if export == "file:":
            raise SettingsError("HOST_AUDIT_EXPORT=file: needs a path", "HOST_AUDIT_EXPORT")
        most = env.get("HOST_AUDIT_EXPORT_MAX", "").strip()
        if most and (not most.isdigit() or int(most) < 1):
            raise SettingsError(
                f"HOST_AUDIT_EXPORT_MAX must be a number of bytes, got {most!r}",
                "HOST_AUDIT_EXPORT_MAX",
            )
        held = env.get("HOST_AUDIT_HELD_MAX", "").strip()
        if held and (not held.isdigit() or int(held) < 1):
            raise SettingsError(
                f"HOST_AUDIT_HELD_MAX must be a whole number from 1, got {held!r}",
                "HOST_AUDIT_HELD_MAX",
            )
        return cls(
            keep,
            Path(key) if key else None,
            export,
            int(held) if held else DEFAULT_HELD_MAX,
            int(most) if most else DEFAULT_EXPORT_MAX,
        )


def _duration(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse_duration(raw)
    except DurationError as exc:
        raise SettingsError(f"{name}: {exc}", name) from None


def signer_of(settings: AuditSettings, secrets: Sequence[str]) -> Signer:
    """The key that signs checkpoints: ``HOST_AUDIT_SIGNING_KEY``'s, else derived from the
    first secret.

    Raises:
        host.errors.HostError: The key file cannot be read or is not an Ed25519 key.
    """
    if settings.signing_key is not None:
        return Signer.from_pem(settings.signing_key)
    return Signer.derived(secrets[0])
