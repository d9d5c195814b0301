"""The seed tutorial's tests, ported to the help-desk example specs and written with the test kit.

Each test gets the real app serving ``specs/`` and a fresh copy of the help-desk database (the
``mcp`` fixture gives every test its own ``$HOST_DATA_DIR``), so the order of tests never matters.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from host.testing import Elicitation, McpClient, like

YES = {"action": "accept", "content": {"confirm": True}}


def ticket_exists(data_dir: Path, ticket: str) -> bool:
    with sqlite3.connect(data_dir / "helpdesk.db") as db:
        return db.execute("SELECT 1 FROM tickets WHERE id = ?", (ticket,)).fetchone() is not None


def emails_about(mcp: McpClient, ticket: str) -> list[str]:
    emails: list[str] = mcp.tools.call("list_outbox", {}).json()["emails"]
    return [email for email in emails if ticket in email]


# Testing a tool that asks (close_ticket).


def test_close_asks_about_the_right_ticket_and_closes_it_on_yes(mcp: McpClient) -> None:
    questions: list[str] = []

    def answer(request: Elicitation) -> dict[str, object]:
        questions.append(request.message)
        return YES

    mcp.on_elicitation(answer)
    result = mcp.tools.call("close_ticket", {"id": "T-1"})

    assert len(questions) == 1
    assert "T-1" in questions[0]
    assert result.json() == {"id": "T-1", "closed": True}
    assert result.rounds == 2


def test_close_leaves_the_ticket_open_when_the_user_declines(mcp: McpClient) -> None:
    mcp.on_elicitation({"action": "decline"})
    result = mcp.tools.call("close_ticket", {"id": "T-2"})
    assert result.json() == like({"closed": False})


def test_an_answer_that_does_not_match_the_schema_is_rejected(mcp: McpClient) -> None:
    mcp.on_elicitation({"action": "accept", "content": {"confirm": "yes"}})
    result = mcp.tools.call("close_ticket", {"id": "T-3"})
    result.assert_error("INVALID_INPUT")
    assert "does not match the requested schema" in result.text()
    assert emails_about(mcp, "T-3") == []


# Clients that can't ask.


def test_a_client_without_the_elicitation_capability_gets_error_32021(mcp: McpClient) -> None:
    response = mcp.raw.request(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "close_ticket",
                "arguments": {"id": "T-1"},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": {}},
            },
        }
    )
    assert response.error is not None
    assert response.error.code == -32021
    assert response.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert response.status == 400


def test_2026_07_28_clients_do_not_see_the_fallback_tool(mcp: McpClient) -> None:
    tools = mcp.tools.list()
    assert "sendElicitationResult" not in tools
    assert "close_ticket" in tools


# Challenge: confirm before deleting (hidden tests).


def test_delete_asks_about_the_ticket_it_is_deleting(mcp: McpClient) -> None:
    mcp.on_elicitation("decline")
    mcp.tools.call("delete_ticket", {"id": "T-1"})
    assert [q.key for q in mcp.questions] == ["delete"]
    assert "T-1" in mcp.questions[0].message


def test_declining_keeps_the_ticket(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_elicitation({"action": "decline"})
    result = mcp.tools.call("delete_ticket", {"id": "T-2"})
    result.assert_ok()
    assert result.json() == like({"deleted": False})
    assert ticket_exists(host_data_dir, "T-2")


def test_cancelling_keeps_the_ticket(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_elicitation({"action": "cancel"})
    result = mcp.tools.call("delete_ticket", {"id": "T-3"})
    assert result.json() == like({"deleted": False})
    assert ticket_exists(host_data_dir, "T-3")


def test_accepting_without_ticking_confirm_keeps_the_ticket(
    mcp: McpClient, host_data_dir: Path
) -> None:
    mcp.on_elicitation({"action": "accept", "content": {"confirm": False}})
    result = mcp.tools.call("delete_ticket", {"id": "T-4"})
    assert result.json() == like({"deleted": False})
    assert ticket_exists(host_data_dir, "T-4")


def test_accepting_with_confirm_ticked_deletes_it(mcp: McpClient, host_data_dir: Path) -> None:
    mcp.on_elicitation(YES)
    result = mcp.tools.call("delete_ticket", {"id": "T-4"})
    assert result.json() == {"id": "T-4", "deleted": True}
    assert not ticket_exists(host_data_dir, "T-4")
    mcp.tools.call("delete_ticket", {"id": "T-4"}).assert_tool_error("There's no ticket T-4.")


# Challenge: send the email once (hidden tests).


def test_accepting_closes_the_ticket_and_sends_exactly_one_email(mcp: McpClient) -> None:
    mcp.on_elicitation(YES)
    result = mcp.tools.call("close_ticket", {"id": "T-1"})
    assert result.json() == {"id": "T-1", "closed": True}
    assert len(emails_about(mcp, "T-1")) == 1


def test_declining_sends_no_email(mcp: McpClient) -> None:
    mcp.on_elicitation({"action": "decline"})
    result = mcp.tools.call("close_ticket", {"id": "T-2"})
    # NOTE: the seed's challenge returns exactly {id, closed}; the example spec also says why.
    assert result.json() == like({"id": "T-2", "closed": False})
    assert emails_about(mcp, "T-2") == []


# Challenge: turn elicitation on (hidden test).


def test_close_ticket_asks_the_user_and_closes_on_yes(mcp: McpClient) -> None:
    asked = False

    def answer(request: Elicitation) -> dict[str, object]:
        nonlocal asked
        asked = True
        return YES

    mcp.on_elicitation(answer)
    result = mcp.tools.call("close_ticket", {"id": "T-1"})
    result.assert_ok()
    assert asked
    assert result.json() == {"id": "T-1", "closed": True}


# Beyond the seed: asking only when needed, and a fresh database per test.


def test_assign_asks_for_an_agent_only_when_none_is_given(mcp: McpClient) -> None:
    mcp.on_elicitation({"pick": {"action": "accept", "content": {"agent": "Priya"}}})
    asked = mcp.tools.call("assign_ticket", {"id": "T-2"})
    assert asked.asked == ["pick"]
    assert asked.json() == {"id": "T-2", "assigned": True, "agent": "Priya"}

    given = mcp.tools.call("assign_ticket", {"id": "T-2", "agent": "Sam"})
    assert given.asked == []
    assert given.rounds == 1
    assert given.json() == {"id": "T-2", "assigned": True, "agent": "Sam"}


def test_each_test_gets_its_own_database(mcp: McpClient, host_data_dir: Path) -> None:
    assert emails_about(mcp, "T-") == []
    assert (host_data_dir / "helpdesk.db").is_file()
    assert ticket_exists(host_data_dir, "T-4")


# The example's database, opened by many workers at once.

_FIRST_READ = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
os.environ["HELPDESK_DB"] = sys.argv[2]
import helpdesk
while not os.path.exists(sys.argv[3]):  # all start at once
    time.sleep(0.001)
print(helpdesk.get_ticket("T-1") is not None)
"""


@pytest.mark.served  # starts processes
def test_workers_opening_a_new_database_at_once_all_find_the_seeded_tickets(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys
    import time

    from support.paths import ROOT

    # NOTE: the seed's mark and its tickets once committed apart: a worker that found the mark
    # read the tickets before the other had written them ("There's no ticket T-1"); and a
    # change of journal mode failed at once, "database is locked", while another created it.
    for round_ in range(10):
        db, go = tmp_path / f"desk-{round_}.db", tmp_path / f"go-{round_}"
        argv = [sys.executable, "-c", _FIRST_READ, str(ROOT / "handlers"), str(db), str(go)]
        readers = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(6)]
        time.sleep(0.3)  # every reader imported, waiting
        go.touch()
        found = [reader.communicate(timeout=60)[0].strip() for reader in readers]
        assert found == ["True"] * 6, (round_, found)
