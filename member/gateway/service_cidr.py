"""The cluster's Service CIDR, as a member finds it when MultiClusterConfig.serviceCIDR is empty.

1. The ServiceCIDR API (networking.k8s.io v1, else v1beta1) where the cluster serves it:
   the IPv4 range of the default object ``kubernetes`` (else of the first object that has one).
2. Otherwise Antrea's trick: create a Service with clusterIP ``0.0.0.0`` in the member
   Namespace; kube-apiserver refuses it (422) with "... The range of valid IPs is <cidr>",
   which is parsed. The create is a dry run, so even a server that accepted it would store
   nothing (and the probe is deleted at once should one not honour dryRun).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Mapping
from ipaddress import IPv4Network, ip_network
from typing import Any

from kube.client import KubeClient
from kube.errors import Forbidden, Invalid, KubeError, NotFound, PermanentError
from kube.resources import SERVICES, Resource

log = logging.getLogger(__name__)

SERVICE_CIDRS_V1 = Resource("networking.k8s.io", "v1", "servicecidrs", "ServiceCIDR", False)
SERVICE_CIDRS_V1BETA1 = Resource("networking.k8s.io", "v1beta1", "servicecidrs", "ServiceCIDR", False)
DEFAULT_SERVICE_CIDR_OBJECT = "kubernetes"
PROBE_SERVICE_NAME = "mchub-service-cidr-probe"

_RANGE = re.compile(r"The range of valid IPs is ([0-9A-Fa-f.:/, ]+)")


class ServiceCIDRUnknown(PermanentError):
    """The Service CIDR could not be discovered; set serviceCIDR in the MultiClusterConfig."""


def _ipv4_cidr(text: str) -> str | None:
    try:
        network = ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return str(network) if isinstance(network, IPv4Network) else None


def parse_valid_range(message: str) -> str | None:
    """The IPv4 CIDR in kube-apiserver's "The range of valid IPs is ..." text (None if absent)."""
    found = _RANGE.search(message)
    if found is None:
        return None
    for part in re.split(r"[,\s]+", found.group(1)):
        cidr = _ipv4_cidr(part)
        if cidr is not None:
            return cidr
    return None


def cidr_from_service_cidr_objects(items: Iterable[Mapping[str, Any]]) -> str | None:
    """The IPv4 range of the ``kubernetes`` ServiceCIDR, else of the first object (by name) with one."""
    ordered = sorted(
        items,
        key=lambda o: (
            o.get("metadata", {}).get("name") != DEFAULT_SERVICE_CIDR_OBJECT,
            str(o.get("metadata", {}).get("name", "")),
        ),
    )
    for item in ordered:
        for text in (item.get("spec") or {}).get("cidrs") or []:
            cidr = _ipv4_cidr(str(text))
            if cidr is not None:
                return cidr
    return None


async def from_service_cidr_api(client: KubeClient) -> str | None:
    for resource in (SERVICE_CIDRS_V1, SERVICE_CIDRS_V1BETA1):
        try:
            listed = await client.list(resource)
        except (NotFound, Forbidden):
            continue
        cidr = cidr_from_service_cidr_objects(listed.items)
        if cidr is not None:
            return cidr
    return None


async def from_invalid_service(client: KubeClient, namespace: str) -> str:
    body = {
        "metadata": {"name": PROBE_SERVICE_NAME, "namespace": namespace},
        "spec": {"clusterIP": "0.0.0.0", "ports": [{"port": 443, "protocol": "TCP"}]},
    }
    try:
        await client.create(SERVICES, body, namespace, dry_run=True)
    except Invalid as err:
        cidr = parse_valid_range(err.message)
        if cidr is None:
            raise ServiceCIDRUnknown(
                f"cannot read the Service CIDR from the API server's answer: {err.message}"
            ) from err
        return cidr
    with contextlib.suppress(KubeError):
        await client.delete(SERVICES, PROBE_SERVICE_NAME, namespace)
    raise ServiceCIDRUnknown("the API server accepted a Service with clusterIP 0.0.0.0; set serviceCIDR in the config")


async def discover_service_cidr(client: KubeClient, namespace: str) -> str:
    """The cluster's IPv4 Service CIDR. Raises ServiceCIDRUnknown, or a KubeError to retry."""
    cidr = await from_service_cidr_api(client)
    source = "ServiceCIDR API"
    if cidr is None:
        cidr = await from_invalid_service(client, namespace)
        source = "invalid Service"
    log.info("serviceCIDRDiscovered", extra={"serviceCIDR": cidr, "source": source})
    return cidr
