"""The registry of import kinds (member.imports.kinds) is the one list: every payload the wire
carries has its entry, and the caches watch exactly the kinds the entries write."""

from __future__ import annotations

from kube.client import KubeClient
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.caches import ImportCaches
from member.imports.kinds import IMPORT_KINDS, import_kind, written_kinds
from tests.member_imports.conftest import MEMBER_NAMESPACE
from tests.member_imports.messages import endpoints_import, service_import


def test_every_payload_of_a_resource_import_has_one_entry() -> None:
    payloads = {field.name for field in pb.ResourceImport.DESCRIPTOR.oneofs_by_name["payload"].fields}
    assert set(IMPORT_KINDS) == payloads
    assert all(kind.payload == payload for payload, kind in IMPORT_KINDS.items())


def test_an_import_finds_its_entry_by_payload_and_one_without_a_payload_none() -> None:
    upsert = service_import("default", "web")
    assert import_kind(upsert.resource) is IMPORT_KINDS["service_import"]
    assert import_kind(endpoints_import("default", "web", {"east": ["10.0.0.1"]}).resource) is IMPORT_KINDS["endpoints"]
    assert import_kind(pb.ResourceImport(import_name="empty")) is None


def test_namespaced_kinds_are_the_service_and_its_endpoints() -> None:
    assert {payload for payload, kind in IMPORT_KINDS.items() if kind.namespaced} == {"service_import", "endpoints"}


async def test_the_caches_watch_every_kind_the_registry_writes(member: KubeClient) -> None:
    caches = ImportCaches(member, MEMBER_NAMESPACE)
    await caches.start()
    try:
        fixed = {spec.resource for spec in written_kinds() if not spec.optional}
        assert {kind.resource for kind in caches.all_kinds()} == fixed
        optional = {spec.resource.qualified_name for spec in written_kinds() if spec.optional}
        assert optional == {"serviceimports.multicluster.x-k8s.io", "clusternetworkpolicies.crd.antrea.io"}
    finally:
        await caches.stop()
