"""A CRD going away, or changing its spec: what its resources and their open watches do.

Found on kube-apiserver v1.28: deleting a CRD marks it Terminating (reason
InstanceDeletionPending, then InstanceDeletionInProgress while its custom resources are
deleted); meanwhile its resources are still served - lists, gets, updates and new watches
work - but creates are refused with 405. Once the CRD is gone its paths are 404 and its open
watches end: the stream just closes (no ERROR event), about a second later. A change of the
spec rebuilds the resource's storage the same way: open watches close, and a watch from a
resourceVersion before the change is 410 Expired.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import CRDS, ProbeCRD

# A real apiserver polls for remaining custom resources every 5 s and tears the storage down 1 s later.
GONE_WITHIN = 60


def _terminating(crd: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Terminating"), None)


async def _create_held(cluster: Cluster, crd: ProbeCRD, namespace: str) -> dict[str, Any]:
    held = crd.object("held", "east")
    held["metadata"]["finalizers"] = ["test.mchub.io/hold"]
    created = await cluster.request("POST", crd.path(namespace), body=held)
    assert created.status == 201, created.body
    body: dict[str, Any] = created.body
    return body


async def _until_deletion_starts(cluster: Cluster, crd: ProbeCRD, namespace: str, since: str) -> None:
    """The CRD's finalizer deletes its custom resources soon after the DELETE, not within it."""
    query = {"fieldSelector": "metadata.name=held", "resourceVersion": since, "timeoutSeconds": "15"}
    async with asyncio.timeout(15):
        async for event in cluster.watch(crd.path(namespace), query):
            if event["object"]["metadata"].get("deletionTimestamp"):
                return


async def _release(cluster: Cluster, crd: ProbeCRD, namespace: str) -> None:
    released = await cluster.request(
        "PATCH",
        f"{crd.path(namespace)}/held",
        body={"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert released.status == 200, released.body


async def test_a_deleted_crd_is_terminating_serves_what_remains_and_refuses_creates(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    created = await _create_held(cluster, probe_crd, namespace)
    deleted = await cluster.request("DELETE", f"{CRDS}/{probe_crd.name}")
    assert deleted.status == 200 and deleted.body["metadata"]["deletionTimestamp"]
    marked = _terminating(deleted.body)
    assert marked is not None and marked["status"] == "True"
    assert marked["reason"] in ("InstanceDeletionPending", "InstanceDeletionInProgress")
    await _until_deletion_starts(cluster, probe_crd, namespace, created["metadata"]["resourceVersion"])

    crd = await cluster.request("GET", f"{CRDS}/{probe_crd.name}")
    assert crd.status == 200
    condition = _terminating(crd.body)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    )
    listed = await cluster.request("GET", probe_crd.path(namespace))
    assert listed.status == 200 and [i["metadata"]["name"] for i in listed.body["items"]] == ["held"]
    current = await cluster.request("GET", f"{probe_crd.path(namespace)}/held")
    assert current.status == 200 and current.body["metadata"]["deletionTimestamp"]
    current.body["spec"]["clusterID"] = "west"
    updated = await cluster.request("PUT", f"{probe_crd.path(namespace)}/held", body=current.body)
    assert updated.status == 200, updated.body
    async with asyncio.timeout(15):
        async for event in cluster.watch(probe_crd.path(namespace), {"timeoutSeconds": "15"}):
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "held")
            break

    refused = await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("late", "east"))
    assert refused.status == 405
    assert refused.body["reason"] == "MethodNotAllowed"
    assert refused.body["message"] == "create not allowed while custom resource definition is terminating"
    assert refused.body["details"] == {"group": probe_crd.group, "kind": probe_crd.plural}
    # Only the create verb is refused. An update never creates a custom resource, terminating or not...
    put = await cluster.request("PUT", f"{probe_crd.path(namespace)}/put", body=probe_crd.object("put", "east"))
    assert put.status == 404 and put.body["reason"] == "NotFound", put.body
    # ...and a server-side apply (a patch) still creates one. A real apiserver's CRD finalizer would
    # delete it only after its minute-long wait for the others times out, so the test deletes it.
    applied = await cluster.request(
        "PATCH",
        f"{probe_crd.path(namespace)}/applied",
        body=probe_crd.object("applied", "east"),
        query={"fieldManager": "test"},
        content_type="application/apply-patch+yaml",
    )
    assert applied.status == 201, applied.body
    removed = await cluster.request("DELETE", f"{probe_crd.path(namespace)}/applied")
    assert removed.status == 200, removed.body

    await _release(cluster, probe_crd, namespace)
    await cluster.wait_deleted(CRDS, probe_crd.name, within=GONE_WITHIN)


