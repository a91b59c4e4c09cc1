"""Member restarts, hub restarts under a running member, and leaving the ClusterSet."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
from dataclasses import replace
from typing import Any

from hub.app import HubApp
from hub.config import SqliteStoreConfig
from hub.store.sqlite import DB_FILE, SqliteStore
from kube.errors import NotFound
from kube.metrics import WRITE_VERBS
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, SECRETS, SERVICES
from mcapi import names
from mcapi.resources import CLUSTER_SETS, SERVICE_IMPORTS
from tests.integration.hubrunner import HubRunner
from tests.kubeenv.cluster import ensure_namespace
from tests.member.conftest import MemberFactory
from tests.member.harness import (
    MEMBER_NAMESPACE,
    MEMBER_OPTIONS,
    SESSION_OVERRIDES,
    WAIT,
    JoinedMember,
    eventually,
)

NS = "shop"


def _stored_export_revisions(hub: HubApp) -> dict[str, int]:
    """Each export's revision as the hub's SQLite store holds it (read-only, beside the hub)."""
    store = hub.store
    assert isinstance(store, SqliteStore)
    with sqlite3.connect(f"file:{store.data_dir / DB_FILE}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT export_name, revision FROM exports").fetchall())


def _exports_of(hub: HubApp, cluster_id: str) -> list[str]:
    return sorted(n for n, e in hub.engine.index.exports.items() if e.cluster_id == cluster_id)


async def _export_two_services(member: JoinedMember) -> None:
    for name in ("web", "api"):
        await member.create_service(NS, name)
        await member.export(NS, name)
        await member.wait_condition(NS, name, "Ready", "True", "Exported")


async def test_a_restarted_member_resyncs_its_exports_without_rewriting_them(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await _export_two_services(east)
    revisions = _stored_export_revisions(hub)
    assert sorted(revisions) == _exports_of(hub, "east") and len(revisions) == 4
    statuses: dict[str, Any] = {n: await east.service_export(NS, n) for n in ("web", "api")}

    await east.stop_member()
    await east.start_member()
    await east.wait_connected()

    assert _exports_of(hub, "east") == sorted(revisions)
    assert _stored_export_revisions(hub) == revisions
    exports = east.member.exports
    assert exports is not None
    await exports.wait_idle()
    for name, before in statuses.items():
        after = await east.service_export(NS, name)
        assert after is not None and before is not None
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_an_export_deleted_while_the_member_was_down_is_swept_at_restart(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await _export_two_services(east)
    await east.stop_member()
    await east.client.delete(SERVICES, "api", NS)

    await east.start_member()

    async def swept() -> bool:
        return names.service_export_name("east", NS, "api") not in hub.engine.index.exports

    await eventually(swept, what="api swept from the hub")
    assert names.service_export_name("east", NS, "web") in hub.engine.index.exports


async def test_deleting_the_cluster_set_withdraws_every_export_and_imported_object(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await _export_two_services(east)
    west = await members.join("west")
    await ensure_namespace(west.client, NS)
    imported = names.imported_object_name("web")

    async def imported_in_west() -> bool:
        try:
            await west.client.get(SERVICES, imported, NS)
        except NotFound:
            return False
        return True

    await eventually(imported_in_west, what="web imported into west")

    await west.delete_cluster_set(hub)

    async def west_cleaned() -> bool:
        for resource in (SERVICES, ENDPOINTS):
            try:
                await west.client.get(resource, imported, NS)
            except NotFound:
                continue
            return False
        return west.member.joined is None

    await eventually(west_cleaned, what="west's imported objects removed")

    await east.delete_cluster_set(hub)

    async def east_withdrawn() -> bool:
        return not _exports_of(hub, "east") and east.member.joined is None

    await eventually(east_withdrawn, what="east's exports gone from the hub")
    # The user's objects stay: the Services and ServiceExports east exported are untouched.
    assert await east.service_export(NS, "web") is not None
    await east.client.get(SERVICES, "web", NS)


async def test_a_rotated_token_reconnects_the_member_without_withdrawing_its_exports(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await _export_two_services(east)
    revisions = _stored_export_revisions(hub)
    first_session = east.member.session

    token = hub.tokens.create("member-east-rotated", cluster_id="east")
    data = {"token": base64.b64encode(token.encode()).decode()}
    await east.client.patch(SECRETS, "member-east-token", {"data": data}, MEMBER_NAMESPACE)

    async def reconnected() -> bool:
        session = east.member.session
        return session is not None and session is not first_session and session.state.exports_synced

    await eventually(reconnected, what="a new session with the rotated token")
    assert _stored_export_revisions(hub) == revisions


async def test_a_restarted_member_does_not_flap_or_rewrite_its_cluster_set_status(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.wait_connected()

    async def ready() -> dict[str, Any] | None:
        obj = await east.cluster_set(hub)
        conditions = (obj.get("status") or {}).get("conditions") or []
        return obj if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None

    before = await eventually(ready, what="ClusterSet Ready=True")

    await east.stop_member()
    await east.start_member()
    await east.wait_connected()
    clusterset = east.member.clusterset
    assert clusterset is not None
    passes = clusterset.status_passes
    clusterset.status_changed()

    async def passed() -> bool:
        return clusterset.status_passes > passes

    await eventually(passed, what="a status pass after the reconnect")
    # The hub never went away: the member must not have said "Disconnected" in between.
    after = await east.cluster_set(hub)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_stopping_the_member_while_it_leaves_leaves_no_hub_session_running(
    hubs: HubRunner, hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.wait_connected()
    await hubs.stop()  # the withdrawal now waits (leave_timeout) for a hub that does not answer
    await east.delete_cluster_set(hub)

    async def leaving() -> bool:
        return east.member.joined is None

    await eventually(leaving, what="east started leaving")
    await east.stop_member()

    running = [t.get_name() for t in asyncio.all_tasks() if not t.done() and "-east" in t.get_name()]
    assert running == []


async def test_a_restarted_member_with_nothing_changed_writes_nothing_to_its_cluster(
    hub: HubApp, members: MemberFactory
) -> None:
    """Counted by the member's own request counter: the restart reads (lists, watches), it does
    not write, and nothing it sends is refused but the Service CIDR probe and reads of optional things."""
    east = await members.join("east")
    west = await members.join("west")
    await _east_and_west_imported_in_west(east, west)

    await west.stop_member()
    before = west.client.metrics.counts()
    await west.start_member()
    await west.wait_connected()
    await _member_settled(west)

    grown = {k: v - before.get(k, 0) for k, v in west.client.metrics.counts().items() if v != before.get(k, 0)}
    # The Service CIDR probe (Antrea's way to learn it on every start: a dry-run create of a Service
    # with an invalid ClusterIP, refused by design) stores nothing; it is the one request refused.
    assert grown.pop(("create", "services", "422")) == 1
    writes = {k: v for k, v in grown.items() if k[0] in WRITE_VERBS}
    assert writes == {}
    # Reads may find an optional thing absent (no MultiClusterConfig, no ServiceCIDR API): 404.
    refused = {k: v for k, v in grown.items() if k[2] != "404" and (not k[2].isdigit() or int(k[2]) >= 400)}
    assert refused == {}
    assert any(verb == "list" for verb, _, _ in grown)  # it did look


async def test_a_hub_restart_under_a_running_member_resumes_its_watch_and_rewrites_no_import(
    hubs: HubRunner, hub: HubApp, members: MemberFactory
) -> None:
    """The hub restarts on its store (a rolling update of a single hub) while the member runs: the
    member's import watch resumes where it was (the same epoch, no snapshot) and the member writes
    no imported object (counted by its own client)."""
    east = await members.join("east")
    west = await members.join("west")
    await _east_and_west_imported_in_west(east, west)
    await _restart_and_resume(hubs, west)


async def test_rolling_the_hub_replicas_under_a_running_member_resumes_its_watch_and_rewrites_no_import(
    hubs: HubRunner, hub: HubApp, members: MemberFactory
) -> None:
    """The leader and a follower replica (`--follow`, serving the member's watch as the Service
    mchub-hub-watch would), restarted one after the other while the member runs: after each, the
    member's watch resumes where it was and the member writes no imported object."""
    followers = HubRunner(hubs.data_dir, overrides={"store": SqliteStoreConfig(follow=True)})
    await followers.start()
    try:
        east = await members.join("east")
        west = await members.join("west", start=False)
        watch_server = {**SESSION_OVERRIDES, "watch_server": f"https://127.0.0.1:{followers.port}"}
        await west.start_member(replace(MEMBER_OPTIONS, session_overrides=watch_server))
        await _east_and_west_imported_in_west(east, west)
        assert followers.hub.engine.imports_bus.count() == 1  # west's watch (east watches the leader)
        await _restart_and_resume(followers, west)
        await _restart_and_resume(hubs, west)
        assert followers.hub.engine.imports_bus.count() == 1
    finally:
        await followers.stop()


