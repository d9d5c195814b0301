"""Approvals and audit records in the store: the same behaviour from SQLite and from Redis.

One redis-server serves the whole session, so every test names its own principals and tools
(``key`` is unique per test).
"""

from __future__ import annotations

import threading
import time

import pytest

from host.store import Store, open_store
from host.store.records import ACTED, ENDED, AuditRecord, approval_id

# -- approvals --------------------------------------------------------------------------------


def test_a_granted_approval_is_found_by_its_id_until_it_expires(store: Store, key: str) -> None:
    granted = store.grant_approval(f"{key}-alice", "restart", "confirm_it", "api/prod", 0.5)

    assert granted.id == approval_id(f"{key}-alice", "restart", "confirm_it", "api/prod")
    assert store.find_approval(granted.id) == granted
    assert granted.expires == pytest.approx(granted.granted + 0.5)
    time.sleep(0.6)
    assert store.find_approval(granted.id) is None
    assert store.approvals(principal=f"{key}-alice") == []


def test_an_approval_belongs_to_its_principal_tool_question_and_key(store: Store, key: str) -> None:
    store.grant_approval(f"{key}-alice", "restart", "go", "api", 60)

    for other in (
        approval_id(f"{key}-bob", "restart", "go", "api"),
        approval_id(f"{key}-alice", "deploy", "go", "api"),
        approval_id(f"{key}-alice", "restart", "again", "api"),
        approval_id(f"{key}-alice", "restart", "go", "web"),
    ):
        assert store.find_approval(other) is None


def test_a_new_yes_starts_a_new_duration(store: Store, key: str) -> None:
    first = store.grant_approval(key, "t", "q", "k", 0.3)
    second = store.grant_approval(key, "t", "q", "k", 60)

    assert second.id == first.id
    time.sleep(0.4)
    assert store.find_approval(first.id) == second
    assert [a.id for a in store.approvals(principal=key)] == [first.id]


def test_approvals_are_listed_and_revoked_by_id_principal_or_tool(store: Store, key: str) -> None:
    alice, bob = f"{key}-alice", f"{key}-bob"
    a1 = store.grant_approval(alice, f"{key}-restart", "q", "api", 60)
    a2 = store.grant_approval(alice, f"{key}-deploy", "q", "api", 60)
    b1 = store.grant_approval(bob, f"{key}-restart", "q", "api", 60)

    assert store.approvals(principal=alice) == [a1, a2]
    assert store.approvals(tool=f"{key}-restart") == [a1, b1]
    assert store.approvals(principal=bob, tool=f"{key}-deploy") == []

    assert store.revoke_approvals(approval=a2.id) == 1
    assert store.revoke_approvals(approval=a2.id) == 0
    assert store.find_approval(a2.id) is None
    assert store.revoke_approvals(tool=f"{key}-restart", principal=bob) == 1
    assert store.approvals(tool=f"{key}-restart") == [a1]
    assert store.revoke_approvals(principal=alice) == 1
    assert store.approvals(principal=alice) == []


def test_revoking_needs_something_to_match(store: Store) -> None:
    with pytest.raises(ValueError, match="needs an approval id"):
        store.revoke_approvals()


def test_approvals_survive_reopening_the_store(store_url: str, key: str) -> None:
    first = open_store(store_url)
    granted = first.grant_approval(key, "t", "q", "k", 60)
    first.close()
    again = open_store(store_url)
    try:
        assert again.find_approval(granted.id) == granted
    finally:
        again.close()


# -- audit records ------------------------------------------------------------------------------


def _record(call: str, tool: str, principal: str, at: float, outcome: str = "acted") -> AuditRecord:
    return AuditRecord(
        call,
        at,
        principal,
        tool,
        outcome,
        arguments={"id": "T-1"},
        answers={"close": {"action": "accept", "content": {"confirm": True}}},
        approvals=({"question": "close", "via": "asked"},),
        acted=outcome == "acted",
        duration_s=0.25,
    )


def test_an_audit_record_reads_back_as_written(store: Store, key: str) -> None:
    record = _record(f"{key}-1", key, "alice", time.time())

    assert store.write_audit(record, rank=ACTED, keep_s=3600)
    assert store.audit_records(tool=key) == [record]


def test_one_record_per_call_and_the_acting_round_wins(store: Store, key: str) -> None:
    now = time.time()
    replay = _record(f"{key}-c", key, "alice", now, outcome="incident")
    acted = _record(f"{key}-c", key, "alice", now + 1)

    assert store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert not store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert store.write_audit(acted, rank=ACTED, keep_s=3600)
    assert not store.write_audit(replay, rank=ENDED, keep_s=3600)
    assert store.audit_records(tool=key) == [acted]


def test_concurrent_writers_of_one_call_leave_one_record(store: Store, key: str) -> None:
    start = threading.Barrier(20)

    def write(n: int) -> None:
        start.wait()
        store.write_audit(
            _record(f"{key}-same", key, f"p{n}", time.time()), rank=ENDED, keep_s=3600
        )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.audit_records(tool=key)) == 1


def test_audit_records_are_filtered_newest_first(store: Store, key: str) -> None:
    now = time.time()
    tool, other = f"{key}-close", f"{key}-assign"
    written = [
        _record(f"{key}-1", tool, f"{key}-alice", now - 7200),
        _record(f"{key}-2", other, f"{key}-alice", now - 60),
        _record(f"{key}-3", tool, f"{key}-bob", now - 30),
        _record(f"{key}-4", tool, f"{key}-alice", now - 10),
    ]
    for record in written:
        store.write_audit(record, rank=ACTED, keep_s=86400)

    def ids(**filters: object) -> list[str]:
        return [r.id[len(key) + 1 :] for r in store.audit_records(**filters)]  # type: ignore[arg-type]

    assert ids(tool=tool) == ["4", "3", "1"]
    assert ids(principal=f"{key}-alice") == ["4", "2", "1"]
    assert ids(tool=tool, principal=f"{key}-alice") == ["4", "1"]
    assert ids(tool=tool, since=now - 3600) == ["4", "3"]
    assert ids(tool=tool, limit=1) == ["4"]
    assert ids(principal=f"{key}-alice", tool=tool, since=now - 20, limit=5) == ["4"]


def test_pruning_deletes_what_is_older_than_the_cutoff(store: Store, key: str) -> None:
    now = time.time()
    store.write_audit(_record(f"{key}-old", key, "alice", now - 100), rank=ACTED, keep_s=3600)
    store.write_audit(_record(f"{key}-new", key, "alice", now), rank=ACTED, keep_s=3600)

    assert store.prune_audit(now - 50) >= 1
    assert [r.id for r in store.audit_records(tool=key)] == [f"{key}-new"]
    assert store.audit_records(principal="alice", since=now - 1, limit=1000)


def test_a_bad_limit_is_a_programming_error(store: Store) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.audit_records(limit=0)
