"""A hub killed with SIGKILL right after verdicts keeps every acknowledged write."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from hub.auth.tokens import TokenStore
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from tests.integration.hubclient import read_until_synced, secure_channel, service_export
from tests.integration.hubprocess import hub_process


def _member_token(data_dir: Path, cluster_id: str) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    store = TokenStore(data_dir / "tokens.db")
    try:
        return store.create(f"member-{cluster_id}", cluster_id=cluster_id)
    finally:
        store.close()


async def test_a_sigkilled_hub_restarts_with_every_acknowledged_export_and_import(tmp_path: Path) -> None:
    data_dir = tmp_path / "hub"
    token = _member_token(data_dir, "east")
    acknowledged: list[str] = []
    async with hub_process(data_dir) as first, secure_channel(first.target, first.ca, token) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        await stub.Announce(pb.AnnounceRequest(cluster_id="east", cluster_set_id="test-clusterset"))
        _, synced = await read_until_synced(stub.WatchImports(pb.WatchImportsRequest(cluster_id="east")).__aiter__())
        call = stub.Export()
        total = 200
        for i in range(total):  # pipelined: many writes in flight when the kill comes
            export = service_export("east", "default", f"svc-{i}")
            await call.write(pb.ExportRequest(sequence=i + 1, upsert=export))
        while len(acknowledged) < total // 2:
            answer = await call.read()
            assert answer.status.verdict == pb.VERDICT_ACCEPTED
            acknowledged.append(answer.export_name)
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()
        call.cancel()

    async with hub_process(data_dir) as second, secure_channel(second.target, second.ca, token) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        snapshot, after = await read_until_synced(
            stub.WatchImports(pb.WatchImportsRequest(cluster_id="east")).__aiter__()
        )
        for export_name in acknowledged:
            name = export_name.removeprefix("east-default-").removesuffix("-service")
            assert names.service_import_name("default", name) in snapshot, f"lost {export_name}"
        # The SQLite change log survives the crash: the epoch holds and a watcher resuming
        # from before the kill is given exactly the changes it missed, with no snapshot.
        assert after.epoch == synced.epoch
        stream = stub.WatchImports(
            pb.WatchImportsRequest(cluster_id="east", epoch=synced.epoch, revision=synced.revision)
        ).__aiter__()
        assert (await anext(stream)).WhichOneof("event") == "resumed"
        replayed: dict[str, pb.ResourceImport] = {}
        while len(replayed) < len(snapshot):
            event = await asyncio.wait_for(anext(stream), 10)
            if event.WhichOneof("event") == "upsert":
                replayed[event.upsert.import_name] = event.upsert
            assert event.WhichOneof("event") != "synced"
        assert replayed == snapshot
    # Nothing stays behind: the process is gone.
    assert not any(p.isdigit() and _is_our_hub(int(p), data_dir) for p in os.listdir("/proc"))


def _is_our_hub(pid: int, data_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return str(data_dir).encode() in cmdline
