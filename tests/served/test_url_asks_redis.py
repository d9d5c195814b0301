"""URL asks over a Redis store and two workers: the key is in no Redis key, file or log line.

The Python SDK client calls ``rotate_key``; bob (an approver, not the caller) opening the page
over real HTTP gets 403; alice submits it; the call goes on. Afterwards every Redis key's value,
Redis's own files (its append-only log) and every file the host wrote are searched for the key.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from mcp.types import ElicitResult

from support.asks import (
    ASK_FIXTURE,
    HttpBrowser,
    files_holding,
    make_tokens,
    rotate_with_python_sdk,
)
from support.redis import RedisServer
from support.servers import host_serve

pytestmark = pytest.mark.served


def redis_values(url: str) -> list[bytes]:
    """Every key and every value held in the Redis database at ``url``."""
    client = redis.Redis.from_url(url)
    found: list[bytes] = []
    for key in client.scan_iter(count=1000):
        found.append(key)
        kind = client.type(key)
        if kind == b"string":
            found.append(client.get(key) or b"")
        elif kind == b"list":
            found.extend(client.lrange(key, 0, -1))
        elif kind == b"hash":
            for field, value in client.hgetall(key).items():
                found += [field, value]
        elif kind == b"set":
            found.extend(client.smembers(key))
        elif kind == b"zset":
            found.extend(client.zrange(key, 0, -1))
        elif kind == b"stream":
            found.extend(str(entry).encode() for entry in client.xrange(key))
    client.close()
    return found


def test_the_key_is_nowhere_in_redis_its_files_or_the_hosts(
    tmp_path: Path, redis_server: Callable[..., RedisServer]
) -> None:
    store = redis_server("--appendonly", "yes", "--appendfsync", "always")
    tokens = make_tokens(tmp_path / "tokens")
    key = "redis-k3y-" + os.urandom(12).hex()
    seen: list[Any] = []
    with host_serve(
        tmp_path, "host", "--workers", "2", "--threads", "8", specs=ASK_FIXTURE / "specs",
        HOST_AUTH_TOKENS=tokens["file"], HOST_STORE=store.url,
    ) as server:  # fmt: skip

        def answer(url: str) -> None:
            status, _, page = HttpBrowser(server.url).sign_in(tokens["bob"]).open(url)
            seen.append((status, "Not yours to answer" in page))
            HttpBrowser(server.url).sign_in(tokens["alice"]).submit(url, {"api_key": key})

        async def on_elicit(context: Any, params: Any) -> ElicitResult:
            threading.Timer(0.2, answer, [params.url]).start()
            seen.append(params.url)
            return ElicitResult(action="accept")

        digest = hashlib.sha256(key.encode()).hexdigest()
        result = rotate_with_python_sdk(server.url, tokens["alice"], "redis", on_elicit)
        assert result == {"rotated": True, "service": "redis", "sha256": digest[:12]}
        url = seen[0]
        assert seen[1] == (403, True)
        status, _, page = HttpBrowser(server.url).sign_in(tokens["alice"]).open(url)
        assert status == 404 and "This question is not open" in page  # gone with its call
        values = redis_values(store.url)
    assert values and not [v for v in values if key.encode() in v]
    assert list(files_holding(store.folder, key)) == []
    assert list(files_holding(tmp_path, key)) == []
