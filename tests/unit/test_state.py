"""The requestState sealer on its own: round trips, bindings, expiry, key rotation, garbage."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from itsdangerous import Serializer, Signer, URLSafeSerializer

from host.errors import ProtocolError
from host.protocol.answers import Accepted, Ledger
from host.protocol.digests import canonical_json, digest
from host.protocol.modern.state import Binding, StateSealer
from host.protocol.seal import _CompactJson

BINDING = Binding("anonymous", "close_ticket", {"id": "T-1"})
STATE = Ledger(
    nonce="n0nce",
    round=3,
    asked={"close": "qd"},
    accepted={"pick": Accepted("pd", {"action": "accept", "content": {"agent": "Priya"}})},
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def rejected(sealer: StateSealer, token: Any, binding: Binding = BINDING) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        sealer.open(token, binding)
    assert info.value.code == -32602
    assert info.value.message == "Invalid or expired requestState"
    assert info.value.data is None
    assert info.value.http_status == 400
    return info.value


def test_a_sealed_state_opens_to_what_was_sealed() -> None:
    sealer = StateSealer(["k"], 600)
    assert sealer.open(sealer.seal(STATE, BINDING), BINDING) == STATE


def test_the_state_is_compact_and_url_safe() -> None:
    token = StateSealer(["k"], 600).seal(STATE, BINDING)
    # Compact JSON in base64 without compression: a few hundred characters for a typical call.
    assert len(token) < 400
    assert all(c.isalnum() or c in "-_." for c in token)


def test_argument_order_does_not_matter_but_values_do() -> None:
    sealer = StateSealer(["k"], 600)
    args = {"id": "T-1", "agent": "Sam"}
    token = sealer.seal(STATE, Binding("anonymous", "assign_ticket", args))
    reordered = Binding("anonymous", "assign_ticket", {"agent": "Sam", "id": "T-1"})
    assert sealer.open(token, reordered) == STATE
    rejected(sealer, token, Binding("anonymous", "assign_ticket", {"agent": "Nour", "id": "T-1"}))
    rejected(sealer, token, Binding("anonymous", "assign_ticket", {"id": "T-1"}))


@pytest.mark.parametrize(
    "other",
    [
        Binding("mallory", "close_ticket", {"id": "T-1"}),
        Binding("anonymous", "delete_ticket", {"id": "T-1"}),
        Binding("anonymous", "close_ticket", {"id": "T-2"}),
    ],
    ids=["other-caller", "other-tool", "other-arguments"],
)
def test_a_state_is_bound_to_caller_tool_and_arguments(
    other: Binding, caplog: pytest.LogCaptureFixture
) -> None:
    sealer = StateSealer(["k"], 600)
    token = sealer.seal(STATE, BINDING)
    rejected(sealer, token, other)
    (record,) = [r for r in caplog.records if r.name == "host.protocol.state"]
    assert record.levelname == "WARNING"
    assert record.__dict__["reason"].startswith("bound to")


def test_a_state_expires_after_its_ttl() -> None:
    clock = Clock()
    sealer = StateSealer(["k"], 600, clock=clock)
    token = sealer.seal(STATE, BINDING)
    clock.now += 599
    assert sealer.open(token, BINDING) == STATE
    clock.now += 2
    rejected(sealer, token)


def test_the_first_key_signs_and_every_key_verifies() -> None:
    old = StateSealer(["old"], 600)
    rotating = StateSealer(["new", "old"], 600)
    new = StateSealer(["new"], 600)
    old_token = old.seal(STATE, BINDING)
    assert rotating.open(old_token, BINDING) == STATE  # the old key still verifies
    rotated_token = rotating.seal(STATE, BINDING)
    assert new.open(rotated_token, BINDING) == STATE  # signed with the new (first) key
    rejected(old, rotated_token)
    rejected(new, old_token)  # retired keys verify nothing


def test_a_tampered_state_is_rejected() -> None:
    sealer = StateSealer(["k"], 600)
    token = sealer.seal(STATE, BINDING)
    for i in (0, len(token) // 2, len(token) - 1):
        # NOTE: the last base64 character of a signature carries padding bits; swapping
        # between characters that differ in the high bits always changes the bytes.
        flipped = token[:i] + ("Q" if token[i] in "ABCD" else "A") + token[i + 1 :]
        rejected(sealer, flipped)


@pytest.mark.parametrize(
    "garbage",
    ["", "garbage", "a.b", 42, None, {"state": 1}, ["x"], "x" * 100_000, "é" * 10],
)
def test_garbage_is_rejected_with_the_same_error(garbage: Any) -> None:
    rejected(StateSealer(["k"], 600), garbage)


def test_a_signed_payload_of_the_wrong_shape_is_rejected() -> None:
    # Signed with the right key and salt: only the payload's shape is wrong.
    sealer = StateSealer(["k"], 600)
    serializer: Serializer[str] = Serializer(
        ["k"],
        salt="host.requestState.v2",
        serializer=_CompactJson,
        signer_kwargs={"digest_method": hashlib.sha256},
    )
    good = sealer.seal(STATE, BINDING)
    payload = serializer.loads(good)
    ledger = payload["l"]
    for change in (
        {"l": {**ledger, "a": ["not", "a", "mapping"]}},
        {"l": {**ledger, "k": "close"}},
        {"l": {**ledger, "r": 0}},
        {"l": {**ledger, "a": {"pick": ["pd"]}}},
        {"l": "ledger"},
        {"x": "later"},
    ):
        token = serializer.dumps({**payload, **change})
        rejected(sealer, token)
    missing = {k: v for k, v in payload.items() if k != "l"}
    rejected(sealer, serializer.dumps(missing))
    no_nonce = {**payload, "l": {k: v for k, v in ledger.items() if k != "n"}}
    rejected(sealer, serializer.dumps(no_nonce))
    rejected(sealer, serializer.dumps(["a", "list"]))


def test_a_state_signed_for_another_purpose_is_rejected() -> None:
    other = URLSafeSerializer(["k"], salt="something-else")
    rejected(StateSealer(["k"], 600), other.dumps({"v": 1}))


def test_sealer_refuses_bad_configuration() -> None:
    with pytest.raises(ValueError):
        StateSealer([], 600)
    with pytest.raises(ValueError):
        StateSealer([""], 600)
    with pytest.raises(ValueError):
        StateSealer(["k"], 0)


def test_digest_is_canonical() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    assert digest({"a": 1}) != digest({"a": "1"})
    assert len(digest("x")) == 22


def test_tokens_are_itsdangerous_own_both_ways() -> None:
    """States sealed before the signer took its shortcuts open after, and the other way round."""
    stock = Signer(["old", "new"], salt="host.requestState.v2", digest_method=hashlib.sha256)
    sealer = StateSealer(["new", "old"], 600)

    token = sealer.seal(STATE, BINDING)
    body = stock.unsign(token)  # the stock signer verifies the host's signature
    assert sealer.open(stock.sign(body).decode(), BINDING) == STATE  # and the other way
    old_only = Signer(["old"], salt="host.requestState.v2", digest_method=hashlib.sha256)
    assert sealer.open(old_only.sign(body).decode(), BINDING) == STATE  # every key verifies
