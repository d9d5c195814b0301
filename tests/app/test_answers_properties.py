"""Property: whatever a client sends, in whatever order, the act runs only when it should.

Hypothesis drives a two-question tool (``pick`` a choice, then ``go`` confirm it) with arbitrary
rounds: first rounds carrying answers, answers under keys never asked, wrong types and actions,
answers sent to earlier (replayed or reordered) rounds, and the data the questions show changing
between rounds. The oracle records what the host asked (and with which text) and what the client
answered to each question it was asked; whenever the act runs it checks that:

* the call asked ``pick`` and ``go`` with exactly the texts they have when the act runs, and the
  client answered those very texts with the values the act got;
* the call's act never ran before (at most once per call, however often a round is replayed);
* nothing the client sent beyond the asked questions is carried into the next round.

The same oracle runs against the core (:class:`host.protocol.ToolHost`, ledgers in memory) and
against the WSGI app (ledgers sealed into ``requestState``). Both are seeded and bounded, so CI
runs the same examples every time.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from host.errors import ProtocolError
from host.machine import compile_project
from host.protocol import Asked, Call, Ledger, RequestContext, ToolHost
from host.spec import load_project
from host.spec.model import Project
from host.store import open_store
from host.web.app import create_app
from support.helpdesk import settings_for
from support.modern import Mcp

SPECS = """
kind: server
name: props
version: "1"
elicitation: {enabled: true}
---
kind: tool
name: op
description: Pick, confirm, act.
input: {properties: {target: {type: string}}, required: [target]}
steps:
  - read: world
    call: w:world
  - ask: pick
    message: "World {{ world.v }}: which for {{ target }}?"
    form: {choice: {type: string, enum: [a, b]}}
  - confirm: go
    message: "World {{ world.v }}: do {{ choice }} to {{ target }}?"
  - act: w:act
"""

HANDLERS = """
STATE = {"v": 0}
ACTS = []

def world():
    return {"v": STATE["v"]}

def act(target, choice, world):
    ACTS.append({"target": target, "choice": choice, "v": world["v"]})
    return {"done": choice}
"""

TARGET = "t1"

ANSWERS = st.sampled_from(
    [
        {"action": "accept", "content": {"choice": "a"}},
        {"action": "accept", "content": {"choice": "b"}},
        {"action": "accept", "content": {"choice": "b", "extra": "x" * 50}},
        {"action": "accept", "content": {"confirm": True}},
        {"action": "accept", "content": {"confirm": False}},
        {"action": "accept", "content": {"choice": 7}},
        {"action": "accept", "content": "yes"},
        {"action": "accept"},
        {"action": "decline"},
        {"action": "cancel"},
        {"action": "maybe"},
        True,
        None,
        "accept",
        ["accept"],
    ]
)
RESPONSES = st.dictionaries(st.sampled_from(["pick", "go", "zz", ""]), ANSWERS, max_size=3)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("change")),
        st.tuples(st.just("round"), st.integers(-1, 12), RESPONSES),
    ),
    max_size=25,
)


@dataclass(frozen=True)
class Issued:
    """A round's questions as the host asked them, and how to answer that round."""

    nonce: str
    texts: dict[str, str]
    token: Any


@dataclass
class Oracle:
    """What the host asked and what the client answered, per call."""

    issued: list[Issued] = field(default_factory=list)
    answered: set[tuple[str, str, str, str]] = field(default_factory=set)
    acted: set[str] = field(default_factory=set)

    def send(self, source: Issued | None, responses: dict[str, Any]) -> None:
        if source is None:
            return
        for key, answer in responses.items():
            if key in source.texts:
                text = source.texts[key]
                self.answered.add((source.nonce, key, text, json.dumps(answer, sort_keys=True)))

    def was_answered(self, nonce: str, key: str, text: str, accepts: Callable[[Any], bool]) -> bool:
        return any(
            n == nonce and k == key and t == text and accepts(json.loads(a))
            for n, k, t, a in self.answered
        )

    def check_act(self, nonce: str | None, act: dict[str, Any]) -> None:
        assert nonce is not None, "a first round acted"
        v, choice = act["v"], act["choice"]
        pick = f"World {v}: which for {TARGET}?"
        go = f"World {v}: do {choice} to {TARGET}?"
        assert self.was_answered(nonce, "pick", pick, lambda a: _accepts(a, "choice", choice))
        assert self.was_answered(nonce, "go", go, lambda a: _accepts(a, "confirm", True))
        assert nonce not in self.acted, "the act ran twice for one call"
        self.acted.add(nonce)


