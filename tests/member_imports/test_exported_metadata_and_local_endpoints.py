"""What the importer adds to the hub's imports from its own cluster and the ServiceExports:
the exported labels and annotations on the ServiceImport, and this cluster's own share of an
Endpoints import written from its Service's ready endpoints (member.imports.local_endpoints)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kube.client import KubeClient
from kube.informer import Informer
from kube.resources import ENDPOINT_SLICES, ENDPOINTS
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import SERVICE_IMPORTS
from member.hubclient import Upsert
from member.imports.services import ANNOTATION_EXPORTED_ANNOTATIONS, ANNOTATION_EXPORTED_LABELS
from tests.member_imports.conftest import CLUSTER_ID, Appliers, eventually
from tests.member_imports.messages import endpoints_import, service_import
from tests.member_imports.test_at_scale import CACHED_DISCOVERY, _delta

IMPORTED = names.ANNOTATION_IMPORTED_SERVICE
LOCAL_CLUSTER_ID = "multicluster.antrea.io/local-cluster-id"


def _with_metadata(upsert: Upsert, labels: dict[str, str], annotations: dict[str, str]) -> Upsert:
    message = pb.ResourceImport()
    message.CopyFrom(upsert.resource)
    message.service_import.labels.update(labels)
    message.service_import.annotations.update(annotations)
    return Upsert(message)


async def _metadata(member: KubeClient, name: str) -> tuple[dict[str, str], dict[str, str]]:
    imported = await member.get(SERVICE_IMPORTS, name, "default")
    return imported["metadata"].get("labels") or {}, imported["metadata"].get("annotations") or {}


async def test_the_exported_labels_and_annotations_go_on_the_service_import_beside_the_importers_own(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await applier.handle(
        _with_metadata(
            service_import("default", "web"),
            {"dummy-label": "true", IMPORTED: "false"},  # the importer's own key wins
            {"dummy-annotation": "true", LOCAL_CLUSTER_ID: "elsewhere"},
        )
    )
    labels, annotations = await _metadata(member, "web")
    assert labels == {"dummy-label": "true", IMPORTED: "true"}
    assert annotations == {
        "dummy-annotation": "true",
        IMPORTED: "true",
        LOCAL_CLUSTER_ID: CLUSTER_ID,
        ANNOTATION_EXPORTED_LABELS: "dummy-label",
        ANNOTATION_EXPORTED_ANNOTATIONS: "dummy-annotation",
    }


async def test_a_key_the_export_drops_is_removed_and_a_key_someone_else_set_stays(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    upsert = service_import("default", "web")
    await applier.handle(_with_metadata(upsert, {"a": "1", "b": "1"}, {"note": "x"}))
    await member.patch(SERVICE_IMPORTS, "web", {"metadata": {"labels": {"team": "blue"}}}, "default")

    await applier.handle(_with_metadata(upsert, {"a": "2"}, {}))
    labels, annotations = await _metadata(member, "web")
    assert labels == {"a": "2", "team": "blue", IMPORTED: "true"}
    assert "note" not in annotations and ANNOTATION_EXPORTED_ANNOTATIONS not in annotations
    assert annotations[ANNOTATION_EXPORTED_LABELS] == "a"

    await applier.handle(upsert)  # nothing exported any more
    labels, annotations = await _metadata(member, "web")
    assert labels == {"team": "blue", IMPORTED: "true"}
    assert ANNOTATION_EXPORTED_LABELS not in annotations


async def test_an_import_without_exported_metadata_writes_the_service_import_as_before(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await applier.handle(service_import("default", "web"))
    labels, annotations = await _metadata(member, "web")
    assert labels == {IMPORTED: "true"}
    assert annotations == {IMPORTED: "true", LOCAL_CLUSTER_ID: CLUSTER_ID}


# ---- this cluster's own share of an Endpoints import ---------------------------------------------


@pytest.fixture
async def local_endpoints(member: KubeClient) -> AsyncIterator[Informer]:
    """This cluster's Endpoints, watched as the ServiceExportController watches them."""
    informer = Informer(member, ENDPOINTS, label_selector=f"!{IMPORTED}")
    await informer.wait_synced()
    yield informer
    await informer.stop()


async def _seen(informer: Informer, name: str, *, annotated: bool = False) -> None:
    async def cached() -> bool:
        obj = informer.get(name, "default")
        return obj is not None and (not annotated or bool(obj["metadata"].get("annotations")))

    await eventually(cached)


async def _local_service_endpoints(member: KubeClient, name: str, ips: list[str], **extra: Any) -> None:
    body = {
        "metadata": {"name": name},
        "subsets": [
            {
                "addresses": [{"ip": ip} for ip in ips],
                "notReadyAddresses": [{"ip": "10.1.9.9"}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9090}],
            }
        ],
        **extra,
    }
    await member.create(ENDPOINTS, body, "default")


