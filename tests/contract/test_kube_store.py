"""The kube store (CRs in a Kubernetes API) against the store contract, on a sandbox.

Fixtures:
- `leader`: a sandbox API server with the mchub CRDs and a client for it.
- `store_factory`: KubeStores, each in a Namespace of its own; `reopen` makes a
  new KubeStore on the same Namespace, as a restarted hub would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.store.base import Store, WriteBatch
from hub.store.kube import KubeStore, StoreUnavailable
from kube.client import KubeClient
from kube.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract import samples
from tests.contract.store_contract import StoreContract
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster


class KubeStoreFactory:
    keeps_epoch_across_restart = False

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._count = 0

    async def open_new(self) -> Store:
        self._count += 1
        namespace = f"store-{self._count}"
        await ensure_namespace(self.client, namespace)
        return KubeStore(self.client, namespace)

    async def reopen(self, store: Store) -> Store:
        assert isinstance(store, KubeStore)
        await store.close()
        return KubeStore(self.client, store.namespace)


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[KubeClient]:
    async with sandbox_cluster(tmp_path / "leader") as (_, client):
        yield client


@pytest.fixture
async def store_factory(leader: KubeClient) -> KubeStoreFactory:
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

    async def test_a_missing_leader_namespace_is_a_clear_error(self, leader: KubeClient) -> None:
        with pytest.raises(StoreUnavailable, match="does not exist"):
            await KubeStore(leader, "no-such-namespace").open()
