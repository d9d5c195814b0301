"""Random ids come from one buffer of OS randomness: fresh each time, never shared by a fork."""

from __future__ import annotations

import base64
import os
import re
import threading
import time

import pytest

from host import ids
from host.store.records import call_id


def test_ids_have_their_formats_and_do_not_repeat() -> None:
    tokens = [ids.token(16) for _ in range(5000)]
    incidents = [ids.incident() for _ in range(5000)]

    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", t) for t in tokens)
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in incidents)
    assert len(set(tokens)) == len(tokens) and len(set(incidents)) == len(incidents)


def test_a_token_is_the_urlsafe_base64_of_its_bytes_for_every_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The written-out encoding gives what :func:`base64.urlsafe_b64encode` gives, unpadded."""
    for nbytes in range(1, 40):
        raw = os.urandom(nbytes)
        monkeypatch.setattr(ids._BUFFER, "take", lambda n, raw=raw: raw[:n])
        expected = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        assert ids.token(nbytes) == expected
    monkeypatch.setattr(ids._BUFFER, "take", lambda n: b"\xfb\xff\xbf" * (n // 3))
    assert ids.token(12) == "-_-_" * 4  # the URL-safe letters for 62 and 63, never + or /


def test_nonces_begin_with_their_time_so_store_keys_come_in_order() -> None:
    made = [ids.nonce() for _ in range(2000)]

    assert all(re.fullmatch(r"[0-9a-f]{12}[A-Za-z0-9_-]{16}", n) for n in made)
    assert len(set(made)) == len(made)
    assert [n[:12] for n in made] == sorted(n[:12] for n in made)  # made in order
    before = ids.nonce()
    time.sleep(0.002)
    assert before < ids.nonce()  # a later call's keys sort after an earlier one's
    assert abs(int(before[:12], 16) / 1000 - time.time()) < 60


def test_a_calls_id_keeps_its_order_and_an_old_nonce_keeps_its_id() -> None:
    first, later = ids.nonce(), ids.nonce()
    old = ids.token(16)  # a call in flight across an upgrade: its nonce has no time

    assert re.fullmatch(r"[0-9a-f]{32}", call_id(first))
    assert call_id(first)[:12] == first[:12] <= later[:12] == call_id(later)[:12]
    assert re.fullmatch(r"[0-9a-f]{20}", call_id(old))
    assert call_id(first) != call_id(later) and call_id(first) == call_id(first)
    assert ids.nonce_start(first) == first[:12] and ids.nonce_start(old) == ""


def test_threads_never_get_the_same_bytes() -> None:
    taken: list[list[bytes]] = [[] for _ in range(8)]

    def take(mine: list[bytes]) -> None:
        for _ in range(2000):
            mine.append(ids.random_bytes(8))

    threads = [threading.Thread(target=take, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    every = [b for mine in taken for b in mine]
    assert len(set(every)) == len(every) == 16_000


def test_a_forked_child_does_not_reuse_its_parents_buffer() -> None:
    ids.random_bytes(1)  # the parent has a buffer, most of it not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, ids.random_bytes(64))
        os._exit(0)
    os.close(write)
    child = os.read(read, 64)
    os.close(read)
    os.waitpid(pid, 0)

    assert child != ids.random_bytes(64)
