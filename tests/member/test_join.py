"""Joining the ClusterSet: v1alpha2 and legacy v1alpha1, late ClusterSets, config, ClusterSet status."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest

from hub.app import HubApp
from kube.resources import CLUSTER_SETS, CRDS
from mcapi.config import ConfigError
from mchub_cli import member_cmd
from member.app import MemberApp
from member.health import HealthServer
from tests.integration.hubrunner import HubRunner
from tests.member.conftest import MemberFactory
from tests.member.harness import (
    MEMBER_NAMESPACE,
    MEMBER_OPTIONS,
    JoinedMember,
    eventually,
    write_cluster_set,
)


async def _announced(hub: HubApp, cluster_id: str) -> bool:
    return cluster_id in hub.engine.index.members


def _condition(obj: dict, condition_type: str) -> dict | None:  # type: ignore[type-arg]
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return dict(condition)
    return None


async def _cluster_set_ready(member: JoinedMember, hub: HubApp, status: str) -> dict:  # type: ignore[type-arg]
    async def probe() -> dict | None:  # type: ignore[type-arg]
        obj = await member.cluster_set(hub)
        ready = _condition(obj, "Ready")
        return obj if ready is not None and ready["status"] == status else None

    return await eventually(probe, what=f"ClusterSet Ready={status}")


async def test_a_member_joins_through_a_v1alpha2_cluster_set_and_announces(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await eventually(lambda: _announced(hub, "east"), what="east announced")
    record = hub.engine.index.members["east"]
    assert record.cluster_set_id == hub.config.cluster_set_id
    assert east.member.joined is not None and east.member.joined.legacy is False


async def test_a_member_joins_through_legacy_cluster_claims_and_a_v1alpha1_cluster_set(
    hub: HubApp, members: MemberFactory
) -> None:
    west = await members.join("west", legacy=True)
    await eventually(lambda: _announced(hub, "west"), what="west announced")
    assert west.member.joined is not None
    assert west.member.joined.legacy is True
    assert west.member.joined.cluster_id == "west"


async def test_several_members_join_one_hub_from_one_process(hub: HubApp, members: MemberFactory) -> None:
    for name in ("east", "west", "south"):
        await members.join(name)
    for name in ("east", "west", "south"):
        await eventually(lambda n=name: _announced(hub, n), what=f"{name} announced")  # type: ignore[misc]


async def test_a_member_joins_when_the_cluster_set_is_created_after_it_started(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", with_cluster_set=False)
    assert east.member.joined is None
    await write_cluster_set(east.client, hub, "east", "member-east-token")
    await eventually(lambda: _announced(hub, "east"), what="east announced")


async def test_the_cluster_set_status_is_ready_with_the_leader_connected(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    obj = await _cluster_set_ready(east, hub, "True")
    status = obj["status"]
    assert status["totalClusters"] == 1
    assert status["readyClusters"] == 1
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    (leader,) = status["clusterStatuses"]
    assert leader["clusterID"] == hub.config.leader_cluster_id
    conditions = {c["type"]: c for c in leader["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["IsLeader"]["status"] == "True"


async def test_the_cluster_set_status_is_not_rewritten_when_nothing_changed(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    obj = await _cluster_set_ready(east, hub, "True")
    version = obj["metadata"]["resourceVersion"]
    clusterset = east.member._clusterset
    assert clusterset is not None
    for _ in range(3):  # each pass recomputes the status from the live ClusterSet
        passes = clusterset.status_passes
        clusterset.status_changed()

        async def passed(after: int = passes) -> bool:
            return clusterset.status_passes > after

        await eventually(passed, what="a status pass")
    assert (await east.cluster_set(hub))["metadata"]["resourceVersion"] == version


async def test_the_cluster_set_turns_disconnected_when_the_hub_stops_and_ready_when_it_returns(
    hubs: HubRunner, hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    ready = _condition(await _cluster_set_ready(east, hub, "True"), "Ready")
    assert ready is not None

    await hubs.stop()
    obj = await _cluster_set_ready(east, hub, "False")
    down = _condition(obj, "Ready")
    assert down is not None
    assert down["reason"] == "Disconnected"
    assert down["message"].startswith("Disconnected from leader")
    assert obj["status"]["readyClusters"] == 0
    (leader,) = obj["status"]["clusterStatuses"]
    leader_ready = next(c for c in leader["conditions"] if c["type"] == "Ready")
    assert leader_ready["status"] == "False" and leader_ready["reason"] == "Disconnected"

    hub = await hubs.start()
    obj = await _cluster_set_ready(east, hub, "True")
    assert obj["status"]["readyClusters"] == 1


async def test_the_cluster_set_says_why_it_cannot_join_when_the_token_secret_is_missing(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", with_cluster_set=False)
    await write_cluster_set(east.client, hub, "east", "no-such-secret")

    async def says_why() -> dict | None:  # type: ignore[type-arg]
        ready = _condition(await east.cluster_set(hub), "Ready")
        return ready if ready is not None and "no-such-secret" in ready["message"] else None

    ready = await eventually(says_why, what="Ready=False naming the Secret")
    assert ready["status"] == "False" and ready["reason"] == "Disconnected"
    assert east.member.joined is None


async def test_an_invalid_multicluster_config_stops_the_member_with_a_clear_error(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", config_yaml="endpointIPType: Bogus\n", start=False)
    with pytest.raises(ConfigError, match="endpointIPType"):
        await east.start_member()


async def test_the_member_command_exits_non_zero_on_an_invalid_config(
    hub: HubApp, members: MemberFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    east = await members.join("east", config_yaml="serviceCIDR: not-a-cidr\n", start=False)
    args = argparse.Namespace(
        kubeconfig=Path(east.server.kubeconfig_path), context=None, namespace=MEMBER_NAMESPACE, health_address=""
    )
    assert await member_cmd.serve(args) == 2
    assert "serviceCIDR" in capsys.readouterr().err


async def test_a_member_without_a_config_map_uses_the_defaults(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    assert east.member.config.endpoint_ip_type == "ClusterIP"


async def test_a_pod_ip_config_is_read_at_start(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east", config_yaml="endpointIPType: PodIP\n")
    assert east.member.config.endpoint_ip_type == "PodIP"


async def test_a_deleted_cluster_set_disconnects_the_member(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await east.wait_connected()
    await east.client.delete(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)

    async def left() -> bool:
        return east.member.joined is None

    await eventually(left, what="east left")


async def test_the_member_command_joins_and_exits_cleanly_on_sigterm(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east", start=False)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mchub_cli.main",
        "member",
        "--kubeconfig",
        str(east.server.kubeconfig_path),
        "--health-address",
        "127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(lambda: _announced(hub, "east"), what="the member process announced")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
    assert process.returncode == 0, stderr.decode()


async def test_the_member_reports_ready_once_connected_and_not_ready_when_the_hub_is_gone(
    hubs: HubRunner, hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.wait_connected()
    health = HealthServer("127.0.0.1:0", east.member.readiness)
    await health.start()
    try:
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{health.port}") as http:
            async with http.get("/healthz") as live:
                assert live.status == 200
            async with http.get("/readyz") as ready:
                assert ready.status == 200
            await hubs.stop()

            async def not_ready() -> bool:
                async with http.get("/readyz") as answer:
                    return answer.status == 503

            await eventually(not_ready, what="/readyz answers 503 with the hub gone")
    finally:
        await health.stop()


async def test_a_member_started_before_the_mcs_crds_says_why_and_joins_once_they_are_installed(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", start=False)
    crd = await east.client.get(CRDS, "serviceexports.multicluster.x-k8s.io")
    await east.client.delete(CRDS, "serviceexports.multicluster.x-k8s.io")
    east.app = MemberApp(east.client, MEMBER_NAMESPACE, options=replace(MEMBER_OPTIONS, status_resync=0.5))
    await east.app.start()

    async def says_why() -> dict | None:  # type: ignore[type-arg]
        ready = _condition(await east.cluster_set(hub), "Ready")
        return ready if ready is not None and "ServiceExport CRD" in ready["message"] else None

    ready = await eventually(says_why, what="Ready=False naming the missing CRD")
    assert ready["status"] == "False"

    del crd["metadata"]["resourceVersion"], crd["metadata"]["uid"]
    await east.client.create(CRDS, crd)
    await east.wait_connected()
