"""Check a spec directory: load, schema pass, model, then every rule; all problems in one run.

This is the spec layer's entry point: :func:`check_project` for the validator (all diagnostics, the
project when there is no error), :func:`load_project` for everything that serves (the project, or a
:class:`~host.errors.SpecError` carrying the diagnostics).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.errors import SpecError
from host.spec.build import ToolDoc, build_server, build_tool
from host.spec.diagnostics import Diagnostic
from host.spec.handlers import HandlerIndex
from host.spec.load import Document, load_file, spec_files
from host.spec.locs import Locs
from host.spec.model import FALLBACK_TOOL, Ask, Confirm, Pos, Project, Server, Tool
from host.spec.paths import default_handlers_dir
from host.spec.rules import error, warning
from host.spec.rules_advice import check_advice
from host.spec.rules_examples import check_examples
from host.spec.rules_forms import check_forms
from host.spec.rules_handlers import check_handlers
from host.spec.rules_io import check_io
from host.spec.rules_io_intent import check_io_intent, with_misplaced_properties
from host.spec.rules_order import check_names, check_order
from host.spec.rules_policy import check_durations, check_policy, check_remember_keys
from host.spec.rules_results import check_results
from host.spec.rules_schema import check_shape
from host.spec.rules_templates import check_templates
from host.spec.rules_text import check_server_text, check_tool_text
from host.spec.scope import scopes

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
    tools: list[_Checked] = []
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
            found.extend(check_durations(doc))
            kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
            if kind == "server":
                servers.append((doc, build_server(doc) if buildable else None))
                found.extend(check_server_text(doc))
            elif kind == "tool":
                found.extend(_duplicate_tool(doc, names))
                if buildable:
                    tool_doc = build_tool(doc)
                    found.extend(_check_tool(tool_doc, index))
                    tools.append(_Checked(tool_doc.tool, _scopes_at(tool_doc.locs, tool_doc.data)))
    server, known = _server(servers, found)
    if known:
        found.extend(_elicitation(tools, server, servers))
    if auth is False:
        found.extend(_unprotected(tools, servers))
    if not tools and not any(d.severity == "error" for d in found):
        where = Pos(str(first), 0, 0)
        found.append(
            warning(
                where,
                "no-tools",
                f"no kind: tool document in {first}: add a tool, or point at the right directory",
            )
        )
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


@dataclass(frozen=True)
class _Checked:
    """A checked tool, and where its ``scopes:`` are written (None when it has none)."""

    tool: Tool
    scopes_at: Pos | None


def _scopes_at(locs: Locs, data: Any) -> Pos | None:
    return locs.key(("scopes",)) if isinstance(data, dict) and data.get("scopes") else None


def _check_tool(written: ToolDoc, index: HandlerIndex) -> list[Diagnostic]:
    shape = [*check_io(written), *check_io_intent(written)]
    doc = with_misplaced_properties(written)
    names_in_scope = scopes(doc.tool, doc.locs)
    return [
        *shape,
        *check_results(doc),
        *check_policy(doc),
        *check_remember_keys(doc, index),
        *check_order(doc),
        *check_names(doc),
        *check_forms(doc),
        *check_templates(doc, names_in_scope),
        *check_handlers(doc, names_in_scope, index),
        *check_examples(doc),
        *check_tool_text(doc),
        *check_advice(doc),
    ]


def _duplicate_tool(doc: Document, names: dict[str, Pos]) -> list[Diagnostic]:
    name = doc.data.get("name")
    if not isinstance(name, str):
        return []
    pos = doc.locs.value(("name",))
    if name == FALLBACK_TOOL:
        return [
            error(
                pos,
                "tool-name",
                f"'{name}' is the host's own fallback tool for clients that cannot show forms; "
                "give this tool another name",
            )
        ]
    first = names.setdefault(name, pos)
    if first == pos:
        return []
    return [
        error(
            pos, "duplicate-tool", f"another tool is already called '{name}' ({first}); rename one"
        ),
        error(first, "duplicate-tool", f"another tool is also called '{name}' ({pos}); rename one"),
    ]


def _server(
    servers: list[tuple[Document, Server | None]], found: list[Diagnostic]
) -> tuple[Server, bool]:
    """The project's server and whether it is known well enough to judge elicitation."""
    for doc, _ in servers[1:]:
        first = servers[0][0].locs.value(())
        found.append(
            error(
                doc.locs.value(()),
                "duplicate-server",
                f"a second kind: server document (the first is {first}); keep one",
            )
        )
    if not servers:
        return Server(), True
    built = servers[0][1]
    return (built, True) if built is not None else (Server(), False)


def _unprotected(tools: list[_Checked], servers: list[tuple[Document, Any]]) -> list[Diagnostic]:
    """One warning for every ``scopes:`` written where no caller can hold a scope.

    NOTE: one cause (no auth settings where the host runs) and one fix: a warning per tool
    buried the specs' other problems, so the first place is reported and the rest are named.
    """
    places = [_scopes_at(doc.locs, doc.data) for doc, _ in servers] + [t.scopes_at for t in tools]
    written = sorted(p for p in places if p is not None)
    if not written:
        return []
    others = ""
    if len(written) > 1:
        shown = ", ".join(str(p) for p in written[1:4])
        more = f" and {len(written) - 4} more" if len(written) > 4 else ""
        others = f" (here and at {shown}{more})"
    return [
        warning(
            written[0],
            "scopes-unprotected",
            f"scopes{others} protect nothing without auth settings: set HOST_AUTH_ISSUER and "
            "HOST_AUTH_AUDIENCE, or HOST_AUTH_TOKENS, where the host runs; host serve refuses "
            "to start without them",
        )
    ]


def _elicitation(
    tools: list[_Checked], server: Server, servers: list[tuple[Document, Any]]
) -> list[Diagnostic]:
    """Tools that ask while elicitation is off: an error, or a warning for the kill switch."""
    if server.elicitation_enabled:
        return []
    asking = [
        (doc, question)
        for doc in tools
        if (question := next((s for s in doc.tool.steps if isinstance(s, Ask | Confirm)), None))
    ]
    if not asking:
        return []
    if server.elicitation_switched_off:
        # NOTE: `enabled: false` written out is a deliberate switch (an incident, a rollout),
        # not a forgotten line: serving goes on and asking calls get ELICITATION_DISABLED.
        names = [doc.tool.name for doc, _ in asking]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return [
            warning(
                servers[0][0].locs.value(("elicitation", "enabled")),
                "elicitation-off",
                f"elicitation is switched off (enabled: false): every call of {shown} that needs "
                "to ask the user gets ELICITATION_DISABLED; set enabled: true to let them ask",
            )
        ]
    found = []
    for doc, question in asking:
        kind = "ask" if isinstance(question, Ask) else "confirm"
        if servers:
            where = servers[0][0].file
            fix = f"set `elicitation: {{enabled: true}}` in the kind: server document ({where})"
        else:
            fix = "add a kind: server document with `elicitation: {enabled: true}` to the specs"
        found.append(
            error(
                question.pos,
                "elicitation-disabled",
                f"'{doc.tool.name}' asks the user ({kind} '{question.name}') but elicitation is "
                f"not enabled, so every call would fail; {fix}",
            )
        )
    return found
