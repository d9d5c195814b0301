"""How a task reads on the wire: the ``Task`` of ``tasks/get`` and the ``CreateTaskResult``.

Times are ISO 8601 UTC; ``ttlMs`` counts from ``createdAt``; ``pollIntervalMs`` is fixed. Each
status carries its own member (``inputRequests``, ``result``, ``error``); a task at an approve
carries ``_meta["host/approval"]`` as the pending result of a held call does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.errors import ProtocolError
from host.protocol.jsonrpc import INVALID_PARAMS, error
from host.store.tasks import TaskRecord
from host.times import iso

__all__ = ["APPROVAL_META", "POLL_MS", "created", "not_found", "task_view"]

#: How often a client should poll ``tasks/get``, in milliseconds.
POLL_MS = 2000

APPROVAL_META = "host/approval"


def not_found() -> ProtocolError:
    """-32602, one answer for an unknown, expired, malformed or another caller's ``taskId``."""
    return error(INVALID_PARAMS, "Failed to retrieve task: Task not found")


def _base(task: TaskRecord, meta: Mapping[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {
        "taskId": task.id,
        "status": task.status,
        "statusMessage": task.message,
        "createdAt": iso(task.created, ms=True),
        "lastUpdatedAt": iso(task.updated or task.created, ms=True),
        "ttlMs": int(task.ttl_s * 1000),
        "pollIntervalMs": POLL_MS,
    }
    extra = dict(meta)
    if task.approval is not None:
        extra[APPROVAL_META] = dict(task.approval)
    view["_meta"] = extra
    return view


def created(task: TaskRecord, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The flat ``CreateTaskResult`` of a new task (or of the same call's live one)."""
    return {"resultType": "task", **_base(task, meta)}


def task_view(task: TaskRecord, meta: Mapping[str, Any]) -> dict[str, Any]:
    """``tasks/get``'s result: the task with the member its status carries."""
    view = {"resultType": "complete", **_base(task, meta)}
    if task.status == "input_required":
        view["inputRequests"] = {k: dict(v["request"]) for k, v in task.outstanding.items()}
    elif task.status == "completed" and task.result is not None:
        view["result"] = dict(task.result)
    elif task.status == "failed" and task.error is not None:
        view["error"] = dict(task.error)
    return view
