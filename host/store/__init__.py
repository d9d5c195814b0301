"""The shared store: what must outlive one request or one worker process.

Open one with :func:`open_store` from a URL:

* ``sqlite:///relative/path.db`` (three slashes: relative to the working directory) or
  ``sqlite:////absolute/path.db`` (four slashes: the path is ``/absolute/path.db``), as in
  SQLAlchemy. One file serves every worker process of one machine.
* ``redis://[user:password@]host:port/db``, or ``rediss://...`` for TLS, when several machines
  serve the same specs. Needs ``pip install 'host[redis]'``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from host.errors import StoreError
from host.store.base import Store
from host.store.redis import redact  # redis-py itself is imported only when used

__all__ = ["SCHEMES", "Store", "open_store"]

SCHEMES = ("sqlite", "redis", "rediss")
"""The URL schemes :func:`open_store` accepts."""


def open_store(url: str) -> Store:
    """Open the store a URL names.

    Args:
        url: ``sqlite:///path.db``, ``sqlite:////abs/path.db``, ``redis://host:port/db`` or
            ``rediss://host:port/db``.

    Returns:
        A store ready for use; close it with :meth:`Store.close`.

    Raises:
        host.errors.StoreError: The URL is malformed, its scheme unknown, or the store unreachable.
    """
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme == "sqlite":
        from host.store.sqlite import SqliteStore

        return SqliteStore(_sqlite_path(url))
    if scheme in ("redis", "rediss"):
        from host.store.redis import RedisStore

        return RedisStore(url)
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
