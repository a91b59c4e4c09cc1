"""ensure / ensure_status / delete_if_owned against the sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from kube.apply import (
    NameTaken,
    Outcome,
    OwnedCheck,
    contains,
    delete_if_owned,
    delete_object,
    ensure,
    ensure_status,
)
from kube.client import KubeClient
from kube.errors import Conflict, NotFound, NotOwned, TemporaryError
from kube.resources import CONFIG_MAPS, SERVICES, Resource
from mcapi.resources import SERVICE_EXPORTS


def has_annotation(key: str, value: str) -> OwnedCheck:
    """Owned when metadata.annotations[key] == value."""
    return lambda obj: (obj.get("metadata", {}).get("annotations") or {}).get(key) == value


OWNED = has_annotation("multicluster.antrea.io/imported-service", "true")


def imported_service(namespace: str, port: int = 80) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "antrea-mc-web",
            "namespace": namespace,
            "annotations": {"multicluster.antrea.io/imported-service": "true"},
        },
        "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": port, "protocol": "TCP"}]},
    }


async def test_ensure_creates_a_missing_object(client: KubeClient, namespace: str) -> None:
    applied = await ensure(client, SERVICES, imported_service(namespace), OWNED)
    assert applied.outcome is Outcome.CREATED
    assert applied.object["spec"]["clusterIP"]


async def test_a_field_marked_absent_is_left_out_of_a_created_object(client: KubeClient, namespace: str) -> None:
    desired = imported_service(namespace)
    desired["spec"]["selector"] = None
    desired["metadata"]["labels"] = {"kept": "1", "absent": None}
    applied = await ensure(client, SERVICES, desired, OWNED)
    assert applied.outcome is Outcome.CREATED
    live = await client.get(SERVICES, "antrea-mc-web", namespace)
    assert "selector" not in live["spec"]
    assert live["metadata"]["labels"] == {"kept": "1"}


async def test_ensuring_the_same_object_again_writes_nothing(client: KubeClient, namespace: str) -> None:
    first = await ensure(client, SERVICES, imported_service(namespace), OWNED)
    second = await ensure(client, SERVICES, imported_service(namespace), OWNED)
    assert second.outcome is Outcome.UNCHANGED
    # Server-defaulted fields (clusterIP, targetPort, ...) are not differences.
    assert second.object["metadata"]["resourceVersion"] == first.object["metadata"]["resourceVersion"]


async def test_a_changed_managed_field_is_patched(client: KubeClient, namespace: str) -> None:
    first = await ensure(client, SERVICES, imported_service(namespace), OWNED)
    changed = await ensure(client, SERVICES, imported_service(namespace, port=8080), OWNED)
    assert changed.outcome is Outcome.UPDATED
    assert [p["port"] for p in changed.object["spec"]["ports"]] == [8080]
    assert changed.object["spec"]["clusterIP"] == first.object["spec"]["clusterIP"]


async def test_an_object_someone_else_made_is_refused(client: KubeClient, namespace: str) -> None:
    theirs = imported_service(namespace)
    theirs["metadata"]["annotations"] = {}
    await client.create(SERVICES, theirs)
    with pytest.raises(NotOwned):
        await ensure(client, SERVICES, imported_service(namespace), OWNED)
    with pytest.raises(NotOwned):
        await delete_if_owned(client, SERVICES, "antrea-mc-web", namespace, OWNED)
    assert (await client.get(SERVICES, "antrea-mc-web", namespace))["metadata"].get("annotations") in (None, {})


async def test_a_none_value_removes_a_field(client: KubeClient, namespace: str) -> None:
    desired: dict[str, Any] = {
        "metadata": {"name": "a", "namespace": namespace, "labels": {"x": "1", "y": "2"}},
        "data": {"k": "v"},
    }
    await ensure(client, CONFIG_MAPS, desired)
    desired["metadata"]["labels"] = {"x": "1", "y": None}
    applied = await ensure(client, CONFIG_MAPS, desired)
    assert applied.outcome is Outcome.UPDATED
    assert applied.object["metadata"]["labels"] == {"x": "1"}
    assert (await ensure(client, CONFIG_MAPS, desired)).outcome is Outcome.UNCHANGED


async def test_delete_if_owned_deletes_ours_and_ignores_missing(client: KubeClient, namespace: str) -> None:
    await ensure(client, SERVICES, imported_service(namespace), OWNED)
    assert await delete_if_owned(client, SERVICES, "antrea-mc-web", namespace, OWNED)
    with pytest.raises(NotFound):
        await client.get(SERVICES, "antrea-mc-web", namespace)
    assert not await delete_if_owned(client, SERVICES, "antrea-mc-web", namespace, OWNED)


async def test_ensure_status_writes_only_a_differing_status(client: KubeClient, namespace: str, crds: None) -> None:
    live = await client.create(SERVICE_EXPORTS, {"metadata": {"name": "web", "namespace": namespace}})
    condition = {"type": "Valid", "status": "True", "reason": "Valid", "message": ""}
    # metav1.Condition requires lastTransitionTime: a real apiserver (and the sandbox) refuses it without.
    status = {"conditions": [{**condition, "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
    source = DictSource(client)
    written = await ensure_status(client, SERVICE_EXPORTS, live, status, source=source)
    assert written["metadata"]["resourceVersion"] != live["metadata"]["resourceVersion"]
    assert source.objects[(namespace, "web")] == written  # the source hears of the write
    again = await ensure_status(client, SERVICE_EXPORTS, written, status)
    assert again is written
    with pytest.raises(Conflict):
        await ensure_status(client, SERVICE_EXPORTS, live, {"conditions": []})


def test_contains_compares_only_what_is_desired() -> None:
    live = {"spec": {"ports": [{"port": 80, "targetPort": 80}], "clusterIP": "10.96.0.9"}}
    assert contains(live, {"spec": {"ports": [{"port": 80}]}})
    assert not contains(live, {"spec": {"ports": [{"port": 80}, {"port": 81}]}})
    assert not contains(live, {"spec": {"type": "ClusterIP"}})
    assert contains(live, {"spec": {"type": None}})


async def test_an_object_being_deleted_is_retried_later_not_patched(client: KubeClient, namespace: str) -> None:
    desired = {"metadata": {"name": "a", "namespace": namespace, "finalizers": ["example.com/hold"]}, "data": {}}
    await ensure(client, CONFIG_MAPS, desired)
    await client.delete(CONFIG_MAPS, "a", namespace)
    with pytest.raises(TemporaryError):
        await ensure(client, CONFIG_MAPS, {**desired, "data": {"k": "v"}})
    await client.patch(CONFIG_MAPS, "a", {"metadata": {"finalizers": None}}, namespace)


class DictSource:
    """A controller's cache as ensure's LiveSource: what it was told, plus what it is told to hide."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.objects: dict[tuple[str | None, str], dict[str, Any]] = {}
        self.hidden: set[str] = set()
        self.taken: list[str] = []
        self.deletes: list[str] = []

    async def read(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
        return None if name in self.hidden else self.objects.get((namespace, name))

    async def read_taken(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any]:
        self.taken.append(name)
        return await self.client.get(resource, name, namespace)

    def wrote(self, obj: dict[str, Any]) -> None:
        self.objects[(obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj

    def deleted(self, obj: dict[str, Any]) -> None:
        self.deletes.append(obj["metadata"]["name"])
        self.objects.pop((obj["metadata"].get("namespace"), obj["metadata"]["name"]), None)


async def test_a_cache_as_the_source_costs_no_read_and_hears_every_write(client: KubeClient, namespace: str) -> None:
    source = DictSource(client)
    gets = client.metrics.total(verbs=["get"])
    created = await ensure(client, SERVICES, imported_service(namespace), OWNED, source=source)
    unchanged = await ensure(client, SERVICES, imported_service(namespace), OWNED, source=source)
    changed = await ensure(client, SERVICES, imported_service(namespace, port=8080), OWNED, source=source)
    outcomes = [created.outcome, unchanged.outcome, changed.outcome]
    assert outcomes == [Outcome.CREATED, Outcome.UNCHANGED, Outcome.UPDATED]
    assert client.metrics.total(verbs=["get"]) == gets
    assert source.objects[(namespace, "antrea-mc-web")] == changed.object


async def test_a_name_taken_by_an_object_the_source_does_not_show_is_read_and_refused(
    client: KubeClient, namespace: str
) -> None:
    theirs = imported_service(namespace)
    theirs["metadata"]["annotations"] = {"someone": "else"}
    await client.create(SERVICES, theirs)
    source = DictSource(client)
    with pytest.raises(NameTaken) as refused:
        await ensure(client, SERVICES, imported_service(namespace), OWNED, source=source)
    assert isinstance(refused.value, NotOwned)
    assert refused.value.object["metadata"]["annotations"] == {"someone": "else"}
    assert refused.value.resource == SERVICES and source.taken == ["antrea-mc-web"]


async def test_delete_object_deletes_only_the_object_it_was_given(client: KubeClient, namespace: str) -> None:
    source = DictSource(client)
    body = {"metadata": {"name": "a", "namespace": namespace}}
    first = (await ensure(client, CONFIG_MAPS, body, source=source)).object
    assert await delete_object(client, CONFIG_MAPS, first, source=source)
    assert source.deletes == ["a"]
    successor = await client.create(CONFIG_MAPS, {"metadata": {"name": "a", "namespace": namespace}})
    assert not await delete_object(client, CONFIG_MAPS, first, source=source)  # the uid no longer matches
    assert (await client.get(CONFIG_MAPS, "a", namespace))["metadata"]["uid"] == successor["metadata"]["uid"]
    await client.patch(CONFIG_MAPS, "a", {"data": {"k": "v"}}, namespace)
    with pytest.raises(Conflict):  # changed since it was read
        await delete_object(client, CONFIG_MAPS, successor, same_version=True)
    assert await delete_object(client, CONFIG_MAPS, await client.get(CONFIG_MAPS, "a", namespace), same_version=True)
