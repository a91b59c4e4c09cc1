"""Merging the Service exports of one namespace/name into a ServiceImport.

The rules are the MCS API's (KEP-1645 and its conformance suite): ports are
the union over exporters keyed by name; any difference among exporters (a
same-named port with another number or protocol, a different port set,
headlessness, session affinity and its timeout, internalTrafficPolicy,
trafficDistribution, ipFamilies, and the ServiceExports' exported labels and
annotations, compared as whole maps) is resolved by the oldest export and
reported as a Conflict to every exporter, the winner included; so are the
exporters' cluster selectors (KEP-5939: ClusterSelectorsConflict), compared as
ordered lists. ExternalName cannot be exported, nor can a Headless Service with
cluster selectors (InvalidServiceType: selection is for ClusterSetIP Services).
In strict-ports mode (Antrea's older rule) an export whose ports differ from the
oldest export's is skipped instead.

The merge also says, per merged cluster, which of its Service ports the
import exposes as that cluster serves them (same name, protocol and number):
only those ports of its endpoints are merged (hub.merge.endpoints).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hub.errors import quote
from hub.merge import verdicts
from hub.merge.ordering import clusters_text, first_per_cluster, oldest_first
from mcapi.mchub.v1 import common_area_pb2 as pb

IMPORT_TYPE_CLUSTER_SET_IP = "ClusterSetIP"
IMPORT_TYPE_HEADLESS = "Headless"
SERVICE_TYPE_EXTERNAL_NAME = "ExternalName"
SERVICE_TYPE_CLUSTER_IP = "ClusterIP"
CLUSTER_IP_NONE = "None"
AFFINITY_NONE = "None"
AFFINITY_CLIENT_IP = "ClientIP"
# Kubernetes defaults a ClientIP Service's timeout to 3 hours; an export that
# leaves it unset (0) means that, and must not conflict with an explicit 10800.
DEFAULT_CLIENT_IP_TIMEOUT_SECONDS = 10800
INTERNAL_TRAFFIC_POLICY_CLUSTER = "Cluster"

# How a port is compared: the application protocol is a hint, not identity.
PortKey = tuple[str, str, int]
# A port as endpoints name it: (name, protocol).
PortName = tuple[str, str]
StringItems = tuple[tuple[str, str], ...]
T = TypeVar("T")


def port_key(port: pb.ServicePort) -> PortKey:
    return (port.name, port.protocol, port.port)


def _port_text(port: pb.ServicePort) -> str:
    return f"{port.protocol}/{port.port}"


@dataclass(frozen=True)
class ServiceShape:
    """One export's Service, normalized so that equal meaning compares equal."""

    export: pb.ResourceExport
    import_type: str
    ports: tuple[pb.ServicePort, ...]
    session_affinity: str
    session_affinity_timeout_seconds: int
    internal_traffic_policy: str
    traffic_distribution: str
    ip_families: tuple[str, ...]
    exported_labels: StringItems
    exported_annotations: StringItems
    # The cluster selectors, each serialized (compared as an ordered list).
    cluster_selectors: tuple[bytes, ...] = ()

    @property
    def cluster_id(self) -> str:
        return self.export.cluster_id

    @property
    def port_keys(self) -> frozenset[PortKey]:
        return frozenset(port_key(p) for p in self.ports)


def shape_of(export: pb.ResourceExport) -> ServiceShape:
    spec = export.service
    affinity = spec.session_affinity or AFFINITY_NONE
    timeout = 0
    if affinity == AFFINITY_CLIENT_IP:
        timeout = spec.session_affinity_timeout_seconds or DEFAULT_CLIENT_IP_TIMEOUT_SECONDS
    return ServiceShape(
        export=export,
        # NodePort and LoadBalancer Services export as ClusterSetIP: only
        # headlessness decides the import's type.
        import_type=IMPORT_TYPE_HEADLESS if spec.cluster_ip == CLUSTER_IP_NONE else IMPORT_TYPE_CLUSTER_SET_IP,
        ports=tuple(spec.ports),
        session_affinity=affinity,
        session_affinity_timeout_seconds=timeout,
        internal_traffic_policy=spec.internal_traffic_policy or INTERNAL_TRAFFIC_POLICY_CLUSTER,
        traffic_distribution=spec.traffic_distribution,
        ip_families=tuple(spec.ip_families),
        exported_labels=_items(spec.exported_labels),
        exported_annotations=_items(spec.exported_annotations),
        cluster_selectors=tuple(s.SerializeToString(deterministic=True) for s in spec.cluster_selectors),
    )


