"""EventRecorder against the sandbox: Events written, repeats aggregated into a count."""

from __future__ import annotations

from kube.client import KubeClient
from kube.events import EventRecorder
from kube.resources import CONFIG_MAPS, EVENTS


async def test_an_event_describes_the_object_it_is_about(client: KubeClient, namespace: str) -> None:
    cm = await client.create(CONFIG_MAPS, {"metadata": {"name": "a", "namespace": namespace}})
    recorder = EventRecorder(client, "mchub-test", host="node-1")
    event = await recorder.normal(cm, "Exported", "exported to the ClusterSet")
    assert event is not None
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["involvedObject"]["uid"] == cm["metadata"]["uid"]
    assert event["type"] == "Normal"
    assert event["source"] == {"component": "mchub-test", "host": "node-1"}
    assert event["count"] == 1


async def test_repeated_events_are_counted_on_one_event(client: KubeClient, namespace: str) -> None:
    cm = await client.create(CONFIG_MAPS, {"metadata": {"name": "a", "namespace": namespace}})
    recorder = EventRecorder(client, "mchub-test")
    for _ in range(3):
        await recorder.warning(cm, "ExportFailed", "port conflict")
    await recorder.warning(cm, "ExportFailed", "another message")
    events = (await client.list(EVENTS, namespace)).items
    counts = sorted((e["message"], e["count"]) for e in events)
    assert counts == [("another message", 1), ("port conflict", 3)]


async def test_an_expired_aggregate_starts_a_new_event(client: KubeClient, namespace: str) -> None:
    cm = await client.create(CONFIG_MAPS, {"metadata": {"name": "a", "namespace": namespace}})
    recorder = EventRecorder(client, "mchub-test")
    first = await recorder.normal(cm, "Synced", "ok")
    assert first is not None
    await client.delete(EVENTS, first["metadata"]["name"], namespace)
    second = await recorder.normal(cm, "Synced", "ok")
    assert second is not None
    assert second["count"] == 1


async def test_a_failed_write_is_logged_not_raised(client: KubeClient) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "no-such-namespace"}}
    recorder = EventRecorder(client, "mchub-test")
    assert await recorder.normal(ghost, "Synced", "ok") is None