def _accepts(answer: Any, field_name: str, value: Any) -> bool:
    return (
        isinstance(answer, dict)
        and answer.get("action") == "accept"
        and isinstance(answer.get("content"), dict)
        and answer["content"].get(field_name) == value
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("props")
    (root / "specs").mkdir()
    (root / "handlers").mkdir()
    (root / "specs" / "op.yaml").write_text(SPECS)
    (root / "handlers" / "w.py").write_text(HANDLERS)
    return load_project(root / "specs", root / "handlers")


def handler_globals(project: Project) -> dict[str, Any]:
    machine = compile_project(project)["op"]
    globals_: dict[str, Any] = machine.act.function.__globals__
    return globals_


class CoreDriver:
    """Rounds straight through the core: ledgers stay in memory."""

    def __init__(self, project: Project, folder: Path) -> None:
        machines = compile_project(project)
        self.machine = machines["op"]
        store = open_store(f"sqlite:///{folder / 'store.db'}")
        self.host = ToolHost(project.server, machines, store, data_dir=folder, observers=())

    def round(self, source: Issued | None, responses: dict[str, Any]) -> Issued | None:
        ledger = source.token if source is not None else Ledger.start()
        call = Call(self.machine, {"target": TARGET}, RequestContext(), ledger, responses)
        step = self.host.advance(call)
        if not isinstance(step, Asked):
            return None
        carried = step.ledger
        assert set(carried.accepted) <= {"pick", "go"}, "an unasked key was carried"
        assert len(json.dumps(carried.to_payload())) < 600, "the ledger grew"
        return Issued(carried.nonce, {q.key: q.message for q in step.questions}, carried)


class HttpDriver:
    """Rounds through the WSGI app: ledgers sealed into ``requestState``."""

    def __init__(self, project: Project, folder: Path) -> None:
        app = create_app(settings=settings_for(folder), project=project)
        self.mcp = Mcp(falcon.testing.TestClient(app))

    def round(self, source: Issued | None, responses: dict[str, Any]) -> Issued | None:
        state = source.token if source is not None else None
        response = self.mcp.call("op", {"target": TARGET}, responses=responses, state=state)
        if response.status_code == 400:
            assert response.json["error"]["code"] == -32602
            raise ProtocolError(-32602, response.json["error"]["message"])
        result = self.mcp.result(response)
        if result["resultType"] != "input_required":
            return None
        token = result["requestState"]
        assert len(token) < 1_000, "the state grew"
        payload = token.split(".")[0]
        sealed = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        assert set(sealed["l"]["a"]) <= {"pick", "go"}, "an unasked key was carried"
        texts = {k: r["params"]["message"] for k, r in result["inputRequests"].items()}
        return Issued(sealed["l"]["n"], texts, token)


def play(driver: CoreDriver | HttpDriver, project: Project, operations: list[Any]) -> None:
    """Run ``operations`` against ``driver``, checking the oracle after every round."""
    handlers = handler_globals(project)
    handlers["STATE"]["v"] = 0
    acts: list[dict[str, Any]] = handlers["ACTS"]
    acts.clear()
    oracle = Oracle()
    for operation in operations:
        if operation[0] == "change":
            handlers["STATE"]["v"] += 1
            continue
        _, index, responses = operation
        source = oracle.issued[index] if 0 <= index < len(oracle.issued) else None
        oracle.send(source, responses)
        before = len(acts)
        try:
            issued = driver.round(source, responses)
        except ProtocolError as exc:
            assert exc.code == -32602  # a malformed answer to an asked question
            issued = None
        assert len(acts) - before <= 1
        if len(acts) > before:
            oracle.check_act(source.nonce if source else None, acts[-1])
        if issued is not None:
            oracle.issued.append(issued)


# NOTE: one driver (and one store) serves every example: each call has a fresh random nonce,
# so examples cannot see each other's records, and the run stays short.


@pytest.fixture(scope="module")
def core(project: Project, tmp_path_factory: pytest.TempPathFactory) -> CoreDriver:
    return CoreDriver(project, tmp_path_factory.mktemp("core"))


@pytest.fixture(scope="module")
def app(project: Project, tmp_path_factory: pytest.TempPathFactory) -> HttpDriver:
    return HttpDriver(project, tmp_path_factory.mktemp("app"))


@seed(20261201)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_the_core_acts_only_on_answers_to_what_it_asked(
    core: CoreDriver, project: Project, operations: list[Any]
) -> None:
    play(core, project, operations)


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_the_app_acts_only_on_answers_to_what_it_asked(
    app: HttpDriver, project: Project, operations: list[Any]
) -> None:
    play(app, project, operations)


def test_the_oracle_sees_a_well_behaved_call_act_once(core: CoreDriver, project: Project) -> None:
    """The property tests are not vacuous: a well-behaved client gets the act, checked."""
    pick = {"action": "accept", "content": {"choice": "b"}}
    yes = {"action": "accept", "content": {"confirm": True}}
    rounds = [("round", -1, {}), ("round", 0, {"pick": pick}), ("round", 1, {"go": yes})]
    play(core, project, [*rounds, ("round", 1, {"go": yes})])  # the last one replays
    assert handler_globals(project)["ACTS"] == [{"target": TARGET, "choice": "b", "v": 0}]


def test_the_oracle_catches_an_act_on_an_answer_to_another_text() -> None:
    oracle = Oracle()
    pick = {"pick": {"action": "accept", "content": {"choice": "a"}}}
    oracle.send(Issued("n", {"pick": "World 0: which for t1?"}, None), pick)
    go = {"go": {"action": "accept", "content": {"confirm": True}}}
    oracle.send(Issued("n", {"go": "World 0: do a to t1?"}, None), go)
    with pytest.raises(AssertionError):
        oracle.check_act("n", {"v": 1, "choice": "a"})
    oracle.check_act("n", {"v": 0, "choice": "a"})
    with pytest.raises(AssertionError):
        oracle.check_act("n", {"v": 0, "choice": "a"})
