"""A small test client for the hub's gRPC API (not the member's real client)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc


def secure_channel(target: str, ca: bytes, token: str | None) -> grpc.aio.Channel:
    creds = grpc.ssl_channel_credentials(root_certificates=ca)
    if token is not None:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return grpc.aio.secure_channel(target, creds)


async def export_refused_by_a_follower(
    stub: pb_grpc.CommonAreaServiceStub, export: pb.ResourceExport, leader: str
) -> None:
    """A follower ends an Export stream with UNAVAILABLE naming `leader`, before it reads a request.

    The refusal is read on a stream that writes nothing. A write racing the end of a stream fails
    in grpc-aio itself, which then reports the call as INTERNAL ("Failed execute_batch") or as
    finished, whatever status the hub sent; so the write goes on a second stream, whose end is
    either the hub's refusal or that local failure. The caller checks that nothing was written.
    """
    refused_stream = stub.Export()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await refused_stream.read()
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert leader in (refused.value.details() or "")
    assert ("mchub-leader", leader) in tuple(refused.value.trailing_metadata() or ())
    with_a_write = stub.Export()
    with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
        await with_a_write.write(pb.ExportRequest(sequence=1, upsert=export))
    assert await with_a_write.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)


def service_export(
    cluster: str,
    namespace: str,
    name: str,
    ports: list[tuple[str, int]] | None = None,
    *,
    cluster_ip: str = "10.96.0.10",
    protocol: str = "TCP",
    svc_type: str = "ClusterIP",
    affinity: str = "None",
) -> pb.ResourceExport:
    spec = pb.ServiceSpec(type=svc_type, cluster_ip=cluster_ip, session_affinity=affinity)
    for port_name, port in ports or [("http", 80)]:
        spec.ports.append(pb.ServicePort(name=port_name, port=port, protocol=protocol))
    return pb.ResourceExport(
        export_name=names.service_export_name(cluster, namespace, name),
        cluster_id=cluster,
        namespace=namespace,
        name=name,
        service=spec,
    )


def endpoints_export(cluster: str, namespace: str, name: str, ips: list[str], port: int = 80) -> pb.ResourceExport:
    subset = pb.EndpointSubset(
        addresses=[pb.EndpointAddress(ip=ip) for ip in ips],
        ports=[pb.EndpointPort(name="http", port=port, protocol="TCP")],
    )
    return pb.ResourceExport(
        export_name=names.endpoints_export_name(cluster, namespace, name),
        cluster_id=cluster,
        namespace=namespace,
        name=name,
        endpoints=pb.EndpointsSpec(subsets=[subset]),
    )


@dataclass
class ExportSession:
    """One open Export stream with request/answer pairing by sequence."""

    call: grpc.aio.StreamStreamCall  # type: ignore[type-arg]
    sequence: int = 0
    unsolicited: list[pb.ExportResponse] = field(default_factory=list)

    async def send(self, request: pb.ExportRequest) -> pb.ExportResponse:
        self.sequence += 1
        request.sequence = self.sequence
        await self.call.write(request)
        while True:
            response: pb.ExportResponse = await self.call.read()
            if response is grpc.aio.EOF:
                raise AssertionError("stream ended")
            if response.sequence == self.sequence:
                return response
            self.unsolicited.append(response)

    async def upsert(self, export: pb.ResourceExport) -> pb.ExportResponse:
        return await self.send(pb.ExportRequest(upsert=export))

    async def delete(self, export_name: str) -> pb.ExportResponse:
        return await self.send(pb.ExportRequest(delete=pb.ExportDelete(export_name=export_name)))

    async def next_unsolicited(self, wait: float = 5.0) -> pb.ExportResponse:
        if self.unsolicited:
            return self.unsolicited.pop(0)
        response: pb.ExportResponse = await asyncio.wait_for(self.call.read(), wait)
        return response

    async def close(self) -> None:
        await self.call.done_writing()
        self.call.cancel()


class Member:
    def __init__(self, hub: HubApp, cluster_id: str, token: str) -> None:
        assert hub.ca_cert is not None
        self.hub = hub
        self.cluster_id = cluster_id
        self.token = token
        self.channel = secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), token)
        self.stub = pb_grpc.CommonAreaServiceStub(self.channel)
        self._sessions: list[ExportSession] = []

    async def announce(
        self, cluster_id: str | None = None, *, uid: str = "", properties: dict[str, str] | None = None
    ) -> pb.AnnounceResponse:
        """Announce (as ``cluster_id``, by default this member's), from the cluster ``uid`` with
        these ClusterProperties."""
        response: pb.AnnounceResponse = await self.stub.Announce(
            pb.AnnounceRequest(
                cluster_id=self.cluster_id if cluster_id is None else cluster_id,
                cluster_set_id=self.hub.config.cluster_set_id,
                leader_cluster_id=self.hub.config.leader_cluster_id,
                cluster_uid=uid,
                properties=properties or {},
            )
        )
        return response

    def export_session(self) -> ExportSession:
        session = ExportSession(self.stub.Export())
        self._sessions.append(session)
        return session

    async def export(self, *exports: pb.ResourceExport) -> list[pb.ExportResponse]:
        session = self.export_session()
        answers = [await session.upsert(e) for e in exports]
        return answers

    def watch(
        self, epoch: str = "", revision: int = 0, *, batched: bool = False
    ) -> AsyncIterator[pb.WatchImportsResponse]:
        call = self.stub.WatchImports(
            pb.WatchImportsRequest(cluster_id=self.cluster_id, epoch=epoch, revision=revision, batched=batched)
        )
        return call.__aiter__()

    async def close(self) -> None:
        for session in self._sessions:
            session.call.cancel()
        await self.channel.close()


class MemberFactory:
    def __init__(self, hub: HubApp) -> None:
        self.hub = hub
        self._members: list[Member] = []

    async def __call__(self, cluster_id: str, *, announce: bool = True, token_name: str = "") -> Member:
        token = self.hub.tokens.create(token_name or f"member-{cluster_id}", cluster_id=cluster_id)
        member = Member(self.hub, cluster_id, token)
        self._members.append(member)
        if announce:
            await member.announce()
        return member

    def admin(self) -> Member:
        member = Member(self.hub, "", self.hub.admin_token)
        self._members.append(member)
        return member

    async def close(self) -> None:
        for member in self._members:
            await member.close()


async def read_until_synced(
    stream: AsyncIterator[pb.WatchImportsResponse],
) -> tuple[dict[str, pb.ResourceImport], pb.WatchImportsResponse]:
    snapshot: dict[str, pb.ResourceImport] = {}
    async for event in stream:
        kind = event.WhichOneof("event")
        if kind == "upsert":
            snapshot[event.upsert.import_name] = event.upsert
        elif kind == "changes":
            snapshot.update((c.upsert.import_name, c.upsert) for c in event.changes.changes)
        elif kind == "synced":
            return snapshot, event
    raise AssertionError("watch ended before SYNCED")
