"""The served host, assembled one way for every transport: settings → specs → machines → endpoint.

The WSGI app (:mod:`host.web.app`), ``host stdio`` (:mod:`host.stdio`), ``host call`` and the test
kit all get their endpoint from :func:`assemble`, so a setting means the same thing whichever way
the host is started. Here too the deployment's switches meet the specs: whether tools may ask
(``HOST_ELICITATION`` and ``elicitation: {enabled}``), and which observers watch the rounds (the
log line; metrics unless ``HOST_METRICS=off``; traces when OpenTelemetry is configured; always the
audit trail, in the store).
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host.approvals.service import ApprovalsService, withdraw_request
from host.machine import Machine, compile_project
from host.observers.audit import AuditObserver
from host.observers.audit_settings import signer_of
from host.observers.export import AuditExport, sink_for
from host.observers.outcomes import RequestOutcomes
from host.observers.webhook import ApprovalsWebhook
from host.protocol import (
    Elicitation,
    Endpoint,
    LogObserver,
    ModernProtocol,
    Observer,
    make_endpoint,
)
from host.protocol.modern.tasks import Tasks
from host.protocol.redaction import FieldCipher
from host.protocol.url_asks import UrlAskBook
from host.settings import Settings
from host.spec.model import Project, Server
from host.store import Store, open_store, private_dir, require_durable

if TYPE_CHECKING:
    from host.observers.metrics import MetricsObserver

__all__ = ["Assembly", "assemble", "ensure_secret", "observers_for"]

log = logging.getLogger("host")

_SECRET_FILE = "secret"


@dataclass(frozen=True)
class Assembly:
    """Everything one served host is made of.

    Attributes:
        settings: The deployment settings it was assembled from.
        project: The checked specs.
        machines: The compiled tools, by name, in ``tools/list`` order.
        store: The shared store (the caller closes it, or the whole with :meth:`close`).
        endpoint: The MCP endpoint every transport hands messages to.
        observers: What watches the rounds and refused requests.
        metrics: The metrics observer among them, for ``/metrics``; None when metrics are off.
        approvals: The approvals service the API and the inbox decide through.
        url_asks: The URL asks, for their pages.
    """

    settings: Settings
    project: Project
    machines: dict[str, Machine]
    store: Store
    endpoint: Endpoint
    observers: tuple[Observer, ...] = field(default=())
    metrics: MetricsObserver | None = None
    approvals: ApprovalsService | None = None
    url_asks: UrlAskBook | None = None

    def flush(self) -> None:
        """Write what the observers still hold (the audit records of the last few ms)."""
        for observer in self.observers:
            if isinstance(observer, AuditObserver):
                observer.flush()

    def close(self) -> None:
        """Flush the observers, then close the store."""
        self.flush()
        self.store.close()


def assemble(
    settings: Settings,
    project: Project | None = None,
    *,
    machines: Mapping[str, Machine] | None = None,
    observers: Sequence[Observer] | None = None,
    store_checked: bool = False,
) -> Assembly:
    """Load (unless given), compile and serve the specs ``settings`` names.

    Without ``HOST_SECRET``, every process of this data directory shares one generated secret
    (:func:`ensure_secret`), so a second round that reaches another worker still opens. A store
    that can forget act claims (a Redis without persistence, say) is refused unless the settings
    acknowledge it (``HOST_STORE_VOLATILE_OK=1``); lesser risks are logged as warnings.

    Args:
        settings: The deployment's settings.
        project: Checked specs to serve instead of loading them.
        machines: ``project`` already compiled (a gunicorn master hands its workers both).
        observers: What watches the rounds; by default :func:`observers_for` the settings.
            The audit trail is added to them either way.
        store_checked: A gunicorn master opened the store and checked its risks before
            starting this worker: the worker does not check again, and a Redis it cannot reach
            now is an outage its calls meet (503), not a failure to start.

    Raises:
        host.errors.SpecError: The specs have problems (every diagnostic is attached).
        host.errors.StoreError: The store cannot be opened, or can forget claims unacknowledged.
    """
    project = project if project is not None else _load(settings)
    machines = dict(machines) if machines is not None else compile_project(project)
    if settings.store_url is None:
        private_dir(settings.data_dir)
    keys = settings.secrets or (ensure_secret(settings.data_dir),)
    store = _open_store(settings, store_checked, keys)
    audit, chosen = _observers(settings, store, observers)
    webhook = ApprovalsWebhook(settings.approvals)
    metrics = _metrics(chosen)
    url_asks = UrlAskBook(store, FieldCipher(keys), settings.auth.browser.public_url)
    opened = _both(webhook.requested, metrics.approval_opened if metrics else None)
    endpoint = _endpoint(
        settings,
        project.server,
        machines,
        store,
        keys,
        chosen,
        opened=opened,
        url_asks=url_asks,
        audit=audit,
    )
    decided = _both(
        _both(webhook.decided, metrics.approval_decided if metrics else None), audit.decided
    )
    _audit_watched(settings, store, audit, metrics)
    decided = _carry_tasks(endpoint, decided, url_asks)
    approvals = ApprovalsService(store, machines, decided=decided)
    return Assembly(
        settings, project, machines, store, endpoint, chosen, metrics, approvals, url_asks
    )


def _audit_watched(
    settings: Settings, store: Store, audit: AuditObserver, metrics: MetricsObserver | None
) -> None:
    """Show the audit trail's held records on ``/metrics``; start its export if there is one."""
    if metrics is not None:
        metrics.watch_audit(audit)
    if settings.audit.export is not None:
        sink = sink_for(settings.audit.export, store, settings.audit.export_max)
        AuditExport(store, sink, lag=metrics.export_lag if metrics else None).start()


