"""A tasks client's side of a call (``io.modelcontextprotocol/tasks``): poll a task to its end.

A client that declares the tasks extension may be answered with a ``CreateTaskResult``
(``resultType: "task"``) instead of a held wait. :func:`follow` polls ``tasks/get`` at the
task's ``pollIntervalMs`` (or a test's own pace), answers its ``input_required`` requests with
``tasks/update`` the way the call's other questions are answered, and ends with the task's
``result`` as if the call had returned it: the same final response, whether the wait was held or
a task. Each new ``statusMessage`` goes to ``say`` (``host call`` prints it as a wait's progress).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from host.client.answers import Elicitation
from host.client.results import ProtocolViolation
from host.client.wire import RawResponse

__all__ = ["TASKS_EXTENSION", "Followed", "follow", "with_tasks"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class _Client(Protocol):
    def send(self, method: str, params: Mapping[str, Any]) -> RawResponse: ...


Ask = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Answers ``{"inputRequests": ...}``, those of an ``input_required`` task not answered yet:
the ``inputResponses`` to send."""


@dataclass(frozen=True)
class Followed:
    """A task followed to its end: the final response, and every exchange on the way."""

    response: RawResponse
    exchanges: tuple[RawResponse, ...]
    asked: tuple[Elicitation, ...] = ()


def with_tasks(capabilities: Mapping[str, Any], tasks: bool) -> dict[str, Any]:
    """``capabilities`` declaring the tasks extension (or not)."""
    extensions = dict(capabilities.get("extensions") or {})
    if tasks:
        extensions[TASKS_EXTENSION] = {}
    else:
        extensions.pop(TASKS_EXTENSION, None)
    changed = {k: v for k, v in capabilities.items() if k != "extensions"}
    return {**changed, "extensions": extensions} if extensions else changed


def follow(
    client: _Client,
    created: Mapping[str, Any],
    answer: Ask,
    *,
    poll_s: float | None = None,
    timeout_s: float = 3600.0,
    say: Callable[[str], None] | None = None,
) -> Followed:
    """Poll the task ``created`` names until it ends (or ``timeout_s`` passes).

    Returns:
        The final response: a completed task's ``result`` as a ``tools/call`` response would carry
        it; a failed task's ``error`` as its error; otherwise the last ``tasks/get`` response.

    Raises:
        ProtocolViolation: The server answered ``tasks/*`` with something no task is.
    """
    task_id = created.get("taskId")
    if not isinstance(task_id, str):
        raise ProtocolViolation(f"a CreateTaskResult without a taskId: {dict(created)}")
    exchanges: list[RawResponse] = []
    deadline = time.monotonic() + timeout_s
    said = ""
    answered: set[str] = set()
    task: Mapping[str, Any] = created
    while True:
        message = str(task.get("statusMessage") or "")
        if say is not None and message and message != said:
            say(message)
            said = message
        if task.get("status") in _TERMINAL or time.monotonic() > deadline:
            break
        requests = task.get("inputRequests") if task.get("status") == "input_required" else None
        fresh = {k: v for k, v in (requests or {}).items() if k not in answered}
        if task.get("status") == "input_required" and requests is None:
            pass  # NOTE: a CreateTaskResult names no requests: tasks/get shows them at once
        elif fresh:
            answered |= set(fresh)
            responses = answer({"inputRequests": fresh})
            exchanges.append(
                client.send("tasks/update", {"taskId": task_id, "inputResponses": responses})
            )
        else:
            pace = poll_s if poll_s is not None else float(task.get("pollIntervalMs", 2000)) / 1000
            time.sleep(max(0.0, min(pace, deadline - time.monotonic())))
        response = client.send("tasks/get", {"taskId": task_id})
        exchanges.append(response)
        if not isinstance(response.result, Mapping):
            return Followed(response, tuple(exchanges))
        task = response.result
    return Followed(_final(exchanges[-1] if exchanges else None, task), tuple(exchanges))


def _final(last: RawResponse | None, task: Mapping[str, Any]) -> RawResponse:
    """The response a held call would have ended with: the task's result, or its error."""
    if last is None:
        return RawResponse(200, {}, "", (), {"jsonrpc": "2.0", "id": 0, "result": dict(task)})
    body = dict(last.body) if isinstance(last.body, Mapping) else {}
    if task.get("status") == "completed" and isinstance(task.get("result"), Mapping):
        body = {"jsonrpc": "2.0", "id": body.get("id"), "result": dict(task["result"])}
    elif task.get("status") == "failed" and isinstance(task.get("error"), Mapping):
        body = {"jsonrpc": "2.0", "id": body.get("id"), "error": dict(task["error"])}
    return replace(last, messages=(body,), body=body)
