"""The hub's global addressing (pure): blocks, overlap verdicts, and the ClusterInfo imports
stamped with them in the revision that changes them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hub.clusterset.status import global_addressing_condition
from hub.config import HubConfig, HubConfigError
from hub.engine.index import Index
from hub.merge import MergeConfig, MergeContext, validate_export
from hub.merge.global_addressing import Addressing, GlobalCIDR, GlobalCIDRError, report
from hub.merge.regroup import regroup
from hub.store.base import MemberRecord
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

NOW = datetime(2025, 1, 1, tzinfo=UTC)
GLOBAL = GlobalCIDR.parse("242.0.0.0/16", 20)
assert GLOBAL is not None


def info(cluster: str, service: str, *pods: str) -> pb.ClusterInfo:
    return pb.ClusterInfo(
        cluster_id=cluster,
        service_cidr=service,
        pod_cidrs=list(pods),
        gateway_infos=[pb.GatewayInfo(gateway_ip=f"198.18.0.{len(cluster)}")],
    )


def export(cluster_info: pb.ClusterInfo) -> pb.ResourceExport:
    cid = cluster_info.cluster_id
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cid), cluster_id=cid, namespace="kube-system", name=cid,
        cluster_info=cluster_info,
    )  # fmt: skip


EAST = info("east", "10.96.0.0/16", "10.1.0.0/16")
WEST = info("west", "10.96.0.0/16", "10.1.0.0/16")
NORTH = info("north", "10.97.0.0/16", "10.3.0.0/16")


def test_a_global_cidr_is_parsed_and_refused_with_reasons() -> None:
    assert GlobalCIDR.parse("") is None
    assert str(GlobalCIDR.parse("242.0.0.0/8")) == "242.0.0.0/8"
    for text, prefix, why in (
        ("242.0.0.1/8", 20, "host bits"),
        ("fd00::/8", 20, "not IPv4"),
        ("242.0.0.0/24", 20, "must be within /24"),
        ("242.0.0.0/8", 30, "and /29"),
        ("nonsense", 20, "not a network"),
    ):
        with pytest.raises(GlobalCIDRError, match=why):
            GlobalCIDR.parse(text, prefix)
    with pytest.raises(HubConfigError, match="not IPv4"):
        HubConfig(global_cidr="fd00::/8").validate()


def test_blocks_are_the_lowest_free_kept_while_held_and_none_when_all_are_taken() -> None:
    small = GlobalCIDR.parse("242.0.0.0/19", 20)
    assert small is not None
    assert small.allocate("", []) == "242.0.0.0/20"
    assert small.allocate("", ["242.0.0.0/20"]) == "242.0.16.0/20"
    assert small.allocate("242.0.16.0/20", ["242.0.0.0/20"]) == "242.0.16.0/20"
    assert small.allocate("", ["242.0.0.0/20", "242.0.16.0/20"]) == ""
    # A block of another global CIDR (the hub's was changed) is replaced.
    assert small.allocate("10.0.0.0/20", []) == "242.0.0.0/20"


def test_only_members_whose_ranges_overlap_another_are_globally_addressed() -> None:
    blocks = {"east": "242.0.0.0/20", "west": "242.0.16.0/20", "north": "242.0.32.0/20"}
    found = report({"east": EAST, "west": WEST, "north": NORTH}, blocks, GLOBAL)
    assert found.by_cluster == {
        "east": Addressing("242.0.0.0/20", True),
        "west": Addressing("242.0.16.0/20", True),
        "north": Addressing("242.0.32.0/20", False),
    }
    assert found.overlaps == {"east": ("west",), "west": ("east",)}
    # A Pod CIDR overlapping another's Service CIDR counts as well.
    odd = info("odd", "10.200.0.0/16", "10.97.128.0/17")
    assert report({"north": NORTH, "odd": odd}, {}, GLOBAL).overlaps == {"north": ("odd",), "odd": ("north",)}


def test_without_a_global_cidr_nobody_is_globally_addressed_but_the_overlap_is_reported() -> None:
    found = report({"east": EAST, "west": WEST}, {"east": "", "west": ""}, None)
    assert found.by_cluster == {}
    condition = global_addressing_condition(found, None, NOW)
    assert condition is not None and condition["status"] == "False"
    assert condition["reason"] == "OverlapWithoutGlobalCIDR" and "east, west" in condition["message"]
    assert global_addressing_condition(report({"north": NORTH}, {}, None), None, NOW) is None


def test_a_global_cidr_overlapping_a_member_range_addresses_nobody() -> None:
    clash = info("north", "242.0.0.0/24")
    found = report(
        {"east": EAST, "west": WEST, "north": clash}, {"east": "242.0.0.0/20", "west": "242.0.16.0/20"}, GLOBAL
    )
    assert not any(a.globally_addressed for a in found.by_cluster.values())
    condition = global_addressing_condition(found, GLOBAL, NOW)
    assert condition is not None and condition["reason"] == "GlobalCIDROverlapsMember"
    assert "cluster north's Service CIDR 242.0.0.0/24 overlaps the global CIDR" in condition["message"]


def test_an_overlapping_member_without_a_block_is_named() -> None:
    found = report({"east": EAST, "west": WEST}, {"east": "242.0.0.0/20", "west": ""}, GLOBAL)
    assert found.without_block == ("west",)
    condition = global_addressing_condition(found, GLOBAL, NOW)
    assert condition is not None and condition["reason"] == "GlobalBlocksExhausted"


def member(cluster: str, block: str) -> MemberRecord:
    return MemberRecord(cluster, "set", "north", NOW, NOW, global_cidr=block)


def stamp(index: Index) -> dict[str, tuple[str, bool]]:
    return {
        imp.name: (imp.cluster_info.global_cidr, imp.cluster_info.globally_addressed)
        for imp in index.imports.values()
        if imp.WhichOneof("payload") == "cluster_info"
    }


def test_imports_are_restamped_when_a_member_starts_and_stops_overlapping() -> None:
    ctx = MergeContext(config=MergeConfig(global_cidr=GLOBAL))
    index = Index(members={c: member(c, b) for c, b in (("east", "242.0.0.0/20"), ("north", "242.0.16.0/20"))})
    index.apply(regroup(index, ctx, deleted=set(), put=[export(EAST), export(NORTH)]))
    assert stamp(index) == {"east": ("242.0.0.0/20", False), "north": ("242.0.16.0/20", False)}
    # west joins with east's ranges: east's import changes in the same revision as west's.
    index.members["west"] = member("west", "242.0.32.0/20")
    batch = regroup(index, ctx, deleted=set(), put=[export(WEST)])
    assert sorted(i.name for i in batch.put_imports) == ["east", "west"]
    index.apply(batch)
    assert stamp(index)["east"] == ("242.0.0.0/20", True) and stamp(index)["west"] == ("242.0.32.0/20", True)
    # west leaves: east is direct again.
    index.apply(regroup(index, ctx, deleted={names.cluster_info_export_name("west")}, put=[]))
    assert stamp(index) == {"east": ("242.0.0.0/20", False), "north": ("242.0.16.0/20", False)}


def test_a_change_of_blocks_alone_restamps_and_an_unchanged_one_writes_nothing() -> None:
    ctx = MergeContext(config=MergeConfig(global_cidr=GLOBAL))
    index = Index(members={"east": member("east", ""), "west": member("west", "")})
    index.apply(regroup(index, ctx, deleted=set(), put=[export(EAST), export(WEST)]))
    assert stamp(index) == {"east": ("", False), "west": ("", False)}
    blocks = {"east": "242.0.0.0/20", "west": "242.0.16.0/20"}
    batch = regroup(index, ctx, deleted=set(), put=[], blocks=blocks)
    assert len(batch.put_imports) == 2 and not batch.put_exports
    index.apply(batch)
    for cid, block in blocks.items():
        index.members[cid] = member(cid, block)
    assert regroup(index, ctx, deleted=set(), put=[], blocks=blocks).is_empty()


def test_members_may_not_set_what_the_hub_stamps_and_global_addresses_must_be_ipv4() -> None:
    stamped = export(info("east", "10.96.0.0/16"))
    stamped.cluster_info.globally_addressed = True
    assert any("the hub sets them" in p for p in validate_export(stamped))
    address = pb.EndpointAddress(ip="10.1.0.5", global_ip="fd00::1")
    endpoints = pb.ResourceExport(
        export_name="east-web-web-endpoints", cluster_id="east", namespace="web", name="web",
        endpoints=pb.EndpointsSpec(subsets=[pb.EndpointSubset(addresses=[address])]),
    )  # fmt: skip
    assert any("not an IPv4 address" in p for p in validate_export(endpoints))
