"""Custom resources of a CRD with two versions and conversion None: what is stored, what each shows.

The probe CRD serves v1alpha1, whose schema declares spec.name (and spec.defaultA, with a
default, and a maximum on spec.limit), and v1alpha2, the storage version, which declares
spec.onlyB and spec.defaultB (with a default) but not spec.name - like the legacy
v1alpha1 ClusterClaim `name` that a v1alpha2 storage schema without it loses. What a real
kube-apiserver v1.28 does, found by running exactly these cases against it:

- a write is pruned, defaulted and validated by the schema of the version it names, then
  pruned by the storage version's schema before it is stored;
- a read (and the answer to a write) shows the stored object pruned and defaulted by the
  storage version's schema, then pruned by the schema of the version it names - without
  that version's defaults.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import CRDS, NewProbeCRD, ProbeCRD, probe_version


def schema(spec_properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": spec_properties},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


V1ALPHA1 = schema(
    {
        "common": {"type": "string"},
        "name": {"type": "string"},
        "defaultA": {"type": "string", "default": "a"},
        "limit": {"type": "integer", "maximum": 5},
    }
)
V1ALPHA2 = schema(
    {
        "common": {"type": "string"},
        "onlyB": {"type": "string"},
        "defaultB": {"type": "string", "default": "b"},
        "limit": {"type": "integer"},
    }
)


async def two_versions(new_probe_crd: NewProbeCRD) -> ProbeCRD:
    return await new_probe_crd(
        [
            probe_version("v1alpha1", V1ALPHA1, storage=False),
            probe_version("v1alpha2", V1ALPHA2, storage=True),
        ]
    )


def probe(crd: ProbeCRD, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{crd.group}/{version}", "kind": "Probe", "metadata": {"name": name}, "spec": spec}


async def spec_through(cluster: Cluster, crd: ProbeCRD, namespace: str, version: str, name: str) -> Any:
    reply = await cluster.request("GET", f"{crd.path(namespace, version)}/{name}")
    assert reply.status == 200, reply.body
    return reply.body["spec"]


async def test_a_field_only_an_older_version_declares_is_not_stored(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    crd = await two_versions(new_probe_crd)
    written = {"common": "c", "name": "legacy", "onlyB": "b-field", "other": "x"}
    created = await cluster.request(
        "POST", crd.path(namespace, "v1alpha1"), body=probe(crd, "v1alpha1", "old", written)
    )
    assert created.status == 201, created.body
    assert created.body["apiVersion"] == f"{crd.group}/v1alpha1"
    # v1alpha1 kept name (and defaulted defaultA), then the v1alpha2 storage schema dropped both.
    assert created.body["spec"] == {"common": "c"}
    assert await spec_through(cluster, crd, namespace, "v1alpha1", "old") == {"common": "c"}
    assert await spec_through(cluster, crd, namespace, "v1alpha2", "old") == {"common": "c", "defaultB": "b"}
    listed = await cluster.request("GET", crd.path(namespace, "v1alpha1"))
    assert [item["spec"] for item in listed.body["items"]] == [{"common": "c"}]


async def test_each_version_shows_the_stored_object_through_its_own_schema(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    crd = await two_versions(new_probe_crd)
    written = {"common": "c", "name": "legacy", "onlyB": "b-field"}
    created = await cluster.request(
        "POST", crd.path(namespace, "v1alpha2"), body=probe(crd, "v1alpha2", "new", written)
    )
    assert created.status == 201, created.body
    assert created.body["spec"] == {"common": "c", "onlyB": "b-field", "defaultB": "b"}
    assert await spec_through(cluster, crd, namespace, "v1alpha1", "new") == {"common": "c"}
    assert await spec_through(cluster, crd, namespace, "v1alpha2", "new") == {
        "common": "c",
        "onlyB": "b-field",
        "defaultB": "b",
    }


async def test_writes_are_validated_by_the_version_they_name(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    crd = await two_versions(new_probe_crd)
    refused = await cluster.request(
        "POST", crd.path(namespace, "v1alpha1"), body=probe(crd, "v1alpha1", "big", {"limit": 9})
    )
    assert refused.status == 422
    assert refused.body["details"]["causes"][0]["field"] == "spec.limit"
    accepted = await cluster.request(
        "POST", crd.path(namespace, "v1alpha2"), body=probe(crd, "v1alpha2", "big", {"limit": 9})
    )
    assert accepted.status == 201, accepted.body
    # Written back unchanged through v1alpha1, it is refused by v1alpha1's maximum.
    seen = await cluster.request("GET", f"{crd.path(namespace, 'v1alpha1')}/big")
    assert seen.body["spec"] == {"limit": 9}
    again = await cluster.request("PUT", f"{crd.path(namespace, 'v1alpha1')}/big", body=seen.body)
    assert again.status == 422


async def test_an_update_through_another_version_loses_what_that_version_lacks(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    crd = await two_versions(new_probe_crd)
    path_a, path_b = crd.path(namespace, "v1alpha1"), crd.path(namespace, "v1alpha2")
    created = await cluster.request("POST", path_b, body=probe(crd, "v1alpha2", "o", {"common": "c", "onlyB": "b"}))
    assert created.body["metadata"]["generation"] == 1
    seen = (await cluster.request("GET", f"{path_a}/o")).body
    seen["spec"]["name"] = "n"
    replaced = await cluster.request("PUT", f"{path_a}/o", body=seen)
    assert replaced.status == 200, replaced.body
    # The generation follows v1alpha1's view (name was added), the store loses onlyB.
    assert replaced.body["metadata"]["generation"] == 2
    assert await spec_through(cluster, crd, namespace, "v1alpha2", "o") == {"common": "c", "defaultB": "b"}
    # So does a status write through v1alpha1.
    restored = await cluster.request(
        "PATCH", f"{path_b}/o", body={"spec": {"onlyB": "b"}}, content_type="application/merge-patch+json"
    )
    assert restored.body["spec"]["onlyB"] == "b"
    status = await cluster.request(
        "PATCH", f"{path_a}/o/status", body={"status": {"ok": True}}, content_type="application/merge-patch+json"
    )
    assert status.status == 200, status.body
    assert "onlyB" not in await spec_through(cluster, crd, namespace, "v1alpha2", "o")


async def test_a_default_added_to_the_storage_schema_shows_on_reads_of_existing_objects(
    cluster: Cluster, new_probe_crd: NewProbeCRD, namespace: str
) -> None:
    crd = await two_versions(new_probe_crd)
    created = await cluster.request("POST", crd.path(namespace, "v1alpha2"), body=probe(crd, "v1alpha2", "o", {}))
    assert created.body["spec"] == {"defaultB": "b"}
    current = (await cluster.request("GET", f"{CRDS}/{crd.name}")).body
    storage = current["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    storage["properties"]["later"] = {"type": "string", "default": "L"}
    assert (await cluster.request("PUT", f"{CRDS}/{crd.name}", body=current)).status == 200
    # A real apiserver swaps in the new schema shortly after; nothing signals it but reads.
    async with asyncio.timeout(15):
        while True:
            spec = await spec_through(cluster, crd, namespace, "v1alpha2", "o")
            if "later" in spec:
                break
            await asyncio.sleep(0.05)
    assert spec == {"defaultB": "b", "later": "L"}
    # Nothing was written: the default is applied as the object is read.
    read = await cluster.request("GET", f"{crd.path(namespace, 'v1alpha2')}/o")
    assert read.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]
