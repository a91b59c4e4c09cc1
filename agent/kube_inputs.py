"""Kubernetes objects -> AgentInputs, pure.

What the agent reads, all in the member Namespace except its Node:

* its Node: the first IPv4 InternalIP, ``spec.podCIDRs`` (else ``spec.podCIDR``);
* the Gateway CRs (the member elects one; should several exist for a moment, the lowest
  name is used so that every Node agrees; in active-active mode all of them):
  gatewayIP, internalIP, serviceCIDR (the local cluster's Service CIDR, which the member
  writes there as Antrea does);
* every ClusterInfoImport not being deleted: one RemoteCluster each;
* the member's ConfigMap ``antrea-mc-controller-config``: the local cluster's podCIDRs and
  ``gatewayMode``;
* the member's ConfigMap ``mchub-global-addresses`` (mcapi.global_addresses): the local global
  block while the cluster is globally addressed, and its exported Pods' global addresses;
* the ClusterSet: the local cluster ID (only guards against importing ourselves).

Malformed values are passed on as they are: agent.desired validates them and reports an
exclusion (remote) or an error (local).
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, ip_address

from agent.inputs import ActiveGateway, AgentInputs, LocalCluster, LocalNode, RemoteCluster
from kube.resources import Obj
from mcapi.config import ConfigError, MultiClusterConfig, parse_configmap_data
from mcapi.gateway_nodes import is_candidate, is_handing_over
from mcapi.global_addresses import GlobalAddresses


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def node_internal_ip(node: Obj) -> str | None:
    """The first IPv4 InternalIP of the Node (the first InternalIP of any family otherwise)."""
    internal = [
        str(a.get("address", ""))
        for a in (node.get("status") or {}).get("addresses") or []
        if a.get("type") == "InternalIP" and a.get("address")
    ]
    for text in internal:
        try:
            if isinstance(ip_address(text), IPv4Address):
                return text
        except ValueError:
            continue
    return internal[0] if internal else None


def local_node(node: Obj) -> LocalNode | None:
    """None while the Node has no InternalIP (it cannot be tunnelled to)."""
    internal_ip = node_internal_ip(node)
    if internal_ip is None:
        return None
    spec = node.get("spec") or {}
    cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
    return LocalNode(_name(node), internal_ip, tuple(str(c) for c in cidrs), is_candidate(node))


def _active(obj: Obj) -> ActiveGateway:
    gateway_ip, internal_ip = str(obj.get("gatewayIP") or ""), str(obj.get("internalIP") or "")
    return ActiveGateway(_name(obj), gateway_ip, internal_ip, handing_over=is_handing_over(obj))


def active_gateway(gateways: Iterable[Obj]) -> tuple[ActiveGateway | None, str | None]:
    """The Gateway to use and the local Service CIDR it carries."""
    live = sorted((g for g in gateways if not _deleting(g)), key=_name)
    if not live:
        return None, None
    chosen = live[0]
    return _active(chosen), (str(chosen.get("serviceCIDR")) if chosen.get("serviceCIDR") else None)


def live_gateways(gateways: Iterable[Obj]) -> tuple[ActiveGateway, ...]:
    return tuple(_active(g) for g in sorted(gateways, key=_name) if not _deleting(g))


def remote_cluster(cluster_info_import: Obj) -> RemoteCluster:
    spec = cluster_info_import.get("spec") or {}
    wire_guard = spec.get("wireGuard") or {}
    return RemoteCluster(
        cluster_id=str(spec.get("clusterID") or ""),
        service_cidr=str(spec["serviceCIDR"]) if spec.get("serviceCIDR") else None,
        gateway_ips=tuple(str(g.get("gatewayIP") or "") for g in spec.get("gatewayInfos") or []),
        pod_cidrs=tuple(str(c) for c in spec.get("podCIDRs") or [] if c),
        wireguard_public_key=str(wire_guard["publicKey"]) if wire_guard.get("publicKey") else None,
        # Only while the hub says it is globally addressed is the block routed instead of its CIDRs.
        global_cidr=str(spec.get("globalCIDR") or "") if spec.get("globallyAddressed") is True else None,
    )


def remote_clusters(imports: Iterable[Obj]) -> tuple[RemoteCluster, ...]:
    return tuple(remote_cluster(obj) for obj in sorted(imports, key=_name) if not _deleting(obj))


def _member_config(configmap: Obj | None) -> MultiClusterConfig | None:
    """The member's MultiClusterConfig; None when absent or unusable (the member refuses to
    start on an invalid one and says why)."""
    if configmap is None:
        return None
    try:
        return parse_configmap_data(configmap.get("data") or {})
    except ConfigError:
        return None


def cluster_pod_cidrs(configmap: Obj | None) -> tuple[str, ...]:
    """podCIDRs of the member's MultiClusterConfig; () when absent or unusable."""
    config = _member_config(configmap)
    return tuple(config.pod_cidrs) if config is not None else ()


def gateway_mode_active_active(configmap: Obj | None) -> bool:
    config = _member_config(configmap)
    return config is not None and config.gateway_mode == "active-active"


def local_cluster(
    cluster_sets: Iterable[Obj], service_cidr: str | None, configmap: Obj | None, global_addresses: Obj | None
) -> LocalCluster:
    addresses = GlobalAddresses.from_data((global_addresses or {}).get("data"))
    addressed = addresses.globally_addressed and bool(addresses.block)
    return LocalCluster(
        cluster_id(cluster_sets),
        service_cidr,
        cluster_pod_cidrs(configmap),
        global_cidr=addresses.block if addressed else None,
        global_pods=tuple(sorted((g, pod) for pod, g in addresses.pods.items())) if addressed else (),
    )


def cluster_id(cluster_sets: Iterable[Obj]) -> str:
    for cluster_set in sorted(cluster_sets, key=_name):
        value = (cluster_set.get("spec") or {}).get("clusterID")
        if value:
            return str(value)
    return ""


def build_inputs(
    node: Obj | None,
    gateways: Iterable[Obj],
    imports: Iterable[Obj],
    *,
    configmap: Obj | None = None,
    global_addresses: Obj | None = None,
    cluster_sets: Iterable[Obj] = (),
    wireguard_public_key: str | None = None,
) -> AgentInputs | None:
    """The agent's inputs, or None while its own Node is unknown or has no InternalIP."""
    local = local_node(node) if node is not None else None
    if local is None:
        return None
    listed = list(gateways)
    gateway, service_cidr = active_gateway(listed)
    return AgentInputs(
        node=local,
        cluster=local_cluster(cluster_sets, service_cidr, configmap, global_addresses),
        gateway=gateway,
        remotes=remote_clusters(imports),
        wireguard_public_key=wireguard_public_key,
        gateways=live_gateways(listed),
        active_active=gateway_mode_active_active(configmap),
    )
