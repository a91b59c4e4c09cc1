"""The dashboard with a global CIDR (issue 26): each member's block, and NAT where it applies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from hub.app import HubApp
from tests.browser.conftest import ARTIFACTS, NO_CHROMIUM
from tests.browser.test_dashboard import cluster_info_export, sign_in
from tests.integration.hub_fixtures import running_hub
from tests.integration.hubclient import MemberFactory
from tests.needs import needs

pytestmark = [pytest.mark.browser, needs(NO_CHROMIUM)]


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[HubApp]:
    """The page's hub: with a global CIDR of /20 blocks."""
    async with running_hub(tmp_path / "hub", global_cidr="242.0.0.0/16", global_block_prefix=20) as app:
        yield app


async def test_the_gateways_table_shows_who_is_reached_through_nat_and_who_directly(
    hub: HubApp, connect: MemberFactory, page: Page, page_problems: list[str]
) -> None:
    east, west, north = await connect("east"), await connect("west"), await connect("north")
    await east.export(cluster_info_export("east", "10.96.0.0/16", "192.0.2.10", "10.1.0.0/16"))
    await west.export(cluster_info_export("west", "10.96.0.0/16", "192.0.2.20", "10.1.0.0/16"))
    await north.export(cluster_info_export("north", "10.97.0.0/16", "192.0.2.30", "10.3.0.0/16"))

    await sign_in(page, hub, hub.admin_token)

    await expect(page.get_by_test_id("gateway-east-reached")).to_have_text("NAT via 242.0.0.0/20")
    await expect(page.get_by_test_id("gateway-west-reached")).to_have_text("NAT via 242.0.16.0/20")
    await expect(page.get_by_test_id("gateway-north-reached")).to_have_text("own ranges (block 242.0.32.0/20)")
    ARTIFACTS.mkdir(exist_ok=True)
    await page.locator("#gateways").screenshot(path=str(ARTIFACTS / "dashboard-global-addressing.png"))
    assert page_problems == []
