"""An export too large for the hub's store, alone or merged with others, is refused, not retried.

The kube store keeps every export and import as a CR of at most MAX_CR_BYTES (etcd's request
limit), while gRPC admits messages up to 4 MiB. Such an export used to fail its whole store
batch (UNAVAILABLE), so the member retried it for ever and held up every export sent with it.
Now the hub refuses it with INVALID_ARGUMENT (HTTP 400) before the store is touched, naming the
export, its size and the limit; what came before it in the stream is written, and a member sets
it aside and sends the rest (proto: rpc Export). An export that would make its merged import
too large (Endpoints of several exporters) is refused the same way.

The kube-store tests run on a sandbox and on a real kube-apiserver (`cluster_kind`); the
SQLite store has no limit of its own (SQLite's is far above what gRPC carries), so there only
the import a WatchImports message could not carry to members (the hub's max message size) is
refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine import Engine
from hub.errors import TooLarge
from hub.merge import verdicts
from hub.mirror.feed import ChangeFeed, FeedingStore, Kind
from hub.store import kube_codec
from hub.store.base import Store
from hub.store.kube import KubeStore
from hub.store.kube_codec import MAX_CR_BYTES, read_change_stamp
from hub.store.sqlite import SqliteStore
from kube.client import KubeClient
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from member.hubclient import HubEndpoint, HubSession, HubSessionConfig
from tests.contract import samples
from tests.contract.leader_api import leader_api
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import (
    Member,
    MemberFactory,
    endpoints_export,
    read_until_synced,
    service_export,
)
from tests.integration.test_hub_rest import ACNP
from tests.integration.test_hub_security import refused, store_state
from tests.member_hubclient.recorders import VerdictRecorder

# A refusal comes without waiting for the kube store's write timeout (30 s); turning a 2 MB
# export into a CR takes about a second, several on a loaded machine.
REFUSED_WITHIN = 25.0
BEGIN = pb.ExportRequest(sync_begin=pb.SyncBegin())


def big_endpoints(cluster: str, namespace: str, name: str, addresses: int) -> pb.ResourceExport:
    """Endpoints with many Pod addresses: about 70 bytes each in a CR, 45 on the wire."""
    ips = [f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}" for i in range(addresses)]
    export = endpoints_export(cluster, namespace, name, ips)
    for i, address in enumerate(export.endpoints.subsets[0].addresses):
        address.hostname = f"pod-{i:06d}-{'x' * 24}"
    return export


@dataclass
class KubeHub:
    app: HubApp
    client: KubeClient
    namespace: str

    async def crs(self) -> tuple[set[str], set[str]]:
        """The names of the ResourceExports and ResourceImports in the hub's leader Namespace."""
        exports = await self.client.list(RESOURCE_EXPORTS, namespace=self.namespace)
        imports = await self.client.list(RESOURCE_IMPORTS, namespace=self.namespace)
        return {o["metadata"]["name"] for o in exports.items}, {o["metadata"]["name"] for o in imports.items}


@pytest.fixture
async def kube(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KubeHub]:
    """A hub whose store is the kube store, in a leader Namespace of the test's own."""
    async with leader_api(cluster_kind, request, tmp_path / "leader") as api:
        namespace = await api.namespace("leader")
        app = HubApp(hub_config(tmp_path / "hub"), store=KubeStore(api.client, namespace))
        await app.start()
        try:
            yield KubeHub(app, api.client, namespace)
        finally:
            await app.stop()


@pytest.fixture
def kube_hub(kube: KubeHub) -> HubApp:
    return kube.app