def _items(labels: Mapping[str, str]) -> StringItems:
    # Most Services export no labels: an empty map's items cost more than the test.
    return tuple(sorted(labels.items())) if labels else ()


def _selectors_text(selectors: tuple[bytes, ...]) -> str:
    return f"{len(selectors)} selectors" if selectors else "none"


@dataclass(frozen=True)
class Conflict:
    reason: str
    message: str


@dataclass(frozen=True)
class ServiceMerge:
    """The ServiceImport spec (None: no import) and the verdict of every Service export.

    by_cluster holds, per exporting cluster, the status of the one export that
    counts for it; the Endpoints merge follows it. served_ports holds, per merged
    cluster, the ports of its Service the import exposes with that cluster's
    protocol and number: the only ports of its endpoints that are merged.
    """

    spec: pb.ServiceImportSpec | None
    statuses: dict[str, pb.ExportStatus] = field(default_factory=dict)
    by_cluster: dict[str, pb.ExportStatus] = field(default_factory=dict)
    served_ports: dict[str, frozenset[PortName]] = field(default_factory=dict)


def _keys_text(items: StringItems) -> str:
    """The keys of a map's items, for a message (the values may be long)."""
    return f"the keys {', '.join(quote(key) for key, _ in items)}" if items else "none"


def _property_conflict(
    shapes: Sequence[ServiceShape],
    value_of: Callable[[ServiceShape], T],
    reason: str,
    what: str,
    describe: Callable[[T], str] = repr,
) -> Conflict | None:
    """A conflict when any exporter's property differs from the oldest's."""
    if not shapes:
        return None
    precedent = shapes[0]
    winner = value_of(precedent)
    differing = [s.cluster_id for s in shapes[1:] if value_of(s) != winner]
    if not differing:
        return None
    return Conflict(
        reason,
        f"The {what} differs among clusters {clusters_text(s.cluster_id for s in shapes)}: "
        f"using {describe(winner)} from the oldest export, of cluster {precedent.cluster_id} "
        f"(differing: {clusters_text(differing)}).",
    )


def union_ports(shapes: Sequence[ServiceShape]) -> tuple[list[pb.ServicePort], Conflict | None]:
    """The union of the exporters' ports, by name, the oldest export winning a name.

    Any difference is a PortConflict, as the conformance suite expects: a
    same-named port with another number/protocol, or simply another set of
    ports (the union is still exposed).
    """
    union: dict[str, pb.ServicePort] = {}
    owner: dict[str, str] = {}
    clashes: list[str] = []
    for shape in shapes:
        for port in shape.ports:
            held = union.get(port.name)
            if held is None:
                union[port.name] = port
                owner[port.name] = shape.cluster_id
            elif (held.protocol, held.port) != (port.protocol, port.port):
                clashes.append(
                    f"port {port.name!r} is {_port_text(port)} in cluster {shape.cluster_id} but "
                    f"{_port_text(held)} in the older export of cluster {owner[port.name]}, which wins"
                )
    ports = [_copy_port(p) for p in sorted(union.values(), key=lambda p: (p.name, p.port, p.protocol))]
    if not shapes:
        return ports, None
    precedent = shapes[0]
    differing = [s.cluster_id for s in shapes[1:] if s.port_keys != precedent.port_keys]
    if not differing and not clashes:
        return ports, None
    parts = [
        f"The exported ports differ among clusters {clusters_text(s.cluster_id for s in shapes)}; "
        "the import exposes their union."
    ]
    parts.extend(f"{clash[0].upper()}{clash[1:]}." for clash in clashes)
    return ports, Conflict(verdicts.REASON_PORT_CONFLICT, " ".join(parts))