async def _slices(member: KubeClient, name: str) -> dict[str, list[tuple[list[str], list[Any]]]]:
    found = await member.list(ENDPOINT_SLICES, "default", label_selector=f"{names.LABEL_MCS_SERVICE_NAME}={name}")
    by_cluster: dict[str, list[tuple[list[str], list[Any]]]] = {}
    for item in found.items:
        cluster = item["metadata"]["labels"][names.LABEL_MCS_SOURCE_CLUSTER]
        addresses = sorted(a for e in item["endpoints"] for a in e["addresses"])
        by_cluster.setdefault(cluster, []).append((addresses, item["ports"]))
    return by_cluster


def _clusterip_import(name: str) -> Upsert:
    """ClusterIP mode: each cluster's one endpoint is its Service's ClusterIP, with the Service port."""
    return endpoints_import("default", name, {"east": ["10.96.0.20"], CLUSTER_ID: ["10.97.0.30"]}, port=80)


async def test_this_clusters_share_is_its_services_ready_pod_endpoints_not_its_cluster_ip(
    member: KubeClient, appliers: Appliers, local_endpoints: Informer
) -> None:
    await _local_service_endpoints(member, "web", ["10.1.0.5", "10.1.0.6"])
    applier = await appliers.new(local_endpoints=local_endpoints)
    await _seen(local_endpoints, "web")
    await applier.handle(_clusterip_import("web"))

    # The hub merged only "http" for this cluster: "metrics" stays out; target port 8080, ready only.
    http = [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert await _slices(member, "web") == {
        "east": [(["10.96.0.20"], [{"name": "http", "port": 80, "protocol": "TCP"}])],
        CLUSTER_ID: [(["10.1.0.5", "10.1.0.6"], http)],
    }
    endpoints = await member.get(ENDPOINTS, "antrea-mc-web", "default")
    assert [[a["ip"] for a in s["addresses"]] for s in endpoints["subsets"]] == [
        ["10.96.0.20"],
        ["10.1.0.5", "10.1.0.6"],
    ]


async def test_this_clusters_share_follows_its_pods_and_costs_nothing_when_nothing_changed(
    member: KubeClient, appliers: Appliers, local_endpoints: Informer
) -> None:
    await _local_service_endpoints(member, "web", ["10.1.0.5"])
    await _local_service_endpoints(member, "other", ["10.1.0.7"])
    applier = await appliers.new(local_endpoints=local_endpoints, discovery_ttl=CACHED_DISCOVERY)
    await _seen(local_endpoints, "other")
    await applier.handle(_clusterip_import("web"))
    assert (await _slices(member, "web"))[CLUSTER_ID][0][0] == ["10.1.0.5"]

    # A Pod becomes ready: no new import from the hub (its ClusterIP did not change), yet the slice follows.
    live = await member.get(ENDPOINTS, "web", "default")
    live["subsets"][0]["addresses"].append({"ip": "10.1.0.8"})
    await member.replace(ENDPOINTS, live)

    async def followed() -> bool:
        return (await _slices(member, "web")).get(CLUSTER_ID, [([], [])])[0][0] == ["10.1.0.5", "10.1.0.8"]

    await eventually(followed)
    await applier.applier.settled()

    # Changes that do not touch what is imported cost no request: another Service's Endpoints,
    # an annotation, the hub sending the same import again.
    before = member.metrics.counts()
    await member.patch(ENDPOINTS, "other", {"metadata": {"annotations": {"x": "1"}}}, "default")
    await member.patch(ENDPOINTS, "web", {"metadata": {"annotations": {"x": "1"}}}, "default")
    await _seen(local_endpoints, "web", annotated=True)
    await asyncio.sleep(0.2)
    await applier.handle(_clusterip_import("web"))
    delta = _delta(member, before)
    assert delta == {("patch", "endpoints", "200"): 2}  # the two patches above, nothing of the importer's


async def test_when_its_service_has_no_ready_endpoint_this_cluster_gets_no_share(
    member: KubeClient, appliers: Appliers, local_endpoints: Informer
) -> None:
    applier = await appliers.new(local_endpoints=local_endpoints)
    await applier.handle(_clusterip_import("web"))
    assert set(await _slices(member, "web")) == {"east"}
    endpoints = await member.get(ENDPOINTS, "antrea-mc-web", "default")
    assert [[a["ip"] for a in s["addresses"]] for s in endpoints["subsets"]] == [["10.96.0.20"]]


async def test_an_import_without_a_share_of_this_cluster_is_written_as_the_hub_merged_it(
    member: KubeClient, appliers: Appliers, local_endpoints: Informer
) -> None:
    await _local_service_endpoints(member, "web", ["10.1.0.5"])
    applier = await appliers.new(local_endpoints=local_endpoints)
    await _seen(local_endpoints, "web")
    await applier.handle(endpoints_import("default", "web", {"east": ["10.96.0.20"]}, port=80))
    assert await _slices(member, "web") == {
        "east": [(["10.96.0.20"], [{"name": "http", "port": 80, "protocol": "TCP"}])]
    }