@pytest.fixture
async def members(kube_hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(kube_hub)
    try:
        yield factory
    finally:
        await factory.close()


def _request(
    sequence: int, export: pb.ResourceExport | None = None, *, of: pb.ExportRequest | None = None
) -> pb.ExportRequest:
    request = pb.ExportRequest(sequence=sequence)
    if export is not None:
        request.upsert.CopyFrom(export)
    if of is not None:
        request.MergeFrom(of)
    return request


async def _sent_at_once(member: Member, requests: list[pb.ExportRequest]) -> tuple[list[pb.ExportResponse], str]:
    """Write every request without waiting (so the hub takes them as one batch); read the answers
    until the stream ends, which it must with INVALID_ARGUMENT; return the answers and its text."""
    call = member.stub.Export()
    answers: list[pb.ExportResponse] = []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async with asyncio.timeout(REFUSED_WITHIN):
            for request in requests:
                await call.write(request)
            while (answer := await call.read()) is not grpc.aio.EOF:
                assert isinstance(answer, pb.ExportResponse)
                answers.append(answer)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return answers, info.value.details() or ""


async def test_an_export_too_large_for_a_cr_is_refused_and_what_came_before_it_lands(
    kube: KubeHub, kube_hub: HubApp, members: MemberFactory
) -> None:
    east = await members("east")
    fits, after = service_export("east", "default", "fits"), service_export("east", "default", "after")
    huge = big_endpoints("east", "default", "huge", 40_000)
    assert huge.ByteSize() < kube_hub.config.max_message_bytes  # gRPC admits it
    answers, details = await _sent_at_once(
        east, [_request(1, of=BEGIN), _request(2, fits), _request(3, huge), _request(4, after)]
    )
    assert [a.export_name for a in answers if a.export_name] == [fits.export_name]
    assert huge.export_name in details and "(request sequence 3)" in details
    assert f"at most {MAX_CR_BYTES}" in details and "bytes" in details
    assert len(details.encode()) <= 2048
    exported, _ = await kube.crs()
    assert exported == {fits.export_name}
    # As a member does: a new stream, a bracket with the rest; they land.
    session = east.export_session()
    await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
    for export in (fits, after):
        assert (await session.upsert(export)).status.verdict == pb.VERDICT_ACCEPTED
    await session.send(pb.ExportRequest(sync_end=pb.SyncEnd()))
    exported, _ = await kube.crs()
    assert exported == {fits.export_name, after.export_name}


async def test_an_export_that_would_make_its_merged_import_too_large_is_refused(
    kube: KubeHub, kube_hub: HubApp, members: MemberFactory
) -> None:
    east, west = await members("east"), await members("west")
    # Each fits in a CR alone (about 0.85 MB); merged into one Endpoints import they do not.
    east_endpoints = big_endpoints("east", "default", "web", 15_000)
    west_endpoints = big_endpoints("west", "default", "web", 15_000)
    answers = await east.export(service_export("east", "default", "web"), east_endpoints)
    assert [a.status.verdict for a in answers] == [pb.VERDICT_ACCEPTED] * 2
    imports_before = dict((await store_state(kube_hub))[2])
    west_service = service_export("west", "default", "web")
    answers, details = await _sent_at_once(west, [_request(1, west_service), _request(2, west_endpoints)])
    assert [a.export_name for a in answers] == [west_service.export_name]
    endpoints_import = names.endpoints_import_name("default", "web")
    assert west_endpoints.export_name in details and endpoints_import in details
    assert f"at most {MAX_CR_BYTES}" in details
    exported, imported = await kube.crs()
    assert exported == {
        east_endpoints.export_name,
        west_service.export_name,
        names.service_export_name("east", "default", "web"),
    }
    assert imported == {endpoints_import, names.service_import_name("default", "web")}
    # The Endpoints import still holds east's endpoints; the ServiceImport now names west too.
    imports_after = (await store_state(kube_hub))[2]
    assert imports_after[endpoints_import].endpoints == imports_before[endpoints_import].endpoints


async def test_a_write_to_the_kube_store_turns_each_record_into_a_cr_once(
    kube: KubeHub, kube_hub: HubApp, members: MemberFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine measures every record as a CR before the commit (hub.engine.fit), and the
    # commit writes those CRs: a record is converted once, not once for each.
    await members("east")
    conversions: Counter[str] = Counter()

    def counting(convert: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        def counted(record: Any, namespace: str) -> Any:
            conversions[record.export_name if isinstance(record, pb.ResourceExport) else record.import_name] += 1
            return convert(record, namespace)

        return counted

    for convert in ("resource_export_to_cr", "resource_import_to_cr"):
        monkeypatch.setattr(kube_codec, convert, counting(getattr(kube_codec, convert)))
    service = service_export("east", "default", "web")
    endpoints = endpoints_export("east", "default", "web", ["10.1.0.1", "10.1.0.2"])
    answers, refusal = await kube_hub.engine.upsert_many(Identity(cluster_id="east"), [(service, 1), (endpoints, 2)])
    assert refusal is None and {a.revision for a in answers} == {kube_hub.engine.revision}
    imports = [names.service_import_name("default", "web"), names.endpoints_import_name("default", "web")]
    assert conversions == Counter({n: 1 for n in (service.export_name, endpoints.export_name, *imports)})
    # The CRs written carry the revision's own change stamp (the measure counted the widest).
    written = await kube.client.list(RESOURCE_IMPORTS, namespace=kube.namespace)
    stamps = {o["metadata"]["name"]: read_change_stamp(o) for o in written.items}
    assert stamps == {n: (kube_hub.engine.epoch, kube_hub.engine.revision, 2) for n in imports}


async def test_a_rest_policy_too_large_for_a_cr_is_a_400(kube_hub: HubApp) -> None:
    body: dict[str, Any] = copy.deepcopy(ACNP)
    rules = [
        {"action": "Drop", "from": [{"ipBlock": {"cidr": f"10.{i // 256 % 256}.{i % 256}.0/24"}}]}
        for i in range(30_000)
    ]
    body["spec"]["clusterNetworkPolicy"]["ingress"] = rules
    before = await store_state(kube_hub)
    headers = {"Authorization": f"Bearer {kube_hub.admin_token}"}
    async with (
        rest_session(kube_hub) as http,
        asyncio.timeout(REFUSED_WITHIN),
        http.post("/api/v1/resourceexports", json=body, headers=headers) as answer,
    ):
        assert answer.status == 400, await answer.text()
        status = await answer.json()
    assert status["reason"] == "BadRequest"
    assert "strict-namespace-isolation" in status["message"] and f"at most {MAX_CR_BYTES}" in status["message"]
    assert await store_state(kube_hub) == before


async def test_a_member_sets_the_refused_export_aside_and_its_other_exports_land(
    kube: KubeHub, kube_hub: HubApp
) -> None:
    assert kube_hub.ca_cert is not None
    token = kube_hub.tokens.create("member-east", cluster_id="east")
    endpoint = HubEndpoint(server=f"https://{kube_hub.grpc_target}", token=token, ca_cert=kube_hub.ca_cert.read_bytes())
    config = HubSessionConfig(
        cluster_id="east", cluster_set_id=kube_hub.config.cluster_set_id, leader_cluster_id="leader",
        initial_backoff=0.05, max_backoff=0.3, call_timeout=5.0, stop_timeout=2.0,
    )  # fmt: skip
    verdicts = VerdictRecorder()
    session = HubSession(endpoint, config, on_rejected=verdicts.on_rejected)
    await session.start()
    try:
        wanted = [service_export("east", "default", n) for n in ("a", "b", "c")]
        huge = big_endpoints("east", "default", "b", 40_000)
        for export in (wanted[0], wanted[1], huge, wanted[2]):
            session.set_export(export)
        async with asyncio.timeout(REFUSED_WITHIN * 2):
            await session.wait_exports_settled()
        assert set(kube_hub.engine.index.exports) == {e.export_name for e in wanted}
        assert [(n, r.code) for n, r in verdicts.rejections] == [(huge.export_name, grpc.StatusCode.INVALID_ARGUMENT)]
        exported, _ = await kube.crs()
        assert exported == {e.export_name for e in wanted}
    finally:
        await session.stop()


async def test_the_sqlite_store_holds_an_export_too_large_for_a_cr(hub: HubApp, connect: MemberFactory) -> None:
    east = await connect("east")
    huge = big_endpoints("east", "default", "huge", 40_000)
    [answer] = await east.export(huge)
    assert answer.revision > 0
    assert huge.export_name in (await store_state(hub))[1]


async def test_an_export_that_would_make_an_import_too_large_to_deliver_is_refused(
    hub: HubApp, connect: MemberFactory
) -> None:
    # Each is about 2.3 MB on the wire, under gRPC's 4 MiB; merged, no WatchImports message could carry it.
    east, west = await connect("east"), await connect("west")
    east_endpoints = big_endpoints("east", "default", "web", 50_000)
    west_endpoints = big_endpoints("west", "default", "web", 50_000)
    await east.export(service_export("east", "default", "web"), east_endpoints)
    await west.export(service_export("west", "default", "web"))
    details = await refused(
        hub,
        grpc.StatusCode.INVALID_ARGUMENT,
        lambda: west.export_session().upsert(west_endpoints),
        west_endpoints.export_name,
    )
    assert names.endpoints_import_name("default", "web") in details
    assert f"at most {hub.config.max_message_bytes}" in details
    # Members still get every import, east's endpoints in theirs.
    async with asyncio.timeout(REFUSED_WITHIN):
        imports, _ = await read_until_synced(west.watch())
    delivered = imports[names.endpoints_import_name("default", "web")].endpoints
    assert [s.cluster_id for s in delivered.subsets] == ["east"]


class SmallStore(SqliteStore):
    """A SQLite store that holds records of at most `limit` bytes (LIMIT unless a test sets
    another), so records of a few addresses outgrow it."""

    LIMIT = 3000
    limit: int | None = LIMIT

    @property
    def max_record_bytes(self) -> int | None:
        return self.limit


async def test_in_one_batch_the_first_export_that_does_not_fit_is_refused_and_those_before_it_are_written(
    tmp_path: Path,
) -> None:
    async with small_engine(tmp_path, ("east", "west")) as engine:
        west = Identity(cluster_id="west")
        west_endpoints = big_endpoints("west", "default", "web", 30)
        assert SmallStore.LIMIT / 2 < west_endpoints.ByteSize() < SmallStore.LIMIT
        _, refusal = await engine.upsert_many(
            west, [(service_export("west", "default", "web"), 1), (west_endpoints, 2)]
        )
        assert refusal is None
        east = Identity(cluster_id="east")
        batch = [
            service_export("east", "default", "other"),
            service_export("east", "default", "web"),
            big_endpoints("east", "default", "web", 30),  # fits alone; with west's, the import does not
            service_export("east", "default", "later"),
        ]
        answers, refusal = await engine.upsert_many(east, [(e, n) for n, e in enumerate(batch, 1)])
        assert [a.export_name for a in answers] == [e.export_name for e in batch[:2]]
        assert all(a.revision > 0 for a in answers)
        assert isinstance(refusal, TooLarge)
        endpoints_import = names.endpoints_import_name("default", "web")
        assert f"export {batch[2].export_name!r} would make import {endpoints_import!r} too large" in str(refusal)
        assert f"at most {SmallStore.LIMIT}" in str(refusal)
        snapshot = await engine.store.snapshot()
        assert set(snapshot.exports) == {e.export_name for e in batch[:2]} | {
            west_endpoints.export_name,
            names.service_export_name("west", "default", "web"),
        }
        assert snapshot.imports[endpoints_import] == engine.index.imports[endpoints_import]
        # An export too large alone is named as such.
        alone = big_endpoints("east", "default", "other", 80)
        answers, refusal = await engine.upsert_many(east, [(alone, 5)])
        assert answers == [] and isinstance(refusal, TooLarge)
        assert str(refusal).startswith(f"export {alone.export_name!r} is too large for the hub's store (")


@contextlib.asynccontextmanager
async def small_engine(
    tmp_path: Path,
    clusters: tuple[str, ...] = ("east",),
    *,
    wrap: Callable[[Store], Store] = lambda store: store,
    store: Callable[[Path], SqliteStore] = SmallStore,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    strict_ports: bool = False,
) -> AsyncIterator[Engine]:
    """An engine on a `store` (a SmallStore) wrapped by `wrap`, with `clusters` announced."""
    config = HubConfig(data_dir=tmp_path, strict_ports=strict_ports)
    engine = Engine(wrap(store(tmp_path / "hub")), config, clock)
    await engine.start()
    try:
        for cluster in clusters:
            request = pb.AnnounceRequest(cluster_id=cluster, cluster_set_id=config.cluster_set_id)
            await engine.announce(Identity(cluster_id=cluster), request)
        yield engine
    finally:
        await engine.store.close()


class EnvelopedStore(SmallStore):
    """A SmallStore that counts an envelope around every record, as the kube store counts a CR's
    JSON: its measure differs from the Store default (the record's ByteSize)."""

    ENVELOPE = 7

    def record_bytes(self, record: pb.ResourceExport | pb.ResourceImport) -> int:
        return record.ByteSize() + self.ENVELOPE


async def test_the_store_that_feeds_the_mirror_keeps_the_limit_of_the_store_it_wraps(tmp_path: Path) -> None:
    feed = ChangeFeed()
    wrapped = small_engine(tmp_path, store=EnvelopedStore, wrap=lambda store: FeedingStore(store, feed))
    async with wrapped as engine:
        assert engine.store.max_record_bytes == SmallStore.LIMIT
        export = service_export("east", "default", "web")
        # The wrapped store's own measure, not the default a wrapper would fall back to.
        assert engine.store.record_bytes(export) == export.ByteSize() + EnvelopedStore.ENVELOPE
        alone = big_endpoints("east", "default", "other", 80)
        answers, refusal = await engine.upsert_many(Identity(cluster_id="east"), [(alone, 1)])
        assert answers == [] and isinstance(refusal, TooLarge)
        assert str(refusal).startswith(f"export {alone.export_name!r} is too large for the hub's store (")
        assert alone.export_name not in (await engine.store.snapshot()).exports
        assert feed.pending.names[Kind.EXPORT] == {}


async def test_an_export_that_fits_only_with_an_id_another_export_of_the_call_took_is_refused(tmp_path: Path) -> None:
    # A group's records depend on the other groups of its write in one way only: a new label
    # identity takes the lowest ID the write left free. Merged alone, the last label below gets
    # the ID the other took, one digit shorter: only the whole call's write shows it too large,
    # and it is still the export refused (engine_fit._blame's last resort).
    now = datetime(2024, 5, 1, tzinfo=UTC)
    async with small_engine(tmp_path, clock=lambda: now) as engine:
        east = Identity(cluster_id="east")

        def label(pods: str) -> pb.ResourceExport:
            return samples.label_identity_export("east", f"ns:kubernetes.io/metadata.name=default&pod:{pods}")

        _, refusal = await engine.upsert_many(east, [(label(f"app=a{i}"), i) for i in range(1, 9)])  # IDs 1 to 8
        assert refusal is None
        first, last = label("app=b"), label("app=c")
        stored = pb.ResourceExport()
        stored.CopyFrom(last)
        stored.create_time.FromDatetime(now)
        stored.status.CopyFrom(
            verdicts.accepted(
                f"Label identity {names.label_identity_import_name(stored.label_identity.normalized_label)} has ID 9."
            )
        )
        store = engine.store
        assert isinstance(store, SmallStore)
        store.limit = stored.ByteSize()  # as the last export is stored with ID 9; with ID 10, a byte more
        answers, refusal = await engine.upsert_many(east, [(first, 9), (last, 10)])
        assert [a.export_name for a in answers] == [first.export_name]
        assert isinstance(refusal, TooLarge)
        assert str(refusal) == (
            f"export {last.export_name!r} is too large for the hub's store "
            f"({store.limit + 1} bytes as the store keeps it, at most {store.limit})"
        )
        assert (
            engine.index.imports[
                names.label_identity_import_name(first.label_identity.normalized_label)
            ].label_identity.id
            == 9
        )


async def test_a_delete_that_would_let_skipped_endpoints_make_their_import_too_large_is_refused(
    tmp_path: Path,
) -> None:
    # With strict ports, exports whose ports differ from the oldest export's are skipped and
    # their endpoints left out. Deleting the oldest lets them in: a delete can grow an import.
    ticks = itertools.count()

    def clock() -> datetime:
        return datetime(2024, 5, 1, tzinfo=UTC) + timedelta(seconds=next(ticks))

    async with small_engine(tmp_path, ("east", "west", "north"), clock=clock, strict_ports=True) as engine:
        for cluster, port, addresses in (("east", 80, 2), ("west", 81, 30), ("north", 81, 30)):
            exports = [
                service_export(cluster, "default", "web", [("http", port)]),
                big_endpoints(cluster, "default", "web", addresses),
            ]
            _, refusal = await engine.upsert_many(Identity(cluster_id=cluster), [(e, n) for n, e in enumerate(exports)])
            assert refusal is None
        endpoints_import = names.endpoints_import_name("default", "web")
        assert [s.cluster_id for s in engine.index.imports[endpoints_import].endpoints.subsets] == ["east"]
        before = await engine.store.snapshot()
        east = Identity(cluster_id="east")
        east_service = names.service_export_name("east", "default", "web")
        too_large = f"would make import {endpoints_import!r} too large for the hub's store ("
        with pytest.raises(TooLarge) as refused:
            await engine.delete(east, east_service)
        assert str(refused.value).startswith(f"deleting export {east_service!r} {too_large}")
        assert f"at most {SmallStore.LIMIT})" in str(refused.value)
        # The end of a sync bracket that leaves it out, and removing the member, likewise.
        with pytest.raises(TooLarge) as refused:
            await engine.sweep(east, keep={names.endpoints_export_name("east", "default", "web")})
        assert str(refused.value).startswith(f"deleting the 1 export the sync did not mention {too_large}")
        with pytest.raises(TooLarge) as refused:
            await engine.remove_member("east", "removed by the test")
        assert str(refused.value).startswith(f"removing member 'east' {too_large}")
        assert await engine.store.snapshot() == before
        assert "east" in engine.index.members


async def test_an_export_too_large_then_sent_again_smaller_in_the_same_call_is_not_refused(tmp_path: Path) -> None:
    # What is checked is what the call writes: a later export of the same name replaces the
    # earlier, so [big A, B, small A] writes B and small A, and every item is answered.
    async with small_engine(tmp_path) as engine:
        east = Identity(cluster_id="east")
        big, small = big_endpoints("east", "default", "a", 80), big_endpoints("east", "default", "a", 2)
        other = service_export("east", "default", "b")
        assert engine.store.record_bytes(big) > SmallStore.LIMIT > engine.store.record_bytes(small)
        answers, refusal = await engine.upsert_many(east, [(big, 1), (other, 2), (small, 3)])
        assert refusal is None
        assert [(a.sequence, a.export_name) for a in answers] == [
            (1, big.export_name),
            (2, other.export_name),
            (3, small.export_name),
        ]
        assert {a.revision for a in answers} == {engine.revision}
        exports = (await engine.store.snapshot()).exports
        assert set(exports) == {small.export_name, other.export_name}
        assert exports[small.export_name].endpoints == small.endpoints


async def test_an_export_too_large_after_a_smaller_one_of_its_name_is_refused_at_its_index(tmp_path: Path) -> None:
    # [small A, B, big A]: the call would write big A, so big A (item 2, whose name small A
    # shares) is refused; small A and B, before it, are written.
    async with small_engine(tmp_path) as engine:
        east = Identity(cluster_id="east")
        big, small = big_endpoints("east", "default", "a", 80), big_endpoints("east", "default", "a", 2)
        other = service_export("east", "default", "b")
        answers, refusal = await engine.upsert_many(east, [(small, 1), (other, 2), (big, 3)])
        assert [(a.sequence, a.export_name) for a in answers] == [(1, small.export_name), (2, other.export_name)]
        assert all(a.revision == engine.revision for a in answers)
        assert isinstance(refusal, TooLarge)  # it is the item after the answers: index 2
        assert str(refusal).startswith(f"export {big.export_name!r} is too large for the hub's store (")
        assert f"at most {SmallStore.LIMIT})" in str(refusal)
        exports = (await engine.store.snapshot()).exports
        assert set(exports) == {small.export_name, other.export_name}
        assert exports[small.export_name].endpoints == small.endpoints


async def test_over_grpc_the_refusal_of_an_export_too_large_after_a_smaller_one_names_its_sequence(
    tmp_path: Path,
) -> None:
    app = HubApp(hub_config(tmp_path / "hub"), store=SmallStore(tmp_path / "hub"))
    await app.start()
    members = MemberFactory(app)
    try:
        east = await members("east")
        big, small = big_endpoints("east", "default", "a", 80), big_endpoints("east", "default", "a", 2)
        other = service_export("east", "default", "b")
        answers, details = await _sent_at_once(east, [_request(1, small), _request(2, other), _request(3, big)])
        assert [(a.sequence, a.export_name) for a in answers] == [(1, small.export_name), (2, other.export_name)]
        assert big.export_name in details and "(request sequence 3)" in details
        assert set((await store_state(app))[1]) == {small.export_name, other.export_name}
    finally:
        await members.close()
        await app.stop()
