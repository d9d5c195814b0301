"""A ``tools/call``'s set-up, the same in every era: find the tool, check, advance, adapt.

Both eras answer ``tools/call`` through :func:`first_round`: it finds the machine (unknown tool,
missing scope), reads the arguments, lets the era check its own parts and hand over the ledger of
an earlier round (the modern ``requestState``), checks the arguments of a first round against the
input schema, makes the :class:`Call` and advances it. Every later round, wherever its answers
come from (a ``requestState`` retry, the legacy stream relay, ``sendElicitationResult``), advances
through :func:`next_round`. Either gives the ``CallToolResult`` in the era's revision, or a
:class:`Pending` round whose questions the era sends its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from host.errors import ProtocolError
from host.frozen import quick_init
from host.machine import Machine
from host.protocol import adapt
from host.protocol.answers import Ledger
from host.protocol.context import RequestContext, trace_context
from host.protocol.core import ToolHost
from host.protocol.endings import awaits_approval
from host.protocol.jsonrpc import INVALID_PARAMS, MISSING_CAPABILITY, error
from host.protocol.revisions import Revision
from host.protocol.steps import Asked, Call, Finished
from host.protocol.streams import Notifier

__all__ = [
    "Earlier",
    "Pending",
    "Waiting",
    "first_round",
    "next_round",
    "object_param",
    "prepare",
    "task_round",
    "tool_name",
]

Earlier = Callable[[Machine, dict[str, Any]], Ledger | None]
"""An era's own checks of a found tool and its arguments; the ledger of an earlier round, or None
when this is a first round (whose arguments are then checked against the input schema)."""


@quick_init
@dataclass(frozen=True)
class Pending:
    """A round that asked: the call as it ran, and its questions with the ledger they go with."""

    call: Call
    asked: Asked


@dataclass(frozen=True)
class Waiting:
    """A round of a task's call that stopped at an approval still pending: not the call's end."""

    call: Call
    finished: Finished


#: The MCP tasks extension (SEP-2663): a client declares it in its per-request capabilities.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def tasks_missing() -> ProtocolError:
    """-32021: the request needs the tasks extension, and the client did not declare it."""
    return error(
        MISSING_CAPABILITY,
        "Missing required client capability: this needs the tasks extension "
        f"({TASKS_EXTENSION}), and the request did not declare it",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def tool_name(params: Mapping[str, Any]) -> str:
    """``params.name``.

    Raises:
        ProtocolError: -32602 when it is not a string.
    """
    name = params.get("name")
    if not isinstance(name, str):
        raise error(INVALID_PARAMS, "tools/call needs params.name, the tool's name")
    return name


def object_param(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``params[name]``, an object; ``{}`` when absent or null.

    Raises:
        ProtocolError: -32602 when it is something else.
    """
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise error(INVALID_PARAMS, f"params.{name} must be an object")
    return value


def prepare(
    host: ToolHost,
    params: Mapping[str, Any],
    request: RequestContext,
    *,
    revision: Revision,
    can_ask: bool,
    can_ask_url: bool = False,
    notifier: Notifier | None = None,
    earlier: Earlier | None = None,
    responses: str | None = None,
    tasks: bool = False,
) -> Call | dict[str, Any]:
    """Set up the call ``params`` names: its :class:`Call`, or the result that ends it first
    (arguments that do not fit the input schema).

    Args:
        host: The tools and the call core.
        params: The ``tools/call`` params.
        request: Who calls, over what.
        revision: The revision the client speaks (results are adapted to it).
        can_ask: Whether the client can answer form questions.
        can_ask_url: Whether the client can answer URL questions (a host page).
        notifier: The request's progress reports and log messages, when it asked for either.
        earlier: The era's checks, and the ledger of an earlier round (None: a first round).
        responses: The params member that carries this round's answers, if the era has one.
        tasks: The request declared the tasks extension: a tool that may run as a task does
            (its rounds hold no wait; advance it with :func:`task_round`).

    Raises:
        ProtocolError: Unknown tool, malformed params, or as :meth:`ToolHost.advance` does;
            -32021 for a ``task: required`` tool called without the tasks extension.
        ScopeError: The caller lacks a scope the tool needs.
    """
    machine = host.machine(tool_name(params), request)
    if machine.task == "required" and not tasks:
        raise tasks_missing()
    arguments = object_param(params, "arguments")
    ledger = earlier(machine, arguments) if earlier is not None else None
    if ledger is None:
        problem = machine.check_arguments(arguments)
        if problem is not None:
            return adapt.result(problem, revision)
        ledger = Ledger.start(machine.definition)
    call = Call(
        machine,
        arguments,
        request,
        ledger,
        responses=object_param(params, responses) if responses is not None else {},
        can_ask=can_ask,
        can_ask_url=can_ask_url,
        progress=notifier.report if notifier else None,
        logs=notifier.logs if notifier else None,
        version=revision.version,
        trace=trace_context(params, request),
        task=tasks and machine.task != "never",
    )
    return call


def first_round(
    host: ToolHost,
    params: Mapping[str, Any],
    request: RequestContext,
    *,
    revision: Revision,
    can_ask: bool,
    can_ask_url: bool = False,
    notifier: Notifier | None = None,
    earlier: Earlier | None = None,
    responses: str | None = None,
) -> dict[str, Any] | Pending:
    """Set up the call ``params`` names and advance it one round (:func:`prepare`, then
    :func:`next_round`).

    Raises:
        ProtocolError: As :func:`prepare` and :meth:`ToolHost.advance` do.
        ScopeError: The caller lacks a scope the tool needs.
    """
    call = prepare(
        host,
        params,
        request,
        revision=revision,
        can_ask=can_ask,
        can_ask_url=can_ask_url,
        notifier=notifier,
        earlier=earlier,
        responses=responses,
    )
    return call if isinstance(call, dict) else next_round(host, call, revision)


def next_round(host: ToolHost, call: Call, revision: Revision) -> dict[str, Any] | Pending:
    """Advance ``call`` one round: its result in ``revision``, or the round's questions.

    Raises:
        ProtocolError: As :meth:`ToolHost.advance` does.
    """
    step = host.advance(call)
    if isinstance(step, Finished):
        return adapt.result(step.outcome, revision)
    return Pending(call, step)


def task_round(
    host: ToolHost, call: Call, revision: Revision
) -> dict[str, Any] | Pending | Waiting:
    """As :func:`next_round`, for a call a task may carry: a round that stopped at a pending
    approval is :class:`Waiting`, not the call's end.

    Raises:
        ProtocolError: As :meth:`ToolHost.advance` does.
    """
    step = host.advance(call)
    if isinstance(step, Finished):
        if call.task and awaits_approval(step.outcome):
            return Waiting(call, step)
        return adapt.result(step.outcome, revision)
    return Pending(call, step)
