"""A real Chromium for the pages' tests: Debian's ``chromium`` driven by Playwright.

Never a browser Playwright downloads (``playwright install`` is not run anywhere): the fixture
launches ``/usr/bin/chromium`` (``HOST_TEST_CHROMIUM`` names another), headless, once per test
module (one for the whole run while the browser tests are one module); each test gets a fresh
context (its own cookies). ``.ci/run`` installs the package.
Without it the fixture fails, never skips. Used as ``from support.browser import ...``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright

__all__ = ["ARGS", "chromium", "new_context", "playwright"]

#: Nothing of the browser's own reaches the network, and no sandbox (tests run as root).
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _executable() -> Path:
    return Path(os.environ.get("HOST_TEST_CHROMIUM") or "/usr/bin/chromium")


# NOTE: not session-wide: while Playwright's sync driver runs, an asyncio loop counts as running
# on the main thread, and every later test that starts its own (anyio.run) would fail.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Playwright's driver, for one test module."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def chromium(playwright: Playwright) -> Iterator[Browser]:
    """Debian's Chromium, started once per module (with a fresh temporary profile)."""
    executable = _executable()
    if not executable.exists():
        pytest.fail(
            f"the browser tests need Chromium at {executable}: apt-get install chromium (as "
            ".ci/run does), or set HOST_TEST_CHROMIUM",
            pytrace=False,
        )
    browser = playwright.chromium.launch(executable_path=str(executable), args=ARGS)
    try:
        yield browser
    finally:
        browser.close()


def new_context(browser: Browser, phone: bool = False) -> BrowserContext:
    """A fresh context: a desktop window, or a phone's 390x844 touch screen."""
    if phone:
        return browser.new_context(
            viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
            has_touch=True,
        )  # fmt: skip
    return browser.new_context(viewport={"width": 1280, "height": 800})
