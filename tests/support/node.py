"""Node.js 22 and the official TypeScript SDK clients, as ``tests/clients/ts/install`` put them.

``run_script`` runs an ES module beside a ``node_modules`` link to one client's packages. A
missing install fails the test, never skips it: CI installs both.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT
from support.servers import clean_env

__all__ = [
    "AI_SDK_PACKAGES",
    "NODE",
    "TS_PACKAGES",
    "TS_TASKS_PACKAGES",
    "TS_V2_PACKAGES",
    "run_script",
]

NODE = Path(
    os.environ.get("HOST_TEST_NODE")
    or ROOT / ".cache" / "conformance" / "node22" / "node_modules" / ".bin" / "node"
)
#: ``@modelcontextprotocol/sdk`` 1.x.
TS_PACKAGES = ROOT / ".cache" / "ts-client" / "node_modules"
#: ``@modelcontextprotocol/client`` 2.x.
TS_V2_PACKAGES = ROOT / ".cache" / "ts-client-v2" / "node_modules"
#: The AI SDK's MCP client, ``@ai-sdk/mcp`` (``tests/clients/aisdk/install``).
AI_SDK_PACKAGES = ROOT / ".cache" / "ai-sdk-client" / "node_modules"
#: ``@modelcontextprotocol/ext-tasks`` 0.2.x with ``@modelcontextprotocol/client`` 2.x.
TS_TASKS_PACKAGES = ROOT / ".cache" / "ts-tasks" / "node_modules"


def run_script(
    folder: Path, packages: Path, code: str, timeout_s: float = 90, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``folder/script.mjs`` with ``packages`` as its node_modules."""
    if not NODE.exists() or not any(packages.glob("@*")):
        pytest.fail(
            f"needs Node.js 22 and the clients in {packages}: run tests/clients/*/install",
            pytrace=False,
        )
    (folder / "node_modules").symlink_to(packages)
    script = folder / "script.mjs"
    script.write_text(code)
    return subprocess.run(
        [str(NODE), str(script)], capture_output=True, text=True, timeout=timeout_s,
        cwd=folder, env=clean_env(**env),
    )  # fmt: skip