def _copy_port(port: pb.ServicePort) -> pb.ServicePort:
    fresh = pb.ServicePort()
    fresh.CopyFrom(port)
    return fresh


def find_conflicts(shapes: Sequence[ServiceShape]) -> tuple[list[pb.ServicePort], list[Conflict]]:
    """The merged ports and every conflict among the merged exporters, most significant first."""
    ports, port_conflict = union_ports(shapes)
    if len(shapes) == 1:  # one exporter: no property can differ from another's (the usual group)
        return ports, [port_conflict] if port_conflict is not None else []
    precedent = shapes[0]
    # The timeout only means something between exporters that agree on ClientIP.
    same_affinity = [s for s in shapes if s.session_affinity == precedent.session_affinity]
    # An export that states no IP families (an older member) has no opinion.
    stating_families = [s for s in shapes if s.ip_families]
    candidates = [
        _property_conflict(shapes, lambda s: s.import_type, verdicts.REASON_TYPE_CONFLICT, "Service type"),
        port_conflict,
        _property_conflict(
            shapes, lambda s: s.session_affinity, verdicts.REASON_SESSION_AFFINITY_CONFLICT, "sessionAffinity"
        ),
        _property_conflict(
            same_affinity,
            lambda s: s.session_affinity_timeout_seconds,
            verdicts.REASON_SESSION_AFFINITY_CONFIG_CONFLICT,
            "sessionAffinityConfig timeout",
        ),
        _property_conflict(
            shapes,
            lambda s: s.internal_traffic_policy,
            verdicts.REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT,
            "internalTrafficPolicy",
        ),
        _property_conflict(
            shapes,
            lambda s: s.traffic_distribution,
            verdicts.REASON_TRAFFIC_DISTRIBUTION_CONFLICT,
            "trafficDistribution",
        ),
        _property_conflict(
            stating_families, lambda s: list(s.ip_families), verdicts.REASON_IP_FAMILY_CONFLICT, "ipFamilies"
        ),
        # Any difference, even an exporter that adds a key: the oldest export's maps are the import's.
        _property_conflict(
            shapes,
            lambda s: s.exported_labels,
            verdicts.REASON_LABELS_CONFLICT,
            "set of exported labels",
            _keys_text,
        ),
        _property_conflict(
            shapes,
            lambda s: s.exported_annotations,
            verdicts.REASON_ANNOTATIONS_CONFLICT,
            "set of exported annotations",
            _keys_text,
        ),
        _property_conflict(
            shapes,
            lambda s: s.cluster_selectors,
            verdicts.REASON_CLUSTER_SELECTORS_CONFLICT,
            "list of cluster selectors",
            _selectors_text,
        ),
    ]
    return ports, [c for c in candidates if c is not None]


def _strict_split(
    shapes: Sequence[ServiceShape], import_name: str
) -> tuple[list[ServiceShape], dict[str, pb.ExportStatus]]:
    """Antrea's older rule: the oldest export's ports are the import's; others must match."""
    precedent = shapes[0]
    kept = [precedent]
    skipped: dict[str, pb.ExportStatus] = {}
    for shape in shapes[1:]:
        if shape.port_keys == precedent.port_keys:
            kept.append(shape)
            continue
        skipped[shape.export.export_name] = verdicts.rejected(
            verdicts.REASON_CONVERGE_FAILURE,
            f"The ports of cluster {shape.cluster_id} differ from those of {import_name}, defined by the "
            f"oldest export, of cluster {precedent.cluster_id}; strict port mode skips this export "
            "and its endpoints.",
        )
    return kept, skipped


