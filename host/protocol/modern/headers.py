"""``Mcp-Param-*``: the arguments a tool mirrors into HTTP headers (SEP-2243).

A modern request over HTTP repeats parts of its body in headers, so that proxies can route on
them without parsing JSON; the server rejects a request whose headers and body disagree (HTTP 400,
-32020), so nothing downstream can be told one thing while the host does another. Values are
encoded as :mod:`host.protocol.header_values` says.

Besides ``Mcp-Method`` and ``Mcp-Name`` (checked in :mod:`.envelope`), a tool may name arguments
to mirror: a property of its input schema with ``"x-mcp-header": "Region"`` is sent as
``Mcp-Param-Region`` (:mod:`host.spec.param_headers`). For each such argument the header is
required when the arguments hold a value, must match it (after decoding), and must be absent when
they hold none (null counts as none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.errors import ProtocolError
from host.protocol.header_values import decode_header_value
from host.protocol.jsonrpc import HEADER_MISMATCH, error
from host.spec.param_headers import find_annotations

__all__ = ["ParamHeader", "check_param_headers", "param_headers"]

# An integer as a header may write it: 42, -7, 42.0 (compared as numbers, the spec's SHOULD).
_DECIMAL = re.compile(r"-?[0-9]+(?:\.0+)?")


@dataclass(frozen=True)
class ParamHeader:
    """An argument a tool mirrors into a header.

    Attributes:
        path: The argument: ``properties`` keys from the top of the input schema.
        name: The ``NAME`` of ``Mcp-Param-NAME``, as the schema writes it.
        type: The argument's type: ``string``, ``integer`` or ``boolean``.
    """

    path: tuple[str, ...]
    name: str
    type: str

    @property
    def header(self) -> str:
        """The header's name, ``Mcp-Param-NAME``."""
        return "Mcp-Param-" + self.name

    @property
    def argument(self) -> str:
        """The argument's path as messages show it: ``arguments.where.city``."""
        return "arguments." + ".".join(self.path)

    def value(self, arguments: Mapping[str, Any]) -> Any:
        """The argument's value in ``arguments``, or None when it has none."""
        node: Any = arguments
        for key in self.path:
            if not isinstance(node, Mapping):
                return None
            node = node.get(key)
        return node


def param_headers(schema: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """The valid ``x-mcp-header`` annotations of an input schema (invalid ones are ignored).

    NOTE: the validator refuses invalid ones (rule ``mcp-header``), and clients drop a tool that
    has any, so a server that bypassed the validator checks only what a client could send.
    """
    return tuple(
        ParamHeader(found.path, found.name, found.type)
        for found in find_annotations(schema)
        if found.problem is None and found.path
    )


def check_param_headers(
    declared: tuple[ParamHeader, ...], arguments: Mapping[str, Any], headers: Mapping[str, str]
) -> None:
    """Check a ``tools/call``'s ``Mcp-Param-*`` headers against its arguments.

    Args:
        declared: The tool's mirrored arguments (:func:`param_headers`).
        arguments: The call's arguments, as the body sends them.
        headers: The request's headers, by lower-case name.

    Raises:
        ProtocolError: -32020 (HTTP 400) for a header that is missing while the argument has a
            value, present while it has none, not validly encoded, or different from it.
    """
    for param in declared:
        sent = headers.get(param.header.lower())
        value = param.value(arguments)
        if value is None or not isinstance(value, str | int | float):
            # NOTE: no value, or one no header can mirror (an object: the arguments' own check
            # reports it): clients send no header, and one that claims a value disagrees.
            if sent is not None:
                raise _mismatch(param, f"is sent but {param.argument} has no value it can carry")
            continue
        if sent is None:
            raise _mismatch(param, f"is missing; it must repeat {param.argument}")
        decoded = decode_header_value(sent)
        if decoded is None:
            raise _mismatch(
                param,
                "is not a valid header value (a =?base64?...?= value with bad Base64 or "
                "non-UTF-8 bytes, or a character a header cannot carry)",
            )
        if not _same(param.type, value, decoded):
            raise _mismatch(param, f"does not match {param.argument}")


def _same(kind: str, value: str | float, decoded: str) -> bool:
    """Whether a decoded header value says what the argument's value is."""
    if isinstance(value, bool):
        return decoded == ("true" if value else "false")
    if kind == "integer" and not isinstance(value, str) and _DECIMAL.fullmatch(decoded):
        if isinstance(value, float) and not value.is_integer():
            return False
        # NOTE: compared as exact integers (42 and 42.0 agree), never through a float.
        try:
            return int(decoded.split(".")[0]) == int(value)
        except ValueError:  # more digits than Python converts; no argument is that long
            return False
    return decoded == str(value)


def _mismatch(param: ParamHeader, problem: str) -> ProtocolError:
    return error(
        HEADER_MISMATCH, f"Header mismatch: {param.header} {problem}", {"header": param.header}
    )
