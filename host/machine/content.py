"""MCP content blocks from a ``returns: content`` act: checked and normalized.

A handler returns a list of blocks in their modern form; a plain string in the list is a text
block, and ``bytes`` for an image's or audio's ``data`` or a resource's ``blob`` are base64-encoded
here, so handlers can hand over a file's bytes as they read them. Anything else that does not fit
MCP's shapes (an unknown type or member, data that is not base64, a resource with neither ``text``
nor ``blob``) raises :class:`ContentError` naming the block and the member, before anything is
sent: the machine turns it into an internal failure with an incident id.

Blocks are in the modern form; :mod:`host.protocol.adapt` rewrites them for older revisions.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from typing import Any

from host.errors import ContentError

__all__ = ["BLOCK_TYPES", "ContentError", "content_blocks"]


_COMMON = frozenset({"type", "annotations", "_meta"})

#: Each block type's members: (required, optional), besides type, annotations and _meta.
_MEMBERS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    "text": (frozenset({"text"}), frozenset()),
    "image": (frozenset({"data", "mimeType"}), frozenset()),
    "audio": (frozenset({"data", "mimeType"}), frozenset()),
    "resource": (frozenset({"resource"}), frozenset()),
    "resource_link": (
        frozenset({"uri", "name"}),
        frozenset({"title", "description", "mimeType", "size", "icons"}),
    ),
}
BLOCK_TYPES: tuple[str, ...] = tuple(_MEMBERS)

_RESOURCE = frozenset({"uri", "mimeType", "text", "blob", "_meta"})
_ANNOTATIONS = frozenset({"audience", "priority", "lastModified"})
_ROLES = ("user", "assistant")
_SHOWN = 40


def content_blocks(value: Any) -> list[dict[str, Any]]:
    """A handler's return value as MCP content blocks.

    Raises:
        ContentError: ``value`` is not a list of well-formed blocks; the message names the first
            problem (``content[2] (image): data is not base64``) without echoing the data.
    """
    if not isinstance(value, list | tuple):
        raise ContentError(
            "a `returns: content` act must return a list of content blocks (or texts), "
            f"not {_kind(value)}"
        )
    return [_block(item, f"content[{i}]") for i, item in enumerate(value)]


def _block(item: Any, where: str) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if not isinstance(item, Mapping):
        raise ContentError(
            f"{where} must be a content block (a mapping) or a text, not {_kind(item)}"
        )
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _MEMBERS:
        raise ContentError(
            f"{where}: type {_show(kind)} is not one of {', '.join(BLOCK_TYPES)}"
            if "type" in item
            else f"{where} has no type (one of {', '.join(BLOCK_TYPES)})"
        )
    where = f"{where} ({kind})"
    required, optional = _MEMBERS[kind]
    _known(item, required | optional | _COMMON, where)
    missing = sorted(required - item.keys())
    if missing:
        raise ContentError(f"{where} is missing {' and '.join(missing)}")
    block = dict(item)
    if kind == "text":
        _string(block, "text", where, empty=True)
    elif kind in ("image", "audio"):
        block["data"] = _base64(block["data"], f"{where}: data")
        _mime(block, where)
    elif kind == "resource":
        block["resource"] = _resource(block["resource"], f"{where}: resource")
    else:
        _link(block, where)
    if "annotations" in block:
        _annotations(block["annotations"], where)
    if "_meta" in block:
        _meta(block["_meta"], where)
    return block


def _resource(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ContentError(f"{where} must be a mapping with uri and text or blob")
    _known(value, _RESOURCE, where)
    resource = dict(value)
    if "uri" not in resource:
        raise ContentError(f"{where} is missing uri")
    _string(resource, "uri", where)
    if "mimeType" in resource:
        _mime(resource, where)
    if ("text" in resource) == ("blob" in resource):
        raise ContentError(f"{where} needs exactly one of text and blob")
    if "text" in resource:
        _string(resource, "text", where, empty=True)
    else:
        resource["blob"] = _base64(resource["blob"], f"{where}: blob")
    if "_meta" in resource:
        _meta(resource["_meta"], where)
    return resource


def _link(block: dict[str, Any], where: str) -> None:
    for key in ("uri", "name"):
        _string(block, key, where)
    for key in ("title", "description"):
        if key in block:
            _string(block, key, where, empty=True)
    if "mimeType" in block:
        _mime(block, where)
    size = block.get("size")
    if "size" in block and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise ContentError(f"{where}: size must be a whole number of bytes, not {_show(size)}")
    icons = block.get("icons")
    if "icons" in block and not (
        isinstance(icons, list)
        and all(isinstance(i, Mapping) and isinstance(i.get("src"), str) for i in icons)
    ):
        raise ContentError(f"{where}: icons must be a list of mappings, each with a src")


def _annotations(value: Any, where: str) -> None:
    where = f"{where}: annotations"
    if not isinstance(value, Mapping):
        raise ContentError(f"{where} must be a mapping")
    _known(value, _ANNOTATIONS, where)
    audience = value.get("audience")
    if "audience" in value and not (
        isinstance(audience, list) and all(role in _ROLES for role in audience)
    ):
        raise ContentError(f"{where}: audience must be a list of {' and '.join(_ROLES)}")
    priority = value.get("priority")
    if "priority" in value and not (
        isinstance(priority, int | float)
        and not isinstance(priority, bool)
        and math.isfinite(priority)
        and 0 <= priority <= 1
    ):
        raise ContentError(f"{where}: priority must be a number from 0 to 1, not {_show(priority)}")
    if "lastModified" in value and not isinstance(value["lastModified"], str):
        raise ContentError(f"{where}: lastModified must be an ISO 8601 text")


def _meta(value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ContentError(f"{where}: _meta must be a mapping")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ContentError(f"{where}: _meta is not JSON ({exc})") from None


def _known(value: Mapping[Any, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise ContentError(
            f"{where}: unknown member {_show(unknown[0])}; it may have {', '.join(sorted(allowed))}"
        )


def _string(block: Mapping[str, Any], key: str, where: str, *, empty: bool = False) -> None:
    value = block[key]
    if not isinstance(value, str):
        raise ContentError(f"{where}: {key} must be a text, not {_kind(value)}")
    if not value and not empty:
        raise ContentError(f"{where}: {key} is empty")


def _mime(block: Mapping[str, Any], where: str) -> None:
    _string(block, "mimeType", where)
    if "/" not in block["mimeType"]:
        raise ContentError(
            f"{where}: mimeType {_show(block['mimeType'])} is not a MIME type like image/png"
        )


def _base64(value: Any, where: str) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        if not value:
            raise ContentError(f"{where} is empty")
        return base64.b64encode(value).decode("ascii")
    if not isinstance(value, str):
        raise ContentError(f"{where} must be base64 text or bytes, not {_kind(value)}")
    if not value:
        raise ContentError(f"{where} is empty")
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ContentError(f"{where} is not base64 (give bytes to have it encoded)") from None
    return value


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
