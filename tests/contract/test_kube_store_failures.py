"""The kube store when the API server refuses part of a batch.

A fake client stands in for the API server so a refusal can be aimed at one
write of a batch: the store must end the whole batch there, with no write of
it still going on in the background to land later over a newer one.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from hub.store.base import WriteBatch
from hub.store.kube import CommitFailed, KubeStore
from kube.client import KubeClient
from kube.errors import Invalid, ServerError
from kube.resources import Resource
from tests.contract import samples


class RefusingClient:
    """Creates fail: the export's for good (422), every import's for a while (503)."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    async def create(self, resource: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        self.writes.append(name)
        await asyncio.sleep(0)
        if name.endswith("-service") and resource.kind == "ResourceExport":
            raise Invalid(422, "Invalid", f"{name} is invalid")
        raise ServerError(503, "ServiceUnavailable", "etcd is restarting")


async def test_a_write_refused_for_good_ends_its_batch_with_no_write_left_running() -> None:
    client = RefusingClient()
    store = KubeStore(cast(KubeClient, client), "antrea-multicluster", write_timeout=30)
    others = asyncio.all_tasks()
    batch = WriteBatch(
        put_exports=[samples.service_export("east", "default", "nginx")],
        put_imports=[samples.service_import("default", "nginx")],
    )
    with pytest.raises(CommitFailed, match="is invalid"):
        await store.commit(batch)
    assert asyncio.all_tasks() - others == set(), "a write of the failed batch is still retrying"
    assert store.revision == 0
