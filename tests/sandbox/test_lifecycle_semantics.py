"""Finalizers, deletionTimestamp, ownerReference garbage collection, namespace cascade."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from tests.sandbox.cluster import Cluster

FINALIZER = "test.mchub.io/hold"


async def test_delete_with_a_finalizer_sets_deletion_timestamp_and_removing_it_deletes(
    cluster: Cluster, namespace: str
) -> None:
    core = cluster.core
    meta = client.V1ObjectMeta(name="held", finalizers=[FINALIZER])
    await core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=meta))
    await core.delete_namespaced_config_map("held", namespace)
    still = await core.read_namespaced_config_map("held", namespace)
    assert still.metadata.deletion_timestamp is not None
    assert still.metadata.finalizers == [FINALIZER]
    await core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    await cluster.wait_deleted(f"/api/v1/namespaces/{namespace}/configmaps", "held")


async def test_dependents_of_a_deleted_owner_are_garbage_collected(cluster: Cluster, namespace: str) -> None:
    core = cluster.core
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    for name in ("dependent-a", "dependent-b"):
        meta = client.V1ObjectMeta(name=name, owner_references=[reference])
        await core.create_namespaced_secret(namespace, client.V1Secret(metadata=meta))
    await core.delete_namespaced_config_map("owner", namespace)
    for name in ("dependent-a", "dependent-b"):
        await cluster.wait_deleted(f"/api/v1/namespaces/{namespace}/secrets", name)


async def test_orphan_propagation_keeps_dependents_without_the_owner_reference(
    cluster: Cluster, namespace: str
) -> None:
    core = cluster.core
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    meta = client.V1ObjectMeta(name="kept", owner_references=[reference])
    await core.create_namespaced_secret(namespace, client.V1Secret(metadata=meta))
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Orphan")
    await cluster.wait_deleted(f"/api/v1/namespaces/{namespace}/configmaps", "owner")
    kept = await core.read_namespaced_secret("kept", namespace)
    assert not kept.metadata.owner_references


async def test_deleting_a_namespace_terminates_it_and_removes_its_content(cluster: Cluster, unique: str) -> None:
    core = cluster.core
    name = f"mchub-doomed-{unique}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    await core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="inside")))
    await core.delete_namespace(name)
    try:
        terminating = await core.read_namespace(name)
        assert terminating.status.phase == "Terminating"
        assert terminating.metadata.deletion_timestamp is not None
    except client.ApiException as exc:
        assert exc.status == 404  # already gone: fine
    await cluster.wait_deleted("/api/v1/namespaces", name, within=60)
    with pytest.raises(client.ApiException) as caught:
        await core.read_namespaced_config_map("inside", name)
    assert caught.value.status == 404


async def test_creating_in_a_terminating_namespace_is_403_forbidden(cluster: Cluster, unique: str) -> None:
    core = cluster.core
    name = f"mchub-closing-{unique}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    meta = client.V1ObjectMeta(name="holder", finalizers=[FINALIZER])
    await core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=meta))
    await core.delete_namespace(name)
    try:
        with pytest.raises(client.ApiException) as caught:
            await core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late")))
        assert caught.value.status == 403
    finally:
        # Released, the namespace goes away in the background (>= 5 s on a real cluster).
        await core.patch_namespaced_config_map("holder", name, {"metadata": {"finalizers": None}})


async def test_foreground_deletion_removes_dependents_and_then_the_owner(cluster: Cluster, namespace: str) -> None:
    core = cluster.core
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid, block_owner_deletion=True
    )
    meta = client.V1ObjectMeta(name="dependent", owner_references=[reference])
    await core.create_namespaced_secret(namespace, client.V1Secret(metadata=meta))
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    await cluster.wait_deleted(f"/api/v1/namespaces/{namespace}/secrets", "dependent")
    await cluster.wait_deleted(f"/api/v1/namespaces/{namespace}/configmaps", "owner")
