"""Kubernetes objects -> the policy compiler's inputs (pure)."""

from __future__ import annotations

from ipaddress import IPv4Address

from agent.policy.kube_objects import (
    label_identities,
    local_pods,
    multicluster_services,
    namespace_labels,
    policy_objects,
    tier_priorities,
)
from agent.policy.named_ports import ContainerPort


def pod(name: str, ip: str | None, **extra: object) -> dict[str, object]:
    status: dict[str, object] = {"phase": "Running"}
    if ip:
        status["podIP"] = ip
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"b": "2", "a": "1"}},
        "spec": extra,
        "status": status,
    }


def test_pods_with_an_ipv4_address_off_the_host_network_count() -> None:
    pods = [pod("p", "10.1.1.10"), pod("no-ip", None), pod("host", "10.0.0.1", hostNetwork=True), pod("v6", "fd00::1")]
    finished = pod("done", "10.1.1.11")
    finished["status"] = {"phase": "Succeeded", "podIP": "10.1.1.11"}
    (found,) = local_pods([*pods, finished])
    assert (found.name, found.ip, found.labels) == ("p", IPv4Address("10.1.1.10"), (("a", "1"), ("b", "2")))


def test_label_identities_in_the_normalized_form_with_a_24_bit_id_count() -> None:
    objs = [
        {"spec": {"label": "ns:kubernetes.io/metadata.name=ns&pod:app=db", "id": 5}},
        {"spec": {"label": "not a label", "id": 6}},
        {"spec": {"label": "ns:kubernetes.io/metadata.name=ns&pod:<none>", "id": 2**24}},
        {"spec": {"label": "ns:kubernetes.io/metadata.name=ns&pod:<none>", "id": 7}},
    ]
    found = label_identities(objs)
    assert [(i.id, i.namespace, i.pod_labels) for i in found] == [(5, "ns", (("app", "db"),)), (7, "ns", ())]


def test_imported_services_give_the_multi_cluster_service_its_cluster_ip_and_backends() -> None:
    services = [
        {"metadata": {"name": "antrea-mc-web", "namespace": "shop"}, "spec": {"clusterIP": "10.96.0.9"}},
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "10.96.0.8"}},
    ]
    endpoints = [
        {
            "metadata": {"name": "antrea-mc-web", "namespace": "shop"},
            "subsets": [{"addresses": [{"ip": "10.102.0.10"}]}],
        }
    ]
    (service,) = multicluster_services(services, endpoints)
    assert (service.namespace, service.name) == ("shop", "web")
    assert service.addresses == (IPv4Address("10.96.0.9"), IPv4Address("10.102.0.10"))


def test_namespaces_tiers_and_policies() -> None:
    assert namespace_labels([{"metadata": {"name": "a", "labels": {"x": "y"}}}]) == {"a": {"x": "y"}}
    assert tier_priorities([{"metadata": {"name": "t"}, "spec": {"priority": 10}}, {"metadata": {"name": "u"}}]) == {
        "t": 10
    }
    found = policy_objects(
        [{"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}], [{"metadata": {"name": "c", "namespace": "n"}}]
    )
    assert [(p.kind, p.obj["metadata"]["name"]) for p in found] == [
        ("ClusterNetworkPolicy", "a"),
        ("ClusterNetworkPolicy", "b"),
        ("NetworkPolicy", "c"),
    ]


def test_a_pods_named_container_ports_come_with_it_tcp_by_default() -> None:
    containers = [
        {"name": "app", "ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 9000}]},
        {"name": "sidecar", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]},
        {"name": "bare"},
    ]
    (found,) = local_pods([pod("p", "10.1.1.10", containers=containers)])
    assert found.ports == (ContainerPort("http", "tcp", 8080), ContainerPort("dns", "udp", 53))
