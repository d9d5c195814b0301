"""``lock:`` in process: the kit's app locks for real; the machine releases what it takes."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from host.machine import CallContext, Outcome, given
from host.machine.compile import compile_tool
from host.machine.keys import lock_key
from host.machine.local_locks import ProcessLocks
from host.protocol.acts import Acts
from host.spec.model import Act, Tool
from host.testing.harness import serve
from support.locks import events, overlapped, wait_for_line, write_specs

ARGS = {"service": "api", "environment": "prod"}


def test_two_calls_on_the_same_key_act_one_at_a_time(tmp_path: Path) -> None:
    specs, handlers = write_specs(tmp_path, wait="10s")
    log, gate = tmp_path / "acts.log", tmp_path / "gate"
    env = {"LOCK_LOG": str(log), "LOCK_GATE": str(gate)}
    with serve(specs, handlers, data_dir=tmp_path / "data", env=env) as mcp:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(mcp.tools.call, "restart_service", ARGS)
            wait_for_line(log, "start")
            second = pool.submit(mcp.tools.call, "restart_service", ARGS)
            time.sleep(0.5)
            assert len(events(log)) == 1  # the second waits for the lock, not acting
            gate.touch()
            assert first.result(30).json() == {"done": True, "service": "api"}
            assert second.result(30).json() == {"done": True, "service": "api"}
        assert not overlapped(events(log)) and len(events(log)) == 4
        assert [r.outcome for r in mcp.audit.records()] == ["acted", "acted"]


def test_a_busy_call_acts_nothing_and_is_audited_busy(tmp_path: Path) -> None:
    specs, handlers = write_specs(tmp_path, wait="500ms")
    log, gate = tmp_path / "acts.log", tmp_path / "gate"
    env = {"LOCK_LOG": str(log), "LOCK_GATE": str(gate)}
    with serve(specs, handlers, data_dir=tmp_path / "data", env=env) as mcp:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(mcp.tools.call, "restart_service", ARGS)
            wait_for_line(log, "start")
            # NOTE: another tool, the same names and values: the same lock.
            busy = mcp.tools.call("rollback_deploy", ARGS)
            assert busy.json() == {"done": False, "reason": "api is busy"}
            assert not busy.is_error
            # NOTE: another value: another lock, so it acts while the first still holds its own.
            other = pool.submit(
                mcp.tools.call, "rollback_deploy", {"service": "web", "environment": "prod"}
            )
            lines = wait_for_line(log, "start", 2)
            assert not any(line.startswith("end") for line in lines)
            gate.touch()
            first.result(30).assert_ok()
            assert other.result(30).json() == {"done": True, "service": "web"}
        outcomes = {r.tool + " " + r.arguments["service"]: r for r in mcp.audit.records()}
        assert outcomes["rollback_deploy api"].outcome == "busy"
        assert outcomes["rollback_deploy api"].acted is False
        assert outcomes["rollback_deploy web"].outcome == "acted"
        assert [line.split()[1] for line in events(log)].count("rollback") == 2  # web only


def test_the_default_busy_text_says_what_is_held(tmp_path: Path) -> None:
    specs, handlers = write_specs(tmp_path)
    log, gate = tmp_path / "acts.log", tmp_path / "gate"
    env = {"LOCK_LOG": str(log), "LOCK_GATE": str(gate)}
    with (
        serve(specs, handlers, data_dir=tmp_path / "data", env=env) as mcp,
        ThreadPoolExecutor(1) as pool,
    ):
        first = pool.submit(mcp.tools.call, "restart_service", ARGS)
        wait_for_line(log, "start")
        busy = mcp.tools.call("restart_service", {**ARGS, "force": True})
        gate.touch()
        first.result(30).assert_ok()
    assert busy.text() == (
        "The tool restart_service did nothing: another call is acting on service api, "
        "environment prod. Try again once it has finished."
    )


def test_an_act_past_its_time_limit_keeps_its_lock_until_it_ends(tmp_path: Path) -> None:
    handlers, gate = tmp_path / "handlers", tmp_path / "gate"
    handlers.mkdir()
    (handlers / "slow.py").write_text(
        "import time\nfrom pathlib import Path\n"
        f"def act(service):\n    while not Path({str(gate)!r}).exists():\n"
        "        time.sleep(0.02)\n    return 'done'\n"
    )
    schema = {"properties": {"service": {"type": "string"}}, "required": ["service"]}
    machine = compile_tool(
        Tool("slow", "d", schema, (Act("slow:act", lock=("service",)),)), handlers
    )
    locks = ProcessLocks()
    ctx = CallContext(tool="slow", once=Acts.first_round("slow", 0.2), locks=locks)
    overran = machine.run({"service": "api"}, given({}), ctx)
    assert isinstance(overran, Outcome) and overran.acted and overran.is_error
    name = lock_key(["service"])({"service": "api"})
    # NOTE: the act goes on running on its thread, so its lock stays held.
    assert locks.acquire(name, 0.3) is None
    gate.touch()
    held = locks.acquire(name, 5.0)
    assert held is not None and held.release()


def test_lock_names_cannot_collide() -> None:
    key = lock_key(["service", "environment"])
    assert key({"service": "api", "environment": "prod"}) == "environment=prod/service=api"
    assert key({"service": "a/b", "environment": "c"}) != key(
        {"service": "a", "environment": "b/c"}
    )
    assert key({"service": "a=b", "environment": "c"}) != key(
        {"service": "a", "environment": "=bc"}
    )
    assert lock_key(["environment", "service"])({"service": "x", "environment": "y"}) == key(
        {"service": "x", "environment": "y"}
    )
    assert lock_key(["service"])({"service": "x"}) != lock_key(["environment"])(
        {"environment": "x"}
    )


def test_process_locks_wait_and_wake() -> None:
    locks = ProcessLocks()
    held = locks.acquire("k", 0.0)
    assert held is not None and locks.acquire("k", 0.0) is None
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(locks.acquire("k", 5.0) is not None))
    waiter.start()
    time.sleep(0.1)
    assert held.release() is True and held.release() is False
    waiter.join(5)
    assert got == [True]


def _locked_machine(tmp_path: Path, body: str, wait_s: float = 0.0) -> tuple[Any, str]:
    handlers = tmp_path / "handlers"
    handlers.mkdir(exist_ok=True)
    (handlers / "one.py").write_text(f"def act(service):\n    {body}\n")
    schema = {"properties": {"service": {"type": "string"}}, "required": ["service"]}
    tool = Tool("one", "d", schema, (Act("one:act", lock=("service",), lock_wait_s=wait_s),))
    return compile_tool(tool, handlers), lock_key(["service"])({"service": "api"})


def test_an_act_that_raises_releases_its_lock(tmp_path: Path) -> None:
    machine, name = _locked_machine(tmp_path, "raise RuntimeError('boom')")
    locks = ProcessLocks()
    failed = machine.run({"service": "api"}, given({}), CallContext(tool="one", locks=locks))
    assert isinstance(failed, Outcome) and failed.is_error and failed.acted
    held = locks.acquire(name, 0.0)
    assert held is not None and held.release()


def test_a_lock_whose_act_never_starts_is_released(tmp_path: Path) -> None:
    machine, name = _locked_machine(tmp_path, "raise AssertionError('it must not run')")
    locks = ProcessLocks()

    def claimed_elsewhere(act: Any) -> Outcome:
        # NOTE: a concurrent copy of the final round won the claim: this round never acts.
        return Outcome.from_value("recorded by the other copy", acted=True)

    ctx = CallContext(tool="one", locks=locks, once=claimed_elsewhere)
    outcome = machine.run({"service": "api"}, given({}), ctx)
    assert (
        isinstance(outcome, Outcome) and outcome.content[0]["text"] == "recorded by the other copy"
    )
    held = locks.acquire(name, 0.0)
    assert held is not None and held.release()


def test_busy_is_an_ending_without_acting(tmp_path: Path) -> None:
    machine, name = _locked_machine(tmp_path, "raise AssertionError('it must not run')")
    locks = ProcessLocks()
    holder = locks.acquire(name, 0.0)
    assert holder is not None
    outcome = machine.run({"service": "api"}, given({}), CallContext(tool="one", locks=locks))
    assert isinstance(outcome, Outcome)
    assert outcome.ending == "busy" and not outcome.acted and not outcome.is_error
    assert outcome.content[0]["text"] == (
        "The tool one did nothing: another call is acting on service api. "
        "Try again once it has finished."
    )
    holder.release()


def test_the_default_busy_text_says_how_long_it_waited(tmp_path: Path) -> None:
    machine, name = _locked_machine(tmp_path, "raise AssertionError('it must not run')", 0.2)
    locks = ProcessLocks()
    holder = locks.acquire(name, 0.0)
    assert holder is not None
    outcome = machine.run({"service": "api"}, given({}), CallContext(tool="one", locks=locks))
    assert isinstance(outcome, Outcome) and outcome.ending == "busy"
    assert outcome.content[0]["text"] == (
        "The tool one did nothing: another call is acting on service api, and still was after "
        "0.2 seconds. Try again once it has finished."
    )
    holder.release()
