"""Check a spec directory: load, schema pass, model, then every rule; all problems in one run.

This is the spec layer's entry point: :func:`check_project` for the validator (all diagnostics, the
project when there is no error), :func:`load_project` for everything that serves (the project, or a
:class:`~host.errors.SpecError` carrying the diagnostics).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from host.errors import SpecError
from host.spec.build import ToolDoc, build_server, build_tool
from host.spec.diagnostics import Diagnostic
from host.spec.handlers import HandlerIndex
from host.spec.model import Pos, Project, Server
from host.spec.paths import default_handlers_dir
from host.spec.rules import (
    DOCUMENT_RULES,
    SERVER_RULES,
    TOOL_RULES,
    WRITTEN_RULES,
    CheckedTool,
    ToolFacts,
    check_shape,
    duplicate_servers,
    duplicate_tool,
    elicitation,
    no_tools,
    scopes_at,
    unprotected,
    with_misplaced_properties,
)
from host.spec.rules.order import check_order
from host.spec.rules.shape import mended
from host.spec.scope import scopes
from host.spec.yaml import Document, load_file, spec_files

__all__ = ["CheckResult", "check_project", "default_handlers_dir", "load_project"]


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check_project` found.

    Attributes:
        project: The checked project, or None when any diagnostic is an error.
        diagnostics: Every problem found, sorted by file, line, column and rule.
    """

    project: Project | None
    diagnostics: list[Diagnostic]

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics of severity ``error``."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics of severity ``warning``."""
        return [d for d in self.diagnostics if d.severity == "warning"]


def check_project(
    paths: Sequence[Path | str],
    handlers_dir: Path | str | None = None,
    *,
    import_handlers: bool = False,
    auth: bool | None = None,
) -> CheckResult:
    """Check spec files and directories together as one project.

    Args:
        paths: Spec directories (every ``*.yaml`` in them) and files.
        handlers_dir: Where handler modules live; default ``handlers/`` beside the first path.
        import_handlers: Also import handler modules (``--import``), not only parse them.
        auth: Whether the deployment authenticates callers (None: unknown, not checked): False
            makes every ``scopes:`` a warning, since nobody could hold them.
    """
    given = [Path(p) for p in paths] or [Path("specs")]
    first = given[0]
    specs_dir = first if first.is_dir() or not first.suffix else first.parent
    handlers = Path(handlers_dir) if handlers_dir is not None else default_handlers_dir(first)
    files, found = spec_files(given)
    index = HandlerIndex(handlers, import_modules=import_handlers)
    with _fewer_collections():
        return _check(files, found, index, first, handlers, specs_dir, auth)


def _check(
    files: list[Path],
    found: list[Diagnostic],
    index: HandlerIndex,
    first: Path,
    handlers: Path,
    specs_dir: Path,
    auth: bool | None,
) -> CheckResult:
    """Every check of ``files``, the project-wide ones last (see :func:`check_project`)."""
    servers: list[tuple[Document, Server | None]] = []
    tools: list[CheckedTool] = []
    names: dict[str, Pos] = {}
    # NOTE: file by file, each tool checked as soon as it is built: only the model (and where its
    # scopes are written) outlives its document, so a large spec directory is never all in memory
    # at once, with the position of every value (most of a worker's memory at start-up).
    for file in files:
        documents, problems = load_file(file)
        found.extend(problems)
        for doc in documents:
            shape, buildable = check_shape(doc)
            found.extend(shape)
            found.extend(d for rule in DOCUMENT_RULES for d in rule(doc))
            kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
            if kind == "server":
                servers.append((doc, build_server(doc) if buildable else None))
                found.extend(d for rule in SERVER_RULES for d in rule(doc))
            elif kind == "tool":
                found.extend(duplicate_tool(doc, names))
                if buildable:
                    tool_doc = build_tool(doc)
                    found.extend(_check_tool(tool_doc, index))
                    tools.append(
                        CheckedTool(tool_doc.tool, scopes_at(tool_doc.locs, tool_doc.data))
                    )
                else:
                    found.extend(_order_anyway(doc, index))
    found.extend(duplicate_servers(servers))
    server, known = _server(servers)
    if known:
        found.extend(elicitation(tools, server, servers))
    if auth is False:
        found.extend(unprotected(tools, servers))
    if not tools and not any(d.severity == "error" for d in found):
        found.append(no_tools(first))
    diagnostics = sorted(set(found))
    if any(d.severity == "error" for d in diagnostics):
        return CheckResult(None, diagnostics)
    ordered = tuple(sorted((t.tool for t in tools), key=lambda t: t.name))
    return CheckResult(Project(server, ordered, handlers, specs_dir), diagnostics)


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Let the cyclic garbage collector run less often while a project is checked.

    NOTE: a check allocates many objects that live until it ends (documents, positions, models);
    at Python's default (a young-generation pass every 700 allocations) the collector spent about
    a tenth of a 1,000-tool check walking them. Every 10,000 it spends a fifth of that, and the
    cycles a check leaves (ruamel's per-file loader classes) are still collected as it goes.
    """
    young, *older = gc.get_threshold()
    if young:
        gc.set_threshold(max(young, 10_000), *older)
    try:
        yield
    finally:
        gc.set_threshold(young, *older)


def load_project(specs_dir: Path | str, handlers_dir: Path | str | None = None) -> Project:
    """The checked project in ``specs_dir``.

    Raises:
        SpecError: with every diagnostic, when any of them is an error.
    """
    result = check_project([Path(specs_dir)], handlers_dir)
    if result.project is None:
        raise SpecError(result.diagnostics)
    return result.project


def _check_tool(written: ToolDoc, index: HandlerIndex) -> list[Diagnostic]:
    doc = with_misplaced_properties(written)
    facts = ToolFacts(doc, scopes(doc.tool, doc.locs), index)
    as_written = replace(facts, doc=written)
    return [
        *(d for rule in WRITTEN_RULES for d in rule(as_written)),
        *(d for rule in TOOL_RULES for d in rule(facts)),
    ]


def _order_anyway(doc: Document, index: HandlerIndex) -> list[Diagnostic]:
    """The order of a tool whose shape is wrong elsewhere, where it can be built at all.

    NOTE: one run reports every problem: a wrong type in one step (``count: two``) must not hide
    an approve placed before a confirm, which the author would otherwise meet only on the next
    run. The other rules need a sound tool and wait for the shape to be fixed.
    """
    try:
        tool_doc = build_tool(mended(doc))
        return check_order(ToolFacts(tool_doc, scopes(tool_doc.tool, tool_doc.locs), index))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError):
        return []  # NOTE: too broken to build: the shape errors are what there is to say


def _server(servers: list[tuple[Document, Server | None]]) -> tuple[Server, bool]:
    """The project's server and whether it is known well enough to judge elicitation."""
    if not servers:
        return Server(), True
    built = servers[0][1]
    return (built, True) if built is not None else (Server(), False)
