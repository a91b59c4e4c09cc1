"""ClusterInfo: what this member tells the ClusterSet about its Gateway and network.

``build_cluster_info_export`` is pure (the active Gateway + the cluster's ranges -> the
``<clusterID>-clusterinfo`` export, named like Antrea's: spec.name = cluster ID,
spec.namespace = the member Namespace). ``ClusterInfoPublisher`` hands it to the hub
session's exporter callbacks, only when it changed, and only while a Gateway is active.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.names import cluster_info_export_name
from member.gateway.election import Candidate

log = logging.getLogger(__name__)

SetExport = Callable[[pb.ResourceExport], None]
RemoveExport = Callable[[str], None]


@dataclass(frozen=True)
class ClusterRanges:
    """The local cluster's address ranges (serviceCIDR configured or discovered; podCIDRs configured)."""

    service_cidr: str
    pod_cidrs: tuple[str, ...] = ()


def build_cluster_info(cluster_id: str, gateway: Candidate, ranges: ClusterRanges) -> pb.ClusterInfo:
    assert gateway.gateway_ip is not None, "only an eligible Gateway is exported"
    info = pb.ClusterInfo(
        cluster_id=cluster_id,
        service_cidr=ranges.service_cidr,
        gateway_infos=[pb.GatewayInfo(gateway_ip=gateway.gateway_ip)],
        pod_cidrs=list(ranges.pod_cidrs),
    )
    if gateway.wireguard_public_key:
        info.wire_guard.CopyFrom(pb.WireGuardInfo(public_key=gateway.wireguard_public_key))
    return info


def build_cluster_info_export(
    cluster_id: str, namespace: str, gateway: Candidate, ranges: ClusterRanges
) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=cluster_info_export_name(cluster_id),
        cluster_id=cluster_id,
        namespace=namespace,
        name=cluster_id,
        cluster_info=build_cluster_info(cluster_id, gateway, ranges),
    )


class ClusterInfoPublisher:
    """Keeps the exporter's ClusterInfo equal to the last one ``publish``ed (None: withdrawn).

    Before ``attach`` it only remembers (``desired_exports`` feeds a session's first sync
    bracket); after, it calls the callbacks on every change and never repeats itself.
    """

    def __init__(self, cluster_id: str, namespace: str) -> None:
        self.cluster_id = cluster_id
        self.namespace = namespace
        self._current: pb.ResourceExport | None = None
        self._sent: pb.ResourceExport | None = None
        self._set: SetExport | None = None
        self._remove: RemoveExport | None = None

    @property
    def export_name(self) -> str:
        return cluster_info_export_name(self.cluster_id)

    @property
    def current(self) -> pb.ResourceExport | None:
        return self._current

    def desired_exports(self) -> Sequence[pb.ResourceExport]:
        return [self._current] if self._current is not None else []

    def attach(self, set_export: SetExport, remove_export: RemoveExport) -> None:
        self._set, self._remove = set_export, remove_export
        self._flush(force=True)

    def detach(self) -> None:
        self._set = self._remove = None
        self._sent = None

    def publish(self, gateway: Candidate | None, ranges: ClusterRanges) -> None:
        """Export ClusterInfo for ``gateway`` (None: withdraw it)."""
        if gateway is None:
            self._current = None
        else:
            self._current = build_cluster_info_export(self.cluster_id, self.namespace, gateway, ranges)
        self._flush(force=False)

    def _flush(self, *, force: bool) -> None:
        if self._set is None or self._remove is None:
            return
        if self._current is None:
            if self._sent is not None or force:
                self._remove(self.export_name)
                log.info("clusterInfoWithdrawn", extra={"export": self.export_name})
        elif force or self._sent != self._current:
            self._set(self._current)
            log.info(
                "clusterInfoExported",
                extra={
                    "export": self.export_name,
                    "gatewayIP": self._current.cluster_info.gateway_infos[0].gateway_ip,
                    "serviceCIDR": self._current.cluster_info.service_cidr,
                },
            )
        self._sent = self._current
