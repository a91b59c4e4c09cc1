"""Kubernetes objects -> the policy compiler's inputs (agent.policy.compile.PolicySources). Pure.

* Pods: every Pod with an IPv4 ``status.podIP`` (or podIPs) that is not on the host
  network and not finished: the local cluster's Pods whose identity the Gateway tags and
  whom appliedTo selects, with the named ports of ``spec.containers[].ports[]`` (protocol
  TCP when unset), which a rule's named ports resolve against. Init containers' ports are
  left out, as Antrea leaves them out.
* Namespaces: their labels (``kubernetes.io/metadata.name`` is added where missing).
* LabelIdentities (cluster-scoped, imported by the member): ``spec.label`` and ``spec.id``;
  one whose label is not in the normalized form, or whose ID is out of 1..16777215, is left
  out (the hub never sends such).
* Tiers (crd.antrea.io): ``spec.priority``.
* Imported Services ``antrea-mc-<name>`` and their Endpoints: the multi-cluster Service
  ``<name>``'s destinations, as address, protocol and port: its ClusterIP with its
  ``spec.ports`` (what a Pod sends to), and each Endpoints subset's addresses with that
  subset's ``ports`` (what the packet carries after kube-proxy's DNAT: the exporters'
  ClusterIPs and Service ports, or with endpointIPType PodIP the Pods and their targetPorts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from ipaddress import IPv4Address, ip_address
from typing import Any

from agent.policy.compile import LocalPod, MultiClusterService, PolicyObject
from agent.policy.labels import LabelIdentity, identity_from_label
from agent.policy.model import protocol_of, valid_port
from agent.policy.named_ports import ContainerPort
from agent.policy.state import MAX_IDENTITY, ServiceDestination
from kube.resources import Obj
from mcapi import names

_FINISHED = {"Succeeded", "Failed"}


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _ipv4(text: Any) -> IPv4Address | None:
    try:
        parsed = ip_address(str(text))
    except ValueError:
        return None
    return parsed if isinstance(parsed, IPv4Address) else None


def local_pods(pods: Iterable[Obj]) -> tuple[LocalPod, ...]:
    found: list[LocalPod] = []
    for pod in pods:
        spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, _meta(pod)
        if spec.get("hostNetwork") or status.get("phase") in _FINISHED or meta.get("deletionTimestamp"):
            continue
        candidates = [p.get("ip") for p in status.get("podIPs") or [] if isinstance(p, Mapping)]
        candidates.append(status.get("podIP"))
        address = next((a for a in (_ipv4(c) for c in candidates if c) if a is not None), None)
        if address is None:
            continue
        labels = meta.get("labels") or {}
        found.append(
            LocalPod(
                str(meta.get("namespace") or ""),
                str(meta.get("name") or ""),
                address,
                tuple(sorted((str(k), str(v)) for k, v in labels.items())),
                _named_container_ports(spec),
            )
        )
    return tuple(sorted(found, key=lambda p: (p.namespace, p.name)))


def _named_container_ports(spec: Mapping[str, Any]) -> tuple[ContainerPort, ...]:
    found: list[ContainerPort] = []
    for container in spec.get("containers") or []:
        for port in (container.get("ports") or []) if isinstance(container, Mapping) else []:
            if not isinstance(port, Mapping):
                continue
            name, number, protocol = port.get("name"), port.get("containerPort"), protocol_of(port)
            if name and protocol and valid_port(number):
                found.append(ContainerPort(str(name), protocol, number))
    return tuple(dict.fromkeys(found))


def namespace_labels(namespaces: Iterable[Obj]) -> dict[str, dict[str, str]]:
    return {
        str(_meta(ns).get("name")): {str(k): str(v) for k, v in (_meta(ns).get("labels") or {}).items()}
        for ns in namespaces
        if _meta(ns).get("name")
    }


def label_identities(objs: Iterable[Obj]) -> tuple[LabelIdentity, ...]:
    found: dict[int, LabelIdentity] = {}
    for obj in objs:
        spec = obj.get("spec") or {}
        identity_id, label = spec.get("id"), spec.get("label")
        if isinstance(identity_id, bool) or not isinstance(identity_id, int) or not 0 < identity_id <= MAX_IDENTITY:
            continue
        identity = identity_from_label(identity_id, str(label or ""))
        if identity is not None:
            found[identity_id] = identity
    return tuple(found[i] for i in sorted(found))


def tier_priorities(tiers: Iterable[Obj]) -> dict[str, int]:
    found: dict[str, int] = {}
    for tier in tiers:
        priority = (tier.get("spec") or {}).get("priority")
        if isinstance(priority, int) and not isinstance(priority, bool) and _meta(tier).get("name"):
            found[str(_meta(tier)["name"])] = priority
    return found


def multicluster_services(services: Iterable[Obj], endpoints: Iterable[Obj]) -> tuple[MultiClusterService, ...]:
    backends: dict[tuple[str, str], list[ServiceDestination]] = {}
    for obj in endpoints:
        key = (str(_meta(obj).get("namespace") or ""), str(_meta(obj).get("name") or ""))
        for subset in obj.get("subsets") or []:
            # A subset's addresses serve exactly that subset's ports (Kubernetes' Endpoints).
            addresses = [_ipv4(a.get("ip")) for a in subset.get("addresses") or []]
            ports = _ports(subset.get("ports"))
            backends.setdefault(key, []).extend(
                ServiceDestination(a, protocol, port) for a in addresses if a is not None for protocol, port in ports
            )
    found: list[MultiClusterService] = []
    for service in services:
        namespace, name = str(_meta(service).get("namespace") or ""), str(_meta(service).get("name") or "")
        if not name.startswith(names.IMPORTED_PREFIX):
            continue
        spec = service.get("spec") or {}
        ips = [_ipv4(c) for c in spec.get("clusterIPs") or [spec.get("clusterIP")] if c]
        ports = _ports(spec.get("ports"))
        at_cluster_ip = [ServiceDestination(ip, proto, port) for ip in ips if ip is not None for proto, port in ports]
        destinations = sorted({*at_cluster_ip, *backends.get((namespace, name), [])})
        found.append(MultiClusterService(namespace, name.removeprefix(names.IMPORTED_PREFIX), tuple(destinations)))
    return tuple(sorted(found, key=lambda s: (s.namespace, s.name)))


def _ports(raw: Any) -> list[tuple[str, int]]:
    """(protocol, port) of a Service's ``spec.ports`` or an Endpoints subset's ``ports``
    (protocol TCP when unset); a protocol nftables cannot match by port is left out."""
    found: list[tuple[str, int]] = []
    for entry in raw or []:
        if not isinstance(entry, Mapping):
            continue
        protocol, port = protocol_of(entry), entry.get("port")
        if protocol and valid_port(port):
            found.append((protocol, port))
    return found


def policy_objects(cluster_policies: Iterable[Obj], namespaced_policies: Iterable[Obj]) -> tuple[PolicyObject, ...]:
    """Sorted by kind and name, so a relist in another order compiles to the same state."""

    def key(obj: Obj) -> tuple[str, str]:
        return str(_meta(obj).get("namespace") or ""), str(_meta(obj).get("name") or "")

    return tuple(
        [PolicyObject("ClusterNetworkPolicy", o) for o in sorted(cluster_policies, key=key)]
        + [PolicyObject("NetworkPolicy", o) for o in sorted(namespaced_policies, key=key)]
    )
