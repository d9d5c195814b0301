"""A task's call carried on: where each round leaves the task, and who runs the next one.

A task is the same ``run(arguments, answers, ctx)`` as any call, continued by whichever worker
sees that it can go on: a ``tasks/get`` or ``tasks/update`` (any worker, any instance), or the
decision itself (the approvals service's hook). Its rounds hold no wait (the task is polled), and
each one's end is written back to the task's record (:meth:`TaskRuns.absorb`). The act runs
under the claim keyed by the call's nonce, so of any number of workers carrying the same task on
at once exactly one acts; the others read its record.

A round runs beside the request that saw the task can go on (:meth:`TaskRuns.kick`): the
request waits for it only briefly, so a long act never holds a poll open, and a worker runs one
round of a task at a time.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeGuard

from host.auth.identity import AuthMethod, Identity
from host.errors import ProtocolError, StoreError
from host.machine import Question
from host.protocol import adapt
from host.protocol.answers import Ledger
from host.protocol.calls import Pending, Waiting, task_round
from host.protocol.context import RequestContext
from host.protocol.core import ToolHost
from host.protocol.digests import digest
from host.protocol.jsonrpc import INVALID_PARAMS
from host.protocol.modern.task_views import APPROVAL_META
from host.protocol.revisions import MODERN
from host.protocol.steps import Call
from host.protocol.url_asks import ASK_TTL_S, ask_of
from host.store.requests import ApprovalRequest
from host.store.tasks import TaskBook, TaskRecord
from host.times import iso

__all__ = ["AFTER_S", "TaskRuns", "binding_of", "caller_of", "ended_round", "pages_of"]

log = logging.getLogger("host.protocol.tasks")

#: How long a task is kept once its wait ends: time for its client to read the result.
AFTER_S = 3600.0

Ended = dict[str, Any] | Pending | Waiting


def binding_of(owner: str, call: Call, ledger: Ledger) -> str:
    """What the same call made again shares: caller, tool, definition, arguments, answers."""
    machine = call.machine
    return digest(
        ["task", owner, machine.name, machine.definition, dict(call.arguments), ledger.answers()]
    )


def ended_round(ended: Ended) -> TypeGuard[Pending | Waiting]:
    """Whether a round of a declaring call stopped where a task is made: a pending approval,
    or a URL ask (the call waits on someone other than the model)."""
    if isinstance(ended, Waiting):
        return True
    return (
        isinstance(ended, Pending)
        and ended.call.task
        and any(q.on_page for q in ended.asked.questions)
    )


class TaskRuns:
    """Carries tasks' calls on, and writes where each round leaves them.

    Args:
        host: The tools and the call core.
        book: The tasks in the store.
        join_s: How long a request waits for the round it started before answering.
    """

    def __init__(self, host: ToolHost, book: TaskBook, *, join_s: float = 1.0) -> None:
        self.host = host
        self.book = book
        self.join_s = join_s
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}
        self._serial: dict[str, tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def serial(self, task_id: str, *, wait_s: float = 0.0) -> Iterator[bool]:
        """One round of a task at a time across every worker and instance (a poll's, an
        update's, a decision's), each reading the task as the one before left it.

        Yields whether this round may run: False when another process held the task's round
        for all of ``wait_s`` (it writes where the task stands; a poll then shows that).

        NOTE: in process a lock, and across processes the store's lock ``task:<id>``: two
        workers that saw the same decision (the approver's, and a poll's) once both ran the
        task's round; the one that came second found the request already told and opened a
        new one, and its 'working' overwrote the task the first had completed.
        """
        with self._lock:
            lock, users = self._serial.get(task_id, (threading.Lock(), 0))
            self._serial[task_id] = (lock, users + 1)
        try:
            with lock:
                held = self.host.store.acquire_lock("task:" + task_id, wait_s=wait_s)
                if held is None:
                    yield False
                    return
                with held:
                    yield True
        finally:
            with self._lock:
                lock, users = self._serial[task_id]
                if users == 1:
                    del self._serial[task_id]
                else:
                    self._serial[task_id] = (lock, users - 1)

    def kick(self, task_id: str, work: Callable[[], Any], *, join: bool = True) -> None:
        """Run ``work`` (one round of the task) beside the caller, once per task per worker."""
        with self._lock:
            thread = self._running.get(task_id)
            if thread is None or not thread.is_alive():
                thread = threading.Thread(
                    target=self._guarded, args=(task_id, work), daemon=True, name=task_id[:12]
                )
                self._running[task_id] = thread
                thread.start()
        if join:
            thread.join(self.join_s)

    def _guarded(self, task_id: str, work: Callable[[], Any]) -> None:
        try:
            work()
        except StoreError as exc:
            # NOTE: the task stays where it was; the next poll carries it on again.
            log.warning(
                "a task could not go on: the store refused",
                extra={"event": "task_store_error", "task": task_id, "reason": exc.message},
            )
        except Exception:
            log.exception("a task's round failed", extra={"event": "task_error", "task": task_id})
        finally:
            with self._lock:
                if self._running.get(task_id) is threading.current_thread():
                    del self._running[task_id]

    def bind(self, task: TaskRecord) -> None:
        """Mark the approval request a task waits on as the task's: only it may spend it, and a
        decision on it carries the task on (:meth:`Tasks.on_decided`)."""
        request_id = task.waiting.get("approval")
        if request_id is None:
            return
        nonce = str(task.ledger.get("n"))

        def mark(current: ApprovalRequest) -> ApprovalRequest | None:
            if current.extra.get("task") is not None:
                return None
            return current.changed(extra={**current.extra, "task": nonce, "task_id": task.id})

        self.host.store.change_request(request_id, mark)

    def save(self, task: TaskRecord) -> TaskRecord:
        """Write where a round left the task, and bind the approval request it now waits on."""
        saved = self.book.save(task)
        if saved is task:
            self.bind(saved)
            self.book.mark_pages(saved, pages_of(saved))
        return saved

    def advance(
        self,
        task: TaskRecord,
        request: RequestContext,
        responses: Mapping[str, Any],
        delivered: frozenset[str] = frozenset(),
    ) -> TaskRecord:
        """Run the task's call one round with ``responses`` (by the ledger's keys); save it.

        ``delivered``: the task's keys those responses came under; none is used again.
        """
        machine = self.host.machines.get(task.tool)
        ledger = Ledger.from_payload(task.ledger)
        if machine is None or not ledger.fits(machine.definition):
            return self.save(self._voided(task, machine is None, request))
        call = Call(
            machine,
            task.arguments,
            request,
            ledger,
            responses=responses,
            can_ask_url=True,
            version=MODERN.version,
            task=True,
        )
        before = ledger.take(responses, machine.form_fields)
        try:
            ended = task_round(self.host, call, MODERN)
        except ProtocolError as exc:
            if exc.code == INVALID_PARAMS and responses:
                return self.save(self._asked_again(task, responses))
            return self.save(
                task.changed(status="failed", error=exc.to_error(), message=exc.message)
            )
        if isinstance(ended, dict) and self._act_running(ledger):
            return task  # NOTE: another worker's copy of this round is acting: it writes the end
        return self.save(self.absorb(task, ended, before, delivered))

    def absorb(
        self,
        task: TaskRecord,
        ended: Ended,
        before: Ledger,
        delivered: frozenset[str] = frozenset(),
    ) -> TaskRecord:
        """The task as the round ``ended`` leaves it (``before``: its ledger with the round's
        answers taken; ``delivered``: the task's keys answered in it)."""
        if isinstance(ended, Waiting):
            return _waiting_approval(task, ended)
        if isinstance(ended, Pending):
            return self._asked(task, ended, before, delivered)
        if ended.get("isError"):
            message = "The call ended with an error result; nothing more will happen."
        else:
            message = "The call is complete."
        # NOTE: the CallToolResult as this revision returns it, resultType and all.
        result = {"resultType": "complete", **ended}
        return task.changed(
            status="completed", result=result, message=message, outstanding={}, waiting={}
        )

    def _asked(
        self, task: TaskRecord, ended: Pending, before: Ledger, delivered: frozenset[str]
    ) -> TaskRecord:
        questions = ended.asked.questions
        if all(q.on_page and _accepted(before, q) for q in questions):
            page = questions[0]
            return task.changed(
                status="working",
                ledger=before.to_payload(),
                waiting={"page": ask_of(page.url)},
                outstanding={},
                approval=None,
                message=f"Waiting for the page of {page.key} to be submitted ({page.url}).",
            )
        outstanding: dict[str, dict[str, Any]] = {}
        issued = dict(task.issued)
        # NOTE: a key still shown (its question unanswered) is kept; one answered is never reused.
        shown = {
            (v["key"], v["digest"]): k for k, v in task.outstanding.items() if k not in delivered
        }
        for q in questions:
            key = shown.get((q.key, q.digest()))
            if key is None:
                issued[q.key] = issued.get(q.key, 0) + 1
                key = q.key if issued[q.key] == 1 else f"{q.key}#{issued[q.key]}"
            request = {"method": "elicitation/create", "params": adapt.elicitation(q, MODERN)}
            outstanding[key] = {"key": q.key, "digest": q.digest(), "request": request}
        ttl_s = task.ttl_s
        if any(q.on_page for q in questions):
            ttl_s = max(ttl_s, time.time() + ASK_TTL_S + AFTER_S - task.created)
        return task.changed(
            status="input_required",
            ledger=ended.asked.ledger.to_payload(),
            outstanding=outstanding,
            issued=issued,
            waiting={},
            approval=None,
            ttl_s=ttl_s,
            message="Waiting for the user to answer: " + ", ".join(outstanding) + ".",
        )

    @staticmethod
    def _asked_again(task: TaskRecord, responses: Mapping[str, Any]) -> TaskRecord:
        """An answer did not fit its form: the same questions, those answered under new keys."""
        issued = dict(task.issued)
        outstanding: dict[str, Mapping[str, Any]] = {}
        for key, entry in task.outstanding.items():
            if entry["key"] in responses:
                issued[entry["key"]] = issued.get(entry["key"], 1) + 1
                key = f"{entry['key']}#{issued[entry['key']]}"
            outstanding[key] = entry
        return task.changed(
            status="input_required",
            outstanding=outstanding,
            issued=issued,
            message="An answer did not fit its form; answer again: " + ", ".join(outstanding) + ".",
        )

    def _voided(self, task: TaskRecord, gone: bool, request: RequestContext) -> TaskRecord:
        """The tool changed (or went) while the task waited: nothing was done, nor will be."""
        approval = dict(task.approval or {})
        request_id = approval.get("request")
        if isinstance(request_id, str):
            self.host.store.end_request(request_id, void=True)
        approval["status"] = "voided"
        text = (
            f"The tool {task.tool} {'is no longer served' if gone else 'changed'} while this "
            "task waited, so nothing was done. Call the tool again: it will ask as it reads now."
        )
        log.info(
            "a task's tool changed",
            extra={"event": "task_voided", "tool": task.tool, "principal": request.principal},
        )
        result = {
            "resultType": "complete",
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "_meta": {APPROVAL_META: approval},
        }
        return task.changed(
            status="completed",
            result=result,
            approval=approval or None,
            waiting={},
            outstanding={},
            message="The tool changed; nothing was done.",
        )

    def _act_running(self, ledger: Ledger) -> bool:
        state = self.host.store.act_state("act:" + ledger.nonce)
        return state is not None and state.status == "running"


def _waiting_approval(task: TaskRecord, ended: Waiting) -> TaskRecord:
    outcome = ended.finished.outcome
    decided = outcome.approval
    ledger = ended.finished.ledger or ended.call.ledger
    if decided is None:  # NOTE: never: a Waiting round stopped at an approval
        return task
    left = decided.needed - len(decided.approved_by)
    who = " or ".join(decided.approvers) or "an approver"
    message = (
        f"Waiting for {left} approval{'s' if left != 1 else ''} from someone holding {who} "
        f"(request {decided.request}, expires {iso(decided.expires, ms=True)})."
    )
    meta = dict((outcome.meta or {}).get(APPROVAL_META) or {})
    return task.changed(
        status="working",
        # NOTE: the next round is a later one, so its act runs under the claim of the nonce.
        ledger=ledger.next(()).to_payload(),
        waiting={"approval": decided.request},
        approval=meta,
        outstanding={},
        ttl_s=max(task.ttl_s, decided.expires + AFTER_S - task.created),
        message=message,
    )


def _accepted(ledger: Ledger, question: Question) -> bool:
    answer = ledger.answer_for(question)
    return answer is not None and answer.get("action") == "accept"


def caller_of(task: TaskRecord) -> RequestContext:
    """The context to carry ``task`` on for its caller when someone else saw it can go on
    (with the ``Host`` the caller reached, so its pages keep their URLs)."""
    method: AuthMethod = "jwt" if task.method == "jwt" else "static"
    if task.method == "none":
        method = "none"
    identity = Identity(task.principal, frozenset(task.scopes), method=method)
    return RequestContext(identity, headers={"host": task.host} if task.host else None)


def pages_of(task: TaskRecord) -> list[str]:
    """The ids of the URL asks the task waits on: accepted, or among its input requests."""
    found = [task.waiting["page"]] if "page" in task.waiting else []
    for entry in task.outstanding.values():
        params = entry["request"].get("params", {})
        if params.get("mode") == "url" and isinstance(params.get("url"), str):
            found.append(ask_of(params["url"]))
    return found