async def test_the_watches_of_a_deleted_crd_close_once_it_is_gone_without_an_error(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    plain = await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("plain", "east"))
    assert plain.status == 201, plain.body
    created = await _create_held(cluster, probe_crd, namespace)
    since = created["metadata"]["resourceVersion"]
    everywhere = f"/apis/{probe_crd.group}/{probe_crd.version}/{probe_crd.plural}"
    seen: dict[str, list[tuple[str, str]]] = {"namespace": [], "everywhere": []}
    first: dict[str, tuple[str, str]] = {}
    opened = {key: asyncio.Event() for key in seen}
    plain_gone = {key: asyncio.Event() for key in seen}
    gone_when_closed: dict[str, bool] = {}

    async def follow(key: str, path: str) -> None:
        # From before held's creation: its ADDED event shows the stream is open.
        query = {"resourceVersion": plain.body["metadata"]["resourceVersion"], "allowWatchBookmarks": "true"}
        async for event in cluster.watch(path, query):
            if event["type"] == "BOOKMARK":
                continue
            if not opened[key].is_set():
                first[key] = (event["type"], event["object"]["metadata"]["name"])
                opened[key].set()
            else:
                seen[key].append((event["type"], event["object"]["metadata"]["name"]))
                if seen[key][-1] == ("DELETED", "plain"):
                    plain_gone[key].set()
        crd = await cluster.request("GET", f"{CRDS}/{probe_crd.name}")
        gone_when_closed[key] = crd.status == 404

    async with asyncio.timeout(GONE_WITHIN), asyncio.TaskGroup() as streams:
        streams.create_task(follow("namespace", probe_crd.path(namespace)))
        streams.create_task(follow("everywhere", everywhere))
        await asyncio.gather(*(event.wait() for event in opened.values()))
        deleted = await cluster.request("DELETE", f"{CRDS}/{probe_crd.name}")
        assert deleted.status == 200, deleted.body
        await _until_deletion_starts(cluster, probe_crd, namespace, since)
        # The finalizer deletes the resources one by one in name order (held, then plain): the
        # release waits for plain's deletion, so that held's cannot overtake it.
        await asyncio.gather(*(event.wait() for event in plain_gone.values()))
        # Still open while the CRD is terminating: the held object's deletion comes on the same streams.
        await _release(cluster, probe_crd, namespace)

    assert first == {"namespace": ("ADDED", "held"), "everywhere": ("ADDED", "held")}
    expected = [("MODIFIED", "held"), ("DELETED", "plain"), ("DELETED", "held")]
    assert seen == {"namespace": expected, "everywhere": expected}
    assert gone_when_closed == {"namespace": True, "everywhere": True}
    listed = await cluster.request("GET", probe_crd.path(namespace))
    assert listed.status == 404
    rewatched = await cluster.request("GET", everywhere, query={"watch": "true", "resourceVersion": since})
    assert rewatched.status == 404


async def test_a_change_of_a_crds_spec_closes_its_watches_and_expires_older_resource_versions(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    empty = await cluster.request("GET", probe_crd.path(namespace))
    assert empty.status == 200 and empty.body["items"] == []
    created = await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))
    assert created.status == 201, created.body
    since = created.body["metadata"]["resourceVersion"]
    crd = (await cluster.request("GET", f"{CRDS}/{probe_crd.name}")).body
    crd["spec"]["versions"][0]["additionalPrinterColumns"].append(
        {"name": "Extra", "type": "string", "jsonPath": ".spec.extra"}
    )
    opened = asyncio.Event()
    first: list[tuple[str, str]] = []
    events: list[dict[str, Any]] = []

    async def follow() -> None:
        # From before p1's creation: its ADDED event shows the stream is open.
        query = {"resourceVersion": empty.body["metadata"]["resourceVersion"]}
        async for event in cluster.watch(probe_crd.path(namespace), query):
            if not opened.is_set():
                first.append((event["type"], event["object"]["metadata"]["name"]))
                opened.set()
            else:
                events.append(event)

    async with asyncio.timeout(15), asyncio.TaskGroup() as streams:
        streams.create_task(follow())
        await opened.wait()
        changed = await cluster.request("PUT", f"{CRDS}/{probe_crd.name}", body=crd)
        assert changed.status == 200, changed.body
    assert first == [("ADDED", "p1")]
    assert events == []

    async with asyncio.timeout(15):
        rewatched = [event async for event in cluster.watch(probe_crd.path(namespace), {"resourceVersion": since})]
    assert len(rewatched) == 1 and rewatched[0]["type"] == "ERROR"
    assert rewatched[0]["object"]["code"] == 410 and rewatched[0]["object"]["reason"] == "Expired"
    assert rewatched[0]["object"]["message"].startswith(f"too old resource version: {since} (")

    listed = await cluster.request("GET", probe_crd.path(namespace))
    assert listed.status == 200 and [i["metadata"]["name"] for i in listed.body["items"]] == ["p1"]
    later = await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p2", "east"))
    assert later.status == 201, later.body
    query = {"resourceVersion": listed.body["metadata"]["resourceVersion"], "timeoutSeconds": "15"}
    async with asyncio.timeout(15):
        async for event in cluster.watch(probe_crd.path(namespace), query):
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p2")
            break
