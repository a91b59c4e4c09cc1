"""Nodes, Endpoints, EndpointSlices, Events, Leases: stored the way controllers expect."""

from __future__ import annotations

from tests.sandbox.cluster import Cluster

SMP = "application/strategic-merge-patch+json"


async def test_a_node_keeps_its_status_on_create_and_merges_conditions_through_status(
    cluster: Cluster, unique: str
) -> None:
    name = f"mchub-node-{unique}"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"multicluster.antrea.io/gateway": "true"}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": "False", "reason": "Starting"}],
        },
    }
    try:
        created = await cluster.request("POST", "/api/v1/nodes", body=node)
        assert created.status == 201, created.body
        if cluster.sandbox is not None:
            # A real cluster's node lifecycle controller may rewrite a kubelet-less Node's status.
            assert created.body["status"]["addresses"][0]["address"] == "192.168.1.10"
        ignored = await cluster.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            body={"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            content_type=SMP,
        )
        assert ignored.status == 200
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
        patched = await cluster.request(
            "PATCH", f"/api/v1/nodes/{name}/status", body={"status": {"conditions": [ready]}}, content_type=SMP
        )
        assert patched.status == 200, patched.body
        conditions = {c["type"]: c["status"] for c in patched.body["status"]["conditions"]}
        assert conditions["Ready"] == "True"
        addresses = {a["type"] for a in patched.body["status"].get("addresses") or []}
        if cluster.sandbox is not None:
            assert addresses == {"InternalIP", "Hostname"}
    finally:
        await cluster.request("DELETE", f"/api/v1/nodes/{name}")


async def test_an_event_written_through_events_k8s_io_is_listed_as_a_core_event(
    cluster: Cluster, namespace: str
) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "export.1"},
        "regarding": {"apiVersion": "v1", "kind": "Service", "name": "web", "namespace": namespace, "uid": "u-1"},
        "reason": "Exported",
        "note": "exported to the hub",
        "type": "Normal",
        "action": "Export",
        "reportingController": "mchub.io/member",
        "reportingInstance": "member-east",
        "eventTime": "2025-01-01T00:00:00.000000Z",
    }
    created = await cluster.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body=event)
    assert created.status == 201, created.body
    query = {
        "fieldSelector": f"involvedObject.name=web,involvedObject.namespace={namespace},involvedObject.kind=Service"
    }
    listed = await cluster.request("GET", f"/api/v1/namespaces/{namespace}/events", query=query)
    assert [e["message"] for e in listed.body["items"]] == ["exported to the hub"]
    assert listed.body["items"][0]["involvedObject"]["uid"] == "u-1"
    viewed = await cluster.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/export.1")
    assert viewed.body["note"] == "exported to the hub"
    assert viewed.body["regarding"]["name"] == "web"


async def test_endpoints_and_endpoint_slices_are_stored_as_written(cluster: Cluster, namespace: str) -> None:
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.0.0.5"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}],
    }
    assert (await cluster.request("POST", f"/api/v1/namespaces/{namespace}/endpoints", body=endpoints)).status == 201
    slice_body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    path = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
    assert (await cluster.request("POST", path, body=slice_body)).status == 201
    listed = await cluster.request("GET", path, query={"labelSelector": "kubernetes.io/service-name=web"})
    assert [s["endpoints"][0]["addresses"] for s in listed.body["items"]] == [["10.0.0.5"]]


async def test_a_lease_can_be_taken_over_only_from_its_latest_version(cluster: Cluster, namespace: str) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "hub-leader"},
        "spec": {"holderIdentity": "hub-0", "leaseDurationSeconds": 15},
    }
    created = (await cluster.request("POST", path, body=lease)).body
    created["spec"]["holderIdentity"] = "hub-1"
    assert (await cluster.request("PUT", f"{path}/hub-leader", body=created)).status == 200
    created["spec"]["holderIdentity"] = "hub-2"
    assert (await cluster.request("PUT", f"{path}/hub-leader", body=created)).status == 409
