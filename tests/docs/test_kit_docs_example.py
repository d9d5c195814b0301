"""Tests for the help-desk's close_ticket, written with the host test kit."""

from host.testing import McpClient, like


def test_close_ticket_asks_then_closes(mcp: McpClient) -> None:
    mcp.on_elicitation({"action": "accept", "content": {"confirm": True}})

    result = mcp.tools.call("close_ticket", {"id": "T-1"})

    assert result.json() == {"id": "T-1", "closed": True}
    assert [q.key for q in mcp.questions] == ["close"]
    assert "T-1" in mcp.questions[0].message


def test_declining_keeps_the_ticket_open_and_sends_nothing(mcp: McpClient) -> None:
    mcp.on_elicitation("decline")

    result = mcp.tools.call("close_ticket", {"id": "T-2"})

    assert result.json() == like({"closed": False})
    assert mcp.tools.call("list_outbox").json() == {"emails": []}


def test_a_malformed_answer_is_rejected(mcp: McpClient) -> None:
    mcp.on_elicitation({"action": "accept", "content": {"confirm": "yes"}})

    result = mcp.tools.call("close_ticket", {"id": "T-3"})

    result.assert_error("INVALID_PARAMS", message="does not match the requested schema")