def _load(settings: Settings) -> Project:
    """The checked specs of the settings' folders."""
    from host.spec import load_project

    return load_project(settings.specs_dir, settings.handlers_path)


def _observers(
    settings: Settings, store: Store, observers: Sequence[Observer] | None
) -> tuple[AuditObserver, tuple[Observer, ...]]:
    """The audit trail's observer, and the observers of every round: those given (or the
    settings'), then the audit trail and the approved calls' outcomes."""
    audit = AuditObserver(
        store,
        settings.audit_retention_s,
        record_max=settings.limits.record_max,
        held_max=settings.audit.held_max,
    )
    given = observers_for(settings) if observers is None else observers
    return audit, (*given, audit, RequestOutcomes(store))


def _open_store(settings: Settings, store_checked: bool, keys: Sequence[str]) -> Store:
    """The settings' store, its risks checked unless a gunicorn master checked them already,
    its audit checkpoints signed with the settings' key (or one derived from ``keys``)."""
    signer = signer_of(settings.audit, keys)  # NOTE: a key file it cannot read: before opening
    store = open_store(settings.store, connect=not store_checked)
    store.sign_checkpoints(signer)
    try:
        risks = (
            [] if store_checked else require_durable(store, acknowledged=settings.store_volatile_ok)
        )
    except BaseException:
        store.close()
        raise
    for risk in risks:
        log.warning("the store can lose records: %s", risk, extra={"event": "store_risk"})
    return store


def _endpoint(
    settings: Settings,
    server: Server,
    machines: Mapping[str, Machine],
    store: Store,
    keys: Sequence[str],
    observers: Sequence[Observer],
    *,
    opened: Callable[..., None],
    url_asks: UrlAskBook,
    audit: AuditObserver,
) -> Endpoint:
    """The MCP endpoint serving ``machines``, with the settings' switches and limits."""
    return make_endpoint(
        server,
        machines,
        store,
        keys=keys,
        state_ttl_s=settings.state_ttl_s,
        data_dir=settings.data_dir,
        legacy=settings.legacy(),
        observers=observers,
        elicitation=Elicitation.decide(server, settings.elicitation),
        pending_limit=settings.approvals.pending_limit,
        record_max=settings.limits.record_max,
        approval_opened=opened,
        url_asks=url_asks,
        withdraw=lambda request_id: withdraw_request(store, request_id, audit.request_ended),
    )


def _carry_tasks(
    endpoint: Endpoint, decided: Callable[..., None], url_asks: UrlAskBook
) -> Callable[..., None]:
    """``decided``, then the tasks told of each decision; the URL asks tell them of each page.

    NOTE: a decision carries its task on at once, wherever it was made (the tasks extension).
    """
    tasks = _tasks_of(endpoint)
    url_asks.submitted = tasks.on_page if tasks is not None else None
    return _both(decided, tasks.on_decided if tasks is not None else None)


def _tasks_of(endpoint: Endpoint) -> Tasks | None:
    """The modern era's tasks: a decision or a submitted page carries a task on at once."""
    modern = next((e for e in endpoint.eras if isinstance(e, ModernProtocol)), None)
    return modern.tasks if modern is not None else None


def _both(first: Callable[..., None], second: Callable[..., None] | None) -> Callable[..., None]:
    """Tell ``first``, then ``second`` when there is one (the webhook, then the metrics)."""
    if second is None:
        return first

    def both(*args: Any) -> None:
        first(*args)
        second(*args)

    return both


def observers_for(settings: Settings) -> list[Observer]:
    """The log line, metrics unless ``HOST_METRICS=off``, traces when OpenTelemetry is set up.

    NOTE: prometheus-client and OpenTelemetry are imported only when they are switched on.
    """
    chosen: list[Observer] = [LogObserver()]
    if settings.metrics:
        from host.observers.metrics import MetricsObserver

        chosen.append(MetricsObserver())
    from host.observers.traces import trace_observer

    tracer = trace_observer(os.environ)
    if tracer is not None:
        chosen.append(tracer)
    return chosen


def _metrics(observers: Sequence[Observer]) -> MetricsObserver | None:
    if "host.observers.metrics" not in sys.modules:
        return None
    from host.observers.metrics import MetricsObserver

    return next((o for o in observers if isinstance(o, MetricsObserver)), None)


def ensure_secret(data_dir: Path) -> str:
    """The secret kept in ``data_dir/secret`` (mode 0600), generated on first use.

    NOTE: several workers may start at once. The secret is written whole to a temporary file
    and linked into place, which fails if another process got there first; so nobody ever reads
    a half-written secret, and every process ends up with the same one.
    """
    path = private_dir(data_dir) / _SECRET_FILE
    if not path.exists():
        fd, temporary = tempfile.mkstemp(dir=data_dir, prefix=".secret-")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(32) + "\n")
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    return path.read_text().strip()
