"""The web layer's view of its clients: a real socket pair, a client that closes, a stream."""

from __future__ import annotations

import socket
from collections.abc import Iterator

from host.web.lifecycle import client_gone, until_gone


def _events(closed: list[str]) -> Iterator[bytes]:
    try:
        yield b"event: message\ndata: {}\n\n"
        while True:
            yield b": keep-alive\n\n"
    finally:
        closed.append("closed")


def test_a_closed_client_ends_the_stream_at_its_next_keep_alive() -> None:
    server, client = socket.socketpair()
    try:
        closed: list[str] = []
        stream = iter(until_gone(_events(closed), client_gone({"gunicorn.socket": server})))
        assert next(stream).startswith(b"event: message")
        assert next(stream) == b": keep-alive\n\n"  # still there: the keep-alive is sent
        client.close()  # the client gives up; a write would still succeed
        assert next(stream, None) is None
        assert closed == ["closed"]  # the waiting generator was closed, its question forgotten
    finally:
        server.close()


def test_a_client_that_sends_more_is_not_gone() -> None:
    server, client = socket.socketpair()
    try:
        client.sendall(b"x")  # readable, but not the end: a pipelined byte, not a close
        gone = client_gone({"gunicorn.socket": server})
        assert gone() is False
    finally:
        server.close()
        client.close()


def test_without_a_socket_to_look_at_the_stream_runs_until_a_write_fails() -> None:
    closed: list[str] = []
    stream = iter(until_gone(_events(closed), client_gone({})))
    chunks = [next(stream) for _ in range(4)]
    assert chunks[-1] == b": keep-alive\n\n" and closed == []
