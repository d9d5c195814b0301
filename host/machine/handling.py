"""Running a tool's handlers: a read within its time limit, the act once, and what they give back.

A handler that fails, or returns a result its tool cannot use, is an incident: logged with an id
the caller is told, never a traceback in the result. :class:`Handling` is a part of
:class:`host.machine.run.Machine`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from host import ids
from host.errors import ContentError, ToolError
from host.logs import SECRETS, scrubbing, secret_values
from host.machine.bind import Handler
from host.machine.content import content_blocks
from host.machine.schemas import SchemaCheck
from host.machine.steps import ReadStep
from host.machine.timing import RUNNER, HandlerTimeout
from host.machine.types import CallContext, Outcome
from host.spec.model import Returns

__all__ = ["Handling"]

log = logging.getLogger("host.machine")


class Handling:
    """How :class:`host.machine.run.Machine` runs its handlers and checks what they return."""

    name: str
    audit_redact: frozenset[str]
    returns: Returns
    _output: SchemaCheck | None

    def _read(self, step: ReadStep, scope: Mapping[str, Any], ctx: CallContext) -> Any:
        """A read's value, if it comes within the read's time limit.

        Raises:
            ToolError: it did not: the call ends saying so (the read goes on, unheard).
        """
        if self.audit_redact:
            ctx = self._scrubbed(ctx, scope)
        try:
            # NOTE: a partial, not a lambda: the pool thread calls it without a frame of ours.
            return RUNNER.call(partial(step.handler, scope, ctx), step.timeout_s)
        except HandlerTimeout:
            log.warning(
                "a read ran past its time limit",
                extra={"tool": self.name, "step": step.name, "limit_s": step.timeout_s},
            )
            raise ToolError(
                f"The tool {self.name} stopped: looking up {step.name} took longer than "
                f"{step.timeout_s:g} seconds. Nothing was done; try again later."
            ) from None

    def _scrubbed(self, ctx: CallContext, scope: Mapping[str, Any]) -> CallContext:
        """``ctx`` for a handler; its ``ctx.log`` hides the redacted fields' values, if any."""
        if not self.audit_redact:
            return ctx
        secrets = secret_values(scope, self.audit_redact)
        return replace(ctx, log=scrubbing(ctx.log, secrets)) if secrets else ctx

    def _act(self, scope: Mapping[str, Any], ctx: CallContext, act: Handler) -> Outcome:
        try:
            value = act(scope, self._scrubbed(ctx, scope))
            if self.returns == "value":
                return self._checked(Outcome.from_value(value, acted=True), ctx, scope)
        except ToolError as exc:
            return Outcome(Outcome.error(exc.message).content, is_error=True, acted=True)
        except Exception:
            # NOTE: the act started, and may have changed something before it failed.
            return replace(self._incident(ctx, scope), acted=True)
        try:
            return Outcome(content_blocks(value), acted=True)
        except ContentError as exc:
            # NOTE: the handler ran to its end (the act happened); only its result is unusable.
            return replace(self._incident(ctx, scope, str(exc)), acted=True)

    def _checked(self, outcome: Outcome, ctx: CallContext, scope: Mapping[str, Any]) -> Outcome:
        """The act's outcome, if its structured result fits the declared ``output`` schema.

        NOTE: MCP clients check ``structuredContent`` against ``outputSchema`` and reject the
        whole result when it does not fit; a handler bug is better named here, in the log.
        """
        if self._output is None or outcome.structured is None:
            return outcome
        error = self._output.first_error(outcome.structured)
        if error is None:
            return outcome
        where = "/".join(str(p) for p in error.absolute_path) or "the result"
        problem = f"the result does not match the tool's output schema at {where}: {error.message}"
        return replace(self._incident(ctx, scope, problem), acted=outcome.acted)

    def _incident(
        self, ctx: CallContext, scope: Mapping[str, Any], problem: str | None = None
    ) -> Outcome:
        incident = ids.incident()
        fields = {"tool": self.name, "incident": incident, "round": ctx.round}
        # NOTE: an exception's text (or a bad result) may quote a redacted value: the log
        # line's formatter writes it as "[redacted]" (its traceback never shows frame locals).
        fields[SECRETS] = secret_values(scope, self.audit_redact)
        if problem is None:
            log.exception("handler failed", extra=fields)
        else:
            log.error(
                "handler returned an unusable result: %s",
                problem,
                extra={**fields, "problem": problem},
            )
        return Outcome.error(
            f"The tool {self.name} failed with an internal error (incident {incident}). "
            "The details are in the server log.",
            incident=incident,
        )
