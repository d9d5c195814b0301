"""Reads on the request's own thread: in time they answer; past their limit the rescue does.

:meth:`host.machine.timing.Runner.inline` runs a read where it is called, watched by
:mod:`host.machine.watchdog`. These pin what the served tests (``test_read_rescue``) rely on:
the rescue starts once, on another thread, at the limit; the stuck caller is told it was
superseded whatever its read did; and the caller's share of handler threads is held meanwhile.
"""

from __future__ import annotations

import threading
import time

import pytest

from host.errors import ProtocolError
from host.limits import CALLER
from host.machine.timing import Runner
from host.machine.watchdog import Superseded, Watchdog


class Rescues:
    """What a server's rescue saw: the threads it ran on, when."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.at: list[float] = []
        self.started = threading.Event()

    def __call__(self) -> None:
        self.threads.append(threading.current_thread().name)
        self.at.append(time.monotonic())
        self.started.set()


def test_a_read_in_time_answers_and_no_rescue_starts() -> None:
    rescues = Rescues()
    runner = Runner(2)
    assert runner.inline(lambda: 42, 0.2, rescues) == 42

    def fails() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        runner.inline(fails, 0.2, rescues)
    time.sleep(0.4)
    assert rescues.threads == []
    assert runner._started == 0  # NOTE: no pool thread was needed


def test_a_read_past_its_limit_is_rescued_once_and_its_caller_superseded() -> None:
    rescues = Rescues()
    release = threading.Event()
    caller = threading.current_thread().name
    started = time.monotonic()

    def stuck() -> str:
        assert rescues.started.wait(5)
        release.wait(0.2)
        return "late"

    with pytest.raises(Superseded):
        Runner(2).inline(stuck, 0.1, rescues)
    assert len(rescues.threads) == 1 and rescues.threads != [caller]
    assert 0.09 <= rescues.at[0] - started < 1.0


def test_a_read_that_fails_past_its_limit_is_superseded_too() -> None:
    rescues = Rescues()

    def fails_late() -> None:
        assert rescues.started.wait(5)
        raise OSError("the database went away")

    with pytest.raises(Superseded):
        Runner(2).inline(fails_late, 0.05, rescues)


def test_a_stuck_read_holds_its_callers_share_until_it_returns() -> None:
    runner = Runner(4)
    runner.limit_callers(1)
    rescues = Rescues()
    release = threading.Event()
    raised: list[BaseException] = []

    def mallory() -> None:
        token = CALLER.set("mallory")
        try:
            runner.inline(lambda: release.wait(5), 0.05, rescues)
        except BaseException as exc:
            raised.append(exc)
        finally:
            CALLER.reset(token)

    thread = threading.Thread(target=mallory)
    thread.start()
    assert rescues.started.wait(5)
    token = CALLER.set("mallory")
    try:
        with pytest.raises(ProtocolError):
            runner.inline(lambda: None, 1.0, rescues)
        release.set()
        thread.join(5)
        assert [type(exc) for exc in raised] == [Superseded]
        assert runner.inline(lambda: "served", 1.0, rescues) == "served"
    finally:
        CALLER.reset(token)


def test_the_watchdog_wakes_for_an_earlier_deadline() -> None:
    watchdog = Watchdog()
    late, early = Rescues(), Rescues()
    far = watchdog.watch(30.0, late)
    started = time.monotonic()
    soon = watchdog.watch(0.05, early)
    assert early.started.wait(2)
    assert time.monotonic() - started < 1.0
    assert watchdog.done(soon) is False  # NOTE: it fired: the read was superseded
    assert watchdog.done(far) is True  # NOTE: still watched, never fired
    assert late.threads == []


def test_reads_watched_one_at_a_time_never_wake_the_watchdog() -> None:
    """A thread switch per read would cost what running reads in place saves."""
    watchdog = Watchdog()
    rescues = Rescues()
    watchdog.done(watchdog.watch(5.0, rescues))  # NOTE: starts its thread, which learns 5 s
    time.sleep(0.05)
    woken: list[int] = []
    notify = watchdog._woken.notify

    def counted(n: int = 1) -> None:
        woken.append(n)
        notify(n)

    watchdog._woken.notify = counted  # type: ignore[method-assign]
    for _ in range(100):
        assert watchdog.done(watchdog.watch(5.0, rescues)) is True
    assert woken == []
    watchdog.done(watchdog.watch(0.01, rescues))  # NOTE: sooner than it would wake: it is woken
    assert woken == [1]
