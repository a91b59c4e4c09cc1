"""`mcctl verify`: the ClusterSet checked end to end, through the hub REST facade and the
member clusters: members connected, gateways and ClusterInfoImports present (WARN when
none: gateways are optional), and a test Service export that must round-trip to every
other member. Any FAIL makes the exit code 1."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ctl.access import HubAccess, HubRest
from ctl.clusterset import created_by_ctl_meta
from ctl.errors import CtlError
from ctl.members import MemberCluster
from ctl.output import progress
from kube.discovery import first_served
from kube.errors import KubeError
from kube.resources import SERVICES, Obj, Resource
from mcapi import names
from mcapi.resources import (
    CLUSTER_INFO_IMPORTS,
    GATEWAYS,
    SERVICE_EXPORTS,
    SERVICE_EXPORTS_V1BETA1,
    SERVICE_IMPORTS,
    SERVICE_IMPORTS_V1BETA1,
)

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"
CHECK_HEADER = ("CHECK", "RESULT", "DETAIL")
NO_GATEWAY = "none: gateways are optional; annotate a Node multicluster.antrea.io/gateway=true for one"
NO_CLUSTER_INFO = "none: no other member has a Gateway (needed only for cross-cluster Pod/Service traffic)"


@dataclass(frozen=True)
class Check:
    check: str
    result: str
    detail: str


def check_rows(data: Any) -> list[tuple[str, ...]]:
    return [(c["check"], c["result"], c["detail"]) for c in data]


def as_dicts(checks: list[Check]) -> list[dict[str, str]]:
    return [asdict(c) for c in checks]


async def verify(
    hub: HubAccess, members: list[MemberCluster], member_namespace: str, test_namespace: str, within: float
) -> list[Check]:
    checks: list[Check] = []
    async with HubRest(hub) as rest:
        hub_clusterset_id = await _check_hub(rest, checks)
        for member in members:
            checks.append(_clusterset_check(member, hub_clusterset_id))
        if hub_clusterset_id is not None:
            await _check_connected(rest, members, checks)
        for member in members:
            if member.clusterset is not None:
                checks.extend(await _datapath_checks(member, member_namespace))
        joined = [m for m in members if m.clusterset is not None]
        if len(joined) < 2:
            checks.append(Check("service export round trip", WARN, "needs two joined members (--member-kubeconfig)"))
        else:
            with progress(
                f"Exporting a test Service from {joined[0].label}, waiting for it in {len(joined) - 1} members"
            ):
                checks.extend(await _round_trip(rest, joined[0], joined[1:], test_namespace, within))
    return checks


async def _check_hub(rest: HubRest, checks: list[Check]) -> str | None:
    try:
        cs = await rest.json("/api/v1/clusterset")
    except CtlError as exc:
        checks.append(Check("hub reachable", FAIL, str(exc)))
        return None
    status = cs.get("status") or {}
    ready = f"{status.get('readyClusters', 0)}/{status.get('totalClusters', 0)} members ready"
    clusterset_id = str((cs.get("metadata") or {}).get("name", ""))
    checks.append(Check("hub reachable", PASS, f"ClusterSet {clusterset_id}, {ready}"))
    return clusterset_id


def _clusterset_check(member: MemberCluster, hub_clusterset_id: str | None) -> Check:
    name = f"{member.label}: ClusterSet"
    if member.clusterset is None:
        return Check(name, FAIL, member.error)
    cs_name = member.clusterset["metadata"]["name"]
    if hub_clusterset_id and cs_name != hub_clusterset_id:
        return Check(name, FAIL, f"joined ClusterSet {cs_name!r}, the hub serves {hub_clusterset_id!r}")
    conditions = (member.clusterset.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return Check(name, WARN, f"{cs_name}: no Ready condition yet (is the member controller running?)")
    if ready.get("status") != "True":
        return Check(
            name,
            FAIL,
            f"{cs_name}: Ready={ready.get('status')} {ready.get('reason', '')} {ready.get('message', '')}".strip(),
        )
    return Check(name, PASS, f"{cs_name}: Ready")


async def _check_connected(rest: HubRest, members: list[MemberCluster], checks: list[Check]) -> None:
    known = {str(m.get("clusterID", "")): m for m in await rest.items("/api/v1/members")}
    expected = sorted({m.cluster_id for m in members if m.cluster_id} | set(known))
    if not expected:
        checks.append(Check("members connected", FAIL, "the hub knows no member and no --member-kubeconfig was given"))
    for cluster_id in expected:
        name = f"{cluster_id}: connected to hub"
        announce = known.get(cluster_id)
        if announce is None:
            checks.append(Check(name, FAIL, "never announced to the hub: check its token Secret and leader server"))
            continue
        status = announce.get("status") or {}
        age = status.get("heartbeatAgeSeconds", "?")
        if status.get("connected"):
            checks.append(Check(name, PASS, f"last heartbeat {age}s ago"))
        else:
            checks.append(Check(name, FAIL, f"disconnected: last heartbeat {age}s ago (member controller down?)"))


async def _datapath_checks(member: MemberCluster, namespace: str) -> list[Check]:
    out: list[Check] = []
    describers: tuple[tuple[Resource, str, Callable[[Obj], str], str], ...] = (
        (GATEWAYS, "Gateways", _describe_gateway, NO_GATEWAY),
        (CLUSTER_INFO_IMPORTS, "ClusterInfoImports", _describe_cluster_info, NO_CLUSTER_INFO),
    )
    for resource, what, describe, when_none in describers:
        name = f"{member.label}: {what}"
        try:
            items = (await member.client.list_all(resource, namespace)).items
        except KubeError as exc:
            out.append(Check(name, WARN, f"cannot list: {exc}"))
            continue
        if items:
            out.append(Check(name, PASS, ", ".join(sorted(describe(o) for o in items))))
        else:
            out.append(Check(name, WARN, when_none))
    return out


def _describe_gateway(gateway: Obj) -> str:
    return f"{gateway['metadata']['name']} ({gateway.get('gatewayIP', '')})"


def _describe_cluster_info(imported: Obj) -> str:
    return str((imported.get("spec") or {}).get("clusterID", ""))


async def _round_trip(
    rest: HubRest, exporter: MemberCluster, importers: list[MemberCluster], namespace: str, within: float
) -> list[Check]:
    name = f"mcctl-verify-{secrets.token_hex(3)}"
    check = f"service export round trip ({exporter.label} -> {len(importers)} members)"
    export_resource = await first_served(exporter.client, (SERVICE_EXPORTS, SERVICE_EXPORTS_V1BETA1), namespace)
    if export_resource is None:
        return [Check(check, FAIL, f"{exporter.label} serves no ServiceExport: are the MCS CRDs installed?")]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": created_by_ctl_meta(name, namespace),
        "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }
    export = {
        "apiVersion": export_resource.api_version,
        "kind": "ServiceExport",
        "metadata": created_by_ctl_meta(name, namespace),
    }
    started = time.monotonic()
    try:
        await exporter.client.create(SERVICES, service, namespace)
        await exporter.client.create(export_resource, export, namespace)
        missing = await _wait_imports(importers, name, namespace, within, present=True)
        elapsed = time.monotonic() - started
        if missing:
            hub_has = await _hub_has_export(rest, exporter.cluster_id, namespace, name)
            detail = (
                f"no ServiceImport {namespace}/{name} in {', '.join(missing)} after {within:.0f}s; "
                f"the hub {'has' if hub_has else 'does not have'} the export"
            )
            result = [Check(check, FAIL, detail)]
        else:
            result = [Check(check, PASS, f"ServiceImport {namespace}/{name} in every member after {elapsed:.1f}s")]
    except KubeError as exc:
        result = [Check(check, FAIL, f"could not create the test Service in {exporter.label}: {exc}")]
    finally:
        await _delete_quietly(exporter, export_resource, name, namespace)
        await _delete_quietly(exporter, SERVICES, name, namespace)
    leftover = await _wait_imports(importers, name, namespace, within, present=False)
    if leftover:
        result.append(Check("round trip cleanup", WARN, f"ServiceImport {name} still in {', '.join(leftover)}"))
    return result


async def _wait_imports(
    importers: list[MemberCluster], name: str, namespace: str, within: float, *, present: bool
) -> list[str]:
    """Members whose ServiceImport `name` is still not present (present=True) / not gone (False) at the deadline."""
    resources: dict[str, Resource | None] = {}
    for m in importers:
        resources[m.label] = await first_served(m.client, (SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1), namespace)
    waiting = {m.label: m for m in importers}
    deadline = time.monotonic() + within
    while waiting:
        for label, member in list(waiting.items()):
            resource = resources[label]
            exists = False
            if resource is not None:
                try:
                    await member.client.get(resource, name, namespace)
                    exists = True
                except KubeError:
                    exists = False
            if exists == present:
                del waiting[label]
        if not waiting or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    return sorted(waiting)


async def _hub_has_export(rest: HubRest, cluster_id: str, namespace: str, name: str) -> bool:
    try:
        items = await rest.items("/api/v1/resourceexports", {"clusterID": cluster_id})
    except CtlError:
        return False
    wanted = names.service_export_name(cluster_id, namespace, name)
    return any((i.get("metadata") or {}).get("name") == wanted for i in items)


async def _delete_quietly(member: MemberCluster, resource: Resource, name: str, namespace: str) -> None:
    # Already gone, or the cluster went away: nothing more to do.
    with contextlib.suppress(KubeError):
        await member.client.delete(resource, name, namespace)
