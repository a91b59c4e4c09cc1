"""End to end: east exports through its HubSession, the real hub merges, west's HubSession
delivers the imports to its ImportApplier, and the objects appear in west's sandbox."""

from __future__ import annotations

import asyncio

from hub.app import HubApp
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICES
from mcapi import names
from mcapi.resources import SERVICE_IMPORTS
from member.hubclient import HubSession
from member.imports import ImportApplier
from member.imports.caches import ImportCaches
from tests.integration.hubclient import endpoints_export, service_export
from tests.member_hubclient.conftest import SessionFactory
from tests.member_imports.conftest import CLUSTER_ID, MEMBER_NAMESPACE, WAIT, eventually


async def test_exports_of_another_member_become_imported_objects_in_this_members_cluster(
    member: KubeClient, hub: HubApp, sessions: SessionFactory
) -> None:
    east = await sessions.open("east")
    east.replace_all(
        [
            service_export("east", "default", "nginx", [("http", 80)], cluster_ip="10.96.0.10"),
            endpoints_export("east", "default", "nginx", ["10.96.0.10"], port=80),
        ]
    )
    async with asyncio.timeout(WAIT):
        await east.wait_exports_settled()

    west: HubSession | None = None

    def report(import_name: str, succeeded: bool, reason: str, message: str) -> None:
        assert west is not None
        west.report_import_status(import_name, succeeded, reason, message)

    caches = ImportCaches(member, MEMBER_NAMESPACE)
    await caches.start()
    applier = ImportApplier(member, cluster_id=CLUSTER_ID, report=report, caches=caches)
    await applier.start()
    try:
        west = await sessions.open(CLUSTER_ID, on_import_event=applier.handle)

        async def imported() -> bool:
            try:
                service_import = await member.get(SERVICE_IMPORTS, "nginx", "default")
                endpoints = await member.get(ENDPOINTS, "antrea-mc-nginx", "default")
            except NotFound:
                return False
            return service_import.get("status", {}).get("clusters") == [{"cluster": "east"}] and bool(
                endpoints.get("subsets")
            )

        await eventually(imported)
        service = await member.get(SERVICES, "antrea-mc-nginx", "default")
        assert (await member.get(SERVICE_IMPORTS, "nginx", "default"))["spec"]["ips"] == [service["spec"]["clusterIP"]]
        endpoints = await member.get(ENDPOINTS, "antrea-mc-nginx", "default")
        assert endpoints["subsets"][0]["addresses"] == [{"ip": "10.96.0.10"}]
        [east_slice] = (await member.list(ENDPOINT_SLICES, "default")).items
        assert east_slice["metadata"]["labels"][names.LABEL_MCS_SOURCE_CLUSTER] == "east"

        async with asyncio.timeout(WAIT):
            await west.wait_reports_sent()
        status = hub.engine.import_status[names.service_import_name("default", "nginx")][CLUSTER_ID]
        assert status.succeeded

        # east stops exporting: the hub deletes the imports and west's objects go.
        east.replace_all([])

        async def removed() -> bool:
            try:
                await member.get(SERVICES, "antrea-mc-nginx", "default")
            except NotFound:
                return True
            return False

        await eventually(removed)
        assert (await member.list(SERVICE_IMPORTS, "default")).items == []
    finally:
        await applier.stop()
        await caches.stop()
