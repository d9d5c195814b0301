"""The handler pool: time limits, calls dropped unstarted, a caller's share, threads, fork, exit.

Every read and act crosses :class:`host.machine.timing.Runner`, so what a ``Future`` gave the
host before (a value or an error handed across, a queued call cancelled for good, callbacks once
a call ends) is pinned here against the pool's own handoff.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from host.errors import HandlerTimeout, ProtocolError
from host.limits import CALLER
from host.machine.timing import Handoff, Runner

ROOT = Path(__file__).resolve().parents[2]


def test_a_value_and_an_error_come_back_to_the_caller() -> None:
    runner = Runner(2)
    assert runner.call(lambda: 42, 5.0) == 42
    assert runner.call(lambda: None, 5.0) is None

    def fails() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        runner.call(fails, 5.0)


def test_a_call_past_its_limit_times_out_and_goes_on_running() -> None:
    runner = Runner(2)
    release, finished = threading.Event(), threading.Event()

    def slow() -> None:
        release.wait(5)
        finished.set()

    began = time.monotonic()
    with pytest.raises(HandlerTimeout):
        runner.call(slow, 0.1)
    assert time.monotonic() - began < 2.0
    release.set()
    assert finished.wait(5)


def test_a_call_queued_past_its_limit_never_starts() -> None:
    runner = Runner(1)
    release, ran = threading.Event(), threading.Event()
    busy = runner.submit(lambda: release.wait(5))
    with pytest.raises(HandlerTimeout):
        runner.call(ran.set, 0.1)
    release.set()
    busy.result(5)
    assert runner.call(lambda: "after", 5.0) == "after"
    assert not ran.is_set()


def test_cancel_drops_only_what_has_not_started() -> None:
    started = threading.Event()
    release = threading.Event()
    ended: list[str] = []
    handoff = Handoff(lambda: (started.set(), release.wait(5)), lambda: ended.append("then"))
    assert handoff.cancel()
    assert ended == ["then"]
    handoff.run()
    assert not started.is_set()
    assert ended == ["then"]  # once, not again when a thread reaches it

    running = Handoff(lambda: (started.set(), release.wait(5))[1])
    thread = threading.Thread(target=running.run)
    thread.start()
    assert started.wait(5)
    assert not running.cancel()
    release.set()
    assert running.result(5) is True
    thread.join(5)


def test_a_share_comes_back_before_its_caller_hears() -> None:
    """A caller at its share that calls again at once is served: the slot is back already."""
    runner = Runner(4)
    runner.limit_callers(1)
    token = CALLER.set("alice")
    try:
        for n in range(300):
            assert runner.call(lambda n=n: n, 5.0) == n
    finally:
        CALLER.reset(token)


def test_a_share_held_by_a_hanging_call_refuses_the_next() -> None:
    runner = Runner(4)
    runner.limit_callers(1)
    release = threading.Event()
    token = CALLER.set("mallory")
    try:
        with pytest.raises(HandlerTimeout):
            runner.call(lambda: release.wait(5), 0.05)
        with pytest.raises(ProtocolError):
            runner.submit(lambda: None)
        release.set()
        deadline = time.monotonic() + 5
        while runner._callers is not None and runner._callers.held("mallory"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert runner.call(lambda: "served", 5.0) == "served"
    finally:
        CALLER.reset(token)


def test_threads_are_started_as_needed_and_no_more() -> None:
    runner = Runner(3)
    for _ in range(50):
        runner.call(lambda: None, 5.0)
    assert runner._started == 1
    release = threading.Event()
    held = [runner.submit(lambda: release.wait(5)) for _ in range(5)]
    assert runner._started == 3
    release.set()
    for handoff in held:
        assert handoff.result(5) is True
    names = {t.name for t in threading.enumerate() if t.name.startswith("host-handler_")}
    assert len(names) >= 3


def test_a_forked_child_runs_handlers_on_threads_of_its_own() -> None:
    """gunicorn forks workers from a master that may have used the pool: the child's works."""
    probe = (
        "import os\n"
        "from host.machine.timing import RUNNER\n"
        "assert RUNNER.call(lambda: 1, 5.0) == 1\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if RUNNER.call(lambda: 2, 5.0) == 2 else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_at_exit_a_running_act_finishes_and_an_idle_pool_holds_nothing_up(tmp_path: Path) -> None:
    """The pool's threads are daemons; the exit waits for what is running, as a Future's did."""
    mark = tmp_path / "finished"
    probe = (
        "import sys, threading, time\n"
        "from host.machine.timing import RUNNER\n"
        "RUNNER.call(lambda: None, 5.0)\n"
        "started = threading.Event()\n"
        "def act():\n"
        "    started.set(); time.sleep(0.5); open(sys.argv[1], 'w').write('done')\n"
        "RUNNER.submit(act)\n"
        "started.wait(5)\n"
    )
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", probe, str(mark)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mark.read_text() == "done"
    assert time.monotonic() - began < 30
