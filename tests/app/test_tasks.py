"""Long waits as MCP tasks, in process: the task made at an approve or a URL ask, and tasks/*.

Over real HTTP with two workers (SQLite) and two instances (Redis), see
``tests/served/test_tasks_served.py``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from host.client.wire import request_headers
from host.testing import McpClient
from support.tasks import EXT, TASK_SPECS, TaskHost, poll, task_host

SURE = {"sure": {"action": "accept", "content": {"confirm": True}}}


@pytest.fixture
def host(tmp_path: Path) -> TaskHost:
    return task_host(tmp_path)


def _task(mcp: McpClient, tool: str, service: str) -> dict[str, Any]:
    """Call ``tool`` (ticking its confirm, if asked) until it answers with a task."""
    first = mcp.send("tools/call", {"name": tool, "arguments": {"service": service}}).result
    if first["resultType"] == "input_required":
        first = mcp.send(
            "tools/call",
            {"name": tool, "arguments": {"service": service}, "inputResponses": SURE,
             "requestState": first["requestState"]},
        ).result  # fmt: skip
    assert first["resultType"] == "task", first
    return dict(first)


def _get(mcp: McpClient, task_id: str) -> dict[str, Any]:
    response = mcp.send("tasks/get", {"taskId": task_id})
    assert response.result is not None, response
    return dict(response.result)


def _pending_id(host: TaskHost, service: str) -> str:
    found = host.api("bob", "GET", "?status=pending").json["requests"]
    (request,) = [r for r in found if r["arguments"].get("service") == service]
    return str(request["id"])


def test_discover_and_tools_list_advertise_the_extension(host: TaskHost) -> None:
    mcp = host.mcp()
    found = mcp.send("server/discover", {}).result
    assert found["capabilities"]["extensions"] == {EXT: {}}
    tools = {t["name"]: t for t in mcp.send("tools/list", {}).result["tools"]}
    assert tools["restart_service"]["execution"] == {"taskSupport": "optional"}
    assert tools["deploy"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["status"] and "execution" not in tools["deploy_held"]


def test_an_approval_becomes_a_task_and_its_act_runs_once_approved(host: TaskHost) -> None:
    alice = host.mcp()
    made = _task(alice, "restart_service", "web")
    assert made["status"] == "working" and made["taskId"].startswith("tsk_")
    assert made["pollIntervalMs"] == 2000 and made["ttlMs"] > 3600_000
    assert made["createdAt"].endswith("Z") and "Waiting for 1 approval" in made["statusMessage"]
    approval = made["_meta"]["host/approval"]
    assert approval["status"] == "pending" and approval["request"].startswith("apr_")

    again = _task(alice, "restart_service", "web")
    assert again["taskId"] == made["taskId"]
    assert _get(alice, made["taskId"])["status"] == "working"
    assert host.acts() == []

    decided = host.api("bob", "POST", f"/{approval['request']}/approve", {"reason": "ok"})
    assert decided.status_code == 200, decided.text
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"restarted": "web", "approved_by": ["bob"]}
    assert _get(alice, made["taskId"])["result"] == done["result"]
    assert [a["service"] for a in host.acts()] == ["web"]
    # NOTE: the same call once its task ended is a new call: a new task, a new request
    assert _task(alice, "restart_service", "web")["taskId"] != made["taskId"]


def test_a_rejected_task_completes_with_the_steps_result(host: TaskHost) -> None:
    alice = host.mcp()
    made = _task(alice, "restart_service", "db")
    request = made["_meta"]["host/approval"]["request"]
    host.api("bob", "POST", f"/{request}/reject", {"reason": "not now"})
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"] == {"done": False, "reason": "not now"}
    assert host.acts() == []


def test_a_round_another_process_runs_is_not_run_again_here(host: TaskHost) -> None:
    """Two workers that see the same decision (the approver's and a poll's) run its round once:
    the second once found the request told and opened another, and overwrote the first's end."""
    from host.store import open_store

    alice = host.mcp()
    made = _task(alice, "restart_service", "race")
    request = made["_meta"]["host/approval"]["request"]
    other = open_store(f"sqlite:///{host.data_dir / 'store.db'}")  # another process's store
    try:
        held = other.acquire_lock("task:" + made["taskId"])
        assert held is not None
        with held:
            host.api("bob", "POST", f"/{request}/reject", {"reason": "not now"})
            for _ in range(5):  # the decision's hook and these polls find the round taken
                assert _get(alice, made["taskId"])["status"] == "working"
        done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    finally:
        other.close()
    assert done["result"]["structuredContent"] == {"done": False, "reason": "not now"}
    pending = host.api("bob", "GET", "?status=pending").json["requests"]
    assert [r for r in pending if r["arguments"].get("service") == "race"] == []


