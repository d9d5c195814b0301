"""Answers count only for questions this call asked: the attacks that broke v1, end to end.

Each test here failed on the first version of the host. A client (or a model) that answers a
question before it was asked, answers for a question whose text has since changed, or stuffs
``inputResponses`` with junk must never make the act run, and never make the state grow.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from host.machine import Question
from host.protocol.answers import Accepted, Ledger
from host.spec import load_project
from host.spec.model import Project
from support.helpdesk import emails, ticket
from support.legacy import Legacy, legacy_client
from support.modern import Mcp, make_client

YES = {"action": "accept", "content": {"confirm": True}}
CONFIRM_FORM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}


@pytest.fixture
def mcp(tmp_path: Path, db: Path) -> Mcp:
    return make_client(tmp_path)


# --- bug 1: a first round cannot answer its own confirm -----------------------------------------


def test_a_first_round_that_answers_the_confirm_itself_is_asked(mcp: Mcp, db: Path) -> None:
    for _ in range(3):
        result = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, responses={"close": YES}))
        assert result["resultType"] == "input_required"
        assert list(result["inputRequests"]) == ["close"]
    assert emails(db, "T-1") == 0
    assert ticket(db, "T-1")["status"] == "open"


def test_a_first_round_cannot_fill_a_form_either(mcp: Mcp, db: Path) -> None:
    answer = {"pick": {"action": "accept", "content": {"agent": "Sam"}}}
    result = mcp.result(mcp.call("assign_ticket", {"id": "T-2"}, responses=answer))
    assert result["resultType"] == "input_required"
    assert not ticket(db, "T-2")["agent"]


def test_an_answer_applies_once_it_was_asked(mcp: Mcp, db: Path) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, responses={"close": YES}))
    done = mcp.result(
        mcp.call(
            "close_ticket", {"id": "T-1"}, responses={"close": YES}, state=first["requestState"]
        )
    )
    assert done["structuredContent"] == {"id": "T-1", "closed": True}
    assert emails(db, "T-1") == 1


# --- bug 2: answers to a question whose text changed are not applied again ---------------------

TRANSFER = """
kind: server
name: bank
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: transfer
description: Move money out, after asking how much and for a yes.
input: {properties: {to: {type: string}}, required: [to]}
steps:
  - read: account
    call: bank:account
  - ask: amount
    message: "The balance is {{ account.balance }}. How much to {{ to }}?"
    form: {sum: {type: integer}}
  - confirm: sure
    message: "The balance is {{ account.balance }}. Send money to {{ to }}?"
  - act: bank:send
"""

BANK = """
import json, os

def _path():
    return os.path.join(os.environ["HOST_DATA_DIR"], "bank.json")

def account():
    if not os.path.exists(_path()):
        return {"balance": 100, "sent": []}
    with open(_path()) as f:
        return json.load(f)

def send(to, sum, account):
    account["sent"].append([to, sum])
    with open(_path(), "w") as f:
        json.dump(account, f)
    return {"sent": sum, "to": to}
