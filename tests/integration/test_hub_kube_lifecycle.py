"""Membership and the ClusterSet's end with `mchub hub --store kube`, on a sandbox and on a real
leader: what `kubectl get memberclusterannounce,resourceexports,resourceimports` shows.

- A member that leaves (rpc Leave) is gone from the CRs within seconds, and the leader
  ClusterSet's status counts only the members that remain (Ready when they all are).
- Deleting the leader's ClusterSet CR ends the ClusterSet: the hub deletes every CR it wrote
  and refuses members with FAILED_PRECONDITION and the reason; creating the CR again starts
  a new ClusterSet. A replica taking over after the deletion still refuses members.
- A hub that gets no CPU for longer than its renew deadline (what a load average of 25 on 2
  cores did in CI) steps down, finds the Lease still its own and leads again at once, saying
  so; meanwhile it names no one as the leader, and a member leaving is heard all the same.

Hubs run as their own processes, as in production; the leader Namespace is the test's own.
The callers retry UNAVAILABLE as a member does, and single-replica hubs run with client-go's
lease timings, so that a loaded machine does not turn a replica's brief step-down into a
failure of what these tests are about.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from hub.grpc.codes import LEADER_METADATA
from hub.replicas.leadership import LEASE_NAME
from kube.backoff import Retries
from kube.resources import LEASES
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from mcapi.resources import CLUSTER_SETS, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS
from member.hubclient.leave import leave as leave_clusterset
from tests.integration.hubclient import secure_channel, service_export
from tests.integration.hubprocess import HubProcess, hub_process
from tests.integration.test_hub_kube import (
    DEFAULT_LEASE,
    FAST_LEASE,
    Leader,
    kube_args,
    leader,
    member_token,
    wait_ready,
)

__all__ = ["leader"]

CLUSTERSET = "test-clusterset"
WITHIN = 10.0
# Two replicas: a takeover after a SIGKILL waits for the lease to expire, so shorter than
# client-go's, but a replica still has to starve for 6 s before it steps down.
TWO_REPLICA_LEASE = ("--lease-duration", "8", "--renew-deadline", "6", "--retry-period", "1")
# How long a caller retries UNAVAILABLE (as the member retries its Leave for its stop timeout).
RETRY_WITHIN = 10.0

T = TypeVar("T")


def leader_clusterset() -> dict[str, Any]:
    """INSTALL.md's "Initialize ClusterSet" in the leader."""
    return {
        "apiVersion": CLUSTER_SETS.api_version,
        "kind": "ClusterSet",
        "metadata": {"name": CLUSTERSET},
        "spec": {"clusterID": "leader", "leaders": [{"clusterID": "leader"}]},
    }


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = WITHIN) -> float:
    """Seconds until `check()` holds (polled every 0.1 s, as the mcs-api conformance suite does)."""
    start = time.monotonic()
    while time.monotonic() - start < within:
        if await check():
            return time.monotonic() - start
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {within}s: {what}")


async def as_a_member_would(call: Callable[[], Awaitable[T]], within: float = RETRY_WITHIN) -> T:
    """`call()`, tried again after the member's backoff while the hub answers UNAVAILABLE (a
    replica that is not serving for a moment), for up to `within` s; any other answer stands."""
    backoff = Retries()
    async with asyncio.timeout(within):
        while True:
            try:
                return await call()
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
            await asyncio.sleep(backoff.next_delay())


class Caller:
    """A member's calls to the hub (no member controller: the hub's side alone), retried on
    UNAVAILABLE as the member retries them (member.hubclient)."""

    def __init__(self, hub: HubProcess, cluster_id: str, token: str) -> None:
        self.cluster_id = cluster_id
        self.channel = secure_channel(hub.target, hub.ca, token)
        self.stub = pb_grpc.CommonAreaServiceStub(self.channel)

    async def announce_once(self) -> None:
        await self.stub.Announce(pb.AnnounceRequest(cluster_id=self.cluster_id, cluster_set_id=CLUSTERSET))

    async def announce(self) -> None:
        await as_a_member_would(self.announce_once)

    async def export(self, name: str) -> None:
        async def once() -> None:
            call = self.stub.Export()
            try:
                await call.write(pb.ExportRequest(sequence=1, upsert=service_export(self.cluster_id, "default", name)))
                answer = await call.read()  # raises the status of a stream the hub ended (UNAVAILABLE...)
            finally:
                call.cancel()
            assert isinstance(answer, pb.ExportResponse)
            assert answer.status.verdict == pb.VERDICT_ACCEPTED

        await as_a_member_would(once)

    async def leave(self) -> pb.LeaveResponse:
        async def once() -> pb.LeaveResponse:
            answer: pb.LeaveResponse = await self.stub.Leave(pb.LeaveRequest(cluster_id=self.cluster_id))
            return answer

        return await as_a_member_would(once)


