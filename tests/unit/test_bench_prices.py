"""The price bench's stand-ins take away what they name, and nothing once the round is over.

``bench/prices.py`` times the host with one guarantee taken away at a time; a stand-in that
patched a name the host no longer calls would price that guarantee at zero, silently. So each
is checked against the real thing: present without the stand-in, gone with it, back after.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from bench import prices
from host.machine.timing import Runner
from host.observers.audit import AuditObserver
from host.observers.metrics import MetricsObserver
from host.protocol.events import LogObserver, Round
from host.store.sqlite.pool import Connections

ROOT = Path(__file__).resolve().parents[2]


def _round() -> Round:
    return Round("list_outbox", 1, "alice", time.monotonic(), outcome="complete", ends=True)


def _handler_thread() -> bool:
    """Whether a handler runs on another thread than its caller's."""
    return Runner(threads=2).call(threading.current_thread, 5.0) is not threading.current_thread()


def _logged(caplog: pytest.LogCaptureFixture) -> bool:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="host.protocol"):
        LogObserver().round_ended(_round())
    return any(r.getMessage() == "tool call" for r in caplog.records)


def _counted() -> bool:
    observer = MetricsObserver()
    observer.round_ended(_round())
    found = observer.registry.get_sample_value(
        "host_tool_rounds_total", {"tool": "list_outbox", "outcome": "complete"}
    )
    return bool(found)


def _queued() -> bool:
    observer = AuditObserver(mock.Mock(), 3600.0)
    with mock.patch.object(observer._batches, "put") as put:
        observer.round_ended(_round())
    return put.called


def _synchronous(path: Path) -> int:
    """The ``synchronous`` level a durable write's connection commits with (2: FULL)."""
    pool = Connections(path, 5.0)
    try:
        with pool.write(durable=True) as conn:
            level: int = conn.execute("PRAGMA synchronous").fetchone()[0]
        return level
    finally:
        pool.close()


@pytest.mark.parametrize("part", list(prices.PARTS))
def test_each_stand_in_takes_away_its_part_and_gives_it_back(
    part: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    present: dict[str, Any] = {
        "handler pool handoff": _handler_thread,
        "log line": lambda: _logged(caplog),
        "metrics": _counted,
        "audit record": _queued,
        prices.FSYNC: lambda: _synchronous(tmp_path / "store.db") == 2,
    }
    check = present[part]
    assert check() is True
    with prices._without((part,)):
        assert check() is False
    assert check() is True


def test_all_of_them_at_once_takes_every_part_away(tmp_path: Path) -> None:
    with prices._without((prices.ALL,)):
        assert not _handler_thread()
        assert not _queued()
        assert _synchronous(tmp_path / "store.db") == 1  # NORMAL
    assert _handler_thread()


class _Slow:
    @staticmethod
    def work() -> None:
        time.sleep(0.002)


def test_a_price_is_the_median_of_paired_rounds() -> None:
    """A part that costs a known sleep is priced near it, with quartiles around the median."""
    with mock.patch.dict(prices.PARTS, {"sleep": ((_Slow, "work", lambda: None),)}):
        wall, cpu, low, high = prices.price(lambda: _Slow.work(), "sleep", n=5, rounds=5)
    assert 0.0015 < wall < 0.02
    assert low <= wall <= high
    assert cpu < wall  # a sleep takes no CPU


def test_the_served_host_without_guarantees_keeps_them_away(tmp_path: Path) -> None:
    """``bench/stubbed.py`` takes every part away for the life of its process, not for a moment.

    NOTE: in a process of its own, since importing it patches that process for good.
    """
    probe = (
        "import bench.stubbed\n"
        "from bench import prices\n"
        "from host.machine.timing import Runner\n"
        "from host.protocol.events import LogObserver\n"
        "from host.store.sqlite.pool import Connections\n"
        "import gc; gc.collect()\n"
        "print(Runner.submit is prices._inline, LogObserver.round_ended is prices._nothing,\n"
        "      Connections.write is prices._not_durable)\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HOST_")},
        "HOST_SPECS": str(ROOT / "specs"),
        "HOST_HANDLERS": str(ROOT / "handlers"),
        "HOST_DATA_DIR": str(tmp_path),
        "HELPDESK_DB": str(tmp_path / "helpdesk.db"),
        "HOST_SECRET": "s" * 32,
    }
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]
