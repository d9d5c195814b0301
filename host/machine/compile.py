"""Compile a checked project into machines, once, at start-up.

Every template, form, validator and handler is resolved here, so a call only renders and runs
(a message template is parsed here and turned into code on its first render).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from host.machine.approve import DEFAULT_APPROVE_ENDINGS, ApproveStep
from host.machine.bind import Handler, load_handler
from host.machine.definition import definition_digest
from host.machine.forms import Form, confirm_form
from host.machine.keys import names_key, template_key
from host.machine.locking import LockStep, lock_step
from host.machine.remember import Remember
from host.machine.run import Machine
from host.machine.steps import QuestionStep, ReadStep
from host.machine.timing import DEFAULT_ACT_S, DEFAULT_READ_S
from host.machine.types import Ending
from host.machine.url_ask import UrlAskStep
from host.spec import memo
from host.spec.model import (
    Act,
    Approve,
    Ask,
    Confirm,
    Project,
    Read,
    Returns,
    Timeouts,
    Tool,
)
from host.spec.model import (
    Remember as WrittenRemember,
)
from host.spec.templates import (
    Renderer,
    compile_expression,
    compile_result,
    compile_text,
    names,
    result_names,
)

__all__ = ["DEFAULT_ENDINGS", "compile_project", "compile_tool"]

#: What a call returns when a step declares no result of its own: say what the user did, so the
#: model stops instead of retrying.
DEFAULT_ENDINGS: Mapping[Ending, str] = {
    "declined": "The user declined ({step}). Nothing was done.",
    "cancelled": "The user dismissed the question ({step}) without answering. Nothing was done.",
    "unticked": "The user did not tick the box to confirm ({step}). Nothing was done.",
}


#: The server's defaults when it sets none: the host's own apply.
NO_TIMEOUTS = Timeouts()


def compile_project(project: Project) -> dict[str, Machine]:
    """Every tool of ``project`` as a machine, by name, in the project's order."""
    server = project.server
    # NOTE: tools share handlers (a read like get_ticket in most of them): each is imported and
    # its signature read once per project, not once per step.
    loaded: dict[str, Handler] = {}
    machines = {
        tool.name: compile_tool(
            tool,
            project.handlers_dir,
            server_scopes=server.scopes,
            timeouts=server.timeouts,
            loaded=loaded,
        )
        for tool in project.tools
    }
    # NOTE: what the check and this compile remembered of the specs' texts (syntax trees, most
    # of it) serves no call: a worker would keep it for as long as it serves.
    memo.release()
    return machines


def compile_tool(
    tool: Tool,
    handlers_dir: Path,
    *,
    server_scopes: Sequence[str] = (),
    timeouts: Timeouts = NO_TIMEOUTS,
    loaded: dict[str, Handler] | None = None,
) -> Machine:
    """One tool as a machine.

    Args:
        tool: The checked tool.
        handlers_dir: Where its handlers live.
        server_scopes: Scopes every call of the server needs, on top of the tool's own.
        timeouts: The server's default limits for steps that set none.
        loaded: Handlers already loaded from ``handlers_dir``, by reference; filled in.

    Raises:
        host.machine.bind.HandlerImportError: a handler could not be imported.
    """
    loaded = {} if loaded is None else loaded
    steps: list[ReadStep | QuestionStep | ApproveStep | UrlAskStep] = []
    act = None
    returns: Returns = "value"
    act_limit = timeouts.act_s or DEFAULT_ACT_S
    lock: LockStep | None = None
    for step in tool.steps:
        if isinstance(step, Read):
            steps.append(_read(step, _handler(handlers_dir, step.call, loaded), timeouts))
        elif isinstance(step, Ask | Confirm | Approve):
            steps.append(_asking(step))
        elif isinstance(step, Act):
            act = _handler(handlers_dir, step.call, loaded)
            returns = step.returns
            act_limit = step.timeout_s or act_limit
            lock = lock_step(step.lock, step.lock_wait_s, step.busy) if step.lock else None
    last_read = next((s.name for s in reversed(tool.steps) if isinstance(s, Read)), None)
    if act is None and tool.result is None and last_read is None:
        # NOTE: the checker rejects this; a hand-built Project might not have been checked.
        raise ValueError(f"tool {tool.name} has no act step and nothing to return")
    return Machine(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema={"type": "object", **tool.input},
        output_schema=tool.output,
        annotations=tool.annotations,
        steps=tuple(steps),
        act=act,
        returns=returns,
        scopes=memo.one(frozenset((*server_scopes, *tool.scopes))),
        act_timeout_s=act_limit,
        audit_redact=memo.one(frozenset(tool.audit_redact)),
        result=None if act is not None or tool.result is None else compile_result(tool.result),
        last_read=last_read,
        definition=definition_digest(tool),
        lock=lock,
        task=tool.task_support,
    )


