"""The audit chain on a real SQLite file and a real Redis: what ``host audit verify`` catches.

Someone with write access to the store edits a record (and then recomputes its hash), deletes one,
inserts a forged one (renumbering the rest) or swaps two: ``verify`` exits 1 naming each. Four
processes (two "workers" of two "instances") append to one Redis chain at once, batches and act
claims mixed: the chain has no gap and verifies. Checkpoints verify with the public key alone
and fail with another; pruning keeps the chain verifiable.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from host.cli import main
from host.store import ActClaim, open_store
from host.store.chain import canonical
from host.store.records import ACTED, ENDED, AuditRecord
from host.store.signing import Signer
from support.redis import redis_exe, start_redis
from support.servers import stop

pytestmark = pytest.mark.served

KEY = Signer.derived("s" * 32)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module's own: its tests tamper with the chain."""
    proc, port = start_redis(redis_exe(), tmp_path_factory.mktemp("chain-redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc, 5)


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        given = str(request.getfixturevalue("redis_url"))
        import redis

        redis.Redis.from_url(given).flushdb()
        return given
    return f"sqlite:///{tmp_path / 'store.db'}"


def record(n: int, outcome: str = "acted") -> AuditRecord:
    return AuditRecord(
        f"call-{n}", time.time(), "alice", "restart", outcome,
        arguments={"service": f"svc-{n}"}, acted=outcome == "acted", duration_s=0.01,
    )  # fmt: skip


def written(url: str, count: int = 10, every: int = 4) -> None:
    """``count`` records, a checkpoint after the first and every ``every`` entries."""
    store = open_store(url)
    try:
        store.sign_checkpoints(KEY, every=every)
        for n in range(1, count + 1):
            store.write_audits([(record(n), ACTED)], keep_s=3600)
    finally:
        store.close()


def verify(capsys: pytest.CaptureFixture[str], url: str, *more: str) -> tuple[int, str]:
    code = main(["audit", "verify", "--store", url, *more])
    out, err = capsys.readouterr()
    return code, out + err


class Rows:
    """The chain's rows in either backend, to tamper with as an attacker would."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("redis"):
            import redis

            self.r: Any = redis.Redis.from_url(url, decode_responses=True)
        else:
            import sqlite3

            self.db = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)

    def get(self, seq: int) -> tuple[str, str]:
        if self.url.startswith("redis"):
            found = self.r.hmget(f"host:au:c:{seq}", "body", "hash")
            return found[0], found[1]
        row = self.db.execute(
            "SELECT body, hash FROM store_audit_chain WHERE seq = ?", (seq,)
        ).fetchone()
        return row[0], row[1]

    def put(self, seq: int, body: str, hash_: str) -> None:
        if self.url.startswith("redis"):
            self.r.hset(f"host:au:c:{seq}", mapping={"body": body, "hash": hash_})
            return
        self.db.execute(
            "INSERT OR REPLACE INTO store_audit_chain (seq, id, at, principal, tool, rank, kind,"
            " body, hash) VALUES (?, 'x', 0, 'x', 'x', 2, 'call', ?, ?)",
            (seq, body, hash_),
        )

    def delete(self, seq: int) -> None:
        if self.url.startswith("redis"):
            self.r.delete(f"host:au:c:{seq}")
        else:
            self.db.execute("DELETE FROM store_audit_chain WHERE seq = ?", (seq,))

    def last(self) -> int:
        if self.url.startswith("redis"):
            return int(self.r.hget("host:au:head", "seq"))
        return int(self.db.execute("SELECT MAX(seq) FROM store_audit_chain").fetchone()[0])


def sealed(entry: dict[str, Any]) -> tuple[str, str]:
    body = canonical(entry).decode()
    return body, hashlib.sha256(body.encode()).hexdigest()


def edit(rows: Rows) -> None:
    body, hash_ = rows.get(5)
    rows.put(5, body.replace('"outcome":"acted"', '"outcome":"declined"'), hash_)


def edit_and_rehash(rows: Rows) -> None:
    entry = json.loads(rows.get(5)[0])
    entry["outcome"] = "declined"
    rows.put(5, *sealed(entry))


def delete(rows: Rows) -> None:
    rows.delete(5)


def insert(rows: Rows) -> None:
    # A forged record at seq 5 that links to seq 4, with every later record moved up by one.
    for seq in range(rows.last(), 4, -1):
        rows.put(seq + 1, *rows.get(seq))
    entry = json.loads(rows.get(4)[0])
    entry.update(seq=5, prev=rows.get(4)[1], id="forged", outcome="acted")
    rows.put(5, *sealed(entry))
    if rows.url.startswith("redis"):
        rows.r.hincrby("host:au:head", "seq", 1)


def delete_newest(rows: Rows) -> None:
    rows.delete(rows.last())


def reorder(rows: Rows) -> None:
    five, six = rows.get(5), rows.get(6)
    rows.put(5, *six)
    rows.put(6, *five)


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (edit, "seq 5 was edited: its text no longer has its hash"),
        (edit_and_rehash, "seq 5 was edited: its hash was recomputed, and seq 6 no longer links"),
        (delete, "seq 5 deleted: the record after seq 4 is seq 6"),
        (insert, "a record was inserted at seq 5"),
        (reorder, "records were reordered: seq 6 comes before seq 5"),
        (delete_newest, "seq 13 deleted: the chain's head is seq 13"),
    ],
)
def test_verify_names_the_first_record_tampered_with(
    url: str, capsys: pytest.CaptureFixture[str], tamper: Callable[[Rows], None], named: str
) -> None:
    written(url)
    code, said = verify(capsys, url)
    assert code == 0 and "chain intact from seq 1 to 13" in said, said

    tamper(Rows(url))

    code, said = verify(capsys, url)
    assert code == 1, said
    assert named in said, said


def test_checkpoints_verify_with_the_public_key_alone(
    url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written(url)
    public = tmp_path / "audit.pub"
    public.write_text(KEY.public_pem())
    other = tmp_path / "other.pub"
    other.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )

    code, said = verify(capsys, url, "--public-key", str(public))
    assert code == 0 and f"3 checkpoints signed by key {KEY.key_id}" in said, said

    code, said = verify(capsys, url, "--public-key", str(other))
    assert code == 1
    assert "the checkpoint at seq 2 does not verify with the public key given" in said


def test_pruning_keeps_the_chain_verifiable(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    written(url)
    cutoff = time.time() + 0.01
    while time.time() <= cutoff:
        time.sleep(0.005)
    written(url, 3)
    store = open_store(url)
    try:
        assert store.prune_audit(cutoff) == 11  # everything before the last old checkpoint
        first = store.audit_entries(limit=1)[0]
    finally:
        store.close()
    assert '"kind":"checkpoint"' in first[1]

    code, said = verify(capsys, url)
    assert code == 0 and f"chain intact from seq {first[0]} to" in said, said

    Rows(url).delete(first[0])  # the checkpoint that starts it
    code, said = verify(capsys, url)
    assert code == 1 and "were deleted: the trail starts at seq" in said


def _writer(url: str, name: str, count: int) -> None:
    """One process: batches of records, and act claims that append their record."""
    store = open_store(url)
    try:
        store.sign_checkpoints(KEY, every=25)
        for n in range(count):
            if n % 3 == 0:
                claim = store.claim_act(
                    f"{name}-act-{n}", ttl_s=30, incident=f"i-{n}",
                    audit=(AuditRecord(f"{name}-act-{n}", time.time(), name, "t", "incident"),
                           3600),
                )  # fmt: skip
                assert isinstance(claim, ActClaim)
                claim.record("done")
            else:
                batch = [(AuditRecord(f"{name}-{n}-{k}", time.time(), name, "t", "acted"), ENDED)
                         for k in range(3)]  # fmt: skip
                store.write_audits(batch, keep_s=3600)
    finally:
        store.close()


def test_two_workers_of_two_instances_write_one_chain_at_once(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(target=_writer, args=(redis_url, f"host{h}-w{w}", 30))
        for h in (1, 2)
        for w in (1, 2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0

    code, said = verify(capsys, redis_url)
    assert code == 0, said
    store = open_store(redis_url)
    try:
        seqs = []
        after = 0
        while page := store.audit_entries(after=after, limit=500):
            seqs += [seq for seq, _, _ in page]
            after = page[-1][0]
        calls = store.audit_records(limit=1000)
    finally:
        store.close()
    assert seqs == list(range(1, len(seqs) + 1))  # no gap
    assert len(calls) == 4 * (10 + 20 * 3)  # every record of every process


V3_SCHEMA = """
CREATE TABLE store_audit (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, at REAL NOT NULL,
  principal TEXT NOT NULL, tool TEXT NOT NULL, rank INTEGER NOT NULL, body TEXT NOT NULL);
"""


def test_a_store_written_before_the_chain_is_chained_once_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    path = tmp_path / "store.db"
    with sqlite3.connect(path) as db:
        db.executescript(V3_SCHEMA)
        db.executemany(
            "INSERT INTO store_audit (id, at, principal, tool, rank, body) VALUES (?,?,?,?,?,?)",
            [(f"v3-{n}", 1.7e9 + n, "alice", "t", ACTED, record(n).body()) for n in range(3)],
        )
    url = f"sqlite:///{path}"
    written(url, 2)

    code, said = verify(capsys, url)
    assert code == 0 and "chain intact from seq 1 to" in said, said
    store = open_store(url)
    try:
        ids = [json.loads(body)["id"] for _, body, _ in store.audit_entries(limit=100)]
    finally:
        store.close()
    assert ids[:3] == ["v3-0", "v3-1", "v3-2"]


def test_a_redis_record_written_before_the_chain_still_reads(redis_url: str) -> None:
    import redis

    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    raw.flushdb()
    old = record(1)
    raw.hset("host:au:v3-call", mapping={"rank": ACTED, "at": repr(old.time),
             "principal": "alice", "tool": "restart", "body": old.body()})  # fmt: skip
    raw.zadd("host:au:all", {"v3-call": old.time})
    written(redis_url, 1)
    store = open_store(redis_url)
    try:
        found = {r.id: r for r in store.audit_records()}
    finally:
        store.close()
    assert found["v3-call"].arguments == {"service": "svc-1"} and found["v3-call"].seq is None
    assert found["call-1"].seq == 1