def merge_services(exports: Sequence[pb.ResourceExport], *, import_name: str, strict_ports: bool) -> ServiceMerge:
    """Merge the Service exports of one namespace/name (any order)."""
    counted, duplicates = first_per_cluster(oldest_first(exports))
    statuses: dict[str, pb.ExportStatus] = {}
    for export in duplicates:
        statuses[export.export_name] = verdicts.rejected(
            verdicts.REASON_DUPLICATE_EXPORT,
            f"Cluster {export.cluster_id} exports this Service more than once; only its oldest export counts.",
        )

    shapes: list[ServiceShape] = []
    for export in counted:
        if (export.service.type or SERVICE_TYPE_CLUSTER_IP) == SERVICE_TYPE_EXTERNAL_NAME:
            statuses[export.export_name] = verdicts.invalid(
                verdicts.REASON_INVALID_SERVICE_TYPE,
                f"Service type ExternalName cannot be exported; it is left out of {import_name}.",
            )
        elif export.service.cluster_ip == CLUSTER_IP_NONE and export.service.cluster_selectors:
            statuses[export.export_name] = verdicts.invalid(
                verdicts.REASON_INVALID_SERVICE_TYPE,
                f"A Headless Service cannot have cluster selectors (they select among ClusterSetIP Services' "
                f"clusters); it is left out of {import_name}.",
            )
        else:
            shapes.append(shape_of(export))

    spec: pb.ServiceImportSpec | None = None
    served: dict[str, frozenset[PortName]] = {}
    if shapes:
        if strict_ports:
            shapes, skipped = _strict_split(shapes, import_name)
            statuses.update(skipped)
        spec = _merge_shapes(shapes, import_name, statuses)
        served = {s.cluster_id: served_ports(s, spec.ports) for s in shapes}

    by_cluster = {e.cluster_id: statuses[e.export_name] for e in counted}
    return ServiceMerge(spec=spec, statuses=statuses, by_cluster=by_cluster, served_ports=served)


def served_ports(shape: ServiceShape, import_ports: Sequence[pb.ServicePort]) -> frozenset[PortName]:
    """The ports of a cluster's Service that the import exposes as that cluster serves them.

    A port that lost a PortConflict (its name is another number or protocol in the import) is
    not: traffic to the import's port of that name must not reach this cluster's other port.
    In strict-ports mode every merged exporter has the import's ports, so all of them are.
    """
    exposed = {p.name: (p.protocol, p.port) for p in import_ports}
    return frozenset((p.name, p.protocol) for p in shape.ports if exposed.get(p.name) == (p.protocol, p.port))


def _merge_shapes(
    shapes: Sequence[ServiceShape], import_name: str, statuses: dict[str, pb.ExportStatus]
) -> pb.ServiceImportSpec:
    """Build the import from oldest-first shapes and record each one's verdict."""
    ports, conflicts = find_conflicts(shapes)
    precedent = shapes[0]
    families = next((s.ip_families for s in shapes if s.ip_families), ())
    clusters = sorted(s.cluster_id for s in shapes)
    spec = pb.ServiceImportSpec(
        type=precedent.import_type,
        ports=ports,
        session_affinity=precedent.session_affinity,
        session_affinity_timeout_seconds=precedent.session_affinity_timeout_seconds,
        ip_families=list(families),
        internal_traffic_policy=precedent.internal_traffic_policy,
        traffic_distribution=precedent.traffic_distribution,
        clusters=clusters,
        # None leaves a map empty; an empty dict would still be copied in item by item.
        labels=dict(precedent.exported_labels) or None,
        annotations=dict(precedent.exported_annotations) or None,
        cluster_selectors=precedent.export.service.cluster_selectors,
    )
    for shape in shapes:
        if conflicts:
            statuses[shape.export.export_name] = verdicts.conflict(
                conflicts[0].reason, " ".join(c.message for c in conflicts)
            )
        else:
            statuses[shape.export.export_name] = verdicts.accepted(
                f"Merged into {import_name} with clusters {', '.join(clusters)}."
            )
    return spec
