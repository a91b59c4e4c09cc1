"""Which ClusterSet the hub serves, from the leader Namespace's ClusterSet CRs and its
configuration (hub.clusterset.identity): the CR wins, the configuration is the fallback, and
every disagreement is a sentence."""

from __future__ import annotations

from typing import Any

from hub.clusterset.identity import ClusterSetIdentity, identity


def cr(name: str, own: str = "", leaders: tuple[str, ...] = (), terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"clusterID": own, "leaders": [{"clusterID": c} for c in leaders]}}


def test_without_a_clusterset_the_configuration_holds() -> None:
    assert identity([], "test-clusterset", "north") == ClusterSetIdentity("test-clusterset", "north")


def test_the_guides_clusterset_matching_the_configuration_is_followed_without_a_mismatch() -> None:
    found = identity([cr("test-clusterset", "north", ("north",))], "test-clusterset", "north")
    assert found == ClusterSetIdentity("test-clusterset", "north", followed="test-clusterset")


def test_the_crs_ids_win_over_the_configuration_and_each_difference_is_said() -> None:
    found = identity([cr("prod", "leader-a", ("leader-a",))], "test-clusterset", "north")
    assert (found.cluster_set_id, found.leader_cluster_id, found.followed) == ("prod", "leader-a", "prod")
    assert len(found.mismatches) == 2
    assert "'prod'" in found.mismatches[0] and "'test-clusterset'" in found.mismatches[0]
    assert "'leader-a'" in found.mismatches[1] and "'north'" in found.mismatches[1]


def test_a_cr_at_odds_with_itself_is_reported_and_spec_cluster_id_names_the_leader() -> None:
    found = identity([cr("test-clusterset", "north", ("south",))], "test-clusterset", "north")
    assert found.leader_cluster_id == "north"
    [mismatch] = found.mismatches
    assert "spec.leaders[0].clusterID 'south'" in mismatch


def test_the_leader_falls_back_to_the_leaders_list_then_to_the_configuration() -> None:
    assert identity([cr("cs", "", ("west",))], "cs", "north").leader_cluster_id == "west"
    found = identity([cr("cs")], "cs", "north")
    assert found.leader_cluster_id == "north"
    assert any("0 leaders" in m for m in found.mismatches)


def test_the_configured_name_is_chosen_among_several_and_none_when_it_is_not_there() -> None:
    both = [cr("a", "x", ("x",)), cr("test-clusterset", "north", ("north",))]
    assert identity(both, "test-clusterset", "north").followed == "test-clusterset"
    neither = identity([cr("a", "x", ("x",)), cr("b", "y", ("y",))], "test-clusterset", "north")
    assert neither.followed == "" and neither.cluster_set_id == "test-clusterset"
    [mismatch] = neither.mismatches
    assert "2 ClusterSets" in mismatch


def test_a_terminating_clusterset_is_not_followed() -> None:
    assert identity([cr("prod", "a", ("a",), terminating=True)], "cs", "north").followed == ""
