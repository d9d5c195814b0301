"""Random ids: call nonces, claim tokens, incident ids, question and session ids.

Every id the host makes comes from here, so they share one source and one format. The bytes are
the operating system's (``os.urandom``, as :mod:`secrets` uses), read a few kilobytes at a time:

NOTE: one ``getrandom`` call per id cost 30-110 µs on sandboxed kernels, more than the rest of a
plain call's bookkeeping; a buffer makes it one call per few hundred ids. A forked child (a
gunicorn worker) drops the buffer it inherited, so no two processes ever hand out the same bytes.
"""

from __future__ import annotations

import binascii
import os
import re
import threading
import time

__all__ = ["incident", "nonce", "nonce_start", "random_bytes", "token"]

_CHUNK = 4096


class _Buffer:
    """OS randomness read in chunks, handed out once each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data = b""
        self.at = 0

    def take(self, n: int) -> bytes:
        with self.lock:
            if self.at + n > len(self.data):
                self.data, self.at = os.urandom(max(_CHUNK, n)), 0
            out = self.data[self.at : self.at + n]
            self.at += n
            return out


_BUFFER = _Buffer()
_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def _forget_inherited() -> None:
    global _BUFFER
    # NOTE: a new lock too: another thread of the parent may have held the old one at the fork.
    _BUFFER = _Buffer()


os.register_at_fork(after_in_child=_forget_inherited)


def random_bytes(n: int) -> bytes:
    """``n`` fresh random bytes: never handed out before, by this process or its parent."""
    return _BUFFER.take(n)


def token(nbytes: int = 16) -> str:
    """A URL-safe text id of ``nbytes`` random bytes, like :func:`secrets.token_urlsafe`.

    NOTE: :func:`base64.urlsafe_b64encode` written out (its two Python frames were most of a
    nonce's cost); the same text, checked against it in the tests.
    """
    text = binascii.b2a_base64(_BUFFER.take(nbytes), newline=False).translate(_URL_SAFE)
    return (text if nbytes % 3 == 0 else text.rstrip(b"=")).decode("ascii")


def nonce() -> str:
    """A call's nonce: its start in milliseconds (12 hex digits), then 16 random characters.

    NOTE: the store keys a call's act and its audit record by its nonce: random keys land all
    over their tables' indexes, and once a table outgrows the page cache each write reads and
    writes pages of its own (an audit row took 33 against 14 µs of CPU at 100,000 rows). Keys
    that begin with their time land where the last ones did. The 96 random bits keep nonces
    unguessable and apart.
    """
    millis = time.time_ns() // 1_000_000
    return f"{millis & 0xFFFF_FFFF_FFFF:012x}" + token(12)


def nonce_start(made: str) -> str:
    """The start a :func:`nonce` begins with (12 hex digits); "" for one made before they did."""
    start = made[:12]
    return start if len(made) == _NONCE_LENGTH and _HEX.fullmatch(start) else ""


#: A nonce's length: 12 hex digits, then 12 random bytes as URL-safe text.
_NONCE_LENGTH = 28
_HEX = re.compile("[0-9a-f]{12}")


def incident() -> str:
    """An incident id: 12 hex digits, quoted to clients and written in the log."""
    return _BUFFER.take(6).hex()
