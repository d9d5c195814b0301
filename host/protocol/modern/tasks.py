"""Long waits as MCP tasks (``io.modelcontextprotocol/tasks``): ``tasks/get``, update, cancel.

A ``tools/call`` that declares the tasks extension runs as any other until it first reaches a
step that waits on someone else: an approve that needs a decision, or a URL ask. It then gets a
``CreateTaskResult`` at once instead of waiting (:meth:`Tasks.start`); the task is committed to
the store before the reply, bound to the caller, and the same call made again while it lives gets
the same task. The client polls ``tasks/get``; any worker that sees the task can go on (a
decision, a submitted page) carries its call on (:mod:`.task_runs`), and the act's claim lets
exactly one run. ``tasks/update`` answers its questions; ``tasks/cancel`` ends it before its act,
withdrawing its approval request.

Every ``taskId`` that is unknown, expired, malformed or another caller's gets the same -32602,
so a guess learns nothing; a ``tasks/*`` request that does not declare the extension is -32021.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from host.protocol.answers import Ledger
from host.protocol.calls import TASKS_EXTENSION, Pending, Waiting
from host.protocol.context import RequestContext
from host.protocol.core import ToolHost
from host.protocol.jsonrpc import INVALID_PARAMS, error
from host.protocol.modern.task_runs import AFTER_S, TaskRuns, binding_of, caller_of, pages_of
from host.protocol.modern.task_views import created, not_found, task_view
from host.protocol.revisions import MODERN
from host.protocol.steps import Call
from host.store.asks import UrlAsk
from host.store.requests import ApprovalRequest
from host.store.tasks import TaskBook, TaskRecord, new_task_id

__all__ = ["TASKS_EXTENSION", "Tasks", "declares_tasks"]

log = logging.getLogger("host.protocol.tasks")

#: How long ``tasks/update``'s answers wait for another process's round of the same task (a
#: question's round is short: it runs no act), rather than be dropped.
ANSWER_WAIT_S = 10.0

Withdraw = Callable[[str], bool]
"""Withdraws an approval request unless its act was let through (the approvals service's)."""


def declares_tasks(capabilities: Any) -> bool:
    """Whether per-request capabilities declare the tasks extension (``extensions[...]: {}``)."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS_EXTENSION), Mapping)


class Tasks:
    """The tasks of one host: made by ``tools/call``, read and steered by ``tasks/*``.

    Args:
        host: The tools and the call core.
        withdraw: Withdraws a cancelled task's approval request; None: nothing to withdraw
            with (a task at an approve then cannot be cancelled before its decision).
        join_s: How long a request waits for a round it started before answering.
    """

    def __init__(self, host: ToolHost, *, withdraw: Withdraw | None = None, join_s: float = 1.0):
        self.host = host
        self.withdraw = withdraw
        self.book = TaskBook(host.store)
        self.runs = TaskRuns(host, self.book, join_s=join_s)

    def start(
        self, ended: Pending | Waiting, request: RequestContext, meta: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The ``CreateTaskResult`` of a call that stopped waiting on someone else."""
        call = ended.call
        before = _taken(call) if isinstance(ended, Pending) else ended.finished.ledger
        before = before or call.ledger
        now = time.time()
        fresh = TaskRecord(
            id=new_task_id(),
            owner=request.owner,
            principal=request.principal,
            scopes=tuple(sorted(request.scopes)),
            method=request.identity.method,
            tool=call.machine.name,
            arguments=dict(call.arguments),
            ledger=before.to_payload(),
            binding=binding_of(request.owner, call, before),
            created=now,
            updated=now,
            ttl_s=AFTER_S,
            host=request.header("host") or "",
        )
        task = self.book.create(self.runs.absorb(fresh, ended, before))
        if task.id == fresh.id:
            self.runs.bind(task)
            self.book.mark_pages(task, pages_of(task))
            log.info(
                "task created",
                extra={"event": "task_created", "task": task.id[:12], "tool": task.tool,
                       "principal": request.principal, "status": task.status},
            )  # fmt: skip
        return created(task, meta)

    def on_decided(self, status: str, request: ApprovalRequest) -> None:
        """A request was decided here: carry its task on now, for its caller, in the background."""
        task_id = request.extra.get("task_id")
        if not isinstance(task_id, str):
            return
        task = self.book.get(task_id)
        if task is not None and not task.terminal:
            self.runs.kick(task_id, lambda: self._go_on(task_id, caller_of(task)), join=False)

    def on_page(self, ask: UrlAsk) -> None:
        """A page was submitted here: carry the task waiting on it on now, in the background."""
        task = self.book.of_page(ask.id)
        if task is not None:
            caller = caller_of(task)
            self.runs.kick(task.id, lambda: self._go_on(task.id, caller), join=False)

    def get(
        self, params: Mapping[str, Any], request: RequestContext, meta: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``tasks/get``: the task as it stands, carried on first when it can go on."""
        task = self._find(params, request)
        if self._can_go_on(task):
            self.runs.kick(task.id, lambda: self._go_on(task.id, request))
            task = self.book.find(task.id, request.owner) or task
        return task_view(task, meta)

    def update(
        self, params: Mapping[str, Any], request: RequestContext, meta: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``tasks/update``: answers to outstanding input requests; others are ignored."""
        task = self._find(params, request)
        responses = params.get("inputResponses")
        if not isinstance(responses, Mapping):
            raise error(INVALID_PARAMS, "tasks/update needs params.inputResponses, an object")
        keys = {k: v["key"] for k, v in task.outstanding.items() if k in responses}
        if task.status == "input_required" and keys:
            answers = {ledger_key: responses[k] for k, ledger_key in keys.items()}
            # NOTE: every update runs (its own thread), one round at a time (serial).
            self.runs.kick(
                f"{task.id}#{uuid.uuid4().hex}",
                lambda: self._answer(task.id, request, keys, answers),
            )
        return {"resultType": "complete", "_meta": dict(meta)}

    def cancel(
        self, params: Mapping[str, Any], request: RequestContext, meta: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``tasks/cancel``: before the act, the task ends ``cancelled`` and nothing is done."""
        task = self._find(params, request)
        if not task.terminal and self._withdrawn(task):
            self._end_pages(task)
            ended = self.book.save(
                task.changed(
                    status="cancelled",
                    message="Cancelled by the caller before anything was done.",
                    outstanding={},
                    waiting={},
                )
            )
            if ended.status == "cancelled":
                self._audit_cancelled(ended, request)
        return {"resultType": "complete", "_meta": dict(meta)}

    # -- the parts ---------------------------------------------------------------------------

    def _find(self, params: Mapping[str, Any], request: RequestContext) -> TaskRecord:
        task = self.book.find(params.get("taskId"), request.owner)
        if task is None:
            raise not_found()
        return task

    def _go_on(self, task_id: str, request: RequestContext) -> None:
        """One round of the task with no new answers, unless it ended or still waits on them."""
        with self.runs.serial(task_id) as mine:
            task = self.book.get(task_id)
            if not mine or task is None or task.terminal:
                return
            if task.status != "input_required" or self._can_go_on(task):
                self.runs.advance(self._approved(task), request, {})

    def _approved(self, task: TaskRecord) -> TaskRecord:
        """A task whose request was just approved says so while its act runs."""
        request_id = task.waiting.get("approval")
        found = self.host.store.request(request_id) if request_id is not None else None
        if found is None or found.status(time.time()) != "approved" or task.approval is None:
            return task
        who = ", ".join(found.approved_by) or "an approver"
        return self.book.save(
            task.changed(
                message=f"Approved by {who} (request {found.id}); the action is running.",
                approval={**task.approval, "status": "approved"},
            )
        )

    def _answer(
        self,
        task_id: str,
        request: RequestContext,
        keys: Mapping[str, str],
        answers: Mapping[str, Any],
    ) -> None:
        with self.runs.serial(task_id, wait_s=ANSWER_WAIT_S) as mine:
            task = self.book.get(task_id)
            # NOTE: only keys still outstanding: another update may have answered them meanwhile.
            if (
                not mine
                or task is None
                or task.status != "input_required"
                or not set(keys) <= set(task.outstanding)
            ):
                return
            self.runs.advance(task, request, answers, frozenset(keys))

    def _can_go_on(self, task: TaskRecord) -> bool:
        """Whether something the task waits on has happened (cheap reads; no handler runs)."""
        if task.terminal:
            return False
        machine = self.host.machines.get(task.tool)
        if machine is None or task.ledger.get("v") != machine.definition:
            return True  # NOTE: a reload changed the tool: the task ends, voided
        store = self.host.store
        now = time.time()
        if "approval" in task.waiting:
            found = store.request(task.waiting["approval"])
            return found is None or found.status(now) != "pending"
        if "page" in task.waiting:
            ask = store.ask(task.waiting["page"])
            return ask is None or ask.values is not None or ask.expires <= now
        if task.status == "input_required":
            return any(_submitted(store, page) for page in pages_of(task))
        return True

    def _withdrawn(self, task: TaskRecord) -> bool:
        """Withdraw the task's approval request: False when its act was let through already."""
        request_id = (task.approval or {}).get("request") or task.waiting.get("approval")
        if not isinstance(request_id, str):
            return True
        if self.withdraw is not None and self.withdraw(request_id):
            return True
        found = self.host.store.request(request_id)
        return found is None or found.spent_by is None

    def _end_pages(self, task: TaskRecord) -> None:
        for page in pages_of(task):
            ask = self.host.store.ask(page)
            if ask is not None:
                self.host.store.end_ask(ask)

    def _audit_cancelled(self, task: TaskRecord, request: RequestContext) -> None:
        machine = self.host.machines.get(task.tool)
        if machine is None:
            return
        ledger = Ledger.from_payload(task.ledger)
        call = Call(machine, task.arguments, request, ledger, version=MODERN.version, task=True)
        self.host.withdrawn(call, ledger)


def _taken(call: Call) -> Ledger:
    """The call's ledger with this round's answers taken, bound as the core binds it."""
    ledger = call.ledger.take(call.responses, call.machine.form_fields)
    return ledger.bound(call.machine.definition) if ledger.round == 1 else ledger


def _submitted(store: Any, page: str) -> bool:
    ask = store.ask(page)
    return ask is not None and ask.values is not None
