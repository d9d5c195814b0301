"""``host serve``: check the specs, then run gunicorn in this process with good defaults.

Everything a worker needs travels in environment variables (``HOST_SPECS``, ``HOST_SECRET``, ...),
the same ones a plain ``gunicorn host.web.wsgi:app`` deployment sets, so there is one way to
configure the app whichever way it is started. What ``host serve`` adds is its master
(:mod:`host.serve.master`): it loads the specs before any worker serves them, on start and on every
reload, and keeps the metrics of every worker in one private folder of the data directory.
"""

from __future__ import annotations

import logging
import mimetypes
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.assembly import ensure_secret
from host.auth.tokenfile import read_tokens
from host.errors import DurationError, HostError
from host.logs import configure_logging
from host.observers.audit_settings import signer_of
from host.serve.master import HostServer
from host.serve.reload import Snapshot, Specs
from host.serve.storefile import StoreFile
from host.settings import Settings
from host.spec.check import check_project
from host.spec.durations import parse_duration
from host.spec.import_check import DEFAULT_TIME_LIMIT_S
from host.spec.model import Approve, Ask, Confirm, Project, needs_sign_in
from host.spec.paths import default_handlers_dir
from host.spec.report import format_diagnostics
from host.store import open_store, private_dir, require_durable
from host.store.where import locate_store, note_serving
from host.web.app import UNPROTECTED, no_sign_in

#: Connections a worker accepts beyond its threads: kept-alive ones waiting for their next request.
CONNECTIONS_OVER_THREADS = 1000

#: Where prometheus-client's multiprocess mode keeps every worker's values.
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"

#: How long a reload's handler modules may take to import (a duration, like 30s).
IMPORT_LIMIT = "HOST_RELOAD_IMPORT_TIMEOUT"

__all__ = [
    "ServeOptions",
    "gunicorn_argv",
    "gunicorn_flags",
    "gunicorn_settings",
    "import_limit",
    "keep_secret",
    "metrics_dir",
    "serve",
    "settings_problem",
    "shared_memory",
    "worker_env",
]

log = logging.getLogger("host.serve")


@dataclass(frozen=True)
class ServeOptions:
    """What ``host serve`` was asked for.

    Attributes:
        threads: Threads per gthread worker. A legacy client's question holds one thread while
            the user answers, so a worker serves ``threads`` open questions and requests at once.
            NOTE: a blocked thread costs memory (tens of KB) and no CPU, and threads start
            only as they are needed; ``bench/questions.py`` measures this against gevent's
            greenlets. Only a few of them run at once (:mod:`host.serve.pool`).
        timeout: Seconds a worker may stay silent before gunicorn restarts it; gthread workers
            keep beating while their threads wait, so long questions are safe.
        reload: Reload when a spec or handler file changes (checked first, like SIGHUP).
        pin_workers: Keep each worker on a CPU of its own (:mod:`host.serve.pinning`).
    """

    specs: Path = Path("specs")
    handlers: Path | None = None
    bind: str = "127.0.0.1:8000"
    workers: int = 2
    threads: int = 1024
    timeout: int = 60
    reload: bool = False
    pin_workers: bool = False
    data_dir: Path | None = None
    store: str | None = None


def worker_env(
    options: ServeOptions, environ: Mapping[str, str], *, secret: bool = True
) -> dict[str, str]:
    """The environment gunicorn's workers get: the caller's, plus the host's settings.

    Args:
        secret: Make (or read) the secret kept in the data directory when ``HOST_SECRET`` is
            unset; False leaves it unset, so nothing is written before the settings are vetted.
    """
    env = dict(environ)
    location = locate_store(options.store, options.data_dir, environ)
    data_dir = location.data_dir
    env["HOST_DATA_DIR"] = str(data_dir)
    env["HOST_SPECS"] = str(options.specs.resolve())
    handlers = options.handlers or default_handlers_dir(options.specs)
    env["HOST_HANDLERS"] = str(handlers.resolve())
    env["HOST_STORE"] = location.url
    if secret:
        keep_secret(env)
    return env


def keep_secret(env: dict[str, str]) -> None:
    """Set ``HOST_SECRET`` in ``env`` to the data directory's own secret when it is unset (and
    say which key signs the audit trail's checkpoints)."""
    if not env.get("HOST_SECRET"):
        data_dir = Path(env["HOST_DATA_DIR"])
        env["HOST_SECRET"] = ensure_secret(data_dir)
        print(
            f"host: no HOST_SECRET set; using the secret kept in {data_dir / 'secret'}. "
            "In production set HOST_SECRET (the same value on every instance).",
            file=sys.stderr,
        )
    if not env.get("HOST_AUDIT_SIGNING_KEY"):
        print(
            "host: no HOST_AUDIT_SIGNING_KEY set; the audit trail's checkpoints are signed with "
            "a key derived from HOST_SECRET (`host audit public-key` prints its public half).",
            file=sys.stderr,
        )


