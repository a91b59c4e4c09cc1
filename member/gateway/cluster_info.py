"""ClusterInfo: what this member tells the ClusterSet about its Gateway and network.

``build_cluster_info_export`` is pure (the active Gateway(s) + the cluster's ranges -> the
``<clusterID>-clusterinfo`` export, named like Antrea's: spec.name = cluster ID,
spec.namespace = the member Namespace). ``ClusterInfoPublisher`` hands it to the hub
session (its ExportSink), only when it changed, and only while a Gateway is active.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.names import cluster_info_export_name
from member.gateway.election import Candidate
from member.hubclient.sink import ExportSink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterRanges:
    """The local cluster's address ranges (serviceCIDR configured or discovered; podCIDRs configured)."""

    service_cidr: str
    pod_cidrs: tuple[str, ...] = ()


def build_cluster_info(cluster_id: str, gateways: Sequence[Candidate], ranges: ClusterRanges) -> pb.ClusterInfo:
    """``gateways``: the active ones, the first being the one importers that use a single Gateway
    (Antrea's agents, single-active mchub) tunnel to; in active-active mode all are listed."""
    assert gateways and all(g.gateway_ip is not None for g in gateways), "only eligible Gateways are exported"
    info = pb.ClusterInfo(
        cluster_id=cluster_id,
        service_cidr=ranges.service_cidr,
        gateway_infos=[pb.GatewayInfo(gateway_ip=g.gateway_ip or "") for g in gateways],
        pod_cidrs=list(ranges.pod_cidrs),
    )
    if gateways[0].wireguard_public_key:
        info.wire_guard.CopyFrom(pb.WireGuardInfo(public_key=gateways[0].wireguard_public_key))
    return info


def build_cluster_info_export(
    cluster_id: str, namespace: str, gateways: Sequence[Candidate], ranges: ClusterRanges
) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=cluster_info_export_name(cluster_id),
        cluster_id=cluster_id,
        namespace=namespace,
        name=cluster_id,
        cluster_info=build_cluster_info(cluster_id, gateways, ranges),
    )


class ClusterInfoPublisher:
    """Keeps the sink's ClusterInfo equal to the last one ``publish``ed (None: withdrawn), and
    never repeats itself."""

    def __init__(self, cluster_id: str, namespace: str, sink: ExportSink) -> None:
        self.cluster_id = cluster_id
        self.namespace = namespace
        self._sink = sink
        self._sent: pb.ResourceExport | None = None

    @property
    def export_name(self) -> str:
        return cluster_info_export_name(self.cluster_id)

    def publish(self, gateways: Sequence[Candidate], ranges: ClusterRanges) -> None:
        """Export ClusterInfo for the active ``gateways`` (none: withdraw it)."""
        if not gateways:
            if self._sent is not None:
                self._sink.remove_export(self.export_name)
                log.info("clusterInfoWithdrawn", extra={"export": self.export_name})
            self._sent = None
            return
        current = build_cluster_info_export(self.cluster_id, self.namespace, gateways, ranges)
        if current == self._sent:
            return
        self._sink.set_export(current)
        self._sent = current
        log.info(
            "clusterInfoExported",
            extra={
                "export": self.export_name,
                "gatewayIPs": [g.gateway_ip for g in current.cluster_info.gateway_infos],
                "serviceCIDR": current.cluster_info.service_cidr,
            },
        )
