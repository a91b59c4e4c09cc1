"""Kube-store replicas that do not hold the Lease serve watches from their informers of the
ResourceImport CRs; on a sandbox and on a real leader cluster. Hubs run as their own
processes (so the leader can be SIGKILLed); members are plain gRPC clients.

- a member watching through a follower gets what it gets from the leader — the same epoch,
  revisions and events — and again after the leader died and another replica took over;
- a follower never accepts a write (UNAVAILABLE naming the leader), and nothing is written;
- a watch resumes on another replica with exactly the changes it missed.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import grpc
import pytest

from hub.replicas.pod_role import ROLE_LABEL
from hub.store.base import WriteBatch
from hub.store.kube import KubeStore
from hub.store.kube_codec import change_stamp, deleting_patch, is_being_deleted, read_change_stamp
from kube.client import PatchType
from kube.resources import PODS
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from mcapi.resources import MEMBER_CLUSTER_ANNOUNCES, RESOURCE_IMPORTS
from tests.contract import samples
from tests.integration.hubclient import (
    endpoints_export,
    export_refused_by_a_follower,
    read_until_synced,
    secure_channel,
    service_export,
)
from tests.integration.hubprocess import HubProcess, hub_process
from tests.integration.test_hub_kube import Leader, kube_args, leader, member_token, wait_ready

__all__ = ["leader"]

Event = tuple[str, int, str, str, bytes]


def _event(response: pb.WatchImportsResponse) -> Event:
    kind = response.WhichOneof("event") or ""
    name = response.upsert.import_name if kind == "upsert" else response.delete.import_name
    body = response.upsert.SerializeToString(deterministic=True) if kind == "upsert" else b""
    return (response.epoch, response.revision, kind, name, body)


async def _ready_for_watches(hub: HubProcess, within: float = 20) -> None:
    deadline = time.monotonic() + within
    async with hub.rest_session() as http:
        while time.monotonic() < deadline:
            async with http.get("/readyz/watches") as response:
                if response.status == 200:
                    return
            await asyncio.sleep(0.1)
    raise AssertionError(f"no watches served within {within}s")


async def _leader_first(a: HubProcess, b: HubProcess) -> tuple[HubProcess, HubProcess]:
    await asyncio.wait([asyncio.create_task(wait_ready(h, 20)) for h in (a, b)], return_when=asyncio.FIRST_COMPLETED)
    async with a.rest_session() as http, http.get("/readyz") as response:
        return (a, b) if response.status == 200 else (b, a)


class Client:
    """One member's channel to one replica."""

    def __init__(self, hub: HubProcess, cluster_id: str, token: str) -> None:
        self.cluster_id = cluster_id
        self.channel = secure_channel(hub.target, hub.ca, token)
        self.stub = pb_grpc.CommonAreaServiceStub(self.channel)

    async def export(self, *items: pb.ExportRequest) -> int:
        """Announce, send the requests on one stream; the revision of the last answer."""
        await self.stub.Announce(pb.AnnounceRequest(cluster_id=self.cluster_id, cluster_set_id="test-clusterset"))
        call = self.stub.Export()
        for n, item in enumerate(items):
            item.sequence = n + 1
            await call.write(item)
        revision = 0
        for _ in items:
            revision = max(revision, (await call.read()).revision)
        call.cancel()
        return revision

    def watch(self, epoch: str = "", revision: int = 0) -> AsyncIterator[pb.WatchImportsResponse]:
        request = pb.WatchImportsRequest(cluster_id=self.cluster_id, epoch=epoch, revision=revision)
        return self.stub.WatchImports(request).__aiter__()

    async def close(self) -> None:
        await self.channel.close()


def _upsert(export: pb.ResourceExport) -> pb.ExportRequest:
    return pb.ExportRequest(upsert=export)


async def _until(stream: AsyncIterator[pb.WatchImportsResponse], last: set[str]) -> list[Event]:
    """Events (no bookmarks) until every name in `last` was deleted."""
    events: list[Event] = []
    async with asyncio.timeout(20):
        async for response in stream:
            if response.WhichOneof("event") == "bookmark":
                continue
            events.append(_event(response))
            if response.WhichOneof("event") == "delete":
                last.discard(response.delete.import_name)
                if not last:
                    return events
    raise AssertionError("watch ended")


async def _next_change(stream: AsyncIterator[pb.WatchImportsResponse]) -> pb.WatchImportsResponse:
    async with asyncio.timeout(20):
        while (response := await anext(stream)).WhichOneof("event") == "bookmark":
            pass
        return response