@pytest.fixture
async def callers() -> AsyncIterator[list[Caller]]:
    made: list[Caller] = []
    yield made
    for caller in made:
        await caller.channel.close()


async def names_of(leader: Leader, resource: Any) -> set[str]:
    return {o["metadata"]["name"] for o in (await leader.client.list(resource, namespace=leader.namespace)).items}


async def test_a_member_that_leaves_is_gone_from_the_crs_and_the_clusterset_is_ready_with_those_that_remain(
    leader: Leader, tmp_path: Path, callers: list[Caller]
) -> None:
    await leader.client.create(CLUSTER_SETS, leader_clusterset(), namespace=leader.namespace)
    tokens = {c: await member_token(leader, f"member-{c}", c) for c in ("east", "west", "north")}
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0", DEFAULT_LEASE)) as hub:
        await wait_ready(hub, 15)
        east, west, north = (Caller(hub, c, tokens[c]) for c in ("east", "west", "north"))
        callers += [east, west, north]
        for caller in (east, west, north):
            await caller.announce()
        await west.export("nginx")

        async def status_is(total: int, ready: int) -> bool:
            cr = await leader.client.get(CLUSTER_SETS, CLUSTERSET, leader.namespace)
            status = cr.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            counts = (status.get("totalClusters"), status.get("readyClusters"), conditions.get("Ready"))
            return counts == (total, ready, "True")

        await eventually(lambda: status_is(3, 3), "the ClusterSet Ready with 3 of 3")
        assert names.member_announce_name("west") in await names_of(leader, MEMBER_CLUSTER_ANNOUNCES)

        answer = await west.leave()
        assert answer.was_member and list(answer.deleted_exports) == [
            names.service_export_name("west", "default", "nginx")
        ]

        async def west_gone() -> bool:
            announces = await names_of(leader, MEMBER_CLUSTER_ANNOUNCES)
            exports = await names_of(leader, RESOURCE_EXPORTS)
            return names.member_announce_name("west") not in announces and not exports

        await eventually(west_gone, "west's MemberClusterAnnounce and ResourceExports gone")
        await eventually(lambda: status_is(2, 2), "the ClusterSet Ready with 2 of 2")
        assert await names_of(leader, RESOURCE_IMPORTS) == set()

        await west.announce()  # the same cluster ID and token join again
        await eventually(lambda: status_is(3, 3), "the ClusterSet Ready with 3 of 3 again")


async def test_deleting_the_leader_clusterset_ends_it_and_leaves_no_mchub_objects(
    leader: Leader, tmp_path: Path, callers: list[Caller]
) -> None:
    await leader.client.create(CLUSTER_SETS, leader_clusterset(), namespace=leader.namespace)
    tokens = {c: await member_token(leader, f"member-{c}", c) for c in ("east", "west")}
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0", DEFAULT_LEASE)) as hub:
        await wait_ready(hub, 15)
        east, west = Caller(hub, "east", tokens["east"]), Caller(hub, "west", tokens["west"])
        callers += [east, west]
        for caller in (east, west):
            await caller.announce()
            await caller.export("nginx")
        assert await names_of(leader, RESOURCE_IMPORTS)

        await leader.client.delete(CLUSTER_SETS, CLUSTERSET, leader.namespace)

        async def nothing_left() -> bool:
            for resource in (MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS, CLUSTER_SETS):
                if await names_of(leader, resource):
                    return False
            return True

        await eventually(nothing_left, "no MemberClusterAnnounce, ResourceExport, ResourceImport or ClusterSet")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await east.announce()
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert CLUSTERSET in (refused.value.details() or "") and "deleted" in (refused.value.details() or "")
        assert await names_of(leader, MEMBER_CLUSTER_ANNOUNCES) == set()

        await leader.client.create(CLUSTER_SETS, leader_clusterset(), namespace=leader.namespace)

        async def admitted() -> bool:
            try:
                await east.announce()
            except grpc.aio.AioRpcError:
                return False
            return True

        await eventually(admitted, "east admitted into the ClusterSet created again")