"""


@pytest.fixture
def bank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    specs, handlers = tmp_path / "bank-specs", tmp_path / "bank-handlers"
    specs.mkdir()
    handlers.mkdir()
    (specs / "bank.yaml").write_text(TRANSFER)
    (handlers / "bank.py").write_text(BANK)
    monkeypatch.setenv("HOST_DATA_DIR", str(tmp_path / "data"))
    return load_project(specs, handlers)


def set_balance(tmp_path: Path, balance: int) -> None:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "bank.json").write_text(json.dumps({"balance": balance, "sent": []}))


def sent(tmp_path: Path) -> list[Any]:
    path = tmp_path / "data" / "bank.json"
    return json.loads(path.read_text())["sent"] if path.exists() else []


def test_after_the_data_changed_a_resend_without_answers_asks_again(
    tmp_path: Path, bank: Project
) -> None:
    mcp = make_client(tmp_path, bank)
    first = mcp.result(mcp.call("transfer", {"to": "eve"}))
    assert set(first["inputRequests"]) == {"amount", "sure"}
    set_balance(tmp_path, 5)
    answers = {"amount": {"action": "accept", "content": {"sum": 90}}, "sure": YES}
    second = mcp.result(
        mcp.call("transfer", {"to": "eve"}, responses=answers, state=first["requestState"])
    )
    # Both questions read differently now: both are asked again, and their old answers dropped.
    assert second["resultType"] == "input_required"
    assert set(second["inputRequests"]) == {"amount", "sure"}
    again = mcp.result(mcp.call("transfer", {"to": "eve"}, state=second["requestState"]))
    assert again["resultType"] == "input_required"
    only_amount = {"amount": {"action": "accept", "content": {"sum": 1}}}
    third = mcp.result(
        mcp.call("transfer", {"to": "eve"}, responses=only_amount, state=second["requestState"])
    )
    # The "yes" was given to another text: it is not carried to the new one.
    assert third["resultType"] == "input_required"
    assert list(third["inputRequests"]) == ["sure"]
    assert sent(tmp_path) == []
    done = mcp.result(
        mcp.call("transfer", {"to": "eve"}, responses={"sure": YES}, state=third["requestState"])
    )
    assert done["structuredContent"] == {"sent": 1, "to": "eve"}
    assert sent(tmp_path) == [["eve", 1]]


def test_the_fallback_tool_never_applies_a_stale_answer(tmp_path: Path, bank: Project) -> None:
    legacy: Legacy = legacy_client(tmp_path, project=bank)
    legacy.initialize("2025-03-26", {})

    def eid(result: dict[str, Any]) -> tuple[str, str]:
        question = json.loads(result["content"][1]["text"])
        return question["elicitationId"], question["message"]

    def send(elicitation: str, action: str, content: Any = None) -> dict[str, Any]:
        arguments: dict[str, Any] = {"elicitationId": elicitation, "action": action}
        if content is not None:
            arguments["content"] = content
        return legacy.call("sendElicitationResult", arguments)

    amount, _ = eid(legacy.call("transfer", {"to": "eve"}))
    sure, _ = eid(send(amount, "accept", {"sum": 90}))
    set_balance(tmp_path, 5)
    amount2, message = eid(send(sure, "accept", {"confirm": True}))
    assert "balance is 5" in message
    # The user now answers only the re-asked amount; the old yes must not confirm the new text.
    sure2, message = eid(send(amount2, "accept", {"sum": 1}))
    assert message.startswith("The balance is 5. Send money")
    assert sent(tmp_path) == []
    done = send(sure2, "accept", {"confirm": True})
    assert json.loads(done["content"][0]["text"]) == {"sent": 1, "to": "eve"}


# --- bug 3: junk in inputResponses neither crashes nor travels ---------------------------------


@pytest.mark.parametrize(
    "junk",
    [
        {"zz": True},
        {"zz": None, "close": "yes"},
        {"close": ["accept"]},
        {"": {}, "close": {"action": "accept", "content": "yes"}},
    ],
)
def test_junk_on_a_first_round_is_ignored(mcp: Mcp, junk: dict[str, Any]) -> None:
    result = mcp.result(mcp.call("close_ticket", {"id": "T-1"}, responses=junk))
    assert result["resultType"] == "input_required"


def test_junk_is_never_sealed_into_the_state(mcp: Mcp, db: Path) -> None:
    bulk = "x" * 700_000
    first = mcp.result(
        mcp.call(
            "close_ticket", {"id": "T-1"}, responses={f"k{i}": bulk[:1000] for i in range(500)}
        )
    )
    assert len(first["requestState"]) < 1_000
    stuffed = {"action": "accept", "content": {"confirm": False, "extra": bulk[:300_000]}}
    unasked = {"zz": {"action": "accept", "content": {"x": bulk[:300_000]}}}
    second = mcp.result(
        mcp.call(
            "close_ticket",
            {"id": "T-1"},
            responses={"close": stuffed, **unasked},
            state=first["requestState"],
        )
    )
    assert second["resultType"] == "complete"  # unticked: the call ends, nothing carried
    assert emails(db, "T-1") == 0
    third = mcp.call(
        "assign_ticket", {"id": "T-2"}, responses={"pick": {"action": "accept", "content": 5}}
    )
    assert mcp.result(third)["resultType"] == "input_required"


def test_a_state_carries_only_the_fields_of_the_form(tmp_path: Path, bank: Project) -> None:
    mcp = make_client(tmp_path, bank)
    first = mcp.result(mcp.call("transfer", {"to": "eve"}))
    answers = {
        "amount": {"action": "accept", "content": {"sum": 3, "padding": "y" * 50_000}},
        "zz": {"action": "accept", "content": {"x": "z" * 50_000}},
    }
    second = mcp.result(
        mcp.call("transfer", {"to": "eve"}, responses=answers, state=first["requestState"])
    )
    assert second["resultType"] == "input_required" and list(second["inputRequests"]) == ["sure"]
    token = second["requestState"]
    assert len(token) < 1_000
    payload = token.split(".")[0]
    assert "padding" not in base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


def test_a_malformed_answer_to_an_asked_question_is_an_error(mcp: Mcp) -> None:
    first = mcp.result(mcp.call("close_ticket", {"id": "T-1"}))
    for bad in ({"action": "accept", "content": {"confirm": "yes"}}, {"action": "maybe"}, 7):
        error = mcp.call(
            "close_ticket", {"id": "T-1"}, responses={"close": bad}, state=first["requestState"]
        )
        assert error.status_code == 400
        assert error.json["error"]["code"] == -32602


# --- the ledger on its own ---------------------------------------------------------------------


def question(key: str, text: str) -> Question:
    return Question(key, text, CONFIRM_FORM)


def test_the_ledger_takes_only_answers_to_what_the_last_round_asked() -> None:
    asked = Ledger.start().next([question("a", "A?"), question("b", "B?")])
    assert asked.round == 2 and set(asked.asked) == {"a", "b"}
    took = asked.take({"a": YES, "zz": YES, "b": "junk"}, lambda key: frozenset({"confirm"}))
    assert set(took.accepted) == {"a", "b"}
    assert took.answer_for(question("a", "A?")) == YES
    assert took.answer_for(question("a", "A changed?")) is None
    assert took.answer_for(question("b", "B?")) == {"action": None}  # the machine rejects it


def test_asking_again_drops_the_old_answer() -> None:
    ledger = Ledger("n", 3, {}, {"a": Accepted("old", dict(YES)), "b": Accepted("x", dict(YES))})
    again = ledger.next([question("a", "A, new text?")])
    assert "a" not in again.accepted and "b" in again.accepted
    assert ledger.stale([question("a", "A, new text?"), question("c", "C?")]) == ("a",)


def test_a_first_round_ledger_takes_nothing() -> None:
    start = Ledger.start()
    assert start.take({"a": YES}, lambda key: frozenset({"confirm"})) is start
    assert start.answer_for(question("a", "A?")) is None


def test_the_ledger_round_trips_through_its_payload() -> None:
    ledger = Ledger("n", 4, {"a": "d"}, {"b": Accepted("e", {"action": "decline"})})
    assert Ledger.from_payload(json.loads(json.dumps(ledger.to_payload()))) == ledger
    for bad in (None, [], {"n": 1, "r": 1, "k": {}, "a": {}}, {"n": "n", "r": 0, "k": {}, "a": {}}):
        with pytest.raises(ValueError):
            Ledger.from_payload(bad)
