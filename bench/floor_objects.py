"""The objects an importing member writes for one imported Service, for the benchmarks' floors.

A floor is the same API writes without mchub, so it must write the same objects: built here
by the member's own functions (``member.imports``) from the imports the hub made in the run
(read from its REST facade), only renamed, and sent as the member sends them (no field that
must be absent, the ServiceImport's ClusterSetIP from its Service, its status conditional on
the ServiceImport's resourceVersion). Per Service: the Service ``antrea-mc-<name>``, the
ServiceImport and its status, the Endpoints and one EndpointSlice per source cluster.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from kube.apply import without_absent
from kube.client import KubeClient
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICES, Obj
from mcapi.convert.imports import resource_import_from_cr
from mcapi.crds.mcs import SERVICE_IMPORT_HEADLESS
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import SERVICE_IMPORTS_V1BETA1
from member.imports.services import cluster_set_ips, desired_service, desired_service_import
from member.imports.slices import desired_endpoint_slices, desired_endpoints


@dataclass(frozen=True)
class ImportTemplates:
    """The hub's two imports of one exported Service (its ServiceImport and its Endpoints)."""

    service_import: pb.ResourceImport
    endpoints: pb.ResourceImport

    def to_json(self) -> dict[str, str]:
        return {
            "serviceImport": self.service_import.SerializeToString().hex(),
            "endpoints": self.endpoints.SerializeToString().hex(),
        }

    @classmethod
    def from_json(cls, document: dict[str, str]) -> ImportTemplates:
        return cls(
            pb.ResourceImport.FromString(bytes.fromhex(document["serviceImport"])),
            pb.ResourceImport.FromString(bytes.fromhex(document["endpoints"])),
        )


async def fetch_templates(rest_url: str, ca_file: str, token: str, namespace: str, name: str) -> ImportTemplates:
    """The imports the hub made of ``namespace/name``, from its REST facade."""
    context = ssl.create_default_context(cafile=ca_file)
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        url = f"{rest_url}/api/v1/resourceimports"
        async with session.get(url, params={"namespace": namespace}, ssl=context) as response:
            response.raise_for_status()
            items = (await response.json())["items"]
    found: dict[str, pb.ResourceImport] = {}
    for item in items:
        message = resource_import_from_cr(item)
        if message.name == name and message.namespace == namespace:
            found[message.WhichOneof("payload") or ""] = message
    if set(found) != {"service_import", "endpoints"}:
        raise LookupError(f"the hub holds {sorted(found)} imports of {namespace}/{name}, not both")
    return ImportTemplates(found["service_import"], found["endpoints"])


def _renamed(template: pb.ResourceImport, name: str, namespace: str, suffix: str) -> pb.ResourceImport:
    message = pb.ResourceImport()
    message.CopyFrom(template)
    message.name, message.namespace = name, namespace
    message.import_name = f"{namespace}-{name}-{suffix}"
    return message


def _body(desired: Obj) -> Obj:
    """What the member POSTs for a desired object."""
    return without_absent({k: v for k, v in desired.items() if k not in ("status", "apiVersion", "kind")})


@dataclass(frozen=True)
class ImportedService:
    """The bodies the member writes for one imported Service, made before the clock starts
    (the ServiceImport's ClusterSetIP is filled in from its Service's answer)."""

    name: str
    namespace: str
    service: Obj
    service_import: Obj
    status: dict[str, Any]
    endpoints: Obj
    slices: list[Obj]


def imported_service(templates: ImportTemplates, name: str, namespace: str, cluster_id: str) -> ImportedService:
    service_import = _renamed(templates.service_import, name, namespace, "service")
    endpoints = _renamed(templates.endpoints, name, namespace, "endpoints")
    desired, status = desired_service_import(service_import, SERVICE_IMPORTS_V1BETA1, [], cluster_id)
    return ImportedService(
        name,
        namespace,
        _body(desired_service(service_import)),
        _body(desired),
        status,
        _body(desired_endpoints(endpoints)),
        [_body(s) for s in desired_endpoint_slices(endpoints)],
    )


async def write_imported(client: KubeClient, objects: Sequence[ImportedService], concurrency: int) -> None:
    """Write each Service's objects as the member does, ``concurrency`` Services at a time."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(imported: ImportedService) -> None:
        async with semaphore:
            namespace = imported.namespace
            service = await client.create(SERVICES, imported.service, namespace)
            service_import = imported.service_import
            ips = cluster_set_ips(service)
            if ips and service_import["spec"].get("type") != SERVICE_IMPORT_HEADLESS:
                service_import = {**service_import, "spec": {**service_import["spec"], "ips": ips}}
            created = await client.create(SERVICE_IMPORTS_V1BETA1, service_import, namespace)
            patch: dict[str, Any] = {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "status": imported.status,
            }
            await client.patch_status(SERVICE_IMPORTS_V1BETA1, imported.name, patch, namespace)
            await client.create(ENDPOINTS, imported.endpoints, namespace)
            for endpoint_slice in imported.slices:
                await client.create(ENDPOINT_SLICES, endpoint_slice, namespace)

    await asyncio.gather(*(one(o) for o in objects))
