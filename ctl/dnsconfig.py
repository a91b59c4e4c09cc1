"""`mcctl get dnsconfig`: the CoreDNS stanza that sends clusterset.local to the member's DNS.

The member serves ``<svc>.<ns>.svc.clusterset.local`` (KEP-1645) behind the Service
``mchub-clusterset-dns`` in its Namespace; CoreDNS, the cluster's resolver, forwards the zone
to that Service's ClusterIP (CoreDNS's ``forward`` takes addresses, not names). The stanza goes
into the ``Corefile`` of ConfigMap ``coredns`` in kube-system, beside the ``.:53`` block.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ctl.access import open_cluster
from ctl.errors import EXIT_OK, NotFoundError
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import SERVICES
from mcapi import names

SERVICE = "mchub-clusterset-dns"
ZONE = "clusterset.local"
MEMBER_MANIFEST = "deploy/build/antrea-multicluster-member.yml"

Leaf = Callable[..., argparse.ArgumentParser]


def stanza(cluster_ip: str) -> str:
    """The Corefile server block. ``cache`` keeps answers no longer than their TTL (5 s unless
    the member says otherwise), negative ones no longer than the zone's SOA minimum (the same)."""
    return f"{ZONE}:53 {{\n    errors\n    cache\n    forward . {cluster_ip}\n}}\n"


async def dns_service_ip(client: KubeClient, namespace: str) -> str:
    try:
        service = await client.get(SERVICES, SERVICE, namespace)
    except NotFound:
        raise NotFoundError(
            f"no Service {namespace}/{SERVICE}: deploy the member with {MEMBER_MANIFEST} "
            "(its mchub-member Deployment serves clusterset.local DNS), or pass -n with the member Namespace"
        ) from None
    ip = (service.get("spec") or {}).get("clusterIP")
    if not ip or ip == "None":
        raise NotFoundError(f"Service {namespace}/{SERVICE} has no ClusterIP for CoreDNS to forward to")
    return str(ip)


def corefile_text(cluster_ip: str, namespace: str) -> str:
    return (
        f"# Add to the Corefile of ConfigMap coredns in kube-system (kubectl -n kube-system edit configmap coredns):\n"
        f"# clusterset.local goes to the mchub member's DNS, Service {namespace}/{SERVICE}.\n"
        f"{stanza(cluster_ip)}"
    )


async def get_dnsconfig(args: argparse.Namespace) -> int:
    client = await open_cluster(args.kubeconfig)
    try:
        ip = await dns_service_ip(client, args.namespace)
    finally:
        await client.close()
    print(corefile_text(ip, args.namespace), end="")
    return EXIT_OK


def register(leaf: Leaf, get_kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`mcctl get dnsconfig [-n NAMESPACE]`."""
    parser = leaf(
        get_kinds, "dnsconfig", "print the CoreDNS stanza that forwards clusterset.local to the member", get_dnsconfig
    )
    default = names.DEFAULT_MEMBER_NAMESPACE
    parser.add_argument("-n", "--namespace", default=default, help=f"the member's Namespace (default {default})")