async def _synced(client: Client) -> tuple[list[Event], pb.WatchImportsResponse]:
    stream = client.watch()
    events: list[Event] = []
    async with asyncio.timeout(20):
        async for response in stream:
            events.append(_event(response))
            if response.WhichOneof("event") == "synced":
                return events, response
    raise AssertionError("watch ended before SYNCED")


async def _same_epoch(follower: Client, epoch: str) -> None:
    """Until the follower serves the leader's history (it takes the epoch from the next import write)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        _, synced = await _synced(follower)
        if synced.epoch == epoch:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the follower never took the leader's epoch")


async def _compare_through_a_change(leading: Client, following: Client, writer: Client, n: int) -> None:
    """Watch both replicas, make changes through the leader; both streams carry the same events."""
    await writer.export(_upsert(service_export(writer.cluster_id, "default", f"seed-{n}")))
    _, synced = await _synced(leading)
    await _same_epoch(following, synced.epoch)
    via_leader, via_follower = leading.watch(), following.watch()
    snapshot_l, _ = await read_until_synced(via_leader)
    snapshot_f, _ = await read_until_synced(via_follower)
    assert snapshot_f == snapshot_l
    await writer.export(
        _upsert(service_export(writer.cluster_id, "default", f"api-{n}")),
        _upsert(endpoints_export(writer.cluster_id, "default", f"api-{n}", ["10.0.0.7"])),
        pb.ExportRequest(
            delete=pb.ExportDelete(export_name=names.service_export_name(writer.cluster_id, "default", f"seed-{n}"))
        ),
    )
    gone = {names.service_import_name("default", f"seed-{n}"), names.endpoints_import_name("default", f"seed-{n}")}
    from_leader = await _until(via_leader, set(gone))
    from_follower = await _until(via_follower, set(gone))
    assert from_follower == from_leader
    assert {e[3] for e in from_leader} >= {names.service_import_name("default", f"api-{n}"), *gone}


async def test_a_member_watching_through_a_follower_gets_what_the_leader_sends_also_after_the_leader_changes(
    leader: Leader, tmp_path: Path
) -> None:
    east, west = await member_token(leader, "member-east", "east"), await member_token(leader, "member-west", "west")
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(hub_process(tmp_path / "a", *kube_args(leader, "hub-a")))
        b = await stack.enter_async_context(hub_process(tmp_path / "b", *kube_args(leader, "hub-b")))
        leading, following = await _leader_first(a, b)
        await _ready_for_watches(following)
        clients = [Client(leading, "east", east), Client(leading, "west", west), Client(following, "west", west)]
        try:
            await _compare_through_a_change(clients[1], clients[2], clients[0], 1)
        finally:
            for client in clients:
                await client.close()

        # The leader dies; the follower takes over; a third replica follows the new leader.
        leading.process.send_signal(signal.SIGKILL)
        await leading.process.wait()
        await wait_ready(following, 15)
        c = await stack.enter_async_context(hub_process(tmp_path / "c", *kube_args(leader, "hub-c")))
        await _ready_for_watches(c)
        clients = [Client(following, "east", east), Client(following, "west", west), Client(c, "west", west)]
        try:
            await _compare_through_a_change(clients[1], clients[2], clients[0], 2)
        finally:
            for client in clients:
                await client.close()


async def test_a_follower_never_accepts_a_write(leader: Leader, tmp_path: Path) -> None:
    token = await member_token(leader, "member-intruder", "intruder")
    async with (
        hub_process(tmp_path / "a", *kube_args(leader, "hub-a")) as a,
        hub_process(tmp_path / "b", *kube_args(leader, "hub-b")) as b,
    ):
        leading, following = await _leader_first(a, b)
        await _ready_for_watches(following)
        holder = "hub-a" if leading is a else "hub-b"
        client = Client(following, "intruder", token)
        try:
            for call in (
                client.stub.Announce(pb.AnnounceRequest(cluster_id="intruder", cluster_set_id="test-clusterset")),
                client.stub.Leave(pb.LeaveRequest(cluster_id="intruder")),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
                assert f"replica {holder}" in (refused.value.details() or "")
                assert ("mchub-leader", f"replica {holder}") in tuple(refused.value.trailing_metadata() or ())
            await export_refused_by_a_follower(
                client.stub, service_export("intruder", "default", "web"), f"replica {holder}"
            )
        finally:
            await client.close()
        async with following.rest_session() as http:
            admin = (tmp_path / ("b" if leading is a else "a") / "admin.token").read_text().strip()
            async with http.delete("/api/v1/members/intruder", headers={"Authorization": f"Bearer {admin}"}) as r:
                assert r.status == 503
    announces = await leader.client.list(MEMBER_CLUSTER_ANNOUNCES, namespace=leader.namespace)
    assert names.member_announce_name("intruder") not in {cr["metadata"]["name"] for cr in announces.items}


async def test_a_watch_resumes_on_another_replica_with_only_what_it_missed(leader: Leader, tmp_path: Path) -> None:
    east, west = await member_token(leader, "member-east", "east"), await member_token(leader, "member-west", "west")
    async with (
        hub_process(tmp_path / "a", *kube_args(leader, "hub-a")) as a,
        hub_process(tmp_path / "b", *kube_args(leader, "hub-b")) as b,
    ):
        leading, following = await _leader_first(a, b)
        await _ready_for_watches(following)
        writer, via_leader, via_follower = (
            Client(leading, "east", east),
            Client(leading, "west", west),
            Client(following, "west", west),
        )
        try:
            await writer.export(_upsert(service_export("east", "default", "web")))
            _, synced = await _synced(via_leader)
            await _same_epoch(via_follower, synced.epoch)
            revision = await writer.export(_upsert(service_export("east", "default", "api")))

            # Leader -> follower: only the missed changes, under the same epoch.
            resumed = via_follower.watch(synced.epoch, synced.revision)
            first = await _next_change(resumed)
            assert first.WhichOneof("event") == "resumed"
            missed = [await _next_change(resumed) for _ in range(2)]
            assert {m.upsert.import_name for m in missed} == {"default-api-service", "default-api-endpoints"}
            assert {m.revision for m in missed} == {revision}

            # Follower -> leader: from the follower's position, nothing missed, nothing again.
            back = via_leader.watch(synced.epoch, revision)
            assert (await _next_change(back)).WhichOneof("event") == "resumed"
            gone = await writer.export(pb.ExportRequest(delete=pb.ExportDelete(export_name="east-default-web-service")))
            after = [await _next_change(back) for _ in range(2)]
            assert {e.WhichOneof("event") for e in after} == {"delete"}
            assert {e.revision for e in after} == {gone}
        finally:
            for client in (writer, via_leader, via_follower):
                await client.close()


async def test_each_replica_labels_its_pod_with_its_role_and_the_survivor_becomes_leader(
    leader: Leader, tmp_path: Path
) -> None:
    for pod in ("pod-a", "pod-b"):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "labels": {"component": "mchub-hub"}},
            "spec": {"containers": [{"name": "hub", "image": "mchub:latest"}]},
        }
        await leader.client.create(PODS, body, namespace=leader.namespace)

    async def roles() -> dict[str, str]:
        pods = await leader.client.list(PODS, namespace=leader.namespace)
        return {p["metadata"]["name"]: (p["metadata"].get("labels") or {}).get(ROLE_LABEL, "") for p in pods.items}

    async def until_roles(expected: dict[str, str]) -> None:
        deadline = time.monotonic() + 15
        while (seen := await roles()) != expected:
            assert time.monotonic() < deadline, seen
            await asyncio.sleep(0.1)

    async with (
        hub_process(tmp_path / "a", *kube_args(leader, "hub-a"), "--pod-name", "pod-a") as a,
        hub_process(tmp_path / "b", *kube_args(leader, "hub-b"), "--pod-name", "pod-b") as b,
    ):
        leading, following = await _leader_first(a, b)
        survivor = "pod-b" if leading is a else "pod-a"
        dead = "pod-a" if leading is a else "pod-b"
        await until_roles({dead: "leader", survivor: "follower"})
        leading.process.send_signal(signal.SIGKILL)
        await leading.process.wait()
        await wait_ready(following, 15)
        # The dead replica's Pod keeps its label until it is replaced (as the Deployment does).
        await until_roles({dead: "leader", survivor: "leader"})


async def test_a_put_after_a_delete_that_failed_midway_clears_the_deletes_mark(leader: Leader) -> None:
    store = KubeStore(leader.client, leader.namespace)
    await store.open()
    web = samples.service_import("default", "web")
    await store.commit(WriteBatch(put_imports=[web]))
    # The delete's mark landed, the delete itself did not (the API server went away).
    mark = deleting_patch(change_stamp(store.epoch, 2, 1))
    await leader.client.patch(
        RESOURCE_IMPORTS, web.import_name, mark, namespace=leader.namespace, patch_type=PatchType.MERGE
    )
    again = pb.ResourceImport()
    again.CopyFrom(web)
    again.cluster_ids.append("east")
    revision = await store.commit(WriteBatch(put_imports=[again]))
    cr = await leader.client.get(RESOURCE_IMPORTS, web.import_name, leader.namespace)
    assert not is_being_deleted(cr)  # a follower takes the put as a put
    assert read_change_stamp(cr) == (store.epoch, revision, 1)
