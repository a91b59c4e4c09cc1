"""CRDs: served after creation, status subresource, generation, Tables with printer columns."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes_asyncio import client

from tests.sandbox.cluster import TABLE_ACCEPT, Cluster
from tests.sandbox.probe_crd import CRDS, NewProbeCRD, ProbeCRD, probe_version


async def test_a_created_crd_is_established_and_listed_in_discovery(cluster: Cluster, probe_crd: ProbeCRD) -> None:
    crd = await cluster.request("GET", f"{CRDS}/{probe_crd.name}")
    conditions = {c["type"]: c["status"] for c in crd.body["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    resources = await cluster.request("GET", f"/apis/{probe_crd.group}/{probe_crd.version}")
    assert resources.body["kind"] == "APIResourceList"
    names = {r["name"]: r for r in resources.body["resources"]}
    assert names["probes"]["kind"] == "Probe"
    assert names["probes"]["namespaced"] is True
    assert "probes/status" in names
    groups = await cluster.request("GET", "/apis")
    assert probe_crd.group in [g["name"] for g in groups.body["groups"]]


async def test_custom_resources_support_crud(cluster: Cluster, probe_crd: ProbeCRD, namespace: str) -> None:
    # Typed as Any: the generated signature omits _content_type, which a dict patch needs.
    custom: Any = client.CustomObjectsApi(cluster.api)
    args = (probe_crd.group, probe_crd.version, namespace, probe_crd.plural)
    created = await custom.create_namespaced_custom_object(*args, probe_crd.object("p1", "east"))
    assert created["metadata"]["generation"] == 1
    fetched = await custom.get_namespaced_custom_object(*args, "p1")
    assert fetched["spec"] == {"clusterID": "east"}
    patched = await custom.patch_namespaced_custom_object(
        *args, "p1", {"spec": {"clusterID": "west"}}, _content_type="application/merge-patch+json"
    )
    assert patched["spec"]["clusterID"] == "west"
    listed = await custom.list_namespaced_custom_object(*args)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["p1"]
    await custom.delete_namespaced_custom_object(*args, "p1")
    await cluster.wait_deleted(probe_crd.path(namespace), "p1")


async def test_strategic_merge_patch_on_a_custom_resource_is_415(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))
    reply = await cluster.request(
        "PATCH",
        f"{probe_crd.path(namespace)}/p1",
        body={"spec": {"clusterID": "x"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert reply.status == 415


async def test_spec_changes_bump_generation_and_status_changes_do_not(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    path = probe_crd.path(namespace)
    created = (await cluster.request("POST", path, body=probe_crd.object("p1", "east"))).body
    assert created["metadata"]["generation"] == 1

    created["spec"]["clusterID"] = "west"
    created["status"] = {"ignored": "by the main endpoint"}
    updated = (await cluster.request("PUT", f"{path}/p1", body=created)).body
    assert updated["metadata"]["generation"] == 2
    assert "status" not in updated

    updated["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    updated["spec"]["clusterID"] = "ignored-by-status"
    with_status = (await cluster.request("PUT", f"{path}/p1/status", body=updated)).body
    assert with_status["metadata"]["generation"] == 2
    assert with_status["spec"]["clusterID"] == "west"
    assert with_status["status"]["conditions"][0]["status"] == "True"


async def test_a_table_of_custom_resources_uses_the_printer_columns(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    path = probe_crd.path(namespace)
    await cluster.request("POST", path, body=probe_crd.object("p1", "east"))
    status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    await cluster.request("PATCH", f"{path}/p1/status", body=status, content_type="application/merge-patch+json")
    table = (await cluster.request("GET", path, headers={"Accept": TABLE_ACCEPT})).body
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Cluster ID", "Ready", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["p1", "east", "True"]
    assert table["rows"][0]["object"]["metadata"]["name"] == "p1"


async def test_a_table_of_services_has_the_kubectl_columns(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services"
    body = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    await cluster.request("POST", path, body=body)
    table = (await cluster.request("GET", path, headers={"Accept": TABLE_ACCEPT})).body
    names = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert names == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[0] == "web" and cells[1] == "ClusterIP" and cells[3] == "<none>" and cells[4] == "80/TCP"


async def test_deleting_a_crd_stops_serving_it(cluster: Cluster, probe_crd: ProbeCRD, namespace: str) -> None:
    await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))
    await cluster.request("DELETE", f"{CRDS}/{probe_crd.name}")
    await cluster.wait_deleted(CRDS, probe_crd.name, within=60)
    # A real API server takes its handler of the kind down as its informer sees the CRD go, a
    # moment after the CRD's DELETED event (a list right after it answered 200 once in CI).
    async with asyncio.timeout(10):
        while (reply := await cluster.request("GET", probe_crd.path(namespace))).status != 404:
            assert reply.status == 200, reply
            await asyncio.sleep(0.1)


async def test_deleting_a_crd_waits_for_custom_resources_held_by_finalizers(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    held = probe_crd.object("held", "east")
    held["metadata"]["finalizers"] = ["test.mchub.io/hold"]
    created = await cluster.request("POST", probe_crd.path(namespace), body=held)
    await cluster.request("DELETE", f"{CRDS}/{probe_crd.name}")
    # The CRD's finalizer deletes its custom resources soon after, not within the DELETE.
    query = {
        "fieldSelector": "metadata.name=held",
        "resourceVersion": created.body["metadata"]["resourceVersion"],
        "timeoutSeconds": "15",
    }
    async with asyncio.timeout(15):
        async for event in cluster.watch(probe_crd.path(namespace), query):
            if event["object"]["metadata"].get("deletionTimestamp"):
                break
    still = await cluster.request("GET", f"{probe_crd.path(namespace)}/held")
    assert still.status == 200
    assert still.body["metadata"]["deletionTimestamp"]
    crd = await cluster.request("GET", f"{CRDS}/{probe_crd.name}")
    assert crd.status == 200 and crd.body["metadata"]["deletionTimestamp"]
    release = {"metadata": {"finalizers": None}}
    await cluster.request(
        "PATCH", f"{probe_crd.path(namespace)}/held", body=release, content_type="application/merge-patch+json"
    )
    await cluster.wait_deleted(CRDS, probe_crd.name, within=60)


async def test_fields_outside_a_structural_schema_are_pruned_and_defaults_applied(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    spec_schema = {
        "type": "object",
        "properties": {
            "clusterID": {"type": "string"},
            "mode": {"type": "string", "default": "strict"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    schema = {"type": "object", "properties": {"spec": spec_schema, "status": {"type": "object"}}}
    crd = await new_probe_crd([probe_version(schema=schema)])
    body = crd.object("p1", "east")
    body["spec"]["unknown"] = "dropped"
    body["spec"]["labels"] = {"a": "b"}
    body["topLevel"] = "dropped too"
    created = await cluster.request("POST", crd.path(namespace), body=body)
    assert created.status == 201, created.body
    assert created.body["spec"] == {"clusterID": "east", "mode": "strict", "labels": {"a": "b"}}
    assert "topLevel" not in created.body
