"""The mirror's pure parts: who wrote a ResourceExport (hub.store.kube_authorship), the CRs it
writes and how it compares them (hub.mirror.shapes), what a pass takes (hub.mirror.feed)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

from google.protobuf.struct_pb2 import Struct

from hub.mirror.feed import ChangeFeed, Kind
from hub.mirror.shapes import (
    desired_export,
    desired_import,
    desired_member,
    is_managed,
    is_ours,
    main_in_sync,
    replacing_patch,
    status_in_sync,
)
from hub.store.base import MemberRecord, WriteBatch
from hub.store.kube_authorship import Authorship, authorship
from hub.store.kube_codec import export_to_cr
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import service_export

NS = "antrea-multicluster"


def policy() -> pb.ResourceExport:
    spec = Struct()
    spec.update({"priority": 1, "tier": "securityops", "appliedTo": [{"namespaceSelector": {}}]})
    return pb.ResourceExport(export_name="p", cluster_id="north", name="p", cluster_network_policy=spec)


def test_the_hubs_exports_read_as_the_hubs_an_edit_as_edited_and_a_persons_as_a_persons() -> None:
    written = export_to_cr(service_export("east", "default", "nginx"), NS)
    assert authorship(written) is Authorship.HUB
    edited = copy.deepcopy(written)
    edited["spec"]["service"]["serviceSpec"]["ports"] = []
    assert authorship(edited) is Authorship.EDITED
    by_hand = copy.deepcopy(edited)
    by_hand["metadata"]["annotations"] = {}
    assert authorship(by_hand) is Authorship.PERSON
    # Labels, status and times are not what an export says.
    relabelled = copy.deepcopy(written)
    relabelled["metadata"]["labels"]["extra"] = "x"
    relabelled["status"] = {"conditions": []}
    assert authorship(relabelled) is Authorship.HUB


def test_a_policy_keeps_its_digest_through_json() -> None:
    written = json.loads(json.dumps(export_to_cr(policy(), NS)))
    assert authorship(written) is Authorship.HUB


def test_mirrored_crs_are_managed_and_ours_until_someone_changes_them() -> None:
    imp = pb.ResourceImport(import_name="default-nginx-service", namespace="default", name="nginx")
    imp.service_import.type = "ClusterSetIP"
    desired = desired_import(imp, NS)
    assert is_managed(desired.obj) and is_ours(Kind.IMPORT, desired.obj) and desired.status is None
    changed = copy.deepcopy(desired.obj)
    changed["spec"]["name"] = "other"
    assert not is_ours(Kind.IMPORT, changed)
    assert not main_in_sync(Kind.IMPORT, changed, desired)
    member = MemberRecord("east", "cs", "north", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC))
    announce = desired_member(member, NS)
    assert is_ours(Kind.MEMBER, announce.obj) and main_in_sync(Kind.MEMBER, announce.obj, announce)


def test_an_exports_status_is_compared_apart_and_without_times() -> None:
    export = service_export("east", "default", "nginx")
    export.status.CopyFrom(pb.ExportStatus(verdict=pb.VERDICT_ACCEPTED, reason="", message="ok"))
    desired = desired_export(export, NS)
    assert desired.status is not None and "status" not in desired.obj
    actual = {**copy.deepcopy(desired.obj), "status": {"conditions": [{**desired.status["conditions"][0]}]}}
    actual["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    assert main_in_sync(Kind.EXPORT, actual, desired) and status_in_sync(actual, desired)
    actual["status"] = {}
    assert not status_in_sync(actual, desired)


def test_the_replacing_patch_removes_what_the_desired_cr_does_not_have() -> None:
    actual = {"metadata": {"name": "x", "uid": "u"}, "spec": {"a": 1, "b": {"c": 1, "d": 2}, "extra": True}}
    desired = {"metadata": {"name": "x", "labels": {"l": "v"}}, "spec": {"a": 2, "b": {"c": 1}}}
    assert replacing_patch(actual, desired) == {
        "metadata": {"labels": {"l": "v"}},
        "spec": {"a": 2, "b": {"c": 1, "d": None}, "extra": None},
    }


def test_a_feed_keeps_each_name_once_at_its_newest_revision_oldest_first() -> None:
    feed = ChangeFeed()
    feed.note_batch(WriteBatch(put_exports=[service_export("east", "default", "a")]), 3)
    feed.note_batch(WriteBatch(delete_imports=["i"], put_exports=[service_export("east", "default", "a")]), 5)
    feed.note_batch(WriteBatch(delete_members=["east"]), 4)
    through, pending = feed.take()
    assert through == 5
    assert pending.in_order() == [
        (4, Kind.MEMBER, "member-announce-from-east"),
        (5, Kind.EXPORT, "east-default-a-service"),
        (5, Kind.IMPORT, "i"),
    ]
    assert not feed.changed.is_set() and len(feed.pending) == 0
