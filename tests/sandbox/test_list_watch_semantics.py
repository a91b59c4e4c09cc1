"""Lists and watches: selectors, paging, resuming, 410 Gone, bookmarks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from kubernetes_asyncio import client

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import ProbeCRD


async def make_configmaps(cluster: Cluster, namespace: str, count: int, **labels: str) -> None:
    for i in range(count):
        meta = client.V1ObjectMeta(name=f"cm-{i:02d}", labels={**labels, "index": str(i)})
        await cluster.core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=meta))


async def next_about(name: str, stream: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """The stream's next event about name.

    A real controller-manager adds kube-root-ca.crt to every new namespace, sometimes after
    the test's own first object: a namespace-wide watch may see that first.
    """
    async for event in stream:
        if event["object"]["metadata"]["name"] == name:
            return event
    raise AssertionError(f"the watch ended with no event about {name}")


async def test_label_selectors_filter_lists(cluster: Cluster, namespace: str) -> None:
    await make_configmaps(cluster, namespace, 4, app="demo")
    core = cluster.core
    picked = await core.list_namespaced_config_map(namespace, label_selector="app=demo,index in (1,3)")
    assert [c.metadata.name for c in picked.items] == ["cm-01", "cm-03"]
    excluded = await core.list_namespaced_config_map(namespace, label_selector="app=demo,index!=0")
    assert [c.metadata.name for c in excluded.items] == ["cm-01", "cm-02", "cm-03"]
    absent = await core.list_namespaced_config_map(namespace, label_selector="!app")
    assert "cm-00" not in [c.metadata.name for c in absent.items]


async def test_field_selectors_filter_by_name_and_namespace(cluster: Cluster, namespace: str) -> None:
    await make_configmaps(cluster, namespace, 3)
    by_name = await cluster.core.list_config_map_for_all_namespaces(
        field_selector=f"metadata.name=cm-01,metadata.namespace={namespace}"
    )
    assert [(c.metadata.namespace, c.metadata.name) for c in by_name.items] == [(namespace, "cm-01")]
    others = await cluster.core.list_namespaced_config_map(namespace, field_selector="metadata.name!=cm-01")
    assert "cm-01" not in [c.metadata.name for c in others.items]


async def test_an_unsupported_field_selector_is_400(cluster: Cluster, namespace: str) -> None:
    reply = await cluster.request(
        "GET", f"/api/v1/namespaces/{namespace}/configmaps", query={"fieldSelector": "data.x=1"}
    )
    assert reply.status == 400
    assert reply.body["message"] == '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    # Kinds with field selectors of their own (Secrets: type) word it differently.
    reply = await cluster.request(
        "GET", f"/api/v1/namespaces/{namespace}/secrets", query={"fieldSelector": "data.x=1", "watch": "true"}
    )
    assert reply.status == 400
    assert reply.body["message"] == "field label not supported: data.x"


async def test_limit_and_continue_page_through_a_list(cluster: Cluster, namespace: str) -> None:
    await make_configmaps(cluster, namespace, 5, app="paged")
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await cluster.core.list_namespaced_config_map(
            namespace, label_selector="app=paged", limit=2, _continue=token
        )
        seen += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"cm-{i:02d}" for i in range(5)]
    assert pages == 3


async def test_a_watch_from_an_expired_resource_version_gets_410_then_a_relist_resumes(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    # Resources of a new CRD: a real apiserver's watch cache for them begins after the CRD was
    # made, so resourceVersion 1 is before its window for sure (for long-served kinds such as
    # ConfigMaps that depends on the cluster's history).
    path = probe_crd.path(namespace)
    events = [e async for e in cluster.watch(path, {"resourceVersion": "1", "timeoutSeconds": "5"})]
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] in ("Expired", "Gone")

    listed = await cluster.request("GET", path)
    query = {"resourceVersion": listed.body["metadata"]["resourceVersion"], "timeoutSeconds": "10"}
    stream = cluster.watch(path, query)
    await cluster.request("POST", path, body=probe_crd.object("after-relist", "east"))
    async with asyncio.timeout(10):
        async for event in stream:
            if event["object"]["metadata"]["name"] == "after-relist":
                assert event["type"] == "ADDED"
                break


async def test_a_watch_resumes_after_a_resource_version_with_every_later_change(
    cluster: Cluster, namespace: str
) -> None:
    core = cluster.core
    first = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="tracked"), data={"v": "1"})
    )
    first.data = {"v": "2"}
    await core.replace_namespaced_config_map("tracked", namespace, first)
    await core.delete_namespaced_config_map("tracked", namespace)
    query = {"resourceVersion": first.metadata.resource_version, "timeoutSeconds": "10"}
    seen = []
    async with asyncio.timeout(10):
        async for event in cluster.watch(f"/api/v1/namespaces/{namespace}/configmaps", query):
            if event["object"]["metadata"]["name"] == "tracked":
                seen.append(event["type"])
            if event["type"] == "DELETED":
                break
    assert seen == ["MODIFIED", "DELETED"]


async def test_a_label_selected_watch_reports_objects_leaving_the_selection_as_deleted(
    cluster: Cluster, namespace: str
) -> None:
    core = cluster.core
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="mover", labels={"team": "a"}))
    )
    query = {"resourceVersion": created.metadata.resource_version, "labelSelector": "team=a", "timeoutSeconds": "10"}
    stream = cluster.watch(f"/api/v1/namespaces/{namespace}/configmaps", query)
    moved = await core.patch_namespaced_config_map("mover", namespace, {"metadata": {"labels": {"team": "b"}}})
    async with asyncio.timeout(10):
        event = await anext(aiter(stream))
    assert event["type"] == "DELETED"
    # The object as the watch last matched it, at the resourceVersion of the change.
    assert event["object"]["metadata"]["labels"]["team"] == "a"
    assert event["object"]["metadata"]["resourceVersion"] == moved.metadata.resource_version


async def test_a_watch_allowing_bookmarks_gets_a_bookmark_before_it_times_out(cluster: Cluster, namespace: str) -> None:
    """A real apiserver sends a bookmark about 2 s before timeoutSeconds; the sandbox does too.

    The real one only bookmarks a resourceVersion newer than the watch's own, and its watch
    cache learns newer ones from changes to the resource: so something changes first.
    """
    listed = await cluster.core.list_namespaced_config_map(namespace)
    query = {
        "resourceVersion": listed.metadata.resource_version,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "4",
    }
    stream = cluster.watch(f"/api/v1/namespaces/{namespace}/configmaps", query)
    first = asyncio.ensure_future(anext(stream))
    changed = await cluster.core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="change"))
    )
    assert (await first)["type"] == "ADDED"
    bookmark = None
    async for event in stream:
        if event["type"] == "BOOKMARK":
            bookmark = event
            break
    assert bookmark is not None
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(changed.metadata.resource_version)


async def test_watches_of_one_resource_each_see_a_change_as_their_selection_makes_it(
    cluster: Cluster, namespace: str
) -> None:
    core = cluster.core
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="mover", labels={"team": "a"}))
    )
    path, version = f"/api/v1/namespaces/{namespace}/configmaps", created.metadata.resource_version
    plain = [cluster.watch(path, {"resourceVersion": version, "timeoutSeconds": "10"}) for _ in range(2)]
    selected = cluster.watch(path, {"resourceVersion": version, "labelSelector": "team=a", "timeoutSeconds": "10"})
    moved = await core.patch_namespaced_config_map("mover", namespace, {"metadata": {"labels": {"team": "b"}}})
    async with asyncio.timeout(10):
        first, second, left = [await next_about("mover", s) for s in (*plain, selected)]
    assert first == second
    assert first["type"] == "MODIFIED" and first["object"]["metadata"]["labels"] == {"team": "b"}
    assert left["type"] == "DELETED" and left["object"]["metadata"]["labels"] == {"team": "a"}
    assert first["object"]["metadata"]["resourceVersion"] == left["object"]["metadata"]["resourceVersion"]
    assert left["object"]["metadata"]["resourceVersion"] == moved.metadata.resource_version
