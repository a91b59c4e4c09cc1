"""Hypothesis strategies for the wire messages the conversions map (used by
test_convert_roundtrip)."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from mcapi.mchub.v1 import common_area_pb2 as pb

dns_label = st.from_regex(r"[a-z]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20)
ipv4 = st.ip_addresses(v=4).map(str)
protocols = st.sampled_from(["TCP", "UDP", "SCTP"])
# Exported labels and annotations (their keys and values are checked elsewhere; conversions keep them as they are).
string_maps = st.dictionaries(st.one_of(dns_label, dns_label.map(lambda k: f"example.com/{k}")), text, max_size=3)

service_ports = st.builds(
    pb.ServicePort,
    name=st.one_of(st.just(""), dns_label),
    protocol=protocols,
    port=st.integers(1, 65535),
    app_protocol=st.sampled_from(["", "http", "kubernetes.io/h2c"]),
)

service_specs = st.builds(
    pb.ServiceSpec,
    type=st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]),
    ports=st.lists(service_ports, max_size=3),
    cluster_ip=st.one_of(st.just("None"), ipv4),
    cluster_ips=st.lists(ipv4, max_size=2),
    session_affinity=st.sampled_from(["None", "ClientIP"]),
    session_affinity_timeout_seconds=st.integers(0, 86400),
    ip_families=st.sampled_from([[], ["IPv4"], ["IPv4", "IPv6"]]),
    internal_traffic_policy=st.sampled_from(["", "Cluster", "Local"]),
    traffic_distribution=st.sampled_from(["", "PreferClose"]),
)

# KEP-5939 cluster selectors (valid ones: the conversions refuse others) and their results.
property_names = st.one_of(dns_label, dns_label.map(lambda k: f"{k}.topology.k8s.io"))
property_values = st.one_of(st.just("@SameAsImporter@"), dns_label)
requirements = st.one_of(
    st.builds(
        pb.PropertySelectorRequirement,
        key=property_names,
        operator=st.sampled_from(["In", "NotIn"]),
        values=st.lists(property_values, min_size=1, max_size=2),
    ),
    st.builds(pb.PropertySelectorRequirement, key=property_names, operator=st.sampled_from(["Exists", "DoesNotExist"])),
)
property_selectors = st.builds(
    pb.PropertySelector,
    match_properties=st.dictionaries(property_names, property_values, max_size=2),
    match_expressions=st.lists(requirements, max_size=2),
).filter(lambda s: bool(s.match_properties or s.match_expressions))
cluster_selectors = st.lists(st.builds(pb.ClusterSelector, property_selector=property_selectors), max_size=3)
cluster_selections = st.lists(
    st.builds(
        pb.ClusterSelection,
        importers=st.lists(dns_label, min_size=1, max_size=3, unique=True),
        results=st.lists(
            st.builds(pb.ClusterSelectorResult, clusters=st.lists(dns_label, max_size=3, unique=True)), max_size=3
        ),
    ),
    max_size=3,
)

endpoint_subsets = st.builds(
    pb.EndpointSubset,
    addresses=st.lists(
        st.builds(pb.EndpointAddress, ip=ipv4, hostname=st.one_of(st.just(""), dns_label), node_name=dns_label),
        max_size=3,
    ),
    ports=st.lists(st.builds(pb.EndpointPort, name=dns_label, port=st.integers(1, 65535), protocol=protocols)),
    cluster_id=st.one_of(st.just(""), dns_label),
)
endpoints_specs = st.builds(pb.EndpointsSpec, subsets=st.lists(endpoint_subsets, max_size=3))


@st.composite
def cluster_infos(draw: st.DrawFn) -> pb.ClusterInfo:
    info = pb.ClusterInfo(
        cluster_id=draw(dns_label),
        service_cidr=draw(st.sampled_from(["", "10.96.0.0/12"])),
        gateway_infos=[pb.GatewayInfo(gateway_ip=ip) for ip in draw(st.lists(ipv4, max_size=2))],
        pod_cidrs=draw(st.lists(st.sampled_from(["10.244.0.0/16", "fd00::/64"]), max_size=2)),
    )
    if draw(st.booleans()):
        info.wire_guard.public_key = draw(text)
    return info


json_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2**40), 2**40), text),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(dns_label, children, max_size=3)),
    max_leaves=10,
)


@st.composite
def structs(draw: st.DrawFn) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(draw(st.dictionaries(dns_label, json_values, min_size=1, max_size=4)))
    return struct


@st.composite
def timestamps(draw: st.DrawFn) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=draw(st.integers(0, 4_000_000_000)), nanos=draw(st.integers(0, 999_999_999)))


statuses = st.builds(
    pb.ExportStatus,
    verdict=st.sampled_from([pb.VERDICT_ACCEPTED, pb.VERDICT_CONFLICT, pb.VERDICT_REJECTED, pb.VERDICT_INVALID]),
    reason=st.sampled_from(["", "PortConflict", "ConvergeFailure", "InvalidServiceType"]),
    message=text,
    clusters=st.lists(dns_label, max_size=3, unique=True),
)


@st.composite
def resource_exports(draw: st.DrawFn) -> pb.ResourceExport:
    message = pb.ResourceExport(
        export_name=draw(dns_label), cluster_id=draw(dns_label), namespace=draw(dns_label), name=draw(dns_label)
    )
    payload = draw(st.sampled_from(["service", "endpoints", "cluster_info", "acnp", "label_identity"]))
    if payload == "service":
        message.service.CopyFrom(draw(service_specs))
        message.service.exported_labels.update(draw(string_maps))
        message.service.exported_annotations.update(draw(string_maps))
        message.service.cluster_selectors.extend(draw(cluster_selectors))
    elif payload == "endpoints":
        message.endpoints.CopyFrom(draw(endpoints_specs))
        message.endpoints.SetInParent()
    elif payload == "cluster_info":
        message.cluster_info.CopyFrom(draw(cluster_infos()))
    elif payload == "acnp":
        message.cluster_network_policy.CopyFrom(draw(structs()))
    else:
        message.label_identity.normalized_label = draw(text)
        message.label_identity.SetInParent()
    if draw(st.booleans()):
        message.create_time.CopyFrom(draw(timestamps()))
    if draw(st.booleans()):
        message.status.CopyFrom(draw(statuses))
    return message


service_import_specs = st.builds(
    pb.ServiceImportSpec,
    type=st.sampled_from(["ClusterSetIP", "Headless"]),
    ports=st.lists(service_ports, max_size=3),
    session_affinity=st.sampled_from(["None", "ClientIP"]),
    session_affinity_timeout_seconds=st.integers(0, 86400),
    ip_families=st.sampled_from([[], ["IPv4"], ["IPv6", "IPv4"]]),
    internal_traffic_policy=st.sampled_from(["", "Cluster", "Local"]),
    traffic_distribution=st.sampled_from(["", "PreferClose"]),
    clusters=st.lists(dns_label, max_size=3, unique=True).map(sorted),
)


@st.composite
def resource_imports(draw: st.DrawFn) -> pb.ResourceImport:
    message = pb.ResourceImport(
        import_name=draw(dns_label),
        namespace=draw(st.one_of(st.just(""), dns_label)),
        name=draw(dns_label),
        cluster_ids=draw(st.lists(dns_label, max_size=3)),
    )
    payload = draw(st.sampled_from(["service_import", "endpoints", "cluster_info", "acnp", "label_identity"]))
    if payload == "service_import":
        message.service_import.CopyFrom(draw(service_import_specs))
        message.service_import.labels.update(draw(string_maps))
        message.service_import.annotations.update(draw(string_maps))
        message.service_import.cluster_selectors.extend(draw(cluster_selectors))
        message.service_import.selections.extend(draw(cluster_selections))
    elif payload == "endpoints":
        message.endpoints.CopyFrom(draw(endpoints_specs))
        message.endpoints.SetInParent()
    elif payload == "cluster_info":
        message.cluster_info.CopyFrom(draw(cluster_infos()))
    elif payload == "acnp":
        message.cluster_network_policy.CopyFrom(draw(structs()))
    else:
        message.label_identity.CopyFrom(pb.LabelIdentity(label=draw(text), id=draw(st.integers(1, 16777214))))
    return message


@settings(max_examples=20, deadline=None)
@given(resource_exports(), resource_imports())
def test_generated_exports_and_imports_always_carry_a_payload(
    export: pb.ResourceExport, imported: pb.ResourceImport
) -> None:
    assert export.WhichOneof("payload") is not None
    assert imported.WhichOneof("payload") is not None
