"""Joining the ClusterSet: v1alpha2 and legacy v1alpha1, late ClusterSets, config, ClusterSet status."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import secrets
import signal
import sys
import weakref
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.app import HubApp
from kube.client import KubeClient, connect
from kube.resources import CRDS, NAMESPACES
from mcapi.config import ConfigError
from mcapi.resources import CLUSTER_CLAIMS, CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_SETS, CLUSTER_SETS_V1ALPHA1
from mchub_cli import member_cmd
from member.app import MemberApp
from member.health import HealthServer
from member.join.spec import parse_join_spec
from tests.integration.hubrunner import HubRunner
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster
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


@contextlib.asynccontextmanager
async def _cluster_client(kind: str, request: pytest.FixtureRequest, work_dir: Path) -> AsyncIterator[KubeClient]:
    """A client of a fresh sandbox, or of the session's real `east` cluster."""
    if kind == "sandbox":
        async with sandbox_cluster(work_dir, "east") as (_, client):
            yield client
        return
    real = request.getfixturevalue("real_clusters")["east"]
    client = await connect(real.kubeconfig)
    try:
        yield client
    finally:
        await client.close()


# The legacy guide's objects for test-cluster-east (installation-legacy-v1alpha1.md), with the
# leader's serviceAccount of a v1alpha1 leader entry and a ClusterSet v1alpha1 naming its member.
LEGACY_CLAIMS = (
    ("east-membercluster-id", "id.k8s.io", "test-cluster-east"),
    ("clusterset-id", "clusterSet.k8s.io", "test-clusterset"),
)
LEGACY_LEADER = {
    "clusterID": "test-cluster-north",
    "secret": "member-east-access-token",
    "server": "https://172.18.0.2:6443",
    "serviceAccount": "member-east-access-sa",
}


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    return spec


async def test_the_legacy_guides_objects_keep_every_field_in_both_versions(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A real apiserver stores v1alpha1 objects as v1alpha2 (conversion None) and prunes them
    against every schema on the way: the v1alpha2 schemas must keep what v1alpha1 objects carry,
    and v1alpha1 what v1alpha2 objects carry (Antrea's own samples write spec.clusterID in v1alpha1)."""
    ns = f"legacy-crd-{secrets.token_hex(3)}"
    async with _cluster_client(cluster_kind, request, tmp_path / "east") as client:
        await ensure_namespace(client, ns)
        try:
            for object_name, claim, value in LEGACY_CLAIMS:
                body = {"metadata": {"name": object_name}, "name": claim, "value": value}
                await client.create(CLUSTER_CLAIMS_V1ALPHA1, body, namespace=ns)
            legacy_spec = {
                "leaders": [LEGACY_LEADER],
                "members": [{"clusterID": "test-cluster-east"}],
                "namespace": "antrea-mcs-ns",
            }
            await client.create(
                CLUSTER_SETS_V1ALPHA1, {"metadata": {"name": "test-clusterset"}, "spec": legacy_spec}, namespace=ns
            )
            templated = {"clusterID": "test-cluster-east", "leaders": [LEGACY_LEADER], "namespace": "antrea-mcs-ns"}
            await client.create(
                CLUSTER_SETS_V1ALPHA1, {"metadata": {"name": "from-a-template"}, "spec": templated}, namespace=ns
            )

            for claims_version in (CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_CLAIMS):
                claims = (await client.list(claims_version, ns)).items
                found = {(c["metadata"]["name"], c.get("name"), c.get("value")) for c in claims}
                assert found == set(LEGACY_CLAIMS), claims_version.version
            for sets_version in (CLUSTER_SETS_V1ALPHA1, CLUSTER_SETS):
                legacy = await client.get(sets_version, "test-clusterset", ns)
                assert _spec_of(legacy) == legacy_spec, sets_version.version
                assert _spec_of(await client.get(sets_version, "from-a-template", ns)) == templated
                joined = parse_join_spec(legacy, (await client.list(CLUSTER_CLAIMS, ns)).items)
                assert (joined.cluster_id, joined.cluster_set_id, joined.legacy) == (
                    "test-cluster-east",
                    "test-clusterset",
                    True,
                )
        finally:
            await client.delete(NAMESPACES, ns)


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
    clusterset = east.member.clusterset
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


class _Cycle:
    """Garbage only a collection frees: it refers to itself."""

    def __init__(self) -> None:
        self.me = self


async def test_the_member_command_collects_garbage_before_freezing_what_its_start_built(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east", start=False)
    args = argparse.Namespace(
        kubeconfig=Path(east.server.kubeconfig_path), context=None, namespace=MEMBER_NAMESPACE, health_address=""
    )
    gc.unfreeze()
    gc.disable()  # only the command collects meanwhile
    try:
        garbage = _Cycle()
        freed = weakref.ref(garbage)
        del garbage
        serving = asyncio.create_task(member_cmd.serve(args))
        try:
            async with asyncio.timeout(30):
                while not gc.get_freeze_count():
                    assert not serving.done(), serving.result()
                    await asyncio.sleep(0.05)
            # Frozen objects are never collected: garbage frozen with them would stay for good.
            assert freed() is None
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    finally:
        gc.unfreeze()
        gc.enable()


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
