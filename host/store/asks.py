"""URL asks: what the store keeps of a question asked on a host page, and how it keeps it.

A URL ask is opened by the first round of a call that reaches an ``ask`` with ``mode: url``; its
*binding* (caller, tool, step, arguments and definition, digested by the caller of the store) lets
the call's later rounds, and an identical retry, find the same ask and so the same page. Its id is
random (192 bits) and is the only thing the page's URL holds. The values submitted on the page
are kept only as the caller of the store hands them over: encrypted
(:class:`host.protocol.redaction.FieldCipher`), so no store file, WAL or Redis key ever holds one
in clear. An ask is submitted once, deleted when its call ends, and expires with its time to live.

The role is built on the records and queues every backend already has (each step one atomic
record operation), so both backends keep asks the same way; :class:`host.store.Store` serves it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

__all__ = ["AskField", "UrlAsk", "UrlAskRecords", "new_ask_id"]

_ASK = "url-ask:"
_BINDING = "url-ask-binding:"
_SUBMITTED = "url-ask-submitted:"
_WAKE = "url-ask-wake:"


def new_ask_id() -> str:
    """A new ask id: random, 192 bits, safe in a URL."""
    return "ask_" + secrets.token_urlsafe(24)


@dataclass(frozen=True)
class AskField:
    """One field of a URL ask's form: its name, MCP schema, and whether it is a secret."""

    name: str
    schema: Mapping[str, Any]
    required: bool = True
    secret: bool = False


@dataclass(frozen=True)
class UrlAsk:
    """One URL ask as the store keeps it.

    Attributes:
        id: Its public id (:func:`new_ask_id`), the only part of its page's URL.
        binding: The digest a call's rounds (and identical retries) find it by.
        principal: Who made the call: the only person its page is shown to.
        tool: The tool; step: the ask's name; title: the tool's title.
        message: What the page says, rendered.
        fields: The form.
        definition: The digest of the tool's definition the ask was made under.
        created: When it was made; expires: when it is forgotten (Unix times).
        values: The submitted values, each encrypted by the caller of the store; None until
            submitted.
    """

    id: str
    binding: str
    principal: str
    tool: str
    step: str
    message: str
    fields: tuple[AskField, ...]
    definition: str
    created: float
    expires: float
    title: str = ""
    values: Mapping[str, Any] | None = field(default=None)

    @property
    def submitted(self) -> bool:
        """Whether the page was submitted."""
        return self.values is not None

    def to_json(self) -> str:
        """The ask as the store keeps it."""
        fields = [[f.name, dict(f.schema), f.required, f.secret] for f in self.fields]
        return json.dumps(
            {
                "id": self.id, "b": self.binding, "p": self.principal, "t": self.tool,
                "s": self.step, "m": self.message, "f": fields, "d": self.definition,
                "c": self.created, "x": self.expires, "n": self.title, "v": self.values,
            },
            ensure_ascii=False,
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> UrlAsk:
        """The inverse of :meth:`to_json`."""
        data = json.loads(text)
        fields = tuple(AskField(n, s, bool(r), bool(x)) for n, s, r, x in data["f"])
        return cls(
            data["id"], data["b"], data["p"], data["t"], data["s"], data["m"], fields,
            data["d"], data["c"], data["x"], data.get("n", ""), data.get("v"),
        )  # fmt: skip


class _Records(Protocol):
    def add(self, key: str, value: str, ttl_s: float) -> bool: ...
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_s: float) -> None: ...
    def delete(self, key: str) -> None: ...


class UrlAskRecords:
    """URL asks kept in a store's records: by id, with the binding that finds each.

    Args:
        records: The store's records (the checked :class:`host.store.Store` methods).
    """

    def __init__(self, records: _Records) -> None:
        self._records = records

    def open(self, ask: UrlAsk, ttl_s: float) -> UrlAsk:
        """Keep ``ask`` unless a live ask holds its binding; the one that holds it."""
        for _ in range(3):
            if self._records.add(_BINDING + ask.binding, ask.id, ttl_s):
                self._records.put(_ASK + ask.id, ask.to_json(), ttl_s)
                return ask
            held = self._records.get(_BINDING + ask.binding)
            found = self.get(held) if held is not None else None
            if found is not None:
                return found
            # NOTE: the binding outlived its ask (ended or expired between the two reads).
            self._records.delete(_BINDING + ask.binding)
        self._records.put(_ASK + ask.id, ask.to_json(), ttl_s)
        return ask

    def get(self, ask_id: str) -> UrlAsk | None:
        """The live ask with this id, or None."""
        raw = self._records.get(_ASK + ask_id)
        return None if raw is None else UrlAsk.from_json(raw)

    def submit(self, ask_id: str, values: Mapping[str, Any], ttl_s: float) -> UrlAsk | None:
        """Keep the page's (encrypted) values, once: the ask as it is then, or None when it
        is gone or was submitted already."""
        ask = self.get(ask_id)
        if ask is None or ask.submitted or not self._records.add(_SUBMITTED + ask_id, "1", ttl_s):
            return None
        done = replace(ask, values=dict(values))
        self._records.put(_ASK + ask_id, done.to_json(), ttl_s)
        return done

    def end(self, ask: UrlAsk) -> None:
        """Forget ``ask``: its record, its values, and its binding (if it still holds it)."""
        self._records.delete(_ASK + ask.id)
        if self._records.get(_BINDING + ask.binding) == ask.id:
            self._records.delete(_BINDING + ask.binding)

    @staticmethod
    def wake_key(ask_id: str) -> str:
        """The queue a submission wakes a waiting call on."""
        return _WAKE + ask_id
