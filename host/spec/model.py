"""The typed model of a checked spec directory: frozen dataclasses that know where they stand.

The loader and checker build these; the machine compiler reads them. Nothing here knows HTTP or
JSON-RPC. Templates are kept as their source text; they are compiled once, by the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "APPROVE_EXPIRES_MAX_S",
    "FALLBACK_TOOL",
    "REMEMBER_MAX_S",
    "STEP_KINDS",
    "URL_WAIT_MAX_S",
    "Act",
    "Approve",
    "Ask",
    "AskMode",
    "Confirm",
    "Example",
    "FormField",
    "Pos",
    "Project",
    "Read",
    "Remember",
    "Returns",
    "Server",
    "Step",
    "Timeouts",
    "Tool",
    "needs_sign_in",
]


@dataclass(frozen=True, order=True)
class Pos:
    """A place in a spec file: 1-based line and column, as editors count them."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NOWHERE = Pos("<memory>", 0, 0)

#: The tool name the host keeps for itself: its fallback tool, listed to legacy clients that
#: cannot show forms. No spec may use it.
FALLBACK_TOOL = "sendElicitationResult"


@dataclass(frozen=True)
class Timeouts:
    """The server's default ``timeouts:`` for steps that set none, in seconds (None: no limit)."""

    read_s: float | None = None
    act_s: float | None = None


@dataclass(frozen=True)
class Server:
    """The one ``kind: server`` document (or the defaults when a directory has none).

    Attributes:
        elicitation_enabled: ``elicitation: {enabled: true}``: tools may ask the user.
        elicitation_switched_off: ``enabled: false`` written out: the kill switch (a tool
            that asks is then a warning, not an error, and its calls get ELICITATION_DISABLED).
            False when ``enabled`` is not written at all.
        fallback_enabled: False for ``elicitation: {fallback: false}``: legacy clients without
            forms get no fallback tool (they get the error a client without elicitation gets).
        scopes: ``scopes:``, needed for every tool call (hierarchical on ``:``).
        timeouts: ``timeouts: {read, act}``, the defaults for steps without ``timeout:``.
    """

    name: str = "host"
    version: str = "0.0.0"
    instructions: str | None = None
    elicitation_enabled: bool = False
    pos: Pos = NOWHERE
    elicitation_switched_off: bool = False
    fallback_enabled: bool = True
    scopes: tuple[str, ...] = ()
    timeouts: Timeouts = field(default_factory=Timeouts)


@dataclass(frozen=True)
class FormField:
    """One field of an elicitation form.

    Attributes:
        name: The property name; after the step it is a name in scope.
        schema: The field's MCP primitive schema as written, without the host-only keys
            (``optional``). An ``enum`` may still be a template string, rendered per call.
        required: False when the field has ``optional: true`` or a ``default``.
        secret: ``secret: true`` (URL mode only): the page shows it as a password field.
    """

    name: str
    schema: dict[str, Any]
    required: bool = True
    pos: Pos = NOWHERE
    secret: bool = False


@dataclass(frozen=True)
class Read:
    """``read: NAME`` with ``call: module:function``; runs every round and must not write.

    Attributes:
        timeout_s: ``timeout:`` in seconds; None: the server's ``timeouts.read`` applies.
    """

    name: str
    call: str
    missing: str | None = None
    pos: Pos = NOWHERE
    timeout_s: float | None = None


AskMode = Literal["form", "url"]
"""Where an ask's form is shown: in the client (``form``) or on a page of the host's (``url``)."""

#: The longest a retry may wait for a URL ask's page (``wait:``): it holds its request open.
URL_WAIT_MAX_S = 300.0


@dataclass(frozen=True)
class Ask:
    """``ask: NAME``: one elicitation form. ``declined``/``cancelled`` are RESULT templates.

    Attributes:
        mode: ``form`` (the client renders the form) or ``url`` (a page of the host's own
            asks it, shown only to the caller: the way to ask for a secret).
        wait_s: URL mode: how long a retry waits for the page to be submitted.
    """

    name: str
    message: str
    fields: tuple[FormField, ...]
    when: str | None = None
    declined: Any = None
    cancelled: Any = None
    pos: Pos = NOWHERE
    mode: AskMode = "form"
    wait_s: float = 30.0

    @property
    def url(self) -> bool:
        """Whether the question is asked on a host page (``mode: url``)."""
        return self.mode == "url"


@dataclass(frozen=True)
class Remember:
    """``remember: {for, key}`` on a confirm: a yes is kept for this principal, tool and key.

    Attributes:
        for_s: How long, in seconds (at most 30 days).
        key: A template rendered at the confirm, or the names whose values make the key (a
            list); None: the digest of the call's arguments.
    """

    for_s: float
    key: str | tuple[str, ...] | None = None
    pos: Pos = NOWHERE


#: The longest a ``remember:`` may last.
REMEMBER_MAX_S = 30 * 86400.0

#: The longest a call may wait for an act's lock (``lock_wait:``): it holds its request open.
LOCK_WAIT_MAX_S = 300.0


@dataclass(frozen=True)
class Confirm:
    """``confirm: NAME``: a yes/no question, a form of one boolean field ``confirm``."""

    name: str
    message: str
    label: str | None = None
    when: str | None = None
    declined: Any = None
    cancelled: Any = None
    unticked: Any = None
    pos: Pos = NOWHERE
    remember: Remember | None = None