def settings_problem(
    env: Mapping[str, str], scopes: Sequence[str] = (), project: Project | None = None
) -> str | None:
    """What makes the workers' settings unusable, or None.

    A bad value, ``scopes`` (those the specs name) or steps that need a sign-in (in ``project``)
    with no auth set, a tokens file someone else may change, an audit signing key it cannot read,
    an unreachable store, a store that can forget act claims (unless acknowledged).

    NOTE: what refuses without touching anything is asked first, so a host that will not start
    leaves no store or data directory behind.
    """
    try:
        settings = Settings.from_env(env)
        import_limit(env)
        refused = unprotected(settings, scopes) or (
            no_approvers(settings, project) if project is not None else None
        )
        if refused is not None:
            return refused
        if settings.auth.tokens_file is not None:
            read_tokens(settings.auth.tokens_file)  # its owner and modes, checked once here
        if settings.audit.signing_key is not None:  # a key file it cannot use: one clear line
            signer_of(settings.audit, settings.secrets)
        if settings.audit.export == "otlp":
            from host.observers.export_otlp import check_installed

            check_installed()
        store = open_store(settings.store)
    except HostError as exc:
        return exc.message
    try:
        for risk in require_durable(store, acknowledged=settings.store_volatile_ok):
            print(f"host: warning: the store can lose records: {risk}", file=sys.stderr)
    except HostError as exc:
        return exc.message
    finally:
        store.close()
    return None


def unprotected(settings: Settings, scopes: Iterable[str]) -> str | None:
    """Why specs naming ``scopes`` cannot be served with ``settings`` (no auth), or None."""
    if scopes and not settings.auth.enabled:
        return UNPROTECTED.format(scopes=", ".join(sorted(set(scopes))))
    return None


def no_approvers(settings: Settings, project: Project) -> str | None:
    """Why specs with steps that need a sign-in (approve, URL asks) cannot be served with
    ``settings`` (no auth), or None."""
    if settings.auth.enabled:
        return None
    signing = [(t.name, [s for s in t.steps if needs_sign_in(s)]) for t in project.tools]
    return no_sign_in(
        [name for name, steps in signing if any(isinstance(s, Approve) for s in steps)],
        [name for name, steps in signing if any(isinstance(s, Ask) for s in steps)],
    )


def shared_memory(settings: Settings, project: Project | None) -> str | None:
    """The warning for remembered approvals served without auth, or None.

    NOTE: without auth every caller over HTTP is ``anonymous``, so one caller's remembered yes
    spares every other caller the question; fine on 127.0.0.1 for one developer, not beyond.
    """
    if settings.auth.enabled or project is None:
        return None
    remembering = [
        tool.name
        for tool in project.tools
        if any(isinstance(step, Confirm) and step.remember for step in tool.steps)
    ]
    if not remembering:
        return None
    return (
        f"no auth is configured, so every caller is `anonymous` and they share one memory of "
        f"approvals: a yes one caller gives to {', '.join(remembering)} spares every caller "
        "the question while it lasts (and the audit trail names them all `anonymous`). Set "
        "HOST_AUTH_ISSUER or HOST_AUTH_TOKENS (see Securing the host) before others can reach "
        "this host."
    )


def gunicorn_settings(options: ServeOptions) -> dict[str, Any]:
    """gunicorn's settings for ``options``, by gunicorn's own names."""
    return {
        "bind": [options.bind],
        "workers": options.workers,
        "worker_class": "host.serve.worker.ThreadWorker",
        "threads": options.threads,
        # NOTE: gunicorn counts every open connection, kept-alive idle ones too, against this;
        # its default (1000) would stop a worker from accepting before its threads are busy.
        "worker_connections": options.threads + CONNECTIONS_OVER_THREADS,
        "timeout": options.timeout,
        "graceful_timeout": 10,
        "keepalive": 5,
        # NOTE: gunicorn's control socket has one default path per user, so two instances on
        # one machine would fight over it; the host needs no runtime control channel.
        "control_socket_disable": True,
    }


def gunicorn_flags(options: ServeOptions) -> list[str]:
    """:func:`gunicorn_settings` as gunicorn's command-line flags (``bench/`` serves with them)."""
    settings = gunicorn_settings(options)
    return [
        "--bind", settings["bind"][0],
        "--workers", str(settings["workers"]),
        "--worker-class", settings["worker_class"],
        "--threads", str(settings["threads"]),
        "--worker-connections", str(settings["worker_connections"]),
        "--timeout", str(settings["timeout"]),
        "--graceful-timeout", str(settings["graceful_timeout"]),
        "--keep-alive", str(settings["keepalive"]),
        "--no-control-socket",
    ]  # fmt: skip


def gunicorn_argv(options: ServeOptions) -> list[str]:
    """The plain gunicorn command line that serves like ``options`` (``--dry-run`` prints it).

    NOTE: plain gunicorn's ``--reload`` restarts workers, which then read the specs themselves;
    ``host serve --reload`` checks them in its master first.
    """
    argv = [sys.executable, "-m", "gunicorn", "host.web.wsgi:app", *gunicorn_flags(options)]
    if options.pin_workers:
        argv += ["--config", "python:host.serve.pinning"]
    if options.reload:
        argv.append("--reload")
        for spec in sorted(options.specs.glob("*.yaml")):
            argv += ["--reload-extra-file", str(spec)]
    return argv


