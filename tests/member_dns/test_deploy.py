"""The member manifest serves clusterset.local on port 53 behind the Service mchub-clusterset-dns."""

from __future__ import annotations

from mchub_cli.main import build_parser
from tests.deploy import manifests
from tests.deploy.podspec import PodIdentity, command_line, container_env, flag_value

SERVICE = "mchub-clusterset-dns"


def _member() -> tuple[list[manifests.Obj], manifests.Obj]:
    objects = manifests.load(manifests.MEMBER)
    return objects, manifests.find(objects, "Deployment", "mchub-member")


def test_the_member_serves_dns_on_port_53_udp_and_tcp() -> None:
    objects, deployment = _member()
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    argv = command_line(container, container_env(objects, container, PodIdentity("mchub-member-0", "kube-system")))
    assert flag_value(argv, "--dns-address") == "0.0.0.0:53"
    build_parser().parse_args(argv[1:])  # `mchub member` accepts it
    ports = {(p["containerPort"], p["protocol"]) for p in container["ports"]}
    assert {(53, "UDP"), (53, "TCP")} <= ports


def test_the_non_root_member_may_bind_port_53_without_any_capability() -> None:
    _, deployment = _member()
    pod = deployment["spec"]["template"]["spec"]
    # A safe (namespaced) sysctl, allowed by the kubelet and the restricted Pod Security level.
    assert {"name": "net.ipv4.ip_unprivileged_port_start", "value": "53"} in pod["securityContext"]["sysctls"]
    assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_dns_service_selects_the_member_and_forwards_port_53() -> None:
    objects, deployment = _member()
    service = manifests.find(objects, "Service", SERVICE)
    template = deployment["spec"]["template"]
    assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    by_name = {p["name"]: (p["containerPort"], p["protocol"]) for p in template["spec"]["containers"][0]["ports"]}
    exposed = {(p["port"], p["protocol"]): by_name[p["targetPort"]] for p in service["spec"]["ports"]}
    assert exposed == {(53, "UDP"): (53, "UDP"), (53, "TCP"): (53, "TCP")}
    # Answers come from memory: a member that lost its hub still answers what it last imported.
    assert service["spec"]["publishNotReadyAddresses"] is True
