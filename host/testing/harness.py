"""Serve a spec directory in-process for one test, with data of its own.

Each test (and each spec example) gets a fresh data directory. While the test runs, handlers see
it as ``$HOST_DATA_DIR`` and as ``ctx.data_dir``, and the host keeps its store there too, so a
handler that keeps its files under the data directory starts from a clean slate every time. Other
variables a handler reads (a database URL, say) can be pointed into it with ``env``; a
``{data_dir}`` in a value is replaced by the directory's path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from host.assembly import assemble
from host.auth import ANONYMOUS, Issued
from host.client.answers import Elicitation
from host.client.mcp import URL_CAPABILITIES, Page
from host.client.wire import WsgiTransport
from host.errors import AnswerMismatch
from host.machine import Machine, compile_project
from host.machine.approve import ApproveStep
from host.protocol.url_asks import UrlAskBook, ask_of
from host.settings import Settings
from host.spec.model import Project
from host.testing.approvals import ApprovalsKit
from host.testing.client import McpClient
from host.testing.records import AuditKit

__all__ = ["TEST_SECRET", "load", "no_waits", "pages", "patched_env", "serve"]

#: Signs ``requestState`` in tests: fixed, so nothing depends on a random per-process key.
TEST_SECRET = "host-testing-not-a-secret-0123456789"


def load(specs_dir: Path, handlers_dir: Path) -> Project:
    """Load and check a spec directory.

    Raises:
        host.errors.SpecError: The specs have problems; every diagnostic is attached.
    """
    from host.spec import load_project

    project: Project = load_project(specs_dir, handlers_dir)
    return project


def no_waits(machines: dict[str, Machine]) -> dict[str, Machine]:
    """``machines`` with every approve step waiting for nobody: in tests a pending request ends
    the call at once, and the kit decides it (or the test does) before the call is made again.

    NOTE: the compiled step changes, not the spec, so the tool's definition digest (of the
    spec) stays what the host serves.
    """
    for machine in machines.values():
        machine.steps = tuple(
            replace(step, wait_s=0.0) if isinstance(step, ApproveStep) else step
            for step in machine.steps
        )
    return machines


def pages(book: UrlAskBook) -> Page:
    """Submits a URL ask's page as its caller would in a browser: the test kit's ``page``."""

    def submit(question: Elicitation, content: Mapping[str, Any]) -> None:
        __tracebackhide__ = True
        ask_id = ask_of(question.url or "")
        ask = book.store.ask(ask_id)
        if ask is None or ask.submitted:
            return  # NOTE: submitted in an earlier round (or gone): the server says what next
        try:
            book.submit(ask_id, ask.principal, content)
        except AnswerMismatch as exc:
            raise AssertionError(
                f"the page of {question.key!r} refused the answer: "
                + "; ".join(f"{e['field']}: {e['message']}" for e in exc.errors)
            ) from None

    return submit


@contextmanager
def patched_env(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) environment variables, and put them back afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def expand(env: Mapping[str, str | None], data_dir: Path) -> dict[str, str | None]:
    """``env`` with ``{data_dir}`` in each value replaced by ``data_dir``."""
    return {
        name: None if value is None else value.replace("{data_dir}", str(data_dir))
        for name, value in env.items()
    }


@contextmanager
def serve(
    specs_dir: Path,
    handlers_dir: Path | None = None,
    *,
    data_dir: Path,
    env: Mapping[str, str | None] | None = None,
    project: Project | None = None,
) -> Iterator[McpClient]:
    """A client of the real WSGI app serving ``specs_dir``, with ``data_dir`` as its data.

    The client reaches the app's store too: ``mcp.approvals`` and ``mcp.audit``. The store is
    closed when the block ends.

    Args:
        specs_dir: The spec directory.
        handlers_dir: The handlers directory (``handlers`` beside ``specs_dir`` when None).
        data_dir: This test's data directory (created if needed).
        env: More variables for the handlers, ``{data_dir}`` expanded; None removes one.
        project: The already loaded project, to skip loading ``specs_dir`` again.

    Raises:
        host.errors.SpecError: The specs have problems.
    """
    from host.web.app import build_app

    data_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        specs_dir=specs_dir,
        handlers_dir=handlers_dir,
        secrets=(TEST_SECRET,),
        data_dir=data_dir,
    )
    project = project or load(specs_dir, settings.handlers_path)
    values = {"HOST_DATA_DIR": str(data_dir), **expand(env or {}, data_dir)}
    # NOTE: the kit vouches for its callers itself: the default client is `anonymous` holding
    # every scope the specs name (so specs test as if served without auth), and
    # `client(principal=..., scopes=...)` calls as anyone else, through the real gate.
    issued = Issued()
    token = issued.mint(ANONYMOUS.principal, project.scopes)
    with patched_env(values):
        served = assemble(settings, project, machines=no_waits(compile_project(project)))
        try:
            app = build_app(served, issued)
            yield McpClient(
                WsgiTransport(app, token=token),
                issue=issued.mint,
                page=pages(served.url_asks) if served.url_asks is not None else None,
                # NOTE: a client that can answer URL asks says so only where specs have them.
                capabilities=(
                    URL_CAPABILITIES
                    if any(m.asks_on_pages for m in served.machines.values())
                    else None
                ),
                approvals=ApprovalsKit(
                    served.store, served.machines, served.approvals, vouch=issued.vouch
                ),
                audit=AuditKit(served.store, served.flush),
            )
        finally:
            served.close()