async def _east_and_west_imported_in_west(east: JoinedMember, west: JoinedMember) -> None:
    """East exports web and api, west exports local; until west imported all three and settled."""
    await ensure_namespace(west.client, NS)
    for name in ("web", "api"):
        await east.create_service(NS, name)
        await east.create_endpoints(NS, name, ["10.10.0.5", "10.10.0.6"])
        await east.export(NS, name)
    await west.create_service(NS, "local")
    # West's own share of its import is its ready endpoints (member.imports.local_endpoints).
    await west.create_endpoints(NS, "local", ["10.20.0.5"])
    await west.export(NS, "local")
    await west.wait_condition(NS, "local", "Ready", "True", "Exported")

    async def imported() -> bool:
        slices = await west.client.list(ENDPOINT_SLICES, NS, label_selector=f"{names.LABEL_MCS_SERVICE_NAME}")
        imports = await west.client.list(SERVICE_IMPORTS, NS)
        return len(slices.items) == 3 and len(imports.items) == 3  # web, api, and west's own local

    await eventually(imported, what="east's Services imported into west")
    await _member_settled(west)


async def _restart_and_resume(runner: HubRunner, member: JoinedMember) -> None:
    """Restart the hub ``runner`` runs; until ``member`` lost it, is back and settled. Its watch
    must have resumed (the same epoch, no snapshot) and it must have written no imported object."""
    session = member.member.session
    assert session is not None
    position, snapshots, since = session.import_position, session.watch_snapshots, session.state.since
    before = member.client.metrics.counts()
    await runner.restart()

    async def back() -> bool:
        state = session.state
        return state.since > since and state.connected and state.imports_synced

    await eventually(back, what=f"{member.cluster_id} connected again")
    await _member_settled(member)
    assert (session.watch_snapshots, session.import_position.epoch) == (snapshots, position.epoch)
    grown = {k: v - before.get(k, 0) for k, v in member.client.metrics.counts().items() if v != before.get(k, 0)}
    writes = {k: v for k, v in grown.items() if k[0] in WRITE_VERBS}
    # The ClusterSet's status says that the hub was away (with each error as it came), then back.
    writes.pop(("patch", f"{CLUSTER_SETS.qualified_name}/status", "200"), None)
    assert writes == {}


async def _member_settled(member: JoinedMember) -> None:
    """Until the member applied everything the hub sent and its exports have their status."""

    async def synced() -> bool:
        session = member.member.session
        return session is not None and session.state.imports_synced and session.state.exports_synced

    await eventually(synced, what=f"{member.cluster_id} synced")
    importer, exports = member.member.importer, member.member.exports
    assert importer is not None and exports is not None
    async with asyncio.timeout(WAIT):
        await importer.settled()
        await exports.wait_idle()
