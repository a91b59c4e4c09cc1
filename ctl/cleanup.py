"""Deleting what mcctl (or antctl) created in a Namespace: its Secrets, ServiceAccounts and
RoleBindings (those annotated multicluster.antrea.io/created-by-antctl), as antctl's cleanup does.
A Namespace mcctl created is deleted too, but only while nothing else lives in it: deleting a
Namespace deletes everything in it (a hub deployed there after init, ResourceExports, ...)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ctl.clusterset import is_created_by_ctl
from ctl.errors import OperationFailed
from ctl.output import note
from ctl.tokens import ROLE_BINDINGS
from kube.client import KubeClient
from kube.errors import Forbidden, MethodNotAllowed, NotFound
from kube.resources import ANNOTATION_SA_NAME, NAMESPACES, SA_TOKEN_TYPE, SECRETS, SERVICE_ACCOUNTS, Obj, Resource

CLEANED_KINDS: tuple[Resource, ...] = (SECRETS, SERVICE_ACCOUNTS, ROLE_BINDINGS)
# What Kubernetes itself puts in every Namespace (kind, name); Events are never anyone's content.
_AUTOMATIC = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}
_IGNORED_KINDS = {"Event"}


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
    others = await foreign_objects(client, namespace)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        note(f"Namespace {namespace} kept: it holds objects mcctl did not create ({shown})")
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


async def foreign_objects(client: KubeClient, namespace: str) -> list[str]:
    """Objects in `namespace` that mcctl did not create, as `Kind ns/name`, over every namespaced
    kind the cluster can list (API discovery); a kind that may not be listed counts as foreign."""
    found: list[str] = []
    for resource in await _namespaced_kinds(client):
        try:
            items = (await client.list_all(resource, namespace)).items
        except (NotFound, MethodNotAllowed):
            continue
        except Forbidden:
            found.append(f"{resource.kind} {namespace}/* (not allowed to list)")
            continue
        for obj in items:
            name = str((obj.get("metadata") or {}).get("name", ""))
            if not (is_created_by_ctl(obj) or (resource.kind, name) in _AUTOMATIC or _default_account_token(obj)):
                found.append(f"{resource.kind} {namespace}/{name}")
    return found


def _default_account_token(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return obj.get("type") == SA_TOKEN_TYPE and annotations.get(ANNOTATION_SA_NAME) == "default"


async def _namespaced_kinds(client: KubeClient) -> list[Resource]:
    group_versions = ["v1"]
    groups: Any = await client.request("GET", "/apis")
    for group in (groups or {}).get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if preferred:
            group_versions.append(str(preferred))
    kinds: list[Resource] = []
    for group_version in group_versions:
        group, _, version = group_version.rpartition("/")
        try:
            listed: Any = await client.request("GET", f"/apis/{group_version}" if group else "/api/v1")
        except NotFound:
            continue
        for entry in (listed or {}).get("resources") or []:
            name, kind = str(entry.get("name", "")), str(entry.get("kind", ""))
            if "/" in name or not entry.get("namespaced") or "list" not in (entry.get("verbs") or []):
                continue
            if kind not in _IGNORED_KINDS:
                kinds.append(Resource(group, version, name, kind, True))
    return kinds
