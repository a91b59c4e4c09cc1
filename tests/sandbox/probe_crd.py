"""A throwaway CRD ("Probe") with a status subresource and printer columns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from tests.sandbox.cluster import Cluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class ProbeCRD:
    group: str
    version: str = "v1alpha1"
    plural: str = "probes"
    kind: str = "Probe"

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    def path(self, namespace: str) -> str:
        return f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{self.plural}"

    def body(self) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {"plural": self.plural, "singular": "probe", "kind": self.kind, "listKind": "ProbeList"},
                "versions": [
                    {
                        "name": self.version,
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [
                            {"name": "Cluster ID", "type": "string", "jsonPath": ".spec.clusterID"},
                            {
                                "name": "Ready",
                                "type": "string",
                                "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                            },
                            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                        ],
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                },
                            }
                        },
                    }
                ],
            },
        }

    def object(self, name: str, cluster_id: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{self.group}/{self.version}",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": {"clusterID": cluster_id},
        }


async def wait_established(cluster: Cluster, name: str) -> None:
    async with asyncio.timeout(30):
        while True:
            reply = await cluster.request("GET", f"{CRDS}/{name}")
            conditions = (reply.body.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                discovered = await cluster.request("GET", f"/apis/{reply.body['spec']['group']}")
                if discovered.status == 200:
                    return
            query = {
                "fieldSelector": f"metadata.name={name}",
                "resourceVersion": reply.body["metadata"]["resourceVersion"],
                "timeoutSeconds": "2",
            }
            async for _ in cluster.watch(CRDS, query):
                break
