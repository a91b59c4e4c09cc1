"""The kube-store hub writes what members report about their imports where kubectl shows it:
ResourceImport status per cluster, and for an AntreaClusterNetworkPolicy that a member cannot
apply, the ACNPImportFailed Warning Event of Antrea's guide (deduplicated, as Kubernetes does);
on a sandbox and on a real kube-apiserver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.struct_pb2 import Struct

from hub.app import HubApp
from hub.config import HubConfig, KubeStoreConfig
from kube.resources import EVENTS
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_SETS, RESOURCE_IMPORTS
from tests.contract.leader_api import leader_api
from tests.integration.hubclient import Member, MemberFactory
from tests.sandbox.kubectl_runner import KUBECTL, Kubectl

WEST = "test-cluster-west"
POLICY = "strict-namespace-isolation"
IMPORT = names.acnp_import_name(POLICY)
TIER_MISSING = f"ACNP Tier random does not exist in the importing cluster {WEST}"


@pytest.fixture
async def kube_hub(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HubApp]:
    async with leader_api(cluster_kind, request, tmp_path / "leader") as api:
        namespace = await (api.namespace("leader") if api.real else api.fixed_namespace("antrea-multicluster"))
        config = HubConfig(
            data_dir=tmp_path / "hub",
            grpc_address="127.0.0.1:0",
            rest_address="127.0.0.1:0",
            cluster_set_id="test-clusterset",
            leader_cluster_id="test-cluster-north",
        )
        leader_set = {
            "metadata": {"name": config.cluster_set_id},
            "spec": {"clusterID": config.leader_cluster_id, "leaders": [{"clusterID": config.leader_cluster_id}]},
        }
        await api.client.create(CLUSTER_SETS, leader_set, namespace)
        hub = HubApp(replace(config, store=KubeStoreConfig(kubeconfig=api.kubeconfig), namespace=namespace))
        await hub.start()
        try:
            deadline = asyncio.get_running_loop().time() + 30
            while not hub.is_ready():  # it takes the Lease, then loads its index
                assert asyncio.get_running_loop().time() < deadline, "the hub did not take the Lease"
                await asyncio.sleep(0.05)
            yield hub
        finally:
            await hub.stop()


@pytest.fixture
async def members(kube_hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(kube_hub)
    yield factory
    await factory.close()


def guide_policy() -> pb.ResourceExport:
    spec = Struct()
    spec.update({"priority": 1, "tier": "random", "appliedTo": [{"namespaceSelector": {}}]})
    return pb.ResourceExport(
        export_name=POLICY, cluster_id="test-cluster-north", name=POLICY, cluster_network_policy=spec
    )


async def report(member: Member, succeeded: bool, reason: str = "", message: str = "") -> None:
    await member.stub.ReportImportStatus(
        pb.ReportImportStatusRequest(
            cluster_id=member.cluster_id, import_name=IMPORT, succeeded=succeeded, reason=reason, message=message
        )
    )
    assert member.hub.kube is not None
    await member.hub.kube.import_outcomes.settled()


async def failure_events(hub: HubApp) -> list[dict[str, Any]]:
    assert hub.kube is not None
    listed = await hub.kube.client.list(EVENTS, hub.config.namespace)
    return [e for e in listed.items if e.get("reason") == "ACNPImportFailed"]


async def import_cr(hub: HubApp) -> dict[str, Any]:
    assert hub.kube is not None
    return await hub.kube.client.get(RESOURCE_IMPORTS, IMPORT, hub.config.namespace)


async def test_a_member_lacking_the_tier_shows_on_the_resourceimport_as_the_guide_shows_it(
    kube_hub: HubApp, members: MemberFactory, tmp_path: Path
) -> None:
    await members.admin().export(guide_policy())
    west = await members(WEST)

    await report(west, False, "TierNotFound", TIER_MISSING)

    cr = await import_cr(kube_hub)
    [event] = await failure_events(kube_hub)
    assert event["type"] == "Warning"
    assert event["message"] == TIER_MISSING
    assert event["source"]["component"] == "resourceimport-controller"
    assert event["involvedObject"]["uid"] == cr["metadata"]["uid"]
    assert event["involvedObject"]["kind"] == "ResourceImport"
    assert event["count"] == 1
    [status] = cr["status"]["clusterStatuses"]
    assert status["clusterID"] == WEST
    assert status["conditions"][0] | {"lastTransitionTime": ""} == {
        "type": "Succeeded",
        "status": "False",
        "reason": "TierNotFound",
        "message": TIER_MISSING,
        "lastTransitionTime": "",
    }

    if KUBECTL is not None:  # what `kubectl describe resourceimport -n <leader Namespace>` prints
        kube_store = kube_hub.config.kube_store
        assert kube_store is not None and kube_store.kubeconfig is not None
        kubectl = Kubectl(Path(kube_store.kubeconfig), cache_dir=tmp_path / "kubectl-cache")
        described = await kubectl("describe", "resourceimport", "-n", kube_hub.config.namespace)
        text = " ".join(described.check().stdout.split())
        assert "Warning ACNPImportFailed" in text
        assert f"resourceimport-controller {TIER_MISSING}" in text


async def test_a_repeated_failure_counts_on_one_event_and_a_success_clears_the_status_and_adds_nothing(
    kube_hub: HubApp, members: MemberFactory
) -> None:
    await members.admin().export(guide_policy())
    west = await members(WEST)
    await report(west, False, "TierNotFound", TIER_MISSING)
    await report(west, False, "TierNotFound", TIER_MISSING)  # e.g. the member restarted
    [event] = await failure_events(kube_hub)
    assert event["count"] == 2
    assert event["lastTimestamp"] >= event["firstTimestamp"]

    await report(west, True, "Succeeded")
    [after] = await failure_events(kube_hub)
    assert after["count"] == 2
    condition = (await import_cr(kube_hub))["status"]["clusterStatuses"][0]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("True", "Succeeded")


async def test_reports_on_other_imports_write_status_but_no_acnp_event(
    kube_hub: HubApp, members: MemberFactory
) -> None:
    east = await members("test-cluster-east")
    info = pb.ResourceExport(
        export_name=names.cluster_info_export_name("test-cluster-east"),
        cluster_id="test-cluster-east",
        cluster_info=pb.ClusterInfo(cluster_id="test-cluster-east", service_cidr="10.96.0.0/12"),
    )
    await east.export(info)
    west = await members(WEST)
    name = names.cluster_info_import_name("test-cluster-east")
    await west.stub.ReportImportStatus(
        pb.ReportImportStatusRequest(cluster_id=WEST, import_name=name, succeeded=False, reason="ImportConflict")
    )
    assert kube_hub.kube is not None
    await kube_hub.kube.import_outcomes.settled()
    cr = await kube_hub.kube.client.get(RESOURCE_IMPORTS, name, kube_hub.config.namespace)
    assert cr["status"]["clusterStatuses"][0]["conditions"][0]["reason"] == "ImportConflict"
    assert await failure_events(kube_hub) == []
