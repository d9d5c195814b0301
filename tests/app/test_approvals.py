"""Confirms that remember a yes, through the test kit (the real app, in-process).

Over real HTTP, with two workers and two instances, see ``test_approvals_http.py``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from host.testing import McpClient
from support.paths import FIXTURES, ROOT

FIXTURE = FIXTURES / "approvals"
YES = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture
def host_specs() -> Path:
    return FIXTURE / "specs"


def acts(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "acts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_yes_is_remembered_and_the_confirm_skipped(mcp: McpClient, host_data_dir: Path) -> None:
    first = mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": YES})
    again = mcp.tools.call("restart_service", {"service": "api"})

    assert first.asked == ["restart"] and first.json()["remembered"] is False
    assert again.asked == [] and again.rounds == 1
    assert again.json() == {"restarted": "api", "environment": "staging", "remembered": True}
    assert len(acts(host_data_dir)) == 2
    [approval] = mcp.approvals.list()
    assert (approval.principal, approval.tool, approval.question, approval.key) == (
        "anonymous",
        "restart_service",
        "restart",
        "api/staging",
    )
    assert approval.expires - approval.granted == pytest.approx(8 * 3600)


def test_a_remembered_yes_counts_only_for_its_key(mcp: McpClient) -> None:
    mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": YES})

    other = mcp.tools.call(
        "restart_service", {"service": "api", "environment": "prod"}, answers={"restart": "decline"}
    )

    assert other.asked == ["restart"]
    assert other.json() == {"restarted": False}


def test_a_remembered_yes_counts_only_for_its_principal(mcp: McpClient) -> None:
    alice, bob = mcp.client(principal="alice"), mcp.client(principal="bob")
    alice.tools.call("restart_service", {"service": "api"}, answers={"restart": YES})

    assert alice.tools.call("restart_service", {"service": "api"}).asked == []
    assert bob.tools.call("restart_service", {"service": "api"}, answers={"restart": YES}).asked
    assert mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": YES}).asked


@pytest.mark.parametrize(
    "answer", ["decline", "cancel", {"action": "accept", "content": {"confirm": False}}]
)
def test_no_is_never_remembered(mcp: McpClient, answer: Any) -> None:
    mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": answer})

    assert mcp.approvals.list() == []
    assert mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": YES}).asked


def test_a_yes_is_kept_only_when_the_call_goes_on_to_its_act(mcp: McpClient) -> None:
    note = {"action": "accept", "content": {"note": "v2 is out"}}
    stopped = mcp.tools.call(
        "deploy_release", {"release": "v2"}, answers={"deploy": YES, "change": "decline"}
    )
    assert stopped.asked == ["deploy", "change"] and mcp.approvals.list() == []

    mcp.tools.call("deploy_release", {"release": "v2"}, answers={"deploy": YES, "change": note})
    again = mcp.tools.call("deploy_release", {"release": "v2"}, answers={"change": note})

    assert again.asked == ["change"]
    assert again.questions[0].message == "Deploying v2 again: the change note?"


def test_the_default_key_is_the_arguments(mcp: McpClient) -> None:
    mcp.tools.call("scale_service", {"service": "api", "replicas": 3}, answers={"scale": YES})

    assert mcp.tools.call("scale_service", {"service": "api", "replicas": 3}).asked == []
    assert mcp.tools.call(
        "scale_service", {"service": "api", "replicas": 4}, answers={"scale": YES}
    ).asked == ["scale"]


def test_a_remembered_yes_counts_only_for_its_tool(mcp: McpClient) -> None:
    mcp.tools.call("restart_service", {"service": "api"}, answers={"restart": YES})

    # The same confirm name and the same key, in another tool.
    assert mcp.tools.call("restart_worker", {"service": "api"}, answers={"restart": YES}).asked


def test_a_remembered_yes_expires(mcp: McpClient) -> None:
    mcp.tools.call("flush_cache", {"cache": "pages"}, answers={"flush": YES})
    assert mcp.tools.call("flush_cache", {"cache": "pages"}).asked == []

    time.sleep(2.1)  # the scenario: the remembered yes (2 s) expires

    assert mcp.tools.call("flush_cache", {"cache": "pages"}, answers={"flush": YES}).asked


def test_the_kit_pre_seeds_and_revokes_approvals(mcp: McpClient) -> None:
    seeded = mcp.approvals.grant(
        "scale_service", "scale", arguments={"service": "web", "replicas": 2}
    )
    assert mcp.tools.call("scale_service", {"service": "web", "replicas": 2}).asked == []

    assert mcp.approvals.revoke(seeded.id) == 1
    assert mcp.tools.call(
        "scale_service", {"service": "web", "replicas": 2}, answers={"scale": YES}
    ).asked


def test_the_kit_refuses_a_confirm_that_does_not_remember(mcp: McpClient) -> None:
    with pytest.raises(ValueError, match="no confirm 'send' that remembers"):
        mcp.approvals.grant("send_note", "send", key="x")
    with pytest.raises(ValueError, match="no tool 'nope'"):
        mcp.approvals.grant("nope", "send", key="x")


def test_another_client_of_the_kit_reaches_the_same_approvals_and_audit(mcp: McpClient) -> None:
    alice = mcp.client(principal="alice")
    alice.approvals.grant("restart_service", "restart", key="api/staging", principal="alice")

    assert alice.tools.call("restart_service", {"service": "api"}).asked == []
    assert [a.principal for a in mcp.approvals.list()] == ["alice"]
    assert alice.audit.last().principal == "alice"


def test_a_client_of_no_kit_cannot_reach_a_store() -> None:
    import falcon

    from host.testing import WsgiTransport

    bare = McpClient(WsgiTransport(falcon.App()))
    with pytest.raises(RuntimeError, match="only the test kit's client can reach"):
        bare.client(capabilities={}).approvals  # noqa: B018
    with pytest.raises(RuntimeError, match="only the test kit's client can read"):
        bare.audit  # noqa: B018


def readme_section(title: str) -> str:
    readme = (ROOT / "docs" / "writing-specs.md").read_text()
    start = readme.index(f"\n### {title}\n")
    end = readme.find("\n### ", start + 1)
    return readme[start : end if end >= 0 else None]


def test_the_readme_spec_is_the_one_tested_here() -> None:
    [yaml] = re.findall(r"```yaml\n(.*?)```", readme_section("Approvals that remember"), re.S)
    assert yaml in (FIXTURE / "specs" / "ops.yaml").read_text()


def test_the_readme_test_example_passes(mcp: McpClient) -> None:
    [code] = re.findall(r"```python\n(.*?)```", readme_section("In tests"), re.S)
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    namespace["test_a_remembered_restart_is_not_asked"](mcp)