def metrics_dir(data_dir: Path) -> Path:
    """A fresh private folder for this master's multiprocess metrics, in the data directory.

    NOTE: one folder per master (named by its pid), so two instances sharing a data directory
    never sum each other's workers; folders of masters that are gone are removed.
    """
    parent = private_dir(data_dir / "metrics")
    for old in parent.iterdir():
        if old.name.isdigit() and not _alive(int(old.name)):
            shutil.rmtree(old, ignore_errors=True)
    folder = parent / str(os.getpid())
    shutil.rmtree(folder, ignore_errors=True)
    return private_dir(folder)


def _metrics_folder(settings: Settings) -> Path | None:
    """With metrics on, this master's metrics folder, named to the workers it will fork."""
    if not settings.metrics:
        return None
    folder = metrics_dir(settings.data_dir)
    os.environ[MULTIPROC_DIR] = str(folder)
    return folder


def import_limit(env: Mapping[str, str]) -> float:
    """Seconds a reload's handler modules may take to import (``HOST_RELOAD_IMPORT_TIMEOUT``).

    Raises:
        HostError: The value is not a duration.
    """
    raw = env.get(IMPORT_LIMIT, "").strip()
    if not raw:
        return DEFAULT_TIME_LIMIT_S
    try:
        return parse_duration(raw)
    except DurationError as exc:
        raise HostError(f"{IMPORT_LIMIT}: {exc.message}") from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _loaded_specs(
    options: ServeOptions, handlers: Path, settings: Settings, limit: float
) -> Specs | None:
    """The master's specs, loaded once (handlers imported); None, after saying why, if not."""
    specs = Specs(
        options.specs.resolve(),
        handlers.resolve(),
        lambda project: unprotected(settings, project.scopes) or no_approvers(settings, project),
        limit,
    )
    loaded = specs.load()
    if isinstance(loaded, HostError):
        print(f"host: not serving: {loaded.message}", file=sys.stderr)
        return None
    if not isinstance(loaded, Snapshot):  # the files changed since they were checked
        print(format_diagnostics(loaded, "text"), file=sys.stderr)
        print(f"host: not serving: errors in {options.specs}", file=sys.stderr)
        return None
    return specs


def _preload(settings: Settings) -> None:
    """Load in the master what every worker would otherwise load after its fork.

    NOTE: a worker's own start was mostly importing prometheus-client (0.1 s of CPU of about
    0.12), and Falcon reads the system's MIME types in each new app. Done once here, every
    worker forked from this process, a reload's and a replaced one's too, finds them done and
    shares their memory. prometheus-client is imported only after ``PROMETHEUS_MULTIPROC_DIR``
    is set, since it reads it at import; no metric is made here, so the master writes no files.
    """
    mimetypes.init()
    if settings.metrics:
        import host.observers.metrics  # noqa: F401


def serve(options: ServeOptions, *, exec_: bool = True) -> int | Sequence[str]:
    """Check the specs, then serve them under gunicorn until stopped.

    Returns:
        1 when the specs have errors (after printing them as ``host validate`` does), a handler
        cannot be imported, or the settings cannot be served (a bad ``HOST_*`` value, a store
        that cannot be opened); 0 once gunicorn has stopped; with ``exec_=False``, the
        equivalent plain gunicorn command line instead of serving (``--dry-run``).
    """
    handlers = options.handlers or default_handlers_dir(options.specs)
    result = check_project([options.specs], handlers)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if result.diagnostics:
        print(format_diagnostics(result.diagnostics, "text"), file=sys.stderr)
    if errors:
        print(f"host: not serving: {len(errors)} error(s) in {options.specs}", file=sys.stderr)
        return 1
    if not exec_:
        return gunicorn_argv(options)
    env = worker_env(options, os.environ, secret=False)
    used = sorted(result.project.scopes) if result.project is not None else []
    problem = settings_problem(env, used, result.project)
    if problem is not None:
        # NOTE: checked once here, so a bad setting is one clear line, not every worker failing
        # to boot and gunicorn's shutdown noise around it; and before the secret is made.
        print(f"host: not serving: {problem}", file=sys.stderr)
        return 1
    keep_secret(env)
    settings = Settings.from_env(env)
    shared = shared_memory(settings, result.project)
    if shared is not None:
        print(f"host: warning: {shared}", file=sys.stderr)
    os.environ.update(env)
    note_serving(locate_store(None, settings.data_dir, env))
    folder = _metrics_folder(settings)
    _preload(settings)
    configure_logging(settings.log_level)
    specs = _loaded_specs(options, handlers, settings, import_limit(env))
    if specs is None:
        return 1
    try:
        store_file = StoreFile.pin(settings.store)
    except HostError as exc:
        print(f"host: not serving: {exc.message}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    server = HostServer(
        gunicorn_settings(options),
        settings,
        specs,
        watch=options.reload,
        pin_workers=options.pin_workers,
        metrics_dir=folder,
        store_file=store_file,
    )
    server.run()
    return 0