def test_an_expired_request_completes_the_task_with_its_expired_result(host: TaskHost) -> None:
    alice = host.mcp()
    made = _task(alice, "purge_cache", "cdn")
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"] == {
        "done": False, "reason": "Nobody decided in time.",
    }  # fmt: skip
    assert host.acts() == []


def test_cancel_before_a_decision_withdraws_the_request_and_nothing_is_done(
    host: TaskHost,
) -> None:
    alice = host.mcp()
    made = _task(alice, "restart_service", "api")
    request = made["_meta"]["host/approval"]["request"]
    cancelled = alice.send("tasks/cancel", {"taskId": made["taskId"]}).result
    assert cancelled["resultType"] == "complete"
    assert _get(alice, made["taskId"])["status"] == "cancelled"
    assert host.api("bob", "GET", f"/{request}").json["status"] == "withdrawn"
    assert host.api("bob", "GET", "?status=pending").json["requests"] == []
    assert host.api("bob", "POST", f"/{request}/approve", {}).status_code == 409
    assert _get(alice, made["taskId"])["status"] == "cancelled"
    assert host.acts() == []


def test_another_principals_and_a_guessed_id_get_one_answer(host: TaskHost) -> None:
    made = _task(host.mcp(), "restart_service", "x")
    mallory = host.mcp("mallory")
    answers = []
    for task_id in (made["taskId"], "tsk_" + "A" * 43, "nope", 7):
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            params: dict[str, Any] = {"taskId": task_id, "inputResponses": {}}
            response = mallory.send(method, params)
            assert response.status == 400, response
            answers.append(response.body["error"])
    assert all(a == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
               for a in answers)  # fmt: skip
    assert _get(host.mcp(), made["taskId"])["status"] == "working"


