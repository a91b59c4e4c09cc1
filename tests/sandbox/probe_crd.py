"""A throwaway CRD ("Probe") with a status subresource and printer columns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tests.sandbox.cluster import Cluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
Version = dict[str, Any]


def probe_version(name: str = "v1alpha1", schema: dict[str, Any] | None = None, *, storage: bool = True) -> Version:
    """One entry of spec.versions: status subresource, the printer columns, and schema (or the
    default one: spec and status keep whatever they hold)."""
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {"name": "Cluster ID", "type": "string", "jsonPath": ".spec.clusterID"},
            {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        "schema": {
            "openAPIV3Schema": schema
            or {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }


@dataclass(frozen=True)
class ProbeCRD:
    group: str
    version: str = "v1alpha1"
    plural: str = "probes"
    kind: str = "Probe"

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    def path(self, namespace: str, version: str | None = None) -> str:
        return f"/apis/{self.group}/{version or self.version}/namespaces/{namespace}/{self.plural}"

    def body(self, versions: list[Version] | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {"plural": self.plural, "singular": "probe", "kind": self.kind, "listKind": "ProbeList"},
                "versions": versions or [probe_version(self.version)],
            },
        }

    def object(self, name: str, cluster_id: str, version: str | None = None) -> dict[str, Any]:
        return {
            "apiVersion": f"{self.group}/{version or self.version}",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": {"clusterID": cluster_id},
        }


# The `new_probe_crd` fixture: `await new_probe_crd(versions=None)` gives a new, served ProbeCRD.
NewProbeCRD = Callable[..., Awaitable[ProbeCRD]]


async def wait_established(cluster: Cluster, name: str) -> dict[str, Any]:
    """Return the CRD once it is Established and every served version answers lists and discovery.

    Established is awaited on a watch; a real apiserver's discovery and handlers follow it
    within tens of milliseconds, with no event to wait for, so those are polled.
    """
    async with asyncio.timeout(30):
        while True:
            reply = await cluster.request("GET", f"{CRDS}/{name}")
            conditions = (reply.body.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            query = {
                "fieldSelector": f"metadata.name={name}",
                "resourceVersion": reply.body["metadata"]["resourceVersion"],
                "timeoutSeconds": "5",
            }
            async for _ in cluster.watch(CRDS, query):
                break
        spec = reply.body["spec"]
        served = [v["name"] for v in spec["versions"] if v.get("served")]
        while True:
            if await _served(cluster, spec["group"], spec["names"]["plural"], served):
                crd: dict[str, Any] = reply.body
                return crd
            await asyncio.sleep(0.02)


async def _served(cluster: Cluster, group: str, plural: str, versions: list[str]) -> bool:
    for version in versions:
        discovered = await cluster.request("GET", f"/apis/{group}/{version}")
        if discovered.status != 200 or plural not in [r["name"] for r in discovered.body["resources"]]:
            return False
        if (await cluster.request("GET", f"/apis/{group}/{version}/{plural}")).status != 200:
            return False
    return True


async def create_crd(cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
    """Create a CRD and return it once it is served."""
    reply = await cluster.request("POST", CRDS, body=body)
    assert reply.status == 201, reply.body
    return await wait_established(cluster, body["metadata"]["name"])
