"""Records in Redis: a string key ``<prefix>v:<key>`` per record, expired by Redis itself."""

from __future__ import annotations

from host.store.redis.client import RedisClient, ms

__all__ = ["RedisRecords"]


class RedisRecords:
    """The records of one Redis store.

    Args:
        client: The store's client.
    """

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._raw = client.raw
        self._key = client.prefix + "v:"

    def add(self, key: str, value: str, ttl_s: float) -> bool:
        """Insert unless the key is taken (``SET NX``); whether it did."""
        with self._client.errors("write"):
            return bool(self._raw.set(self._key + key, value, nx=True, px=ms(ttl_s)))

    def get(self, key: str) -> str | None:
        """The live value for ``key``, or None."""
        with self._client.errors("read"):
            value = self._raw.get(self._key + key)
        return None if value is None else str(value)

    def put(self, key: str, value: str, ttl_s: float) -> None:
        """Insert or overwrite."""
        with self._client.errors("write"):
            self._raw.set(self._key + key, value, px=ms(ttl_s))

    def delete(self, key: str) -> None:
        """Remove the record if there is one."""
        with self._client.errors("write"):
            self._raw.delete(self._key + key)
