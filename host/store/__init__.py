"""The shared store: what must outlive one request or one worker process.

Open one with :func:`open_store` from a URL:

* ``sqlite:///relative/path.db`` (three slashes: relative to the working directory) or
  ``sqlite:////absolute/path.db`` (four slashes: the path is ``/absolute/path.db``), as in
  SQLAlchemy. One file serves every worker process of one machine.
* ``redis://[user:password@]host:port/db``, or ``rediss://...`` for TLS, when several machines
  serve the same specs. Needs the ``redis`` extra (:func:`host.extras.install_line`).

The host holds one :class:`Store` over either backend (:mod:`host.store.sqlite`,
:mod:`host.store.redis`). The contract (what "at most once" means on each backend, and what it
cannot promise) is in :mod:`host.store.shared`; the start-up rule for stores that can lose records
in :mod:`host.store.durability`; :func:`private_dir` makes the folders the host keeps data in.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from host.errors import StoreError
from host.store.checks import check_ttl
from host.store.claims import ActClaim, Lock
from host.store.durability import VOLATILE_OK, require_durable
from host.store.files import private_dir
from host.store.redis.client import redact  # redis-py itself is imported only when used
from host.store.shared import Store
from host.store.values import DEFAULT_LEASE_S, ActState, Risk

__all__ = [
    "DEFAULT_LEASE_S",
    "SCHEMES",
    "VOLATILE_OK",
    "ActClaim",
    "ActState",
    "Lock",
    "Risk",
    "Store",
    "open_store",
    "private_dir",
    "require_durable",
]

SCHEMES = ("sqlite", "redis", "rediss")
"""The URL schemes :func:`open_store` accepts."""


def open_store(url: str, *, lease_s: float = DEFAULT_LEASE_S, connect: bool = True) -> Store:
    """Open the store a URL names.

    Args:
        url: ``sqlite:///path.db``, ``sqlite:////abs/path.db``, ``redis://host:port/db`` or
            ``rediss://host:port/db``.
        lease_s: How long an act claim lasts without its owner renewing it: a dead owner's
            claims read ``lost`` after at most this long.
        connect: Reach a Redis store now (False: at its first command, for a worker whose
            master checked the store; an outage then fails commands, not the opening).

    Returns:
        A store ready for use; close it with :meth:`Store.close`.

    Raises:
        host.errors.StoreError: The URL is malformed, its scheme unknown, or the store unreachable.
    """
    check_ttl(lease_s, "lease_s")  # before a backend opens a file or a connection
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme == "sqlite":
        from host.store.sqlite import SqliteBackend

        return Store(SqliteBackend(_sqlite_path(url)), lease_s=lease_s)
    if scheme in ("redis", "rediss"):
        from host.store.redis import RedisBackend

        return Store(RedisBackend(url, connect=connect), lease_s=lease_s)
    accepted = ", ".join(f"{name}://" for name in SCHEMES)
    shown = f"scheme {scheme + '://'!r}" if scheme else "no scheme"
    raise StoreError(f"store URL {redact(url)!r} has {shown}; use one of {accepted}")


def _sqlite_path(url: str) -> str:
    """The file path of a ``sqlite:///`` URL: everything after the third slash, as written."""
    prefix = "sqlite:///"
    if not url.lower().startswith(prefix):
        raise StoreError(
            f"SQLite store URL {url!r} must start with {prefix!r}: "
            "sqlite:///relative.db or sqlite:////absolute/path.db"
        )
    path = url[len(prefix) :]
    if not path or "?" in path or "#" in path:
        raise StoreError(
            f"SQLite store URL {url!r} needs a file path and takes no options, "
            "e.g. sqlite:///.host/store.db"
        )
    if path == ":memory:":
        raise StoreError(
            "an in-memory SQLite store cannot be shared between workers; give a file path"
        )
    return path
