"""Drawn exports and imports (every payload, every field the converters know) survive the trip
through the kube store and back, on a sandbox and on a real kube-apiserver, whose CRD
validation, defaulting and pruning of unknown fields are the real ones: a field the CRDs do
not declare would come back missing.

Hypothesis drives a synchronous test, so each example runs on an event loop of the test's own
(the `Trip` fixture), where the store's client (and the sandbox) live.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from hub.store.base import WriteBatch
from hub.store.kube import KubeStore
from hub.store.kube_codec import export_from_cr, import_from_cr
from kube.client import KubeClient
from kube.resources import Resource
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract.leader_api import leader_api
from tests.unit import test_convert_strategies as drawn

EXAMPLES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


class Trip:
    """A kube store in a Namespace of its own, driven from synchronous code."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: KubeClient, namespace: str) -> None:
        self.loop = loop
        self.client = client
        self.store = KubeStore(client, namespace)
        loop.run_until_complete(self.store.open())

    def export(self, message: pb.ResourceExport) -> pb.ResourceExport:
        return self.loop.run_until_complete(self._export(message))

    def import_(self, message: pb.ResourceImport) -> pb.ResourceImport:
        return self.loop.run_until_complete(self._import(message))

    async def _export(self, message: pb.ResourceExport) -> pb.ResourceExport:
        await self.store.commit(WriteBatch(put_exports=[message]))
        back = export_from_cr(await self._read(RESOURCE_EXPORTS, message.export_name))
        await self.store.commit(WriteBatch(delete_exports=[message.export_name]))
        return back

    async def _import(self, message: pb.ResourceImport) -> pb.ResourceImport:
        await self.store.commit(WriteBatch(put_imports=[message]))
        back = import_from_cr(await self._read(RESOURCE_IMPORTS, message.import_name))
        await self.store.commit(WriteBatch(delete_imports=[message.import_name]))
        return back

    async def _read(self, resource: Resource, name: str) -> dict[str, Any]:
        # What a restarted hub loads: the CR as the API server keeps it.
        return await self.client.get(resource, name, self.store.namespace)


@pytest.fixture
def trip(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Trip]:
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    try:
        leader = loop.run_until_complete(stack.enter_async_context(leader_api(cluster_kind, request, tmp_path)))
        yield Trip(loop, leader.client, loop.run_until_complete(leader.namespace("drawn")))
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()


@EXAMPLES
@given(message=drawn.resource_exports())
def test_a_drawn_export_comes_back_from_its_cr_as_it_was_written(trip: Trip, message: pb.ResourceExport) -> None:
    back = trip.export(message)
    if not message.HasField("create_time"):
        back.ClearField("create_time")  # a CR without the annotation is as old as the CR
    assert back == message


@EXAMPLES
@given(message=drawn.resource_imports())
def test_a_drawn_import_comes_back_from_its_cr_as_it_was_written(trip: Trip, message: pb.ResourceImport) -> None:
    assert trip.import_(message) == message
