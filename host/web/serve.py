"""``host serve``: check the specs, then hand the process to gunicorn with good defaults.

Everything a worker needs travels in environment variables (``HOST_SPECS``, ``HOST_SECRET``, ...),
the same ones a plain ``gunicorn host.web.wsgi:app`` deployment sets, so there is one way to
configure the app whichever way it is started.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from host.assembly import ensure_secret
from host.errors import HostError
from host.settings import Settings
from host.spec.check import check_project
from host.spec.paths import default_handlers_dir
from host.spec.report import format_diagnostics
from host.store import open_store, require_durable
from host.web.app import UNPROTECTED

__all__ = [
    "ServeOptions",
    "gunicorn_argv",
    "serve",
    "settings_problem",
    "worker_env",
]

log = logging.getLogger("host.serve")


@dataclass(frozen=True)
class ServeOptions:
    """What ``host serve`` was asked for.

    Attributes:
        threads: Threads per gthread worker. A legacy client's question holds one thread while
            the user answers, so a worker serves ``threads`` open questions at once.
        timeout: Seconds a worker may stay silent before gunicorn restarts it; gthread workers
            keep beating while their threads wait, so long questions are safe.
    """

    specs: Path = Path("specs")
    handlers: Path | None = None
    bind: str = "127.0.0.1:8000"
    workers: int = 2
    threads: int = 8
    timeout: int = 60
    reload: bool = False
    data_dir: Path | None = None
    store: str | None = None


def worker_env(options: ServeOptions, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment gunicorn's workers get: the caller's, plus the host's settings."""
    env = dict(environ)
    data_dir = (options.data_dir or Path(environ.get("HOST_DATA_DIR", ".host"))).resolve()
    env["HOST_DATA_DIR"] = str(data_dir)
    env["HOST_SPECS"] = str(options.specs.resolve())
    handlers = options.handlers or default_handlers_dir(options.specs)
    env["HOST_HANDLERS"] = str(handlers.resolve())
    if options.store:
        env["HOST_STORE"] = options.store
    env.setdefault("HOST_STORE", f"sqlite:///{data_dir / 'store.db'}")
    if not env.get("HOST_SECRET"):
        env["HOST_SECRET"] = ensure_secret(data_dir)
        print(
            f"host: no HOST_SECRET set; using the secret kept in {data_dir / 'secret'}. "
            "In production set HOST_SECRET (the same value on every instance).",
            file=sys.stderr,
        )
    return env


def settings_problem(env: Mapping[str, str], scopes: Sequence[str] = ()) -> str | None:
    """What makes the workers' settings unusable, or None.

    A bad value, an unreachable store, a store that can forget act claims (unless acknowledged),
    or ``scopes`` (those the specs name) with no auth set.
    """
    try:
        settings = Settings.from_env(env)
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
    if scopes and not settings.auth.enabled:
        return UNPROTECTED.format(scopes=", ".join(sorted(set(scopes))))
    return None


def gunicorn_argv(options: ServeOptions) -> list[str]:
    """The gunicorn command line for ``options``."""
    argv = [
        sys.executable, "-m", "gunicorn", "host.web.wsgi:app",
        "--bind", options.bind,
        "--workers", str(options.workers),
        "--worker-class", "gthread",
        "--threads", str(options.threads),
        "--timeout", str(options.timeout),
        "--graceful-timeout", "10",
        "--keep-alive", "5",
        # NOTE: gunicorn's control socket has one default path per user, so two instances on
        # one machine would fight over it; the host needs no runtime control channel.
        "--no-control-socket",
    ]  # fmt: skip
    if options.reload:
        argv.append("--reload")
        for spec in sorted(options.specs.glob("*.yaml")):
            argv += ["--reload-extra-file", str(spec)]
    return argv


def serve(options: ServeOptions, *, exec_: bool = True) -> int | Sequence[str]:
    """Check the specs and replace this process with gunicorn.

    Returns:
        1 when the specs have errors (after printing them as ``host validate`` does) or the
        settings cannot be served (a bad ``HOST_*`` value, a store that cannot be opened); with
        ``exec_=False``, the command line instead of running it (for tests and ``--dry-run``).
    """
    handlers = options.handlers or default_handlers_dir(options.specs)
    result = check_project([options.specs], handlers)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if result.diagnostics:
        print(format_diagnostics(result.diagnostics, "text"), file=sys.stderr)
    if errors:
        print(f"host: not serving: {len(errors)} error(s) in {options.specs}", file=sys.stderr)
        return 1
    argv = gunicorn_argv(options)
    if not exec_:
        return argv
    env = worker_env(options, os.environ)
    used = sorted(result.project.scopes) if result.project is not None else []
    problem = settings_problem(env, used)
    if problem is not None:
        # NOTE: checked once here, so a bad setting is one clear line, not every worker failing
        # to boot and gunicorn's shutdown noise around it.
        print(f"host: not serving: {problem}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)
