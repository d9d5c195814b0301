"""The MCP revisions the host speaks, and what each one knows: the one table of revisions.

The machine and the tool-call core speak 2026-07-28 only: its forms, its content blocks, its
``Tool`` members. What an older revision cannot carry is translated at the edge, by
:mod:`host.protocol.adapt`, from the facts in this table. Adding or dropping a revision means
adding or removing one row here (and, for a new kind of difference, one fact and its adapter).

=============  =======  =====  ==========  ==========  ========  ===================================
revision       era      forms  form mode   rich forms  URL mode  structured results, newer members
=============  =======  =====  ==========  ==========  ========  ===================================
2026-07-28     modern   yes    yes         yes         yes       yes; every member
2025-11-25     legacy   yes    yes         yes         yes       yes; every member
2025-06-18     legacy   yes    no          no          no        yes; no ``icons``, ``execution``
2025-03-26     legacy   no     no          no          no        no; no ``icons``, ``execution``,
                                                                 ``title``, ``outputSchema``
=============  =======  =====  ==========  ==========  ========  ===================================

"Rich forms" are titled and multi-select enums and defaults on every field (2025-11-25); older
forms know only ``enum`` (+ ``enumNames``) and defaults on booleans. Which era a message claims
(:func:`is_modern_message`) is decided here too, so neither era asks the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from host.protocol.context import RequestContext
from host.protocol.header_values import decode_header_value
from host.protocol.jsonrpc import Message

__all__ = [
    "LEGACY",
    "LEGACY_VERSIONS",
    "MODERN",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "REVISIONS",
    "Revision",
    "is_modern_message",
    "legacy_revision",
]

#: Where a modern request names its revision, in ``params._meta``.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@dataclass(frozen=True)
class Revision:
    """What one MCP revision knows.

    Attributes:
        version: The revision's date, as the protocol writes it.
        modern: Per-request ``_meta`` and multi-round requests, no sessions (2026-07-28 on).
        forms: Form elicitation exists (a legacy session can be asked questions on its stream).
        form_mode: ``elicitation/create`` params carry ``mode``.
        rich_forms: Titled and multi-select enums, and defaults on every field.
        url_mode: URL elicitation exists (a question asked on a page of the server's).
        structured: ``structuredContent`` in results and ``outputSchema`` on tools.
        block_meta: ``_meta`` on content blocks, ``lastModified`` in annotations, and
            ``resource_link`` blocks.
        link_icons: ``icons`` on ``resource_link`` blocks.
        unknown_tool_members: Members of a 2026-07-28 ``Tool`` this revision does not know.
    """

    version: str
    modern: bool
    forms: bool
    form_mode: bool
    rich_forms: bool
    structured: bool
    block_meta: bool
    link_icons: bool
    unknown_tool_members: frozenset[str] = frozenset()
    url_mode: bool = False


MODERN = Revision(
    "2026-07-28", modern=True, forms=True, form_mode=True, rich_forms=True, structured=True,
    block_meta=True, link_icons=True, url_mode=True,
)  # fmt: skip

#: The legacy revisions served, newest first: the first is what ``initialize`` answers a client
#: asking for a revision the host does not serve.
LEGACY: tuple[Revision, ...] = (
    Revision(
        "2025-11-25", modern=False, forms=True, form_mode=True, rich_forms=True,
        structured=True, block_meta=True, link_icons=True, url_mode=True,
    ),
    Revision(
        "2025-06-18", modern=False, forms=True, form_mode=False, rich_forms=False,
        structured=True, block_meta=True, link_icons=False,
        unknown_tool_members=frozenset({"icons", "execution"}),
    ),
    Revision(
        "2025-03-26", modern=False, forms=False, form_mode=False, rich_forms=False,
        structured=False, block_meta=False, link_icons=False,
        unknown_tool_members=frozenset({"icons", "execution", "title", "outputSchema"}),
    ),
)  # fmt: skip

REVISIONS: Mapping[str, Revision] = {r.version: r for r in (MODERN, *LEGACY)}
MODERN_VERSIONS: tuple[str, ...] = (MODERN.version,)
LEGACY_VERSIONS: tuple[str, ...] = tuple(r.version for r in LEGACY)


def legacy_revision(requested: str) -> Revision:
    """The revision to answer ``initialize`` with: the client's when served, else the newest."""
    found = REVISIONS.get(requested)
    return found if found is not None and not found.modern else LEGACY[0]


def is_modern_message(message: Message, request: RequestContext) -> bool:
    """Whether a message claims the modern revision (its ``_meta`` or its version header).

    A legacy revision accepts what this rejects; anything left goes to the modern revision,
    whose checks then say what is missing.
    """
    meta = message.params.get("_meta")
    if isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta:
        return True
    return decode_header_value(request.header("mcp-protocol-version")) in MODERN_VERSIONS