def _asking(step: Ask | Confirm | Approve) -> QuestionStep | ApproveStep | UrlAskStep:
    """A step that asks someone: a question (form or yes/no), a URL ask, or an approval."""
    if isinstance(step, Approve):
        return _approve(step)
    if isinstance(step, Ask) and step.url:
        return _url_ask(step)
    return _question(step)


def _read(step: Read, handler: Handler, timeouts: Timeouts) -> ReadStep:
    deps = memo.one(frozenset(handler.required + handler.optional) - {"ctx"})
    missing = compile_text(step.missing) if step.missing is not None else None
    limit = step.timeout_s or timeouts.read_s or DEFAULT_READ_S
    return ReadStep(step.name, handler, missing, deps, limit)


def _handler(handlers_dir: Path, call: str, loaded: dict[str, Handler]) -> Handler:
    handler = loaded.get(call)
    if handler is None:
        handler = loaded[call] = load_handler(handlers_dir, call)
    return handler


def _remember(written: WrittenRemember) -> tuple[Remember, set[str]]:
    """The compiled policy, and the names its key reads."""
    key = written.key
    if isinstance(key, str):
        return Remember(written.for_s, template_key(key)), names(key)
    if key is not None:
        return Remember(written.for_s, names_key(key)), set(key)
    return Remember(written.for_s, None), set()


def _approve(step: Approve) -> ApproveStep:
    deps = names(step.message)
    endings: dict[Ending, Renderer] = {}
    written: dict[Ending, Any] = {"rejected": step.rejected, "expired": step.expired}
    for ending, value in written.items():
        if value is None:
            value = DEFAULT_APPROVE_ENDINGS[ending].format(step=step.name)
        else:
            deps |= result_names(value) - {step.name}
        endings[ending] = compile_result(value)
    when = None
    if step.when is not None:
        when = compile_expression(step.when)
        deps |= names(step.when, expression=True)
    remember = None
    if step.remember is not None:
        remember, key_deps = _remember(step.remember)
        deps |= key_deps
    return ApproveStep(
        name=step.name,
        message=compile_text(step.message),
        when=when,
        approvers=step.approvers,
        count=step.count,
        wait_s=step.wait_s,
        expires_s=step.expires_s,
        endings=endings,
        deps=memo.one(frozenset(deps) - {step.name, "caller"}),
        outputs=memo.one(frozenset({step.name})),
        remember=remember,
    )


def _url_ask(step: Ask) -> UrlAskStep:
    question = _question(step)
    return UrlAskStep(
        name=step.name,
        message=question.message,
        when=question.when,
        form=question.form,
        endings=question.endings,
        deps=question.deps,
        outputs=question.outputs,
        secrets=memo.one(frozenset(f.name for f in step.fields if f.secret)),
        wait_s=step.wait_s,
    )


def _question(step: Ask | Confirm) -> QuestionStep:
    if isinstance(step, Confirm):
        fields = confirm_form(step.label)
        written: dict[Ending, Any] = {
            "declined": step.declined,
            "cancelled": step.cancelled,
            "unticked": step.unticked,
        }
    else:
        fields = step.fields
        written = {"declined": step.declined, "cancelled": step.cancelled}
    form = Form.build(fields)
    endings: dict[Ending, Renderer] = {}
    deps = names(step.message) | result_names(form.schema)
    for ending, value in written.items():
        if value is None:
            value = DEFAULT_ENDINGS[ending].format(step=step.name)
        else:
            deps |= result_names(value)
        endings[ending] = compile_result(value)
    when = None
    if step.when is not None:
        when = compile_expression(step.when)
        deps |= names(step.when, expression=True)
    remember = None
    if isinstance(step, Confirm) and step.remember is not None:
        remember, key_deps = _remember(step.remember)
        deps |= key_deps
    outputs = memo.one(frozenset({step.name, *(f.name for f in fields)}))
    return QuestionStep(
        name=step.name,
        confirm=isinstance(step, Confirm),
        message=compile_text(step.message),
        when=when,
        form=form,
        endings=endings,
        deps=memo.one(frozenset(deps) - outputs),
        outputs=outputs,
        remember=remember,
    )
