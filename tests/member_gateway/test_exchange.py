"""ClusterInfo through a real hub: east's Gateway shows up as a ClusterInfoImport in west.

The members are the harness's MemberApps (tests/member/harness.py), each running its own
GatewayController; their Pod CIDRs come from antrea-mc-controller-config.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from hub.app import HubApp
from kube.conditions import find_condition
from kube.errors import Conflict
from mcapi import names
from mcapi.resources import CLUSTER_INFO_IMPORTS
from member.imports.cluster_info_status import set_cluster_info_import_condition
from tests.integration.hubrunner import HubRunner
from tests.member.harness import JoinedMember, join_member
from tests.member_gateway.conftest import NAMESPACE
from tests.member_gateway.kubeobjects import create_node, named, set_ready, until


@pytest.fixture
async def hub_and_pair(tmp_path: Path) -> AsyncIterator[tuple[HubApp, JoinedMember, JoinedMember]]:
    async with AsyncExitStack() as stack:
        hubs = HubRunner(tmp_path / "hub")
        hub = await hubs.start()
        stack.push_async_callback(hubs.stop)
        east = await join_member(hub, "east", tmp_path, config_yaml=_config("10.1.0.0/16"))
        stack.push_async_callback(east.aclose)
        west = await join_member(hub, "west", tmp_path, config_yaml=_config("10.2.0.0/16"))
        stack.push_async_callback(west.aclose)
        await east.wait_connected()
        await west.wait_connected()
        yield hub, east, west


@pytest.fixture
def pair(hub_and_pair: tuple[HubApp, JoinedMember, JoinedMember]) -> tuple[JoinedMember, JoinedMember]:
    return hub_and_pair[1], hub_and_pair[2]


def _config(pod_cidr: str) -> str:
    return f"apiVersion: multicluster.crd.antrea.io/v1alpha1\nkind: MultiClusterConfig\npodCIDRs:\n  - {pod_cidr}\n"


async def test_easts_gateway_reaches_west_as_a_cluster_info_import_flagged_for_the_shared_service_cidr(
    pair: tuple[JoinedMember, JoinedMember],
) -> None:
    east, west = pair
    await create_node(east.client, "east-a", "192.168.10.1")
    await create_node(east.client, "east-b", "192.168.10.2")
    imported = await until(west.client, CLUSTER_INFO_IMPORTS, named("east-clusterinfo"), namespace=NAMESPACE, within=15)
    spec = imported["spec"]
    assert (spec["clusterID"], spec["serviceCIDR"], spec["podCIDRs"]) == ("east", "10.96.0.0/12", ["10.1.0.0/16"])
    assert spec["gatewayInfos"] == [{"gatewayIP": "192.168.10.1"}]

    # Both sandboxes use kube's default Service CIDR: west says so on the import.
    def flagged(objs: list[dict[str, object]]) -> dict[str, object] | None:
        obj = named("east-clusterinfo")(objs)
        status = (obj or {}).get("status") or {}
        assert isinstance(status, dict)
        found = find_condition(status.get("conditions"), "CIDRConflict")
        return obj if found is not None and found["reason"] == "ServiceCIDROverlap" else None

    obj = await until(west.client, CLUSTER_INFO_IMPORTS, flagged, namespace=NAMESPACE, within=15)
    ready = find_condition(obj["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == "True"

    await set_ready(east.client, "east-a", False)
    await until(
        west.client,
        CLUSTER_INFO_IMPORTS,
        lambda objs: any(o["spec"]["gatewayInfos"] == [{"gatewayIP": "192.168.10.2"}] for o in objs),
        namespace=NAMESPACE,
        within=15,
        what="west sees east's new Gateway",
    )


async def test_the_agents_reachability_verdict_reaches_the_hub_for_its_dashboard(
    hub_and_pair: tuple[HubApp, JoinedMember, JoinedMember],
) -> None:
    hub, east, west = hub_and_pair
    await create_node(east.client, "east-a", "192.168.10.1")
    await until(west.client, CLUSTER_INFO_IMPORTS, named("east-clusterinfo"), namespace=NAMESPACE, within=15)

    async def write_verdict() -> bool:
        """What west's agent writes on its Gateway Node after 5 missed probes (retried on a
        conflict: the member writes its own conditions on the same object)."""
        live = await west.client.get(CLUSTER_INFO_IMPORTS, "east-clusterinfo", NAMESPACE)
        try:
            await set_cluster_info_import_condition(
                west.client,
                live,
                names.CONDITION_GATEWAY_REACHABLE,
                "False",
                reason="Unreachable",
                message="no answer from 192.168.10.1 for 5 probes",
            )
        except Conflict:
            return False
        return True

    await until_true(write_verdict)

    async def reported() -> bool:
        entry = hub.engine.import_status.get("east-clusterinfo", {}).get("west")
        return entry is not None and not entry.succeeded and entry.reason == "Unreachable"

    await until_true(reported)


async def until_true(probe: Callable[[], Awaitable[bool]], within: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await probe():
        assert asyncio.get_running_loop().time() < deadline, "not within the time allowed"
        await asyncio.sleep(0.1)
