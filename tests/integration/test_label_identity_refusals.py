"""A LabelIdentity export whose label is not in the members' form is refused; no ID is spent on it."""

from __future__ import annotations

import grpc
import pytest

from hub.app import HubApp
from hub.merge.label_format import MAX_NORMALIZED_LABEL_BYTES
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import Member, MemberFactory
from tests.integration.test_hub_security import refused

GOOD = "ns:kubernetes.io/metadata.name=demo&pod:app=web"


def label_export(cluster: str, label: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.label_identity_export_name(cluster, label),
        cluster_id=cluster,
        label_identity=pb.LabelIdentityExport(normalized_label=label),
    )


@pytest.fixture
async def east(connect: MemberFactory) -> Member:
    return await connect("east")


@pytest.mark.parametrize(
    "label",
    [
        "app=web",
        "ns:team=a&pod:app=web",
        "ns:kubernetes.io/metadata.name=demo&pod:tier=db,app=web",
        "ns:kubernetes.io/metadata.name=demo&pod:app=" + "w" * MAX_NORMALIZED_LABEL_BYTES,
    ],
    ids=["no form", "no Namespace name", "unsorted", "oversized"],
)
async def test_a_malformed_label_is_an_invalid_argument_and_allocates_no_id(
    hub: HubApp, east: Member, label: str
) -> None:
    session = east.export_session()
    await refused(hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: session.upsert(label_export("east", label)), "label")
    answer = await east.export_session().upsert(label_export("east", GOOD))
    assert answer.status.verdict == pb.VERDICT_ACCEPTED
    identity = hub.engine.index.imports[names.label_identity_import_name(GOOD)].label_identity
    assert identity == pb.LabelIdentity(label=GOOD, id=1)
