"""Prometheus metrics of every round and refused request, summed over every gunicorn worker.

Names follow the OpenTelemetry semantic conventions for MCP where they exist, as Prometheus
spells them: ``mcp.server.operation.duration`` (seconds, by ``mcp.method.name``,
``gen_ai.tool.name`` and ``error.type``, with the conventions' buckets) is
``mcp_server_operation_duration_seconds{mcp_method_name, gen_ai_tool_name, error_type}``. The
conventions have nothing for the rest, so they are the host's own, ``host_*``:

========================================  =========================================================
``host_tool_rounds_total``                rounds by ``tool`` and ``outcome`` (``input_required``,
                                          ``complete``, ``error``, ``rejected``)
``host_questions_asked_total``            questions asked, by ``tool``
``host_answers_total``                    answers taken, by ``tool`` and ``action`` (``accept``,
                                          ``decline``, ``cancel``)
``host_acts_total``                       acts run, by ``tool``
``host_replays_total``                    final rounds answered from an act's record, by ``tool``
``host_rejected_states_total``            ``requestState`` values that did not open, by ``reason``
``host_auth_failures_total``              requests refused 401 or 403, by ``status`` and ``reason``
``host_approval_requests_total``          approval requests opened, by ``tool``
``host_approval_pending_total``           calls that stopped waiting with their request pending,
                                          by ``tool``
``host_approval_decisions_total``         approvers' decisions, by ``tool`` and ``verdict``
``host_approval_decide_seconds``          from a request to its deciding decision, by ``tool``
``host_audit_held``                       audit records held while the store refuses writes
``host_audit_held_max``                   the most one process holds (``HOST_AUDIT_HELD_MAX``)
``host_audit_dropped_total``              audit records dropped past that bound
``host_audit_export_lag``                 entries the audit export is behind the chain's head
========================================  =========================================================

Labels only ever hold the server's own tool names and fixed words, never client input, so the
number of series stays bounded.

Workers are separate processes: with ``PROMETHEUS_MULTIPROC_DIR`` set (``host serve`` sets a
private one), each writes its values to files there (:mod:`host.observers.metric_files`), and
:meth:`MetricsObserver.exposition` sums the files of every worker, past and present. Without it,
the numbers are this process's only. When the files cannot be written (a full disk), this
process's metrics stop, once logged, calls go on, and :meth:`MetricsObserver.problem` says why
(``/readyz`` then answers 503).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from host.observers import metric_files
from host.observers.held import Held
from host.protocol.events import Refusal, Round
from host.store.requests import ApprovalRequest

__all__ = ["DURATION_BUCKETS", "MULTIPROC_DIR", "MetricsObserver"]

log = logging.getLogger("host.metrics")

#: Bucket boundaries of the time approvers take to decide, in seconds (a minute to a week).
DECIDE_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 86400, 7 * 86400)

#: The environment variable that puts prometheus-client in multiprocess mode.
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"

#: The semantic conventions' bucket boundaries for ``mcp.server.operation.duration``, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

_STATUS = {"unauthenticated": "401", "forbidden": "403"}

#: Scrapes tried again when a worker's files went between listing and reading them.
_SCRAPE_TRIES = 3

metric_files.install()


class MetricsObserver:
    """Counts rounds and refusals into Prometheus metrics (an observer of the protocol's events)."""

    def __init__(self) -> None:
        # NOTE: a registry of its own, so several apps in one process (tests) do not clash in
        # the global one; in multiprocess mode the values go to the files regardless.
        self.registry = CollectorRegistry()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.broken: str | None = None
        r = self.registry
        self.duration = Histogram(
            "mcp_server_operation_duration",
            "Duration of the MCP requests the server answered (one tools/call round each)",
            ["mcp_method_name", "gen_ai_tool_name", "error_type"],
            unit="seconds",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.rounds = Counter(
            "host_tool_rounds",
            "tools/call rounds by how they ended",
            ["tool", "outcome"],
            registry=r,
        )
        self.questions = Counter(
            "host_questions_asked", "Questions asked of the user", ["tool"], registry=r
        )
        self.answers = Counter(
            "host_answers", "Answers taken, by the user's action", ["tool", "action"], registry=r
        )
        self.acts = Counter("host_acts", "Acts run", ["tool"], registry=r)
        self.replays = Counter(
            "host_replays", "Final rounds answered from an act's record", ["tool"], registry=r
        )
        self.rejected_states = Counter(
            "host_rejected_states", "requestState values that did not open", ["reason"], registry=r
        )
        self.auth_failures = Counter(
            "host_auth_failures",
            "Requests refused for their token (401) or scopes (403)",
            ["status", "reason"],
            registry=r,
        )
        self._approval_metrics(r)
        self._audit_metrics: dict[str, Any] = {}

    def _approval_metrics(self, r: CollectorRegistry) -> None:
        """The metrics of approval requests and their decisions."""
        self.approval_requests = Counter(
            "host_approval_requests", "Approval requests opened", ["tool"], registry=r
        )
        self.approval_pending = Counter(
            "host_approval_pending",
            "Calls that stopped waiting while their approval request was pending",
            ["tool"],
            registry=r,
        )
        self.approval_decisions = Counter(
            "host_approval_decisions", "Approvers' decisions", ["tool", "verdict"], registry=r
        )
        self.approval_decide = Histogram(
            "host_approval_decide",
            "Time from an approval request to the decision that settled it",
            ["tool"],
            unit="seconds",
            buckets=DECIDE_BUCKETS,
            registry=r,
        )

    def watch_audit(self, audit: Any) -> None:
        """Show ``audit``'s held records (an :class:`~host.observers.audit.AuditObserver`).

        NOTE: made at the first change, not here: in multiprocess mode each metric is a file per
        worker, and a trail the store always takes needs none of them.
        """
        held: Held = audit.held
        self._held_most = held.most
        self._dropped_seen = 0
        held.changed = self._audit_held

    def _audit_metric(self, name: str) -> Any:
        """The audit metric ``name``, made at its first use."""
        found = self._audit_metrics.get(name)
        if found is None:
            r, kind = self.registry, _AUDIT_METRICS[name]
            if kind == "counter":
                found = Counter(name, _AUDIT_HELP[name], registry=r)
            else:
                mode: Any = kind  # NOTE: one of prometheus-client's multiprocess modes
                found = Gauge(name, _AUDIT_HELP[name], multiprocess_mode=mode, registry=r)
            self._audit_metrics[name] = found
        return found

    def export_lag(self, behind: int) -> None:
        """Show how many entries the audit export is behind."""
        if self.broken is None:
            try:
                self._audit_metric("host_audit_export_lag").set(behind)
            except OSError as exc:
                self._degrade(exc)

    def _audit_held(self, held: int, dropped: int) -> None:
        if self.broken is not None:
            return
        try:
            self._audit_metric("host_audit_held_max").set(self._held_most)
            self._audit_metric("host_audit_held").set(held)
            if dropped > self._dropped_seen:
                self._audit_metric("host_audit_dropped").inc(dropped - self._dropped_seen)
                self._dropped_seen = dropped
        except OSError as exc:
            self._degrade(exc)

    def approval_opened(self, request: ApprovalRequest) -> None:
        """Count one approval request opened."""
        self._child(self.approval_requests, request.tool).inc()

    def approval_decided(self, status: str, request: ApprovalRequest) -> None:
        """Count one decision; time the request if the decision settled it."""
        last = request.decisions[-1] if request.decisions else None
        if last is None:
            return
        self._child(self.approval_decisions, request.tool, last.verdict).inc()
        if status in ("approved", "rejected"):
            took = max(0.0, last.at - request.created)
            self._child(self.approval_decide, request.tool).observe(took)

    def round_ended(self, event: Round) -> None:
        """Count one round (unless this process's metrics could not be written)."""
        if self.broken is None:
            try:
                self._count_round(event)
            except OSError as exc:
                self._degrade(exc)

    def _count_round(self, event: Round) -> None:
        tool, child = event.tool, self._child
        child(self.duration, event.method, tool, _error_type(event)).observe(event.duration_s)
        child(self.rounds, tool, event.outcome).inc()
        if event.asked:
            child(self.questions, tool).inc(len(event.asked))
        for action in event.answers.values():
            child(self.answers, tool, action).inc()
        if event.acted:
            child(self.acts, tool).inc()
        if event.replayed:
            child(self.replays, tool).inc()
        if event.approval is not None and event.approval.status == "pending":
            child(self.approval_pending, tool).inc()

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once per label set.

        NOTE: ``labels()`` checks and joins its arguments under a lock on every call; the label
        sets are few (tools, outcomes, methods), so each one's child is kept. Children survive
        a fork: in multiprocess mode each value reopens its file in a new process.
        """
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def refused(self, event: Refusal) -> None:
        """Count one refused request (unless this process's metrics could not be written)."""
        if self.broken is not None:
            return
        try:
            if event.kind == "state":
                self.rejected_states.labels(event.reason).inc()
            else:
                self.auth_failures.labels(_STATUS[event.kind], event.reason).inc()
        except OSError as exc:
            self._degrade(exc)

    def _degrade(self, exc: OSError) -> None:
        """Stop counting in this process: its files cannot take more (a full disk)."""
        self.broken = f"the metrics files cannot be written: {exc.strerror or exc}"
        log.error(
            "metrics stopped in this worker; calls go on without them",
            extra={"event": "metrics_degraded", "reason": self.broken},
        )

    def problem(self) -> str | None:
        """Why this process's metrics are not being kept, or None (asked by ``/readyz``)."""
        if self.broken is not None:
            return self.broken
        folder = os.environ.get(MULTIPROC_DIR)
        return metric_files.probe(folder) if folder else None

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in the Prometheus text format, and its content type.

        Summed over every process that wrote to ``PROMETHEUS_MULTIPROC_DIR`` when it is set.
        """
        folder = os.environ.get(MULTIPROC_DIR)
        if not folder:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
        for _ in range(_SCRAPE_TRIES - 1):
            try:
                return generate_latest(registry), CONTENT_TYPE_LATEST
            except FileNotFoundError:
                continue  # an exited worker's files, folded into the archive meanwhile
        return generate_latest(registry), CONTENT_TYPE_LATEST


#: The audit trail's metrics: a counter, or a gauge's multiprocess mode.
_AUDIT_METRICS = {
    "host_audit_held": "livesum",
    "host_audit_held_max": "max",
    "host_audit_dropped": "counter",
    "host_audit_export_lag": "livemax",
}
_AUDIT_HELP = {
    "host_audit_held": "Audit records held while the store refuses writes",
    "host_audit_held_max": "The most audit records one process holds",
    "host_audit_dropped": "Audit records dropped past the bound",
    "host_audit_export_lag": "Entries the audit export is behind the chain's head",
}


def _error_type(event: Round) -> str:
    """``error.type`` as the conventions define it: the JSON-RPC code, or ``tool_error``."""
    if event.outcome == "rejected":
        return str(event.code) if event.code is not None else "_OTHER"
    return "tool_error" if event.outcome == "error" else ""
