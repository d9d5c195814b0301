"""The audit chain: every record a store keeps, linked to the one before it by its hash.

Each record the audit trail keeps (a call's, an act about to run, a decision, a checkpoint) is one
*entry*: its fields (:meth:`host.store.records.AuditRecord.entry`), its ``seq`` (1, 2, 3, ...
with no gap, one sequence per store) and ``prev`` (the hash of the entry before it; 64 zeros for
the first). Its ``hash`` is the SHA-256 of the entry's canonical JSON (RFC 8785), which is also
the text the store keeps, so what is read back is exactly what was hashed.

Backends append entries where they write records, in the same transaction (SQLite) or script
(Redis): :meth:`Chain.link` turns records and the chain's head into entries. Every
:data:`CHECKPOINT_EVERY` entries, and at the first write an hour or more after the last checkpoint
(and at a chain's first write), a ``checkpoint`` entry follows, signed with Ed25519 by the
store's :class:`~host.store.signing.Signer` when it has one: its ``prev`` is the head it signs.

NOTE: the entry's top-level members are encoded once, before a backend takes its write lock
(:func:`prepare`); under the lock only ``seq`` and ``prev`` are added and the members joined in
RFC 8785's order, which for an object is its members' canonical texts sorted by key.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import rfc8785

from host.jsonvalues import encoder
from host.store.records import STARTED, AuditRecord, iso
from host.store.signing import Signer

__all__ = [
    "CHECKPOINT_EVERY",
    "CHECKPOINT_EVERY_S",
    "GENESIS",
    "Chain",
    "Head",
    "Link",
    "Prepared",
    "canonical",
    "digest",
    "prepare",
]

#: The ``prev`` of a chain's first entry.
GENESIS = "0" * 64
#: A checkpoint follows at most this many entries after the last one.
CHECKPOINT_EVERY = 1000
#: A write this long after the last checkpoint is followed by a new one.
CHECKPOINT_EVERY_S = 3600.0


def canonical(value: Any) -> bytes:
    """``value`` as RFC 8785 canonical JSON (numbers outside I-JSON's range kept as text).

    NOTE: rfc8785 encodes in pure Python, six times slower than the json module. For what a
    record holds the json module's sorted, compact output is the same bytes: it differs only
    for characters from U+D800 up (UTF-16 orders keys otherwise; lone surrogates are refused),
    whole floats (Python writes ``1.0``), floats Python writes with an exponent (``1e-05``,
    ``1e+16``: ECMAScript does not in that range) and integers past 2**53. Output that might
    hold any of them (:func:`_risky`, which errs on the safe side) goes to rfc8785; the tests
    compare the two on generated values.
    """
    text = _encoded(value)
    if text is not None and not _risky(text):
        return text.encode("utf-8")
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return rfc8785.dumps(_representable(value))


#: The json module's sorted, compact encoding. NOTE: one C encoder made once, not one per value
#: (``json.JSONEncoder.encode`` makes one for every object it encodes).
_JSON = encoder(sort_keys=True, compact=True, allow_nan=False)


def _encoded(value: Any) -> str | None:
    """``value`` as :data:`_JSON` writes it; None if it cannot (not JSON, NaN, a cycle)."""
    try:
        return _JSON(value)
    except (TypeError, ValueError, RecursionError):
        return None


_HIGH = re.compile(r"[\ud800-\U0010ffff]")
_WHOLE = re.compile(r"\.0(?![0-9])")
# NOTE: the json module writes a float's exponent as ``repr`` does, always with a small "e".
_EXPONENT = re.compile(r"[0-9]e[+-]")
# NOTE: in compact JSON an integer starts a text or follows ":", "," or "["; looking there alone
# (a search for the separator is one pass in C) and not at every digit of the hashes and ids of
# a record saved a tenth of the audit writer's instructions.
_LONG = re.compile(r"[:,\[]-?[0-9]{16}")
_LONG_FIRST = re.compile(r"-?[0-9]{16}")
#: Every ASCII digit as "0", every other byte as it is: sixteen digits in a row read as 16 zeros.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_SIXTEEN = b"0" * 16


def _risky(text: str) -> bool:
    """Whether the json module's ``text`` might not be RFC 8785's (erring on the safe side).

    NOTE: a search for each case, each behind a check in C that rules most texts out at once:
    one pattern for them all took a record's whole canonical encoding again.
    """
    return (
        (not text.isascii() and _HIGH.search(text) is not None)
        or (".0" in text and _WHOLE.search(text) is not None)
        or (("e+" in text or "e-" in text) and _EXPONENT.search(text) is not None)
        or _long_integer(text)
    )  # fmt: skip


def _long_integer(text: str) -> bool:
    """Whether ``text`` holds an integer of 16 digits or more, which RFC 8785 writes otherwise.

    NOTE: sixteen digits in a row are rare but for such an integer (a hash's or an id's digits
    now and then), so one pass in C over the bytes rules most texts out; the patterns, which try
    a match at every separator of the text, run only where there is such a run.
    """
    if _SIXTEEN not in text.encode().translate(_DIGITS_AS_ZERO):
        return False
    return _LONG.search(text) is not None or _LONG_FIRST.match(text) is not None


def _representable(value: Any) -> Any:
    """``value`` with what RFC 8785 cannot encode (huge integers, NaN) written as text."""
    if isinstance(value, Mapping):
        return {str(k): _representable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_representable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def digest(body: str) -> str:
    """The hash of an entry kept as ``body`` (its canonical JSON): SHA-256, hex."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Head:
    """The newest entry of a chain, and its newest checkpoint (0 and None: none yet)."""

    seq: int = 0
    hash: str = GENESIS
    checkpoint_seq: int = 0
    checkpoint_at: float | None = None


class Prepared(NamedTuple):
    """A record to append at ``rank``, its entry already encoded but for ``prev`` and ``seq``.

    ``parts`` is the entry's canonical JSON cut where their values go: the text before
    ``prev``'s value, the text between it and ``seq``'s, and the rest.
    """

    record: AuditRecord
    rank: int
    parts: tuple[str, str, str]


class Link(NamedTuple):
    """One entry as a backend keeps it: its indexed fields, ``body`` (the hashed text), ``hash``.

    NOTE: a tuple, in the order of the SQLite backend's columns, so its rows are the links
    themselves (a frozen dataclass set each of its nine fields through ``object.__setattr__``).
    """

    seq: int
    hash: str
    body: str
    rank: int
    kind: str
    id: str
    at: float
    principal: str
    tool: str


# NOTE: values no record holds (and if one did, it would show twice and be taken the slow way):
# the entry is encoded once, with these for prev and seq, and cut where they are.
_PREV = "\x00chain-prev\x00"
_SEQ = "\x00chain-seq\x00"
_PREV_JSON = _JSON(_PREV)
_SEQ_JSON = _JSON(_SEQ)


def prepare(record: AuditRecord, rank: int) -> Prepared:
    """``record`` ready to be linked at ``rank`` (an act about to run is kind ``started``)."""
    entry = record.entry()
    if rank == STARTED:
        entry["kind"] = "started"
    return Prepared(record, rank, _cut(entry) or _cut_slowly(entry))


def _cut(entry: dict[str, Any]) -> tuple[str, str, str] | None:
    """``entry``'s parts (see :class:`Prepared`) from one encoding of it by the json module;
    None where that might not be RFC 8785's, or a value holds a stand-in."""
    text = _encoded({**entry, "prev": _PREV, "seq": _SEQ})
    if text is None or _risky(text):
        return None
    prev = text.find(_PREV_JSON)
    seq = text.find(_SEQ_JSON)
    if text.find(_PREV_JSON, prev + 1) >= 0 or text.find(_SEQ_JSON, seq + 1) >= 0:
        return None
    return text[:prev], text[prev + len(_PREV_JSON) : seq], text[seq + len(_SEQ_JSON) :]


def _cut_slowly(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    """``entry``'s parts, each member encoded by :func:`canonical` on its own."""
    members = {key: _member(key, value) for key, value in entry.items()}
    # NOTE: every top-level key is ASCII, so sorting by code point is RFC 8785's UTF-16 order.
    keys = sorted(members.keys() - {"prev", "seq"})
    before = "".join(members[k] + "," for k in keys if k < "prev")
    between = "".join("," + members[k] for k in keys if "prev" < k < "seq")
    after = "".join("," + members[k] for k in keys if k > "seq")
    return "{" + before + '"prev":', between + ',"seq":', after + "}"


def _member(key: str, value: Any) -> str:
    return canonical(key).decode() + ":" + canonical(value).decode()


def _text_of(seq: int, prev: str) -> tuple[str, str]:
    """``seq`` and ``prev`` as canonical JSON.

    NOTE: written directly when they are what the chain makes (an integer of up to 15 digits,
    a hex digest): :func:`canonical` twice a record was a tenth of the audit writer's work.
    """
    seq_text = str(seq) if 0 <= seq < _SHORT else canonical(seq).decode()
    prev_text = f'"{prev}"' if prev.isascii() and prev.isalnum() else canonical(prev).decode()
    return seq_text, prev_text


#: Integers below this are written alike by the json module and RFC 8785 (see :func:`_risky`).
_SHORT = 10**15


class Chain:
    """Links records into a store's chain, with a checkpoint where one is due.

    Args:
        signer: Signs checkpoints; None: no checkpoints are written (a store opened to be read).
        every: A checkpoint at most this many entries after the last.
        every_s: A checkpoint at the first write this long after the last.
    """

    def __init__(
        self,
        signer: Signer | None = None,
        *,
        every: int = CHECKPOINT_EVERY,
        every_s: float = CHECKPOINT_EVERY_S,
    ) -> None:
        self.signer = signer
        self.every = every
        self.every_s = every_s
        #: The head after the entries this chain linked last (written or not): a backend that
        #: reads the same head's seq and hash again may take its checkpoint from here.
        self.linked: Head | None = None

    def link(self, head: Head, records: Sequence[Prepared], now: float) -> list[Link]:
        """The entries that append ``records`` (already filtered by rank) after ``head``."""
        links: list[Link] = []
        seq, prev = head.seq, head.hash
        last_cp, last_cp_at = head.checkpoint_seq, head.checkpoint_at
        for prepared in records:
            seq += 1
            link = self._linked(prepared, seq, prev)
            links.append(link)
            prev = link.hash
            if self._due(seq, last_cp, last_cp_at, now):
                seq += 1
                link = self.checkpoint(seq, prev, now)
                links.append(link)
                prev, last_cp, last_cp_at = link.hash, seq, now
        self.linked = Head(seq, prev, last_cp, last_cp_at)
        return links

    def _due(self, seq: int, last_cp: int, last_cp_at: float | None, now: float) -> bool:
        if self.signer is None:
            return False
        return last_cp_at is None or seq - last_cp >= self.every or now - last_cp_at >= self.every_s

    @staticmethod
    def _linked(prepared: Prepared, seq: int, prev: str) -> Link:
        before, between, after = prepared.parts
        seq_text, prev_text = _text_of(seq, prev)
        body = f"{before}{prev_text}{between}{seq_text}{after}"
        record = prepared.record
        kind = "started" if prepared.rank == STARTED else record.kind
        return Link(
            seq, digest(body), body, prepared.rank, kind,
            record.id, record.time, record.principal, record.tool,
        )  # fmt: skip

    def checkpoint(self, seq: int, prev: str, now: float) -> Link:
        """A checkpoint entry at ``seq`` that signs the head ``prev``."""
        assert self.signer is not None
        entry: dict[str, Any] = {
            "kind": "checkpoint",
            "id": f"checkpoint-{seq}",
            "time": iso(now, ms=True),
            "principal": "(host)",
            "tool": "",
            "key": self.signer.key_id,
            "seq": seq,
            "prev": prev,
        }
        entry["signature"] = self.signer.sign(canonical(entry))
        body = canonical(entry).decode()
        return Link(seq, digest(body), body, 1, "checkpoint", entry["id"], now, "(host)", "")
