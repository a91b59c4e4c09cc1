"""Deleting what mcctl (or antctl) created in a Namespace: its Secrets, ServiceAccounts and
RoleBindings (those annotated multicluster.antrea.io/created-by-antctl), as antctl's cleanup does."""

from __future__ import annotations

import asyncio
import time

from ctl.clusterset import is_created_by_ctl
from ctl.errors import OperationFailed
from ctl.tokens import ROLE_BINDINGS
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import NAMESPACES, SECRETS, SERVICE_ACCOUNTS, Resource

CLEANED_KINDS: tuple[Resource, ...] = (SECRETS, SERVICE_ACCOUNTS, ROLE_BINDINGS)


async def delete_created_by_ctl(client: KubeClient, namespace: str) -> list[str]:
    """Delete every object of CLEANED_KINDS mcctl created in `namespace`; what was deleted, as `Kind ns/name`."""
    deleted: list[str] = []
    for resource in CLEANED_KINDS:
        try:
            items = (await client.list_all(resource, namespace)).items
        except NotFound:
            continue
        for obj in items:
            if not is_created_by_ctl(obj):
                continue
            name = obj["metadata"]["name"]
            try:
                await client.delete(resource, name, namespace)
            except NotFound:
                continue
            deleted.append(f"{resource.kind} {namespace}/{name}")
    return deleted


async def delete_namespace_if_ours(client: KubeClient, namespace: str, within: float = 60.0) -> bool:
    """Delete the Namespace if mcctl created it, and wait until it is gone."""
    try:
        live = await client.get(NAMESPACES, namespace)
    except NotFound:
        return False
    if not is_created_by_ctl(live):
        return False
    try:
        await client.delete(NAMESPACES, namespace)
    except NotFound:
        return True
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            await client.get(NAMESPACES, namespace)
        except NotFound:
            return True
        await asyncio.sleep(0.2)
    raise OperationFailed(f"Namespace {namespace} is still terminating after {within:.0f}s: check its finalizers")
