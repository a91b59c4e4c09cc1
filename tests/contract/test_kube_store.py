"""The kube store (CRs in a Kubernetes API) against the store contract, on a sandbox and on a
real kube-apiserver.

Fixtures:
- `leader`: the leader cluster's API, parametrized over `cluster_kind` (a sandbox started for
  the test, or the session's real `leader` cluster; tests/contract/leader_api.py).
- `store_factory`: KubeStores, each in a Namespace of its own; `reopen` makes a
  new KubeStore on the same Namespace, as a restarted hub would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.store.base import Store, WriteBatch
from hub.store.kube import InvalidRecord, KubeStore, StoreUnavailable
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract import samples
from tests.contract.leader_api import LeaderApi, leader_api
from tests.contract.store_contract import StoreContract


class KubeStoreFactory:
    keeps_epoch_across_restart = False

    def __init__(self, api: LeaderApi) -> None:
        self.api = api
        self.client = api.client

    async def open_new(self) -> Store:
        return KubeStore(self.client, await self.api.namespace("store"))

    async def reopen(self, store: Store) -> Store:
        assert isinstance(store, KubeStore)
        await store.close()
        return KubeStore(self.client, store.namespace)


@pytest.fixture
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LeaderApi]:
    async with leader_api(cluster_kind, request, tmp_path / "leader") as api:
        yield api


@pytest.fixture
async def store_factory(leader: LeaderApi) -> KubeStoreFactory:
    return KubeStoreFactory(leader)


class TestKubeStore(StoreContract):
    async def test_exports_and_imports_are_crs_kubectl_can_list(self, store_factory: KubeStoreFactory) -> None:
        store = await store_factory.open_new()
        await store.open()
        export = samples.service_export("east", "default", "nginx")
        await store.commit(WriteBatch(put_exports=[export], put_imports=[samples.service_import("default", "nginx")]))
        assert isinstance(store, KubeStore)
        exports = await store_factory.client.list(RESOURCE_EXPORTS, namespace=store.namespace)
        [cr] = exports.items
        assert cr["metadata"]["name"] == "east-default-nginx-service"
        assert cr["spec"]["clusterID"] == "east"
        assert cr["spec"]["kind"] == "Service"
        assert cr["metadata"]["labels"]["sourceClusterID"] == "east"
        imports = await store_factory.client.list(RESOURCE_IMPORTS, namespace=store.namespace)
        assert [i["spec"]["kind"] for i in imports.items] == ["ServiceImport"]

    async def test_a_missing_leader_namespace_is_a_clear_error(self, leader: LeaderApi) -> None:
        with pytest.raises(StoreUnavailable, match="does not exist"):
            await KubeStore(leader.client, "no-such-namespace").open()

    async def test_an_export_named_longer_than_a_label_value_is_stored_without_that_label(
        self, store_factory: KubeStoreFactory
    ) -> None:
        # A ClusterNetworkPolicy's name may have 253 characters; a label value at most 63
        # (a real API server refuses the CR with a longer one).
        store = await store_factory.open_new()
        await store.open()
        export = samples.acnp_export("p" * 100)
        await store.commit(WriteBatch(put_exports=[export]))
        assert isinstance(store, KubeStore)
        [cr] = (await store_factory.client.list(RESOURCE_EXPORTS, namespace=store.namespace)).items
        assert "sourceName" not in cr["metadata"]["labels"]
        assert cr["metadata"]["labels"]["sourceClusterID"] == "leader"
        restarted = await store_factory.reopen(store)
        [stored] = (await restarted.open()).exports.values()
        assert (stored.name, stored.cluster_network_policy) == (export.name, export.cluster_network_policy)

    async def test_an_export_too_large_for_a_kubernetes_object_fails_its_batch_at_once(
        self, store_factory: KubeStoreFactory
    ) -> None:
        # etcd takes at most 1.5 MiB per write: such a CR can never land, so the batch fails
        # before any of its writes, instead of retrying until the write timeout.
        store = await store_factory.open_new()
        await store.open()
        assert isinstance(store, KubeStore)
        huge = samples.endpoints_export("east", "default", "huge")
        addresses = huge.endpoints.subsets[0].addresses
        for i in range(40_000):
            addresses.add(ip=f"10.1.{i // 256 % 256}.{i % 256}", hostname=f"pod-{i:05d}-{'x' * 24}")
        fits = samples.service_export("east", "default", "fits")
        with pytest.raises(InvalidRecord, match="too large"):
            async with asyncio.timeout(5):
                await store.commit(WriteBatch(put_exports=[fits, huge]))
        assert store.revision == 0
        assert (await store_factory.client.list(RESOURCE_EXPORTS, namespace=store.namespace)).items == []
