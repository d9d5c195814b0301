"""The SQLite backend of the store: one file serves every worker process of one machine.

:class:`SqliteBackend` gathers the roles (:mod:`~host.store.sqlite.acts`,
:mod:`~host.store.sqlite.records`, :mod:`~host.store.sqlite.queues`,
:mod:`~host.store.sqlite.approvals`, :mod:`~host.store.sqlite.audit`) over one pool of connections
(:mod:`~host.store.sqlite.pool`) and its group commits (:mod:`~host.store.sqlite.durable`).
"""

from __future__ import annotations

from host.store.sqlite.backend import SqliteBackend

__all__ = ["SqliteBackend"]
