"""An admin's AntreaClusterNetworkPolicy export stays the admin's, whatever its body names.

The owner of an export is who may write its kind (the admin for policies, the
member for the rest), never the `clusterID` in its body: a member can neither
overwrite, delete nor sweep a policy, and the admin's clusterID must be the
leader's. `policy_naming_east` is a store that already holds a policy whose body
names member `east`, as a policy applied with kubectl to the kube store's
leader Namespace, or accepted by an older hub, would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.struct_pb2 import Struct

from hub.app import HubApp
from hub.merge import MergeConfig, MergeContext, merge_group
from hub.store.base import WriteBatch
from hub.store.sqlite import SqliteStore
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, service_export
from tests.integration.test_hub_security import refused, store_state

# Named like east's export of Service default/web, so that east's own export collides with it.
SQUATTED_NAME = names.service_export_name("east", "default", "web")


def policy(cluster_id: str, export_name: str = "strict-isolation") -> pb.ResourceExport:
    spec = Struct()
    spec.update({"priority": 1, "tier": "securityops", "ingress": [{"action": "Drop"}]})
    return pb.ResourceExport(
        export_name=export_name,
        cluster_id=cluster_id,
        namespace="antrea-multicluster",
        name="strict-isolation",
        cluster_network_policy=spec,
    )


async def _store_holding(data_dir: Path, export: pb.ResourceExport) -> None:
    """Write the export and its import straight into a hub's store, as merged."""
    store = SqliteStore(data_dir)
    await store.open()
    try:
        export.create_time.GetCurrentTime()
        result = merge_group([export], {}, MergeContext(config=MergeConfig(), used_label_ids=set()))
        export.status.CopyFrom(result.statuses[export.export_name])
        await store.commit(WriteBatch(put_exports=[export], put_imports=list(result.imports.values())))
    finally:
        await store.close()


@pytest.fixture
async def policy_naming_east(tmp_path: Path) -> AsyncIterator[HubApp]:
    data_dir = tmp_path / "hub"
    await _store_holding(data_dir, policy("east", SQUATTED_NAME))
    app = HubApp(hub_config(data_dir))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def members(policy_naming_east: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(policy_naming_east)
    try:
        yield factory
    finally:
        await factory.close()


async def test_an_admin_export_naming_a_member_is_refused_and_changes_nothing(
    hub: HubApp, connect: MemberFactory
) -> None:
    await connect("east")
    admin = connect.admin()
    session = admin.export_session()
    details = await refused(
        hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: session.upsert(policy("east")), hub.config.leader_cluster_id
    )
    assert "'east'" in details


async def test_an_admin_export_without_a_cluster_id_is_the_leaders_and_survives_a_members_sync(
    hub: HubApp, connect: MemberFactory
) -> None:
    east = await connect("east")
    admin_session = connect.admin().export_session()
    answer = await admin_session.upsert(policy(""))
    assert answer.status.verdict == pb.VERDICT_ACCEPTED
    assert hub.engine.index.exports["strict-isolation"].cluster_id == hub.config.leader_cluster_id

    session = east.export_session()
    await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    ended = await session.send(pb.ExportRequest(sync_end=pb.SyncEnd()))
    assert list(ended.sync_end.deleted) == []
    assert "strict-isolation" in (await store_state(hub))[1]


async def test_a_members_empty_sync_bracket_leaves_an_admin_policy_whose_body_names_it(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    east = await members("east")
    session = east.export_session()
    await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    ended = await session.send(pb.ExportRequest(sync_end=pb.SyncEnd()))
    assert list(ended.sync_end.deleted) == []
    assert ended.revision == 0, "the empty bracket wrote something"
    assert SQUATTED_NAME in (await store_state(policy_naming_east))[1]


async def test_a_member_cannot_delete_an_admin_policy_whose_body_names_it(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    east = await members("east")
    session = east.export_session()
    await refused(policy_naming_east, grpc.StatusCode.PERMISSION_DENIED, lambda: session.delete(SQUATTED_NAME), "admin")


async def test_a_member_cannot_overwrite_an_admin_policy_by_exporting_under_its_name(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    east = await members("east")
    export = service_export("east", "default", "web")
    assert export.export_name == SQUATTED_NAME
    session = east.export_session()
    await refused(policy_naming_east, grpc.StatusCode.PERMISSION_DENIED, lambda: session.upsert(export), "admin")


async def test_a_member_cannot_export_a_policy_under_the_admins_name(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    east = await members("east")
    session = east.export_session()
    await refused(
        policy_naming_east, grpc.StatusCode.PERMISSION_DENIED, lambda: session.upsert(policy("east", SQUATTED_NAME))
    )


async def test_removing_a_member_keeps_the_admin_policy_whose_body_names_it(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    await members("east")
    hub = policy_naming_east
    # What DELETE /api/v1/members/east does once the admin revoked east's token.
    await hub.engine.remove_member("east", "removed by the test")
    assert "east" not in (await store_state(hub))[3]
    assert SQUATTED_NAME in (await store_state(hub))[1]


async def test_the_admin_still_withdraws_its_policy_whose_body_names_a_member(
    policy_naming_east: HubApp, members: MemberFactory
) -> None:
    session = members.admin().export_session()
    answer = await session.delete(SQUATTED_NAME)
    assert answer.status.verdict == pb.VERDICT_DELETED
    assert SQUATTED_NAME not in (await store_state(policy_naming_east))[1]
