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


def test_imported_services_give_the_cluster_ip_with_the_service_ports_and_backends_with_endpoint_ports() -> None:
    # After kube-proxy's DNAT the destination port is the endpoint's (a Pod's targetPort in
    # PodIP mode), before it the Service's; a subset's addresses go with that subset's ports only.
    ports = [{"port": 80, "protocol": "TCP", "targetPort": 8080}, {"port": 53, "protocol": "UDP"}, {"port": 9}]
    services = [
        {"metadata": {"name": name, "namespace": "shop"}, "spec": {"clusterIP": ip, "ports": ports}}
        for name, ip in (("antrea-mc-web", "10.96.0.9"), ("web", "10.96.0.8"))
    ]
    endpoints = [
        {
            "metadata": {"name": "antrea-mc-web", "namespace": "shop"},
            "subsets": [
                {"addresses": [{"ip": "10.102.0.10"}, {"ip": "10.1.2.3"}], "ports": [{"name": "http", "port": 8080}]},
                {"addresses": [{"ip": "10.1.2.4"}], "ports": [{"port": 53, "protocol": "UDP"}]},
                {"addresses": [{"ip": "10.1.2.5"}], "ports": [{"port": 1, "protocol": "ICMP"}]},
                {"addresses": [{"ip": "10.1.2.6"}]},
            ],
        }
    ]
    (service,) = multicluster_services(services, endpoints)
    assert (service.namespace, service.name) == ("shop", "web")
    assert [(str(d.address), d.protocol, d.port) for d in service.destinations] == [
        ("10.1.2.3", "tcp", 8080),
        ("10.1.2.4", "udp", 53),
        ("10.96.0.9", "tcp", 9),
        ("10.96.0.9", "tcp", 80),
        ("10.96.0.9", "udp", 53),
        ("10.102.0.10", "tcp", 8080),
    ]


def test_an_imported_service_without_a_cluster_ip_or_endpoints_has_only_what_it_has() -> None:
    services = [
        {"metadata": {"name": "antrea-mc-a", "namespace": "ns"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
        {"metadata": {"name": "antrea-mc-b", "namespace": "ns"}, "spec": {"clusterIP": "10.96.0.2"}},
    ]
    endpoints = [{"metadata": {"name": "antrea-mc-a", "namespace": "ns"}, "subsets": None}]
    assert [(s.name, s.destinations) for s in multicluster_services(services, endpoints)] == [("a", ()), ("b", ())]


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


def test_a_container_port_kubernetes_would_not_accept_is_left_out() -> None:
    # The numbers a named port may resolve to are those a rule's own port may be: 1..65535.
    ports = [
        {"name": "zero", "containerPort": 0},
        {"name": "huge", "containerPort": 65536},
        {"name": "yes", "containerPort": True},
        {"name": "text", "containerPort": "80"},
        {"name": "icmp", "containerPort": 7, "protocol": "ICMP"},
        {"name": "top", "containerPort": 65535, "protocol": "SCTP"},
    ]
    (found,) = local_pods([pod("p", "10.1.1.10", containers=[{"name": "app", "ports": ports}])])
    assert found.ports == (ContainerPort("top", "sctp", 65535),)
