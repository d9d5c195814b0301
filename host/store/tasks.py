"""MCP tasks as the store keeps them: one record per task, bound to the caller who made it.

A task (:mod:`host.protocol.modern.tasks`) carries a call between its rounds while it waits on
someone else, the third carrier beside ``requestState`` and the legacy relay. Its record holds
the call (tool, arguments, the ledger in its one encoding), who made it, where it stands and what
it ended with; it lives under ``task:<id>`` until the task's ``ttlMs`` runs out, and the same
call made again finds it under ``taskcall:<binding>``. Both are plain records of the store
(:meth:`host.store.Store.add`/``put``), so SQLite and Redis keep them alike, committed before
the reply that names the task.

NOTE: records are written over whatever is there; a task that reached a terminal status is never
written again (:meth:`TaskBook.save` reads first), and the act itself is guarded by its claim,
keyed by the call's nonce, never by the record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from host import ids
from host.store.shared import Store

__all__ = ["TERMINAL", "TaskBook", "TaskRecord", "TaskStatus", "new_task_id"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""


def new_task_id() -> str:
    """``tsk_`` and 32 random bytes, URL-safe Base64: unguessable, the only key to a task."""
    return "tsk_" + ids.token(32)


@dataclass(frozen=True)
class TaskRecord:
    """One task.

    Attributes:
        id: Its ``taskId``.
        owner: Who made it (:attr:`host.auth.identity.Identity.owner`): nobody else sees it.
        principal, scopes, method: The rest of the caller's identity, to go on with the call
            for them when someone else's decision is seen first.
        tool, arguments, ledger: The call (the ledger in :meth:`Ledger.to_payload`'s form).
        binding: The digest the same call made again shares (caller, tool, arguments,
            answers, definition).
        status, message: Where it stands, as ``tasks/get`` says it.
        created, updated: Unix times; ttl_s: how long after ``created`` it is kept.
        result: The ``CallToolResult`` of a completed task; error: a failed one's JSON-RPC error.
        outstanding: The input requests open now, by task key: ``{key, digest, request}``
            (the ledger's key of the question, its digest, the request as shown).
        issued: How many times each ledger key was asked, so no task key is used twice.
        waiting: What a working task waits on: ``{"approval": id}`` or ``{"page": id}``.
        approval: ``_meta["host/approval"]`` of a task at an approve: request, status,
            needed, expires.
        host: The ``Host`` the caller reached (its pages' URLs are made from it).
    """

    id: str
    owner: str
    principal: str
    tool: str
    arguments: Mapping[str, Any]
    ledger: Mapping[str, Any]
    binding: str
    created: float
    ttl_s: float
    status: TaskStatus = "working"
    message: str = ""
    updated: float = 0.0
    scopes: tuple[str, ...] = ()
    method: str = "none"
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    outstanding: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    issued: Mapping[str, int] = field(default_factory=dict)
    waiting: Mapping[str, str] = field(default_factory=dict)
    approval: Mapping[str, Any] | None = None
    host: str = ""

    @property
    def terminal(self) -> bool:
        """Whether it ended (completed, failed or cancelled)."""
        return self.status in TERMINAL

    def changed(self, **changes: Any) -> TaskRecord:
        """This task with ``changes``, updated now."""
        return replace(self, **changes, updated=time.time())

    def to_json(self) -> str:
        """The record as the store keeps it."""
        # NOTE: shallow: a result may hold pre-encoded JSON objects, which json writes as dicts.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return json.dumps(data, ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> TaskRecord:
        """The inverse of :meth:`to_json`."""
        data = json.loads(text)
        data["scopes"] = tuple(data.get("scopes", ()))
        return cls(**data)


class TaskBook:
    """The tasks of one host, in its store.

    Args:
        store: The shared store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def find(self, task_id: Any, owner: str) -> TaskRecord | None:
        """The live task ``task_id`` if ``owner`` made it; None for any other case alike."""
        if not isinstance(task_id, str) or not task_id.startswith("tsk_") or len(task_id) > 64:
            return None
        text = self.store.get(_key(task_id))
        if text is None:
            return None
        task = TaskRecord.from_json(text)
        return task if task.owner == owner and _left(task) > 0 else None

    def of_call(self, binding: str, owner: str) -> TaskRecord | None:
        """The live task the same call made earlier, if it has not ended."""
        task_id = self.store.get(_call_key(binding))
        task = self.find(task_id, owner) if task_id is not None else None
        return task if task is not None and not task.terminal else None

    def create(self, task: TaskRecord) -> TaskRecord:
        """Keep a new task, unless the same call's live task is kept: then that one."""
        # NOTE: the record first, then the binding: a binding always names a written task, so
        # one that names none (or an ended one) is stale and may be taken over.
        self.store.put(_key(task.id), task.to_json(), max(_left(task), 1.0))
        for _ in range(5):
            if self.store.add(_call_key(task.binding), task.id, max(_left(task), 1.0)):
                return task
            found = self.of_call(task.binding, task.owner)
            if found is not None:
                self.store.delete(_key(task.id))
                return found
            self.store.delete(_call_key(task.binding))
        return task

    def mark_pages(self, task: TaskRecord, pages: list[str]) -> None:
        """Note that ``task`` waits on these URL asks' pages, so a submission finds it."""
        for page in pages:
            self.store.put(_page_key(page), task.id, max(_left(task), 1.0))

    def of_page(self, ask_id: str) -> TaskRecord | None:
        """The task waiting on the URL ask ``ask_id``, if it has not ended."""
        task_id = self.store.get(_page_key(ask_id))
        task = self.get(task_id) if task_id is not None else None
        return task if task is not None and not task.terminal else None

    def get(self, task_id: str) -> TaskRecord | None:
        """The task ``task_id`` whoever made it (for the host's own continuation)."""
        text = self.store.get(_key(task_id))
        return None if text is None else TaskRecord.from_json(text)

    def save(self, task: TaskRecord) -> TaskRecord:
        """Write ``task`` unless the kept one has ended: then the kept one, unchanged."""
        kept = self.get(task.id)
        if kept is not None and kept.terminal:
            return kept
        self.store.put(_key(task.id), task.to_json(), max(_left(task), 1.0))
        if task.terminal:
            self.store.delete(_call_key(task.binding))
        return task


def _left(task: TaskRecord) -> float:
    return task.created + task.ttl_s - time.time()


def _key(task_id: str) -> str:
    return "task:" + task_id


def _call_key(binding: str) -> str:
    return "taskcall:" + binding


def _page_key(ask_id: str) -> str:
    return "taskpage:" + ask_id
