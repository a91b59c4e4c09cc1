"""Fixtures for tests that drive the dashboard in real headless Chromium.

- `hub`, `connect`: from tests/integration/hub_fixtures.py (a started HubApp; members that
  announce and export through real gRPC).
- `page`: a Playwright page in a fresh Chromium profile (Debian's /usr/bin/chromium;
  Playwright never downloads a browser) that trusts the `hub`'s serving certificate
  (pinned by its public key: Chromium takes no CA file on its command line, and
  verification stays on for everything else). It records page errors and CSP
  violations in `page_problems` so a test can assert the page ran cleanly. As root, Chromium
  runs in a network namespace of its own and reaches the hub through a relay
  (tests/browser/own_network.py says why).
Everything is closed at teardown. Test modules here mark themselves `browser`
and skip (with NO_CHROMIUM) only when chromium is not on PATH; under CI=true that fails.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from playwright.async_api import ConsoleMessage, Error, Page, async_playwright

from hub.app import HubApp
from tests.browser import own_network
from tests.integration.hub_fixtures import connect, hub
from tests.needs import tool_missing

# Debian's chromium, found on PATH (so a PATH without it shows what a machine without it does).
CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The hub fixtures are shared with the integration suite.
__all__ = ["connect", "hub"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


NO_CHROMIUM = tool_missing("chromium", package="chromium")  # None when it is there


@pytest.fixture
def page_problems() -> list[str]:
    return []


def spki_pin(cert: Path) -> str:
    """base64(sha256(SubjectPublicKeyInfo)): how Chromium's --ignore-certificate-errors-spki-list names a key."""
    key = x509.load_pem_x509_certificate(cert.read_bytes()).public_key()
    spki = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


@pytest.fixture
async def page(tmp_path: Path, page_problems: list[str], hub: HubApp) -> AsyncIterator[Page]:
    def on_console(message: ConsoleMessage) -> None:
        # A refused token's 401 is logged by Chrome as a failed load: that is expected.
        if message.type == "error" and "Failed to load resource" not in message.text:
            page_problems.append(message.text)

    def on_page_error(error: Error) -> None:
        page_problems.append(str(error))

    trust_args = [f"--ignore-certificate-errors-spki-list={spki_pin(hub.serving_cert)}"] if hub.serving_cert else []
    async with contextlib.AsyncExitStack() as stack:
        executable = CHROMIUM
        if own_network.available():
            port = urlsplit(hub.rest_url).port
            assert port is not None
            executable = await stack.enter_async_context(own_network.chromium_in_own_network(CHROMIUM, port, tmp_path))
        playwright = await stack.enter_async_context(async_playwright())
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(executable),
            args=[*CHROMIUM_ARGS, *trust_args],
            headless=True,
            viewport={"width": 1360, "height": 900},
        )
        try:
            browser_page = context.pages[0] if context.pages else await context.new_page()
            browser_page.on("console", on_console)
            browser_page.on("pageerror", on_page_error)
            browser_page.set_default_timeout(10_000)
            yield browser_page
        finally:
            await context.close()
