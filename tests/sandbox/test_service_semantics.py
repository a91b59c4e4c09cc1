"""Services: ClusterIP allocation, the out-of-range error members parse, headless, ExternalName."""

from __future__ import annotations

import ipaddress
import re

from kubernetes_asyncio import client

from tests.sandbox.cluster import Cluster

RANGE_MESSAGE = re.compile(
    r'^Service "probe" is invalid: spec\.clusterIPs: Invalid value: \[\]string\{"0\.0\.0\.0"\}: '
    r"failed to allocate IP 0\.0\.0\.0: the provided IP \(0\.0\.0\.0\) is not in the valid range\. "
    r"The range of valid IPs is (?P<cidr>\S+)$"
)


def service(name: str, **spec: object) -> dict[str, object]:
    body_spec = {"ports": [{"name": "http", "port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body_spec}


async def service_cidr(cluster: Cluster, namespace: str) -> str:
    reply = await cluster.request(
        "POST", f"/api/v1/namespaces/{namespace}/services", body=service("probe", clusterIP="0.0.0.0")
    )
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    match = RANGE_MESSAGE.match(reply.body["message"])
    assert match, reply.body["message"]
    return match.group("cidr")


async def test_an_out_of_range_cluster_ip_is_refused_with_the_service_cidr_in_the_message(
    cluster: Cluster, namespace: str
) -> None:
    cidr = await service_cidr(cluster, namespace)
    ipaddress.ip_network(cidr)
    if cluster.sandbox is not None:
        assert cidr == "10.96.0.0/12"


async def test_a_cluster_ip_service_gets_an_address_from_the_service_cidr(cluster: Cluster, namespace: str) -> None:
    cidr = ipaddress.ip_network(await service_cidr(cluster, namespace))
    reply = await cluster.request("POST", f"/api/v1/namespaces/{namespace}/services", body=service("web"))
    assert reply.status == 201, reply.body
    spec = reply.body["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in cidr
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["type"] == "ClusterIP"
    assert spec["ports"][0]["protocol"] == "TCP"
    assert spec["ports"][0]["targetPort"] == 80


async def test_a_requested_address_already_in_use_is_refused(cluster: Cluster, namespace: str) -> None:
    first = await cluster.request("POST", f"/api/v1/namespaces/{namespace}/services", body=service("one"))
    taken = first.body["spec"]["clusterIP"]
    reply = await cluster.request(
        "POST", f"/api/v1/namespaces/{namespace}/services", body=service("two", clusterIP=taken)
    )
    assert reply.status == 422
    assert "provided IP is already allocated" in reply.body["message"]


async def test_a_headless_service_keeps_cluster_ip_none(cluster: Cluster, namespace: str) -> None:
    reply = await cluster.request(
        "POST", f"/api/v1/namespaces/{namespace}/services", body=service("headless", clusterIP="None")
    )
    assert reply.status == 201, reply.body
    assert reply.body["spec"]["clusterIP"] == "None"
    assert reply.body["spec"]["clusterIPs"] == ["None"]


async def test_an_external_name_service_has_no_cluster_ip(cluster: Cluster, namespace: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "alias"},
        "spec": {"type": "ExternalName", "externalName": "example.com"},
    }
    reply = await cluster.request("POST", f"/api/v1/namespaces/{namespace}/services", body=body)
    assert reply.status == 201, reply.body
    assert not reply.body["spec"].get("clusterIP")


async def test_an_update_without_cluster_ip_keeps_the_allocated_one(cluster: Cluster, namespace: str) -> None:
    created = await cluster.core.create_namespaced_service(
        namespace,
        client.V1Service(
            metadata=client.V1ObjectMeta(name="stable"),
            spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]),
        ),
    )
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "stable", "resourceVersion": created.metadata.resource_version},
        "spec": {"ports": [{"port": 81}]},
    }
    reply = await cluster.request("PUT", f"/api/v1/namespaces/{namespace}/services/stable", body=body)
    assert reply.status == 200, reply.body
    assert reply.body["spec"]["clusterIP"] == created.spec.cluster_ip


async def test_strategic_merge_patch_merges_service_ports_by_port(cluster: Cluster, namespace: str) -> None:
    body = service("multi")
    body["spec"] = {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}
    await cluster.request("POST", f"/api/v1/namespaces/{namespace}/services", body=body)
    patch = {"spec": {"ports": [{"port": 443, "targetPort": 8443}, {"name": "metrics", "port": 9090}]}}
    reply = await cluster.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/services/multi",
        body=patch,
        content_type="application/strategic-merge-patch+json",
    )
    assert reply.status == 200, reply.body
    ports = {p["port"]: p for p in reply.body["spec"]["ports"]}
    assert set(ports) == {80, 443, 9090}
    assert ports[443]["targetPort"] == 8443
    assert ports[443]["name"] == "https"

    remove = {"spec": {"ports": [{"port": 80, "$patch": "delete"}]}}
    reply = await cluster.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/services/multi",
        body=remove,
        content_type="application/strategic-merge-patch+json",
    )
    assert sorted(p["port"] for p in reply.body["spec"]["ports"]) == [443, 9090]


async def test_json_patch_and_merge_patch_edit_a_config_map(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await cluster.request("POST", path, body={"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})
    merged = await cluster.request(
        "PATCH", f"{path}/c", body={"data": {"a": None, "c": "3"}}, content_type="application/merge-patch+json"
    )
    assert merged.body["data"] == {"b": "2", "c": "3"}
    patched = await cluster.request(
        "PATCH",
        f"{path}/c",
        body=[{"op": "replace", "path": "/data/b", "value": "20"}, {"op": "add", "path": "/data/d", "value": "4"}],
        content_type="application/json-patch+json",
    )
    assert patched.body["data"] == {"b": "20", "c": "3", "d": "4"}
