"""ClusterNetworkPolicy, LabelIdentity and ClusterInfo imports, and a cluster that serves only
the MCS v1beta1 ServiceImport."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import yaml

from kube.client import KubeClient
from kube.conditions import Status
from kube.errors import Conflict, NotFound
from kube.resources import CRDS, Obj, Resource
from mcapi import names
from mcapi.resources import CLUSTER_INFO_IMPORTS, LABEL_IDENTITIES, SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1
from member.hubclient import Delete
from member.imports import discovery
from member.imports.cluster_info_status import set_cluster_info_import_condition
from member.imports.discovery import ApiDiscovery
from tests.kubeenv.cluster import CRD_DIR
from tests.member_imports.conftest import MEMBER_NAMESPACE, Appliers, Reports, eventually
from tests.member_imports.messages import acnp_import, cluster_info_import, label_identity_import, service_import
from tests.member_imports.test_service_imports import eventually_applied

# Several writers own conditions on one ClusterInfoImport (import, overlap, gateway health): a
# writer that meets a conflicting write re-reads and retries this many times before giving up.
CONFLICT_RETRIES = 5


async def set_condition_retrying(
    client: KubeClient,
    live: Obj,
    condition_type: str,
    status: Status,
    *,
    reason: str = "",
    message: str = "",
) -> Obj:
    """set_cluster_info_import_condition, re-reading and retrying when another writer got there first."""
    for _ in range(CONFLICT_RETRIES):
        try:
            return await set_cluster_info_import_condition(
                client, live, condition_type, status, reason=reason, message=message
            )
        except Conflict:
            live = await client.get(CLUSTER_INFO_IMPORTS, live["metadata"]["name"], live["metadata"].get("namespace"))
    return await set_cluster_info_import_condition(client, live, condition_type, status, reason=reason, message=message)


ACNP = Resource("crd.antrea.io", "v1beta1", "clusternetworkpolicies", "ClusterNetworkPolicy", False)
TIER = Resource("crd.antrea.io", "v1beta1", "tiers", "Tier", False)
ISOLATION: dict[str, Any] = {
    "priority": 1,
    "tier": "securityops",
    "appliedTo": [{"namespaceSelector": {}}],
    "ingress": [{"action": "Pass", "from": [{"namespaces": {"match": "Self"}}], "name": "PassFromSameNS"}],
}


def _minimal_crd(plural: str, kind: str) -> Obj:
    """A CRD of Antrea's crd.antrea.io group that accepts any spec, as a test stand-in for Antrea's."""
    return {
        "metadata": {"name": f"{plural}.crd.antrea.io"},
        "spec": {
            "group": "crd.antrea.io",
            "scope": "Cluster",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


async def _install(client: KubeClient, crd: Obj, resource: Resource) -> None:
    await client.create(CRDS, crd)

    async def served() -> bool:
        try:
            await client.list(resource)
        except NotFound:
            return False
        return True

    await eventually(served)


async def test_a_policy_import_fails_without_antreas_crd_and_is_created_once_it_is_installed(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    upsert = acnp_import("strict-namespace-isolation", ISOLATION)
    await applier.handle(upsert)
    assert reports.last(upsert.import_name) == (
        False,
        "CRDNotInstalled",
        "ClusterNetworkPolicy CRD not installed: is Antrea running?",
    )

    await _install(member, _minimal_crd("clusternetworkpolicies", "ClusterNetworkPolicy"), ACNP)
    await eventually_applied(reports, upsert.import_name)
    policy = await member.get(ACNP, "antrea-mc-strict-namespace-isolation")
    assert policy["metadata"]["annotations"][names.ANNOTATION_IMPORTED_ACNP] == "true"
    assert policy["spec"] == ISOLATION

    changed = {k: v for k, v in ISOLATION.items() if k != "ingress"} | {"egress": ISOLATION["ingress"]}
    await applier.handle(acnp_import("strict-namespace-isolation", changed))
    assert (await member.get(ACNP, "antrea-mc-strict-namespace-isolation"))["spec"] == changed

    await applier.handle(Delete(upsert.import_name))
    assert (await member.list(ACNP)).items == []


async def test_a_policy_import_waiting_for_antreas_crd_applies_as_soon_as_discovery_lists_it_not_a_backoff_later(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    # Every attempt asks discovery again (its answer at once, the refresh behind it), while the
    # attempts back off towards 30 s apart: an attempt that still sees the old answer fails, and
    # its refresh, listing the CRD, has the import tried again there and then.
    settling = await appliers.new(discovery_ttl=0.0, retry_interval=30.0)
    upsert = acnp_import("strict-namespace-isolation", ISOLATION)
    await settling.handle(upsert)
    assert reports.last(upsert.import_name)[:2] == (False, "CRDNotInstalled")  # type: ignore[index]
    # Seven failed attempts (3.15 s): the next comes 3.2 s after the seventh, the one after it 6.4 s later.
    await eventually(lambda: _at_least(settling.applier.requeues(upsert.import_name), 7), wait=10.0)
    await _install(member, _minimal_crd("clusternetworkpolicies", "ClusterNetworkPolicy"), ACNP)
    installed = asyncio.get_running_loop().time()
    await eventually_applied(reports, upsert.import_name)
    assert asyncio.get_running_loop().time() - installed < 5.0, "applied only a backoff step later"
    assert (await member.get(ACNP, "antrea-mc-strict-namespace-isolation"))["spec"] == ISOLATION


async def _at_least(value: int, least: int) -> bool:
    return value >= least


async def test_discovery_tells_when_a_groups_resources_change_and_not_when_a_refresh_finds_the_same(
    member: KubeClient,
) -> None:
    changes: list[str] = []
    apis = ApiDiscovery(member, ttl=0.0, on_change=changes.append)
    try:

        async def serving(versions: list[str]) -> bool:
            await asyncio.sleep(0.05)  # the refresh the last answer started, behind it
            return await apis.versions_serving("crd.antrea.io", "clusternetworkpolicies") == versions

        for _ in range(3):
            assert await serving([])
        assert changes == []
        await _install(member, _minimal_crd("clusternetworkpolicies", "ClusterNetworkPolicy"), ACNP)
        await eventually(lambda: serving(["v1beta1"]))
        for _ in range(3):
            assert await serving(["v1beta1"])
        assert changes == ["crd.antrea.io"]
    finally:
        await apis.close()


async def test_discovery_looks_again_at_once_at_a_resource_it_found_missing_a_second_ago_not_a_ttl_later(
    member: KubeClient,
) -> None:
    changes: list[str] = []
    apis = ApiDiscovery(member, ttl=600.0, on_change=changes.append)
    try:
        assert await apis.versions_serving("crd.antrea.io", "clusternetworkpolicies") == []
        await _install(member, _minimal_crd("clusternetworkpolicies", "ClusterNetworkPolicy"), ACNP)
        # Within RECHECK_AFTER of the answer: it stands, and nothing is asked again.
        assert await apis.versions_serving("crd.antrea.io", "clusternetworkpolicies") == []
        await asyncio.sleep(0.2)
        assert changes == []
        await asyncio.sleep(discovery.RECHECK_AFTER)
        # Older: still given (an import never waits for discovery), and looked at again now.
        assert await apis.versions_serving("crd.antrea.io", "clusternetworkpolicies") == []
        await eventually(lambda: _true(changes == ["crd.antrea.io"]))
        assert await apis.versions_serving("crd.antrea.io", "clusternetworkpolicies") == ["v1beta1"]
    finally:
        await apis.close()


async def _true(value: bool) -> bool:
    return value


async def test_a_policy_whose_tier_is_missing_fails_and_is_created_when_the_tier_appears(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    await _install(member, _minimal_crd("clusternetworkpolicies", "ClusterNetworkPolicy"), ACNP)
    await _install(member, _minimal_crd("tiers", "Tier"), TIER)
    applier = await appliers.new()
    upsert = acnp_import("strict-namespace-isolation", ISOLATION)
    await applier.handle(upsert)
    assert reports.last(upsert.import_name) == (
        False,
        "TierNotFound",
        "ACNP Tier securityops does not exist in the importing cluster west",
    )
    assert (await member.list(ACNP)).items == []

    await member.create(TIER, {"metadata": {"name": "securityops"}, "spec": {"priority": 100}})
    await eventually_applied(reports, upsert.import_name)
    assert (await member.get(ACNP, "antrea-mc-strict-namespace-isolation"))["spec"]["tier"] == "securityops"


async def test_a_label_identity_import_creates_a_cluster_scoped_label_identity(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    label = "ns:kubernetes.io/metadata.name=default&pod:app=web"
    upsert = label_identity_import(label, 42)
    await applier.handle(upsert)

    identity = await member.get(LABEL_IDENTITIES, names.label_hash(label))
    assert identity["spec"] == {"label": label, "id": 42}
    assert reports.last(upsert.import_name) == (True, "Succeeded", "")


async def test_a_cluster_info_import_creates_a_ready_cluster_info_import_in_the_member_namespace(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = await appliers.new()
    await applier.handle(cluster_info_import("east"))
    await applier.handle(cluster_info_import("west"))  # the member's own: never imported

    assert {o["metadata"]["name"] for o in (await member.list(CLUSTER_INFO_IMPORTS, MEMBER_NAMESPACE)).items} == {
        "east-clusterinfo"
    }
    imported = await member.get(CLUSTER_INFO_IMPORTS, "east-clusterinfo", MEMBER_NAMESPACE)
    assert imported["spec"] == {
        "clusterID": "east",
        "serviceCIDR": "10.112.0.0/16",
        "gatewayInfos": [{"gatewayIP": "172.18.0.2"}],
        "podCIDRs": ["10.244.0.0/16"],
    }
    [ready] = imported["status"]["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True") and ready["lastTransitionTime"]
    assert reports.last("east-clusterinfo") == (True, "Succeeded", "")
    assert reports.last("west-clusterinfo") is None

    await applier.handle(cluster_info_import("east", gateway_ip="172.18.0.9"))
    moved = await member.get(CLUSTER_INFO_IMPORTS, "east-clusterinfo", MEMBER_NAMESPACE)
    assert moved["spec"]["gatewayInfos"] == [{"gatewayIP": "172.18.0.9"}]
    assert moved["status"]["conditions"] == imported["status"]["conditions"]


async def test_a_condition_written_by_another_controller_meanwhile_does_not_fail_the_import(
    member: KubeClient,
) -> None:
    """The importer's Ready and the overlap/health conditions share one ClusterInfoImport:
    a write from a stale read is re-read and retried instead of failing the import."""
    created = await member.create(
        CLUSTER_INFO_IMPORTS,
        {"metadata": {"name": "east-clusterinfo"}, "spec": {"clusterID": "east", "serviceCIDR": "10.112.0.0/16"}},
        namespace=MEMBER_NAMESPACE,
    )
    await set_cluster_info_import_condition(member, created, "CIDRConflict", "False", reason="NoOverlap")
    written = await set_condition_retrying(member, created, "Ready", "True", reason="Imported")
    kinds = {c["type"]: c["status"] for c in written["status"]["conditions"]}
    assert kinds == {"CIDRConflict": "False", "Ready": "True"}


async def _serve_only_v1beta1_service_imports(client: KubeClient) -> None:
    crd = yaml.safe_load((CRD_DIR / "multicluster.x-k8s.io_serviceimports.yaml").read_text())
    versions: Sequence[Obj] = crd["spec"]["versions"]
    crd["spec"]["versions"] = [v for v in versions if v["name"] == "v1beta1"]
    await client.delete(CRDS, crd["metadata"]["name"])

    async def deleted() -> bool:
        with suppress(NotFound):
            await client.get(CRDS, crd["metadata"]["name"])
            return False
        return True

    await eventually(deleted)
    await _install(client, crd, SERVICE_IMPORTS_V1BETA1)


async def test_a_cluster_serving_only_v1beta1_gets_v1beta1_service_imports_with_ip_families(
    member: KubeClient, appliers: Appliers
) -> None:
    await _serve_only_v1beta1_service_imports(member)
    applier = await appliers.new()
    await applier.handle(service_import("default", "nginx", ip_families=["IPv4"]))

    imported = await member.get(SERVICE_IMPORTS_V1BETA1, "nginx", "default")
    assert imported["spec"]["ipFamilies"] == ["IPv4"]
    assert imported["spec"]["type"] == "ClusterSetIP" and len(imported["spec"]["ips"]) == 1
    assert imported["status"]["clusters"] == [{"cluster": "east"}]
    try:
        await member.list(SERVICE_IMPORTS, "default")
    except NotFound:
        pass
    else:
        raise AssertionError("v1alpha1 is still served")