#: The longest an approval request can wait for its decision.
APPROVE_EXPIRES_MAX_S = 7 * 86400.0


@dataclass(frozen=True)
class Approve:
    """``approve: NAME``: another person's yes, asked of approvers rather than of the caller.

    Attributes:
        approvers: Scopes; an approver holds one of them (hierarchical on ``:``).
        count: How many distinct approvers must say yes.
        wait_s: How long one call waits for the decision (0: it never waits).
        expires_s: How long the request can be decided.
        rejected: The RESULT template when an approver says no (None: a default text).
        expired: The RESULT template when nobody decides in time (None: a default text).
    """

    name: str
    message: str
    approvers: tuple[str, ...]
    count: int = 1
    wait_s: float = 60.0
    expires_s: float = 3600.0
    when: str | None = None
    rejected: Any = None
    expired: Any = None
    pos: Pos = NOWHERE
    remember: Remember | None = None


Returns = Literal["value", "content"]
"""What an act's handler returns: a value (text or structured) or a list of MCP content blocks."""


@dataclass(frozen=True)
class Act:
    """``act: module:function``: the one step that may change the world, run at most once.

    Attributes:
        returns: ``value`` (the default): the return value is the result, a text or structured
            content; ``content``: the handler returns a list of MCP content blocks.
        timeout_s: ``timeout:`` in seconds; None: the server's ``timeouts.act`` applies.
        lock: ``lock:``, the names in scope whose values make the lock's key; empty: no lock.
        lock_wait_s: ``lock_wait:`` in seconds, how long a call waits for the lock (0: not).
        busy: ``busy:``, the RESULT of a call that did not get the lock in time; None: the
            host's text.
    """

    call: str
    pos: Pos = NOWHERE
    returns: Returns = "value"
    timeout_s: float | None = None
    lock: tuple[str, ...] = ()
    lock_wait_s: float = 0.0
    busy: Any = None


Step = Read | Ask | Confirm | Approve | Act

#: The keys a step starts with, one per kind, in the order the language lists them.
STEP_KINDS = ("read", "ask", "confirm", "approve", "act")


def needs_sign_in(step: Step) -> bool:
    """Whether ``step`` needs a person to sign in to the host's pages: an approve, a URL ask.

    NOTE: the one rule behind ``host validate``'s warnings and the refusal to serve such specs
    without auth settings.
    """
    return isinstance(step, Approve) or (isinstance(step, Ask) and step.url)


@dataclass(frozen=True)
class Example:
    """One entry of a tool's ``examples:``, run by ``host test`` and the pytest plugin.

    Attributes:
        answers: Scripted answers by question name, each ``{action, content}``.
        approvals: Scripted decisions by approve step name, each ``{decision, by, reason}``.
        expect: What to expect: ``result`` (the result or a subset of it), ``error`` (a JSON-RPC
            code), ``is_error`` (a tool error), ``asks`` (the question names expected) or
            ``pending`` (the approve step whose request is left undecided).
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    pos: Pos = NOWHERE


@dataclass(frozen=True)
class Tool:
    """One ``kind: tool`` document.

    Attributes:
        input: The arguments' JSON Schema (2020-12), ``type: object`` always present.
        annotations: MCP tool annotations, passed through to ``tools/list``.
        scopes: ``scopes:`` this tool needs, on top of the server's.
        audit_redact: ``audit: {redact: [...]}``: input and form fields stored as
            ``"[redacted]"`` in audit records.
        result: A read-only tool's ``result:`` (a RESULT template); None: the value of its
            last read. Only a tool without an act has one.
        task: ``task:`` as written (``required``, ``optional`` or ``never``); None: the
            default (:attr:`task_support`).
    """

    name: str
    description: str
    input: dict[str, Any]
    steps: tuple[Step, ...]
    title: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None
    examples: tuple[Example, ...] = ()
    pos: Pos = NOWHERE
    scopes: tuple[str, ...] = ()
    audit_redact: tuple[str, ...] = ()
    result: Any = None
    task: str | None = None

    @property
    def task_support(self) -> str:
        """How a call may run as a task: ``task:``, else ``optional`` where a step can wait on
        someone other than the model (an approve, a URL ask) and ``never`` where none can."""
        if self.task is not None:
            return self.task
        return "optional" if any(needs_sign_in(s) for s in self.steps) else "never"

    @property
    def act(self) -> Act | None:
        """The tool's act step, if it has one."""
        return next((s for s in self.steps if isinstance(s, Act)), None)

    @property
    def read_only(self) -> bool:
        """True for a tool without an act: it reads, maybe asks, and changes nothing."""
        return self.act is None


@dataclass(frozen=True)
class Project:
    """A checked spec directory: the server, its tools in a stable order, where handlers live."""

    server: Server
    tools: tuple[Tool, ...]
    handlers_dir: Path
    specs_dir: Path | None = None

    def tool(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return next((t for t in self.tools if t.name == name), None)

    @property
    def scopes(self) -> frozenset[str]:
        """Every scope the server and its tools name."""
        return frozenset(self.server.scopes).union(*(t.scopes for t in self.tools))
