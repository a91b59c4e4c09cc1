"""Create, read, update, delete: the answers a client must be able to rely on."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import ProbeCRD


def configmap(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


async def test_creating_an_existing_object_is_409_already_exists(cluster: Cluster, namespace: str) -> None:
    await cluster.core.create_namespaced_config_map(namespace, configmap("settings", a="1"))
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.create_namespaced_config_map(namespace, configmap("settings", a="2"))
    assert caught.value.status == 409
    reply = await cluster.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings"},
        },
    )
    assert reply.body["reason"] == "AlreadyExists"
    assert reply.body["message"] == 'configmaps "settings" already exists'
    assert reply.body["details"] == {"name": "settings", "kind": "configmaps"}


async def test_an_update_with_a_stale_resource_version_is_409_conflict(cluster: Cluster, namespace: str) -> None:
    created = await cluster.core.create_namespaced_config_map(namespace, configmap("settings", a="1"))
    created.data = {"a": "2"}
    await cluster.core.replace_namespaced_config_map("settings", namespace, created)
    created.data = {"a": "3"}
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.replace_namespaced_config_map("settings", namespace, created)
    assert caught.value.status == 409
    reply = await cluster.request(
        "PUT",
        f"/api/v1/namespaces/{namespace}/configmaps/settings",
        body=cluster.api.sanitize_for_serialization(created),
    )
    assert reply.body["reason"] == "Conflict"
    assert reply.body["message"] == (
        'Operation cannot be fulfilled on configmaps "settings": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_an_update_that_changes_nothing_keeps_the_resource_version(cluster: Cluster, namespace: str) -> None:
    created = await cluster.core.create_namespaced_config_map(namespace, configmap("settings", a="1"))
    replaced = await cluster.core.replace_namespaced_config_map("settings", namespace, created)
    assert replaced.metadata.resource_version == created.metadata.resource_version


async def test_creating_in_a_missing_namespace_is_404_naming_the_namespace(cluster: Cluster) -> None:
    reply = await cluster.request(
        "POST",
        "/api/v1/namespaces/no-such-namespace-x1/configmaps",
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    assert reply.status == 404
    assert reply.body["reason"] == "NotFound"
    assert reply.body["message"] == 'namespaces "no-such-namespace-x1" not found'


async def test_getting_a_missing_object_is_404_not_found(cluster: Cluster, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.read_namespaced_secret("nothing-here", namespace)
    assert caught.value.status == 404


async def test_generate_name_gives_a_fresh_name_with_the_prefix(cluster: Cluster, namespace: str) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    first = await cluster.core.create_namespaced_config_map(namespace, body)
    second = await cluster.core.create_namespaced_config_map(namespace, body)
    assert first.metadata.name.startswith("gen-") and second.metadata.name.startswith("gen-")
    assert first.metadata.name != second.metadata.name


async def test_an_invalid_name_is_422_invalid(cluster: Cluster, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.create_namespaced_config_map(namespace, configmap("Not_Valid"))
    assert caught.value.status == 422


async def test_dry_run_create_validates_without_persisting(cluster: Cluster, namespace: str) -> None:
    created = await cluster.core.create_namespaced_config_map(namespace, configmap("ghost"), dry_run="All")
    assert created.metadata.name == "ghost"
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.read_namespaced_config_map("ghost", namespace)
    assert caught.value.status == 404


async def test_deleting_returns_and_removes_the_object(cluster: Cluster, namespace: str) -> None:
    await cluster.core.create_namespaced_config_map(namespace, configmap("short-lived"))
    await cluster.core.delete_namespaced_config_map("short-lived", namespace)
    with pytest.raises(client.ApiException) as caught:
        await cluster.core.read_namespaced_config_map("short-lived", namespace)
    assert caught.value.status == 404


async def test_requests_without_a_valid_token_are_401(cluster: Cluster) -> None:
    # Without the kubeconfig's credentials: a real apiserver authenticates a client certificate
    # before it looks at the token.
    reply = await cluster.request(
        "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer not-a-token"}, credentials=False
    )
    assert reply.status == 401
    assert reply.body["reason"] == "Unauthorized"


async def test_the_initial_namespaces_exist(cluster: Cluster) -> None:
    names = {ns.metadata.name for ns in (await cluster.core.list_namespace()).items}
    assert {"default", "kube-system"} <= names


async def test_paths_nothing_serves_are_answered_as_the_apiserver_answers_them(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    """Found on kube-apiserver v1.28: a path in a group/version that only CRDs serve, which no
    served CRD matches (a deleted one, another resource, a scope the CRD does not have), is
    answered by the server's fallback: a plain-text 404. Built-in groups, and a matched CRD's
    bad subresource, answer a NotFound Status."""
    crd_version = f"/apis/{probe_crd.group}/{probe_crd.version}"
    plain = [
        "/apis/nope.example.io/v1/things",
        "/apis/nope.example.io",
        f"{crd_version}/namespaces/{namespace}/nopes",
        f"{crd_version}/{probe_crd.plural}/x",  # a Namespaced CRD named without its Namespace
        f"{crd_version}/namespaces/{namespace}",
    ]
    status = [
        f"/api/v1/namespaces/{namespace}/nopes",
        "/apis/apps/v1/nopes",
        f"/apis/apps/v1/namespaces/{namespace}",
        f"{crd_version}/namespaces/{namespace}/{probe_crd.plural}/x/nope",
    ]
    for path in plain:
        answer = await cluster.request("GET", path)
        assert (answer.status, answer.body) == (404, "404 page not found\n"), path
    for path in status:
        answer = await cluster.request("GET", path)
        assert answer.status == 404, path
        assert isinstance(answer.body, dict) and answer.body["kind"] == "Status", (path, answer.body)
        assert answer.body["reason"] == "NotFound", path
