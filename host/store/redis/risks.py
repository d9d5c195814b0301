"""How a Redis server can lose act claims, read from its configuration and ``INFO persistence``.

What each setting risks is in :mod:`host.store.shared`; what the host does about a risk at
start-up is :func:`host.store.durability.require_durable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.store.durability import VOLATILE_OK
from host.store.values import Risk

__all__ = ["redis_risks", "unchecked_redis"]

_ACK = f"set {VOLATILE_OK}=1 to accept that a retried call may then act again"


def unchecked_redis(where: str, error: str) -> Risk:
    """The risk of a Redis whose persistence cannot be read (managed ones often refuse CONFIG)."""
    return Risk(
        f"the Redis store {where} does not say how it persists data ({error}), so the host "
        f"cannot check that act claims survive a restart; make sure it persists (appendonly yes) "
        f"and never evicts keys (maxmemory-policy noeviction), then set {VOLATILE_OK}=1 to start",
        refuse=True,
    )


def redis_risks(where: str, config: Mapping[str, str], info: Mapping[str, Any]) -> list[Risk]:
    """The risks of a Redis server with this configuration and ``INFO persistence``.

    Args:
        where: The server, as named in messages (no password).
        config: ``CONFIG GET`` values: ``appendonly``, ``appendfsync``, ``save``, ``maxmemory``,
            ``maxmemory-policy`` (missing ones are taken as Redis's defaults).
        info: ``INFO persistence`` fields.
    """
    risks = _persistence(where, config)
    policy = config.get("maxmemory-policy", "noeviction").lower()
    if policy != "noeviction" and _int(config.get("maxmemory", "0")) > 0:
        risks.append(
            Risk(
                f"the Redis store {where} evicts keys when full (maxmemory-policy {policy}): an "
                f"evicted act claim is forgotten; set maxmemory-policy noeviction, or {_ACK}",
                refuse=True,
            )
        )
    for field in ("rdb_last_bgsave_status", "aof_last_write_status", "aof_last_bgrewrite_status"):
        if str(info.get(field, "ok")).lower() not in ("ok", ""):
            risks.append(
                Risk(
                    f"the Redis store {where} reports failing persistence ({field}: "
                    f"{info[field]}); records written since may not survive a restart",
                    refuse=False,
                )
            )
    return risks


def _persistence(where: str, config: Mapping[str, str]) -> list[Risk]:
    """The risk of the server's persistence settings: none, snapshots, or a lazy fsync."""
    aof = config.get("appendonly", "no").lower() == "yes"
    save = config.get("save", "").strip()
    if not aof and not save:
        return [
            Risk(
                f"the Redis store {where} keeps data in memory only (appendonly no, save ''): "
                f"a restart forgets every act claim; turn on appendonly yes, or {_ACK}",
                refuse=True,
            )
        ]
    if not aof:
        return [
            Risk(
                f"the Redis store {where} persists by RDB snapshots only (save '{save}'): a crash "
                f"of Redis forgets what changed since the last snapshot, up to "
                f"{_snapshot_window(save)}s of act claims; appendonly yes narrows that to a second",
                refuse=False,
            )
        ]
    fsync = config.get("appendfsync", "everysec").lower()
    if fsync == "always":
        return []
    window = "second" if fsync == "everysec" else "30 seconds or so (the OS decides)"
    return [
        Risk(
            f"the Redis store {where} syncs its append-only file lazily (appendfsync "
            f"{fsync}): a crash of Redis or its machine (not a restart) can forget the "
            f"last {window} of act claims; appendfsync always closes that",
            refuse=False,
        )
    ]


def _snapshot_window(save: str) -> int:
    """The longest wait before a snapshot among ``save``'s "seconds changes" pairs."""
    numbers = [_int(part) for part in save.split()]
    seconds = numbers[0::2]
    return max(seconds) if seconds else 0


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0
