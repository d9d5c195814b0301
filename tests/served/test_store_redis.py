"""What only the Redis backend does: its optional dependency, and its errors without the password.

Its faults and its persistence settings are in test_store_faults.py, its waiting pops (one
subscription, lost notifications) in test_store_waiting.py.
"""

from __future__ import annotations

import socket
import sys

import pytest

from host.errors import StoreError
from host.store import open_store

pytestmark = pytest.mark.served


def test_redis_without_redis_py_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # makes `import redis` fail
    with pytest.raises(StoreError, match=r"pip install 'redis>=5' .*pip install -e '\.\[redis\]'"):
        open_store("redis://127.0.0.1:6379/0")


def test_unreachable_redis_is_a_store_error_without_the_password() -> None:
    with socket.socket() as sock:  # bound but not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"redis://user:s3cret@127.0.0.1:{sock.getsockname()[1]}/0"
        with pytest.raises(StoreError) as caught:
            open_store(url)
    assert "127.0.0.1" in str(caught.value)
    assert "s3cret" not in str(caught.value)