async def test_a_replica_taking_over_after_the_deletion_still_refuses_members(
    leader: Leader, tmp_path: Path, callers: list[Caller]
) -> None:
    await leader.client.create(CLUSTER_SETS, leader_clusterset(), namespace=leader.namespace)
    token = await member_token(leader, "member-east", "east")
    async with (
        hub_process(tmp_path / "hub-a", *kube_args(leader, "hub-a", TWO_REPLICA_LEASE)) as first,
        hub_process(tmp_path / "hub-b", *kube_args(leader, "hub-b", TWO_REPLICA_LEASE)) as second,
    ):
        await asyncio.wait(
            [asyncio.create_task(wait_ready(h, 15)) for h in (first, second)], return_when=asyncio.FIRST_COMPLETED
        )
        async with first.rest_session() as http, http.get("/readyz") as response:
            leading, following = (first, second) if response.status == 200 else (second, first)
        caller = Caller(leading, "east", token)
        callers.append(caller)
        await caller.announce()

        await leader.client.delete(CLUSTER_SETS, CLUSTERSET, leader.namespace)

        async def announce_gone() -> bool:
            return not await names_of(leader, MEMBER_CLUSTER_ANNOUNCES)

        await eventually(announce_gone, "east's MemberClusterAnnounce gone")
        leading.process.send_signal(signal.SIGKILL)
        await leading.process.wait()
        await wait_ready(following, 8 + 15)  # the lease expires, then the index loads
        taken_over = Caller(following, "east", token)
        callers.append(taken_over)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await taken_over.announce()
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "deleted" in (refused.value.details() or "")
        assert await names_of(leader, MEMBER_CLUSTER_ANNOUNCES) == set()


async def test_a_hub_stalled_past_its_renew_deadline_leads_again_at_once_names_no_one_meanwhile_and_hears_a_leave(
    leader: Leader, tmp_path: Path, callers: list[Caller]
) -> None:
    await leader.client.create(CLUSTER_SETS, leader_clusterset(), namespace=leader.namespace)
    tokens = {c: await member_token(leader, f"member-{c}", c) for c in ("east", "west")}
    async with hub_process(tmp_path / "hub", *kube_args(leader, "hub-0", FAST_LEASE)) as hub:  # renew deadline 2 s
        await wait_ready(hub, 15)
        east, west = Caller(hub, "east", tokens["east"]), Caller(hub, "west", tokens["west"])
        callers += [east, west]
        for caller in (east, west):
            await caller.announce()
        await west.export("nginx")
        tenure = (await leader.client.get(LEASES, LEASE_NAME, leader.namespace))["spec"]

        refusals: list[tuple[str, tuple[tuple[str, str | bytes], ...]]] = []

        async def probe() -> None:
            """Writes as fast as a busy member sends them, noting every UNAVAILABLE answer."""
            while True:
                try:
                    await east.announce_once()
                except grpc.aio.AioRpcError as exc:
                    if exc.code() == grpc.StatusCode.UNAVAILABLE:
                        refusals.append((exc.details() or "", tuple(exc.trailing_metadata() or ())))
                await asyncio.sleep(0.02)

        async def says_it_leads_again() -> bool:
            return hub.logged("kube.leader: leaseReacquired")

        # The calls wait in the hub's socket for it to wake up, beside its overdue renewal.
        prober = asyncio.create_task(probe())
        try:
            hub.process.send_signal(signal.SIGSTOP)  # the hub gets no CPU, as under a load of 25 on 2 cores
            try:
                # The member's own Leave (member.hubclient), retried as a member stopping with leave=True does.
                leaving = asyncio.create_task(
                    leave_clusterset(west.stub, "west", within=RETRY_WITHIN, call_timeout=5.0, backoff=Retries())
                )
                await asyncio.sleep(3.0)  # past the renew deadline (2 s): the stall itself, not a wait for an event
            finally:
                hub.process.send_signal(signal.SIGCONT)
            assert await leaving, "the member's Leave was not heard"
            await eventually(says_it_leads_again, "the hub saying it leads again")
        finally:
            prober.cancel()
            await asyncio.wait({prober})
        assert hub.logged("kube.leader: leaseRenewDeadlineExceeded") and hub.logged("hub replica stepped down")
        assert hub.log.read_text().count("kube.leader: leaderElected") == 1, "a re-acquisition told as an election"
        # While it had stepped down it was asked (the probe never stops): it answered UNAVAILABLE.
        assert refusals, "no call was refused while the hub had stepped down"
        for details, trailing in refusals:
            assert "hub-0" not in details, details
            assert LEADER_METADATA not in dict(trailing), trailing
        # One tenure: the Lease records no transition.
        after = (await leader.client.get(LEASES, LEASE_NAME, leader.namespace))["spec"]
        assert after["holderIdentity"] == "hub-0"
        assert (after["acquireTime"], after["leaseTransitions"]) == (tenure["acquireTime"], tenure["leaseTransitions"])
        await wait_ready(hub, 15)
        assert names.member_announce_name("west") not in await names_of(leader, MEMBER_CLUSTER_ANNOUNCES)
        assert await names_of(leader, RESOURCE_EXPORTS) == set()
