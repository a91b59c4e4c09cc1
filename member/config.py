"""The member's configuration: the MultiClusterConfig of its ConfigMap, and process options.

``antrea-mc-controller-config`` (key ``controller_manager_config.yaml``) in the member
Namespace holds the options users know (endpointIPType, serviceCIDR, ...). It is read once
at start: an invalid one stops the member with ConfigError naming the field, a missing one
means the defaults (Antrea's member works without it too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import CONFIG_MAPS
from mcapi.config import ConfigError, MultiClusterConfig, parse_configmap_data
from mcapi.names import DEFAULT_MEMBER_NAMESPACE, MC_CONTROLLER_CONFIGMAP
from member.dns.service import DnsOptions

log = logging.getLogger(__name__)

# The member's own client limit on requests to its API server (`mchub member --kube-api-qps`,
# `--kube-api-burst`); 429 answers (API Priority and Fairness) are honoured on top of it.
# An imported Service costs 5 writes, so Antrea's 100/200 would cap an importer at 20 Services/s
# (1,000 in 50 s); 400/800 lets 1,000 land in about 12 s. A member is idle between bursts.
DEFAULT_KUBE_API_QPS = 400.0
DEFAULT_KUBE_API_BURST = 800

__all__ = [
    "DEFAULT_KUBE_API_BURST",
    "DEFAULT_KUBE_API_QPS",
    "ConfigError",
    "MemberOptions",
    "load_multicluster_config",
]


@dataclass(frozen=True)
class MemberOptions:
    """How one member process behaves; durations in seconds.

    ``session_overrides`` are HubSessionConfig fields (backoffs, heartbeat, timeouts) applied
    to every hub session this member opens; tests shorten them, production keeps the defaults.
    """

    namespace: str = DEFAULT_MEMBER_NAMESPACE
    session_overrides: dict[str, Any] = field(default_factory=dict)
    # Leaving: how long to wait for the hub to acknowledge that our exports are withdrawn.
    leave_timeout: float = 10.0
    # How long a join waits for the local informers' first list before it retries.
    sync_timeout: float = 30.0
    # Re-read the ClusterSet and rewrite its status this often even without events (Antrea: 30 s).
    status_resync: float = 30.0
    # Imports written at once (each import's objects one after another); a real API server on
    # two cores takes 1-2k writes/s, which 8 writers of a few ms each keep busy.
    import_workers: int = 8
    # ServiceExports reconciled at once (each ends with its status write).
    export_workers: int = 4
    # Serve clusterset.local DNS from the member's imports (None: off).
    dns: DnsOptions | None = None
    # Ask the API server for its version and readiness this often (what the announces say of the
    # cluster's control plane, shown in its ClusterProfile).
    inventory_probe_interval: float = 30.0

    def __post_init__(self) -> None:
        if self.import_workers < 1 or self.export_workers < 1:
            raise ValueError("import_workers and export_workers must be at least 1")


async def load_multicluster_config(client: KubeClient, namespace: str) -> MultiClusterConfig:
    """The validated MultiClusterConfig of the member Namespace; defaults when there is no ConfigMap.

    Raises ConfigError (with the ConfigMap named) when it cannot be used.
    """
    try:
        configmap = await client.get(CONFIG_MAPS, MC_CONTROLLER_CONFIGMAP, namespace)
    except NotFound:
        log.info(
            "no multicluster config, using defaults", extra={"configMap": f"{namespace}/{MC_CONTROLLER_CONFIGMAP}"}
        )
        return MultiClusterConfig()
    data = configmap.get("data") or {}
    if not isinstance(data, dict):
        raise ConfigError(f"ConfigMap {namespace}/{MC_CONTROLLER_CONFIGMAP} has no usable data")
    try:
        config = parse_configmap_data(data)
    except ConfigError as err:
        raise ConfigError(f"ConfigMap {namespace}/{MC_CONTROLLER_CONFIGMAP}: {err}") from None
    for warning in config.warnings:
        log.warning("multicluster config warning", extra={"configMap": MC_CONTROLLER_CONFIGMAP, "warning": warning})
    return config
