"""KubeClient against the sandbox: CRUD, paging, patches, subresources and typed errors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kube import config as kube_config
from kube.client import CONNECT_ATTEMPTS, KubeClient, PatchType, bearer_configuration, connect
from kube.errors import AlreadyExists, Conflict, ConnectionFailed, Invalid, NotFound, TemporaryError, Unauthorized
from kube.metrics import NO_ANSWER
from kube.resources import CONFIG_MAPS, NODES, SERVICES, Resource
from kube.transport import KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES, USER_TIMEOUT_MS
from mcapi.resources import LABEL_IDENTITIES, SERVICE_EXPORTS
from sandbox.server import SandboxServer


def config_map(name: str, namespace: str, **data: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "t"}}, "data": data}


async def test_server_version_reports_a_kubectl_compatible_minor(client: KubeClient) -> None:
    version = await client.server_version()
    assert version["major"] == "1"
    assert 27 <= int(version["minor"].rstrip("+")) <= 33


async def test_create_get_replace_delete_round_trip(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIG_MAPS, config_map("a", namespace, x="1"))
    assert created["kind"] == "ConfigMap"
    fetched = await client.get(CONFIG_MAPS, "a", namespace)
    assert fetched["data"] == {"x": "1"}

    fetched["data"]["x"] = "2"
    replaced = await client.replace(CONFIG_MAPS, fetched)
    assert replaced["data"] == {"x": "2"}
    assert replaced["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    await client.delete(CONFIG_MAPS, "a", namespace)
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAPS, "a", namespace)


async def test_replace_with_a_stale_resource_version_is_a_temporary_conflict(
    client: KubeClient, namespace: str
) -> None:
    stale = await client.create(CONFIG_MAPS, config_map("a", namespace, x="1"))
    await client.patch(CONFIG_MAPS, "a", {"data": {"x": "2"}}, namespace)
    with pytest.raises(Conflict) as caught:
        await client.replace(CONFIG_MAPS, {**stale, "data": {"x": "3"}})
    assert isinstance(caught.value, TemporaryError)


async def test_creating_a_taken_name_is_already_exists(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIG_MAPS, config_map("a", namespace))
    with pytest.raises(AlreadyExists):
        await client.create(CONFIG_MAPS, config_map("a", namespace))


async def test_invalid_carries_the_apiservers_message(client: KubeClient, namespace: str) -> None:
    service = {
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {"clusterIP": "1.1.1.1", "ports": [{"port": 80}]},
    }
    with pytest.raises(Invalid) as caught:
        await client.create(SERVICES, service)
    assert "The range of valid IPs is 10.96.0.0/12" in caught.value.message
    assert caught.value.causes


async def test_cluster_scoped_resources_ignore_namespaces(client: KubeClient) -> None:
    await client.create(NODES, {"metadata": {"name": "n1"}})
    nodes = await client.list(NODES)
    assert [n["metadata"]["name"] for n in nodes.items] == ["n1"]
    assert nodes.items[0]["kind"] == "Node"


async def test_list_pages_with_limit_and_continue(client: KubeClient, namespace: str) -> None:
    for index in range(5):
        await client.create(CONFIG_MAPS, config_map(f"cm-{index}", namespace))
    first = await client.list(CONFIG_MAPS, namespace, label_selector="app=t", limit=2)
    assert len(first.items) == 2
    assert first.continue_token
    everything = await client.list_all(CONFIG_MAPS, namespace, label_selector="app=t", page_size=2)
    assert [c["metadata"]["name"] for c in everything.items] == [f"cm-{i}" for i in range(5)]
    assert everything.resource_version


async def test_list_filters_by_label_and_field_selectors(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIG_MAPS, config_map("a", namespace))
    await client.create(CONFIG_MAPS, {"metadata": {"name": "b", "namespace": namespace, "labels": {"app": "u"}}})
    by_label = await client.list(CONFIG_MAPS, namespace, label_selector="app=u")
    assert [c["metadata"]["name"] for c in by_label.items] == ["b"]
    by_field = await client.list(CONFIG_MAPS, namespace, field_selector="metadata.name=a")
    assert [c["metadata"]["name"] for c in by_field.items] == ["a"]


async def test_patch_speaks_merge_json_and_strategic_patches(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIG_MAPS, config_map("a", namespace, x="1"))
    merged = await client.patch(CONFIG_MAPS, "a", {"data": {"y": "2"}}, namespace)
    assert merged["data"] == {"x": "1", "y": "2"}
    json_patched = await client.patch(
        CONFIG_MAPS, "a", [{"op": "remove", "path": "/data/x"}], namespace, patch_type=PatchType.JSON
    )
    assert json_patched["data"] == {"y": "2"}
    strategic = await client.patch(CONFIG_MAPS, "a", {"data": {"z": "3"}}, namespace, patch_type=PatchType.STRATEGIC)
    assert strategic["data"] == {"y": "2", "z": "3"}


async def test_custom_resources_from_runtime_crds_work_with_status(
    client: KubeClient, namespace: str, crds: None
) -> None:
    export = {"metadata": {"name": "web", "namespace": namespace}}
    created = await client.create(SERVICE_EXPORTS, export)
    assert created["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
    conditions = [
        {
            "type": "Valid",
            "status": "True",
            "reason": "Valid",
            "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    ]
    patched = await client.patch_status(SERVICE_EXPORTS, "web", {"status": {"conditions": conditions}}, namespace)
    assert patched["status"]["conditions"][0]["type"] == "Valid"

    # A write of the main resource does not touch status, a status write does not touch the rest.
    patched["metadata"].setdefault("labels", {})["x"] = "y"
    patched["status"] = {}
    replaced = await client.replace(SERVICE_EXPORTS, patched)
    assert replaced["status"]["conditions"][0]["type"] == "Valid"
    replaced["status"] = {"conditions": []}
    status_replaced = await client.replace_status(SERVICE_EXPORTS, replaced)
    assert status_replaced["metadata"]["labels"] == {"x": "y"}
    assert not status_replaced.get("status", {}).get("conditions")

    identity = await client.create(
        LABEL_IDENTITIES, {"metadata": {"name": "abc"}, "spec": {"label": "ns:&pod:", "id": 1}}
    )
    assert "namespace" not in identity["metadata"]


async def test_a_resource_whose_crd_is_missing_is_not_found(client: KubeClient) -> None:
    missing = Resource("example.com", "v1", "widgets", "Widget", True)
    with pytest.raises(NotFound):
        await client.list(missing, "default")


async def test_delete_preconditions_and_propagation(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIG_MAPS, config_map("a", namespace))
    with pytest.raises(Conflict):
        await client.delete(CONFIG_MAPS, "a", namespace, uid="not-the-uid")
    with pytest.raises(Conflict):
        await client.delete(CONFIG_MAPS, "a", namespace, resource_version="1")
    await client.delete(
        CONFIG_MAPS,
        "a",
        namespace,
        uid=created["metadata"]["uid"],
        resource_version=created["metadata"]["resourceVersion"],
        propagation_policy="Background",
    )
    with pytest.raises(NotFound):
        await client.delete(CONFIG_MAPS, "a", namespace)


async def test_a_wrong_token_is_unauthorized(sandbox: SandboxServer) -> None:
    configuration = bearer_configuration(sandbox.url, "not-a-token", ca_file=sandbox.ca_path)
    async with KubeClient.from_configuration(configuration) as kube:
        with pytest.raises(Unauthorized):
            await kube.list(CONFIG_MAPS, "default")


async def test_the_admin_token_works_through_a_bearer_configuration(sandbox: SandboxServer) -> None:
    configuration = bearer_configuration(sandbox.url, sandbox.admin_token, ca_file=sandbox.ca_path)
    async with KubeClient.from_configuration(configuration) as kube:
        assert (await kube.get(SERVICES, "kubernetes", "default"))["metadata"]["name"] == "kubernetes"


async def test_an_unreachable_server_is_a_temporary_connection_failure(sandbox: SandboxServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    configuration = bearer_configuration(f"https://127.0.0.1:{free_port}", "t", ca_file=sandbox.ca_path)
    async with KubeClient.from_configuration(configuration) as kube:
        with pytest.raises(ConnectionFailed) as caught:
            await kube.server_version()
        sent = sum(
            sample.value
            for metric in kube.metrics.requests.collect()
            for sample in metric.samples
            if sample.name.endswith("_total") and sample.labels["code"] == NO_ANSWER
        )
    assert isinstance(caught.value, TemporaryError)
    # Never sent, so tried again at once on new connections (another endpoint of a Service, maybe).
    assert sent == CONNECT_ATTEMPTS


async def test_connect_loads_a_named_context(sandbox: SandboxServer) -> None:
    kube = await connect(sandbox.kubeconfig_path, context=None)
    try:
        assert kube.host == sandbox.url
    finally:
        await kube.close()


async def test_connect_without_a_kubeconfig_uses_the_pods_service_account(
    sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(sandbox.admin_token)
    (account / "ca.crt").write_bytes(sandbox.ca_path.read_bytes())
    monkeypatch.setattr(kube_config, "_SERVICE_ACCOUNT_DIR", account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", sandbox.host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(sandbox.port))
    async with await connect() as kube:
        assert kube.host == f"https://{sandbox.host}:{sandbox.port}"
        assert (await kube.get(SERVICES, "kubernetes", "default"))["metadata"]["name"] == "kubernetes"


async def test_connections_to_the_server_keep_tcp_keepalive_on(client: KubeClient) -> None:
    """An idle watch whose server went away is noticed by TCP keepalive (about 30 s), not only
    by the informer's inactivity timer."""
    await client.server_version()
    session = client._api.rest_client.pool_manager
    sockets = [
        protocol.transport.get_extra_info("socket")
        for connections in session.connector._conns.values()
        for protocol, _ in connections
        if protocol.transport is not None
    ]
    assert sockets, "no pooled connection to look at"
    for sock in sockets:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE == 3
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == KEEPALIVE_INTERVAL == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == KEEPALIVE_PROBES == 2
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == USER_TIMEOUT_MS == 5000
