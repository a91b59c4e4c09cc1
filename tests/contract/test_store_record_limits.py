"""What a store says of the largest record it holds (Store.max_record_bytes, measured by
Store.record_bytes) is true: a record of exactly that size is stored, one byte more is not.

The hub refuses, before any write, an export whose records a store could not hold, or that
would make an import no WatchImports message carries, whatever the store
(tests/integration/test_hub_record_limits.py); these tests keep the stores honest about it.
The kube store runs on a sandbox and on a real kube-apiserver (`cluster_kind`), whose etcd
takes at most 1.5 MiB per write.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.config import HubConfig
from hub.engine.fit import RecordLimits
from hub.store.base import Store, WriteBatch
from hub.store.kube import InvalidRecord, KubeStore
from hub.store.kube_codec import ANNOTATION_HUB_CHANGE, MAX_CR_BYTES
from hub.store.sqlite import SqliteStore
from mcapi.convert import resource_import_to_cr
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.contract import samples
from tests.contract.leader_api import leader_api


def _grown(record: pb.ResourceExport | pb.ResourceImport, store: Store, size: int) -> None:
    """Add Pod addresses to the record's Endpoints until the store measures it at exactly `size`."""
    addresses = record.endpoints.subsets[0].addresses
    before = store.record_bytes(record)
    addresses.add(ip="10.1.255.255", hostname="pod-000000")
    # The widest address: no address added below takes more, so adding gap // step of them never
    # passes `size`, and each round leaves only what the narrower ones saved (a measure of a
    # record this large costs the kube store most of a second: few rounds, not a halving).
    step = store.record_bytes(record) - before
    while (gap := size - store.record_bytes(record)) >= step:
        for _ in range(gap // step):
            i = len(addresses)
            addresses.add(ip=f"10.1.{i // 256 % 256}.{i % 256}", hostname=f"pod-{i:06d}")
    # The last hostname takes what is left, a byte a character.
    addresses[-1].hostname += "x" * (size - store.record_bytes(record))
    assert store.record_bytes(record) == size


@pytest.fixture
async def kube_store(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KubeStore]:
    async with leader_api(cluster_kind, request, tmp_path / "leader") as api:
        store = KubeStore(api.client, await api.namespace("store"))
        await store.open()
        try:
            yield store
        finally:
            await store.close()


async def test_a_kube_store_holds_an_export_of_exactly_its_limit_and_no_more(kube_store: KubeStore) -> None:
    assert kube_store.max_record_bytes == MAX_CR_BYTES
    export = samples.endpoints_export("east", "default", "web")
    _grown(export, kube_store, MAX_CR_BYTES)
    await kube_store.commit(WriteBatch(put_exports=[export]))
    export.endpoints.subsets[0].addresses[-1].hostname += "x"
    with pytest.raises(InvalidRecord, match="too large"):
        await kube_store.commit(WriteBatch(put_exports=[export]))


async def test_a_kube_store_holds_an_import_of_exactly_its_limit_with_its_change_stamp(
    kube_store: KubeStore,
) -> None:
    # The hub stamps every ResourceImport it writes (kube_codec.ANNOTATION_HUB_CHANGE): the
    # measure counts in the widest stamp, so an import it lets through lands whatever its revision.
    imp = samples.endpoints_import("default", "web")
    _grown(imp, kube_store, MAX_CR_BYTES)
    for _ in range(3):
        await kube_store.commit(WriteBatch(put_imports=[imp]))
    unstamped = len(json.dumps(resource_import_to_cr(imp, kube_store.namespace).to_dict(), separators=(",", ":")))
    assert MAX_CR_BYTES - unstamped > len(f'"{ANNOTATION_HUB_CHANGE}":"{"f" * 32}/{"9" * 20}/{"9" * 20}"')
    # The watch's message limit holds for this store too, where it is the lower one.
    assert RecordLimits(kube_store, 4 * 1024 * 1024).oversize(imp) is None
    oversize = RecordLimits(kube_store, MAX_CR_BYTES // 2).oversize(imp)
    assert oversize is not None and oversize.measured == "in a WatchImports message"


async def test_the_sqlite_store_measures_records_as_it_keeps_them_and_holds_far_more_than_grpc_carries(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "hub")
    await store.open()
    try:
        # No limit of its own: SQLite's (SQLITE_LIMIT_LENGTH, 10^9 bytes) is far above what gRPC carries.
        assert store.max_record_bytes is None
        imp = samples.endpoints_import("default", "web")
        _grown(imp, store, 8 * 1024 * 1024)
        assert store.record_bytes(imp) == len(imp.SerializeToString(deterministic=True))
        revision = await store.commit(WriteBatch(put_imports=[imp]))
        assert (await store.snapshot()).imports[imp.import_name] == imp
        assert revision == store.revision
        # An import no WatchImports message carries is refused all the same (the hub's 4 MiB).
        oversize = RecordLimits(store, HubConfig().max_message_bytes).oversize(imp)
        assert oversize is not None and oversize.measured == "in a WatchImports message"
    finally:
        await store.close()
