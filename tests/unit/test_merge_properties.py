"""Properties of the merge that must hold for any set of exports (hypothesis)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.merge import MergeConfig, MergeContext, merge_group
from hub.merge.label_identity import allocate_label_id
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import (
    CTX,
    STRICT_CTX,
    endpoints_export,
    label_export,
    service_export,
    service_import_name,
)

CLUSTERS = ["alpha", "beta", "east", "gamma", "north", "west"]

port_tuple = st.tuples(
    st.sampled_from(["http", "https", "dns", "metrics"]),
    st.sampled_from(["TCP", "UDP", "SCTP"]),
    st.sampled_from([53, 80, 443, 8080]),
)


@st.composite
def service_exports(draw: st.DrawFn) -> list[pb.ResourceExport]:
    clusters = draw(st.lists(st.sampled_from(CLUSTERS), min_size=1, max_size=5, unique=True))
    exports: list[pb.ResourceExport] = []
    for cluster in clusters:
        ports = draw(st.lists(port_tuple, max_size=3, unique_by=lambda p: p[0]))
        exports.append(
            service_export(
                cluster,
                age=draw(st.integers(0, 3)),
                ports=ports,
                service_type=draw(st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"])),
                cluster_ip=draw(st.sampled_from(["10.96.0.10", "None"])),
                affinity=draw(st.sampled_from(["", "None", "ClientIP"])),
                timeout=draw(st.sampled_from([0, 300])),
                internal_traffic_policy=draw(st.sampled_from(["", "Local"])),
                ip_families=draw(st.sampled_from([[], ["IPv4"], ["IPv6", "IPv4"]])),
                exported_labels=draw(st.sampled_from([{}, {"tier": "web"}, {"tier": "db"}])),
                exported_annotations=draw(st.sampled_from([{}, {"note": "x"}])),
            )
        )
        if draw(st.booleans()):
            # ClusterIP shape (the Service's ports) or a hand-written one (any ports).
            endpoint_ports = ports if draw(st.booleans()) else draw(st.lists(port_tuple, max_size=3))
            exports.append(endpoints_export(cluster, ["10.244.0.1"], age=draw(st.integers(0, 3)), ports=endpoint_ports))
    return exports


@settings(max_examples=100, deadline=None)
@given(exports=service_exports(), seed=st.integers(0, 2**32), strict=st.booleans())
def test_the_merge_does_not_depend_on_the_order_of_its_input(
    exports: list[pb.ResourceExport], seed: int, strict: bool
) -> None:
    ctx = STRICT_CTX if strict else CTX
    shuffled = list(exports)
    random.Random(seed).shuffle(shuffled)
    first, second = merge_group(exports, {}, ctx), merge_group(shuffled, {}, ctx)
    assert first.imports == second.imports
    assert first.statuses == second.statuses


@settings(max_examples=100, deadline=None)
@given(exports=service_exports(), strict=st.booleans())
def test_every_export_gets_a_status(exports: list[pb.ResourceExport], strict: bool) -> None:
    result = merge_group(exports, {}, STRICT_CTX if strict else CTX)
    assert set(result.statuses) == {e.export_name for e in exports}
    assert all(s.verdict != pb.VERDICT_UNSPECIFIED and s.message for s in result.statuses.values())


def _merged(exports: list[pb.ResourceExport], result_statuses: dict[str, pb.ExportStatus]) -> list[pb.ResourceExport]:
    merged = [
        e
        for e in exports
        if e.HasField("service")
        and result_statuses[e.export_name].verdict in (pb.VERDICT_ACCEPTED, pb.VERDICT_CONFLICT)
    ]
    return sorted(merged, key=lambda e: (e.create_time.seconds, e.cluster_id))


@settings(max_examples=100, deadline=None)
@given(exports=service_exports())
def test_the_union_holds_every_port_name_as_defined_by_its_oldest_exporter(
    exports: list[pb.ResourceExport],
) -> None:
    result = merge_group(exports, {}, CTX)
    merged = _merged(exports, result.statuses)
    if not merged:
        assert result.imports == {}
        return
    imported = {p.name: (p.protocol, p.port) for p in result.imports[service_import_name()].service_import.ports}
    winners: dict[str, tuple[str, int]] = {}
    for export in merged:
        for port in export.service.ports:
            winners.setdefault(port.name, (port.protocol, port.port))
    assert imported == winners


@settings(max_examples=100, deadline=None)
@given(exports=service_exports())
def test_all_merged_exporters_share_one_verdict_and_only_externalname_is_left_out(
    exports: list[pb.ResourceExport],
) -> None:
    result = merge_group(exports, {}, CTX)
    merged = _merged(exports, result.statuses)
    assert len({result.statuses[e.export_name].verdict for e in merged}) <= 1
    for export in exports:
        if export.HasField("service") and export not in merged:
            assert result.statuses[export.export_name].reason == "InvalidServiceType"
    if merged:
        spec = result.imports[service_import_name()].service_import
        assert list(spec.clusters) == sorted(e.cluster_id for e in merged)
        # The oldest merged export's maps are the import's.
        assert dict(spec.labels) == dict(merged[0].service.exported_labels)
        assert dict(spec.annotations) == dict(merged[0].service.exported_annotations)


@settings(max_examples=100, deadline=None)
@given(exports=service_exports())
def test_in_strict_mode_every_merged_exporter_has_exactly_the_import_ports(
    exports: list[pb.ResourceExport],
) -> None:
    result = merge_group(exports, {}, STRICT_CTX)
    merged = _merged(exports, result.statuses)
    if not merged:
        return
    imported = {(p.name, p.protocol, p.port) for p in result.imports[service_import_name()].service_import.ports}
    for export in merged:
        assert {(p.name, p.protocol, p.port) for p in export.service.ports} == imported


@settings(max_examples=100, deadline=None)
@given(exports=service_exports())
def test_the_endpoints_import_holds_the_merged_clusters_endpoints_with_the_ports_they_serve_as_imported(
    exports: list[pb.ResourceExport],
) -> None:
    result = merge_group(exports, {}, CTX)
    merged_clusters = {e.cluster_id for e in _merged(exports, result.statuses)}
    if not merged_clusters:
        return
    imported = {p.name: (p.protocol, p.port) for p in result.imports[service_import_name()].service_import.ports}
    services = {e.cluster_id: e.service for e in exports if e.HasField("service")}
    expected: list[tuple[str, list[tuple[str, str, int]]]] = []
    for export in sorted(exports, key=lambda e: e.cluster_id):
        if not export.HasField("endpoints") or export.cluster_id not in merged_clusters:
            continue
        # A port is kept when its cluster's Service serves it as the import exposes it.
        served = {
            (p.name, p.protocol) for p in services[export.cluster_id].ports if imported[p.name] == (p.protocol, p.port)
        }
        ports = [
            (p.name, p.protocol, p.port) for p in export.endpoints.subsets[0].ports if (p.name, p.protocol) in served
        ]
        if ports:
            expected.append((export.cluster_id, ports))
    subsets = result.imports["demo-web-endpoints"].endpoints.subsets
    assert [(s.cluster_id, [(p.name, p.protocol, p.port) for p in s.ports]) for s in subsets] == expected


@settings(max_examples=100, deadline=None)
@given(used=st.frozensets(st.integers(1, 40), max_size=30))
def test_a_new_label_identity_takes_the_lowest_id_not_in_use(used: frozenset[int]) -> None:
    ctx = MergeContext(config=MergeConfig(), used_label_ids=used)
    result = merge_group([label_export("east")], {}, ctx)
    (imp,) = result.imports.values()
    assigned = imp.label_identity.id
    assert assigned not in used
    assert all(i in used for i in range(1, assigned))
    assert assigned == allocate_label_id(used, label="x")
