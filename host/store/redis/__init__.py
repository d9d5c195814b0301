"""The Redis backend of the store, for host instances on several machines.

:class:`RedisBackend` gathers the roles (:mod:`~host.store.redis.acts`,
:mod:`~host.store.redis.records`, :mod:`~host.store.redis.queues`,
:mod:`~host.store.redis.approvals`, :mod:`~host.store.redis.audit`) over one client
(:mod:`~host.store.redis.client`). redis-py is imported only when one is opened.
"""

from __future__ import annotations

from host.store.redis.backend import RedisBackend
from host.store.redis.client import redact

__all__ = ["RedisBackend", "redact"]