def test_without_the_extension_tasks_methods_and_required_tools_get_32021(
    host: TaskHost,
) -> None:
    made = _task(host.mcp(), "restart_service", "y")
    plain = host.mcp(capabilities={"elicitation": {"form": {}}})
    refused = plain.send("tasks/get", {"taskId": made["taskId"]})
    assert refused.status == 400 and refused.body["error"]["code"] == -32021
    assert refused.body["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    deploy = plain.send("tools/call", {"name": "deploy", "arguments": {"service": "y"}})
    assert deploy.body["error"]["code"] == -32021
    assert host.api("bob", "GET", "?status=pending").json["requests"][0]["tool"] == (
        "restart_service"
    )


def test_without_the_extension_a_call_holds_its_wait_as_before(host: TaskHost) -> None:
    plain = host.mcp(capabilities={"elicitation": {"form": {}}})

    def approve_when_asked() -> None:
        found = poll(
            lambda: {"r": host.api("bob", "GET", "?status=pending").json["requests"]},
            lambda seen: bool(seen["r"]),
        )["r"]
        host.api("bob", "POST", f"/{found[0]['id']}/approve", {"reason": "ok"})

    deciding = threading.Thread(target=approve_when_asked)
    deciding.start()
    # NOTE: the held wait, as without tasks always: the same request goes on to the act
    result = plain.send("tools/call", {"name": "deploy_held", "arguments": {"service": "z"}})
    deciding.join()
    assert result.result["resultType"] == "complete", result
    assert result.result["structuredContent"] == {"restarted": "z", "approved_by": ["bob"]}


def test_a_name_header_that_is_not_the_task_id_gets_32020(host: TaskHost) -> None:
    made = _task(host.mcp(), "restart_service", "h")
    mcp = host.mcp()
    message = {"jsonrpc": "2.0", "id": 9, "method": "tasks/get",
               "params": {"taskId": made["taskId"], "_meta": mcp.meta()}}  # fmt: skip
    headers = {**request_headers(message, "2026-07-28"), "Mcp-Name": "tsk_other"}
    response = mcp.post(json.dumps(message).encode(), headers, message)
    assert response.status == 400 and response.body["error"]["code"] == -32020


def test_a_url_ask_as_a_task(host: TaskHost) -> None:
    alice = host.mcp()
    made = alice.send("tools/call", {"name": "rotate_key", "arguments": {"service": "k"}}).result
    assert made["resultType"] == "task" and made["status"] == "input_required"
    seen = _get(alice, made["taskId"])
    (key,) = seen["inputRequests"]
    params = seen["inputRequests"][key]["params"]
    assert key == "credentials" and params["mode"] == "url"
    assert host.submit(params["url"], {"api_key": "a-new-key-123"}).status_code in (200, 303)
    alice.send("tasks/update", {"taskId": made["taskId"],
                                "inputResponses": {key: {"action": "accept"}}})  # fmt: skip
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"]["rotated"] is True, done
    assert len(host.acts()) == 1


def test_a_reload_that_changes_the_tool_voids_a_waiting_task(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (TASK_SPECS / "ops.yaml").read_text()
    (specs / "ops.yaml").write_text(text)
    before = task_host(tmp_path, specs)
    made = _task(before.mcp(), "deploy", "w")
    (specs / "ops.yaml").write_text(text.replace("asks to deploy", "wants to deploy"))
    after = task_host(tmp_path, specs, before.tokens)
    done = poll(lambda: _get(after.mcp(), made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["isError"] is True
    assert done["result"]["_meta"]["host/approval"]["status"] == "voided"
    assert "changed" in done["result"]["content"][0]["text"]
    assert after.acts() == []


def test_the_audit_record_is_written_when_the_task_ends(host: TaskHost) -> None:
    from host.store import open_store

    alice = host.mcp()
    acted = _task(alice, "deploy", "a1")
    withdrawn = _task(alice, "deploy", "a2")
    store = open_store(f"sqlite:///{host.data_dir / 'store.db'}")
    try:
        assert store.audit_records(tool="deploy") == []  # NOTE: a waiting task has not ended
        request = acted["_meta"]["host/approval"]["request"]
        host.api("bob", "POST", f"/{request}/approve", {"reason": "ok"})
        poll(lambda: _get(alice, acted["taskId"]), lambda t: t["status"] == "completed")
        alice.send("tasks/cancel", {"taskId": withdrawn["taskId"]})
        records = poll(
            lambda: {"r": store.audit_records(tool="deploy")}, lambda r: len(r["r"]) >= 4
        )["r"]
        calls = sorted(r.outcome for r in records if r.kind != "decision")
        assert calls == ["acted", "cancelled"], records
        # Each request's end is in the trail too: bob's yes, and alice's task cancelled.
        decided = {r.detail["request"]: (r.principal, r.detail["verdict"])
                   for r in records if r.kind == "decision"}  # fmt: skip
        cancelled = withdrawn["_meta"]["host/approval"]["request"]
        assert decided == {request: ("bob", "approved"), cancelled: ("alice", "cancelled")}
    finally:
        store.close()


def test_the_kit_client_calls_as_a_tasks_client_and_polls_to_the_result(host: TaskHost) -> None:
    plain = host.mcp(capabilities={"elicitation": {"form": {}, "url": {}}})
    alice = plain.client(tasks=True)
    alice.task_poll_s = 0.05
    said: list[str] = []
    alice.say = said.append
    assert alice.capabilities["extensions"] == {EXT: {}}
    assert "extensions" not in alice.client(tasks=False).capabilities

    def approve_when_asked() -> None:
        found = poll(
            lambda: {"r": host.api("bob", "GET", "?status=pending").json["requests"]},
            lambda seen: bool(seen["r"]),
        )["r"]
        host.api("bob", "POST", f"/{found[0]['id']}/approve", {"reason": "ok"})

    deciding = threading.Thread(target=approve_when_asked)
    deciding.start()
    called = alice.tools.call("deploy", {"service": "kit"})
    deciding.join()
    assert called.json() == {"restarted": "kit", "approved_by": ["bob"]}
    assert any("Waiting for 1 approval" in line for line in said)
    assert len(host.acts()) == 1


def test_a_legacy_session_never_sees_tasks_and_a_required_tool_answers_32021(
    host: TaskHost,
) -> None:
    from falcon.testing import TestClient

    from support.legacy import Legacy

    legacy = Legacy(TestClient(host.app), extra={"Authorization": f"Bearer {host.tokens['alice']}"})
    legacy.initialize()
    assert all("execution" not in t for t in legacy.tools())
    refused = legacy.request("tools/call", {"name": "deploy", "arguments": {"service": "l"}})
    assert refused.json["error"]["code"] == -32021, refused.text
    assert refused.json["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    assert host.api("bob", "GET", "?status=pending").json["requests"] == []


def test_update_answers_outstanding_keys_and_asks_again_under_a_new_key(host: TaskHost) -> None:
    alice = host.mcp()
    args = {"name": "rotate_with_ticket", "arguments": {"service": "t"}}
    made = alice.send("tools/call", args).result
    assert made["resultType"] == "task" and made["status"] == "input_required"
    seen = _get(alice, made["taskId"])
    assert set(seen["inputRequests"]) == {"credentials", "change"}
    url = seen["inputRequests"]["credentials"]["params"]["url"]
    host.submit(url, {"api_key": "a-new-key-456"})

    def update(responses: dict[str, Any]) -> None:
        sent = alice.send("tasks/update", {"taskId": made["taskId"], "inputResponses": responses})
        assert sent.result == {"resultType": "complete", "_meta": sent.result["_meta"]}

    update({"never-asked": {"action": "accept"}})  # NOTE: ignored
    assert _get(alice, made["taskId"])["status"] == "input_required"
    update({"credentials": {"action": "accept"},
            "change": {"action": "accept", "content": {"ticket": "soon"}}})  # fmt: skip
    again = poll(
        lambda: _get(alice, made["taskId"]), lambda t: "change#2" in t.get("inputRequests", {})
    )
    assert "change" not in again["inputRequests"], again
    update({"change": {"action": "accept", "content": {"ticket": 7}}})  # NOTE: a spent key
    assert "change#2" in _get(alice, made["taskId"])["inputRequests"]
    update({"change#2": {"action": "accept", "content": {"ticket": 7}}})
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"] == {"rotated": True, "service": "t", "ticket": 7}
    assert len(host.acts()) == 1


def test_a_url_ask_accepted_first_works_until_its_page_is_submitted(host: TaskHost) -> None:
    alice = host.mcp()
    made = alice.send("tools/call", {"name": "rotate_key", "arguments": {"service": "p"}}).result
    url = _get(alice, made["taskId"])["inputRequests"]["credentials"]["params"]["url"]
    update = {"taskId": made["taskId"], "inputResponses": {"credentials": {"action": "accept"}}}
    alice.send("tasks/update", update)
    waiting = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "working")
    assert waiting["status"] == "working" and "page" in waiting["statusMessage"], waiting
    assert "inputRequests" not in waiting and host.acts() == []
    host.submit(url, {"api_key": "the-page-key-789"})
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"]["rotated"] is True
    assert len(host.acts()) == 1


def test_a_declined_url_ask_completes_with_the_steps_result(host: TaskHost) -> None:
    alice = host.mcp()
    made = alice.send("tools/call", {"name": "rotate_key", "arguments": {"service": "d"}}).result
    update = {"taskId": made["taskId"], "inputResponses": {"credentials": {"action": "decline"}}}
    alice.send("tasks/update", update)
    done = poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "completed")
    assert done["result"]["structuredContent"] == {"rotated": False, "reason": "The user declined."}
    assert host.acts() == []


def test_a_decision_carries_the_task_on_without_a_poll(host: TaskHost) -> None:
    alice = host.mcp()
    made = _task(alice, "deploy", "nopoll")
    request = made["_meta"]["host/approval"]["request"]
    host.api("bob", "POST", f"/{request}/approve", {"reason": "ok"})
    acted = poll(lambda: {"acts": host.acts()}, lambda seen: bool(seen["acts"]))
    assert [a["service"] for a in acted["acts"]] == ["nopoll"]
    done = _get(alice, made["taskId"])
    assert done["status"] == "completed", done
    assert len(host.acts()) == 1


def test_a_submitted_page_carries_its_task_on_without_a_poll(host: TaskHost) -> None:
    alice = host.mcp()
    made = alice.send("tools/call", {"name": "rotate_key", "arguments": {"service": "np"}}).result
    url = _get(alice, made["taskId"])["inputRequests"]["credentials"]["params"]["url"]
    update = {"taskId": made["taskId"], "inputResponses": {"credentials": {"action": "accept"}}}
    alice.send("tasks/update", update)
    poll(lambda: _get(alice, made["taskId"]), lambda t: t["status"] == "working")
    host.submit(url, {"api_key": "no-poll-key-4242"})
    acted = poll(lambda: {"acts": host.acts()}, lambda seen: bool(seen["acts"]))
    assert [a["service"] for a in acted["acts"]] == ["np"]
    assert _get(alice, made["taskId"])["status"] == "completed"
