"""The admin's REST writes: a policy's clusterID is the leader's; another's export is not the admin's;
refusals quote what the client sent, bounded. (Fixtures: the REST suite's `hub` and `http`.)"""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest

from hub.app import HubApp
from hub.errors import MAX_MESSAGE_BYTES
from tests.integration.hubclient import MemberFactory, service_export
from tests.integration.rest_fixtures import (  # noqa: F401 (the fixtures clock, hub, http)
    bearer,
    clock_fixture,
    clocked_hub_fixture,
    http_fixture,
)
from tests.integration.test_hub_rest import ACNP


def _acnp(cluster_id: str | None) -> dict[str, Any]:
    body = copy.deepcopy(ACNP)
    if cluster_id is not None:
        body["spec"]["clusterID"] = cluster_id
    return body


async def _post(http: aiohttp.ClientSession, hub: HubApp, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post("/api/v1/resourceexports", json=body, headers=bearer(hub.admin_token)) as response:
        answer: dict[str, Any] = await response.json()
        return response.status, answer


@pytest.mark.parametrize("cluster_id", [None, "", "leader"], ids=["absent", "empty", "the leader's"])
async def test_an_admin_policy_without_a_cluster_or_with_the_leaders_is_the_leaders(
    hub: HubApp, http: aiohttp.ClientSession, cluster_id: str | None
) -> None:
    assert hub.config.leader_cluster_id == "leader"
    status, answer = await _post(http, hub, _acnp(cluster_id))
    assert status == 201, answer
    assert answer["item"]["spec"]["clusterID"] == "leader"


async def test_an_admin_policy_naming_a_member_is_a_bad_request_and_changes_nothing(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    await connect("east")
    revision = hub.engine.revision
    status, answer = await _post(http, hub, _acnp("east"))
    assert status == 400, answer
    assert "'leader'" in answer["message"]
    assert "'east'" in answer["message"]
    assert hub.engine.revision == revision


async def test_the_admin_cannot_delete_a_members_export(
    hub: HubApp, http: aiohttp.ClientSession, connect: MemberFactory
) -> None:
    east = await connect("east")
    export = service_export("east", "default", "web")
    await east.export(export)
    revision = hub.engine.revision
    async with http.delete(f"/api/v1/resourceexports/{export.export_name}", headers=bearer(hub.admin_token)) as r:
        assert r.status == 403, await r.text()
    assert hub.engine.revision == revision


async def test_refusals_quote_long_client_values_bounded(hub: HubApp, http: aiohttp.ClientSession) -> None:
    huge = "e" * (1 << 20)
    status, answer = await _post(http, hub, _acnp(huge))
    assert status == 400, answer
    assert "(1048576 bytes)" in answer["message"]
    assert len(answer["message"].encode()) <= MAX_MESSAGE_BYTES
    name = "n" * 4000
    async with http.delete(f"/api/v1/resourceexports/{name}", headers=bearer(hub.admin_token)) as response:
        assert response.status == 404
        assert "(4000 bytes)" in (await response.json())["message"]
