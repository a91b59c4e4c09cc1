"""`mcctl diagnose`: one report of the ClusterSet's state for a bug report or a support case.

A directory of files plus a printed summary:

    hub/clusterset.json, members.json, resourceexports.json, resourceimports.json, metrics.txt
    members/<cluster-id>/clusterset.yaml, serviceexports.yaml, serviceimports.yaml,
        gateways.yaml, clusterinfoimports.yaml, antrea-policy.yaml, warning-events.yaml
    summary.json

A piece that cannot be collected is recorded in the summary with the error, and the rest
is still collected.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ctl.access import HubAccess, HubRest
from ctl.errors import CtlError, UsageError
from ctl.members import MemberCluster
from ctl.output import progress, to_json, to_yaml
from kube.discovery import first_served
from kube.errors import KubeError, NotFound
from kube.resources import EVENTS, Obj, Resource
from mcapi.crds.antrea_policy import ANTREA_CRD_GROUP, POLICY_KINDS, POLICY_VERSION
from mcapi.resources import (
    CLUSTER_INFO_IMPORTS,
    CLUSTER_SETS,
    GATEWAYS,
    SERVICE_EXPORTS,
    SERVICE_EXPORTS_V1BETA1,
    SERVICE_IMPORTS,
    SERVICE_IMPORTS_V1BETA1,
)

SUMMARY_HEADER = ("SOURCE", "ITEM", "COUNT", "NOTE")


@dataclass(frozen=True)
class Collected:
    source: str
    item: str
    file: str
    count: int | None
    note: str


def summary_rows(data: Any) -> list[tuple[str, ...]]:
    return [
        (c["source"], c["item"], "" if c["count"] is None else str(c["count"]), c["note"]) for c in data["collected"]
    ]


class Report:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.collected: list[Collected] = []

    def write(self, relative: str, content: str) -> None:
        path = self.directory / relative
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from exc

    async def collect(
        self,
        source: str,
        item: str,
        relative: str,
        fetch: Callable[[], Awaitable[Any]],
        note: Callable[[Any], str] | None = None,
    ) -> Any:
        try:
            data = await fetch()
        except (CtlError, KubeError) as exc:
            self.collected.append(Collected(source, item, "", None, f"ERROR: {exc}"))
            return None
        if isinstance(data, str):
            self.write(relative, data)
            count = None
        else:
            self.write(relative, to_json(data) + "\n" if relative.endswith(".json") else to_yaml(data))
            count = len(data) if isinstance(data, list) else None
        self.collected.append(Collected(source, item, relative, count, note(data) if note else ""))
        return data

    def summary(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "collected": [asdict(c) for c in self.collected]}


def _condition_notes(exports: list[Obj]) -> str:
    """ServiceExports whose conditions are not healthy (Valid/Ready False, Conflict True)."""
    problems = []
    for export in exports:
        for cond in (export.get("status") or {}).get("conditions") or []:
            bad = (cond.get("type") == "Conflict" and cond.get("status") == "True") or (
                cond.get("type") in ("Valid", "Ready") and cond.get("status") == "False"
            )
            if bad:
                meta = export["metadata"]
                problems.append(
                    f"{meta.get('namespace')}/{meta['name']} {cond['type']}={cond['status']} ({cond.get('reason', '')})"
                )
    return "; ".join(problems)


async def diagnose(
    hub: HubAccess | None, members: list[MemberCluster], member_namespace: str, directory: Path
) -> dict[str, Any]:
    report = Report(directory)
    report.write("README.txt", __doc__ or "")
    if hub is not None:
        with progress(f"Collecting hub state from {hub.url}"):
            async with HubRest(hub) as rest:
                await report.collect(
                    "hub",
                    "ClusterSet",
                    "hub/clusterset.json",
                    lambda: rest.json("/api/v1/clusterset"),
                    _clusterset_note,
                )
                await report.collect(
                    "hub", "members", "hub/members.json", lambda: rest.items("/api/v1/members"), _members_note
                )
                await report.collect(
                    "hub", "ResourceExports", "hub/resourceexports.json", lambda: rest.items("/api/v1/resourceexports")
                )
                await report.collect(
                    "hub", "ResourceImports", "hub/resourceimports.json", lambda: rest.items("/api/v1/resourceimports")
                )
                await report.collect("hub", "metrics", "hub/metrics.txt", lambda: rest.text("/metrics"))
    for index, member in enumerate(members):
        with progress(f"Collecting member {member.label}"):
            await _collect_member(report, member, member_namespace, index)
    summary = report.summary()
    report.write("summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


async def _collect_member(report: Report, member: MemberCluster, namespace: str, index: int) -> None:
    source = member.cluster_id or f"member-{index}"
    base = f"members/{source}"
    client = member.client

    async def items(resources: tuple[Any, ...], ns: str | None) -> list[Obj]:
        resource = await first_served(client, resources, ns or "default")
        if resource is None:
            raise CtlError(f"the cluster serves no {resources[0].qualified_name}")
        return (await client.list_all(resource, ns)).items

    await report.collect(
        source,
        "ClusterSet",
        f"{base}/clusterset.yaml",
        lambda: items((CLUSTER_SETS,), namespace),
        _member_clusterset_note,
    )
    await report.collect(
        source,
        "ServiceExports",
        f"{base}/serviceexports.yaml",
        lambda: items((SERVICE_EXPORTS, SERVICE_EXPORTS_V1BETA1), None),
        _condition_notes,
    )
    await report.collect(
        source,
        "ServiceImports",
        f"{base}/serviceimports.yaml",
        lambda: items((SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1), None),
    )
    await report.collect(
        source,
        "Gateways",
        f"{base}/gateways.yaml",
        lambda: items((GATEWAYS,), namespace),
        lambda d: "" if d else "no Gateway",
    )
    await report.collect(
        source,
        "ClusterInfoImports",
        f"{base}/clusterinfoimports.yaml",
        lambda: items((CLUSTER_INFO_IMPORTS,), namespace),
    )

    await report.collect(
        source, "Antrea policy CRDs", f"{base}/antrea-policy.yaml", lambda: antrea_policy_state(client), _policy_note
    )

    async def warnings() -> list[Obj]:
        events = [e for e in (await client.list_all(EVENTS)).items if e.get("type") == "Warning"]
        events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""), reverse=True)
        return events[:200]

    await report.collect(source, "Warning Events", f"{base}/warning-events.yaml", warnings, _events_note)


async def antrea_policy_state(client: Any) -> dict[str, Any]:
    """Which of Antrea's policy kinds the member serves, and its Tiers (name -> priority)."""
    state: dict[str, Any] = {"served": {}, "tiers": {}}
    for model in POLICY_KINDS:
        resource = Resource(ANTREA_CRD_GROUP, POLICY_VERSION, model.PLURAL, model.KIND, model.NAMESPACED)
        try:
            listed = await client.list(resource, limit=None if model.KIND == "Tier" else 1)
        except NotFound:
            state["served"][model.PLURAL] = False
            continue
        state["served"][model.PLURAL] = True
        if model.KIND == "Tier":
            state["tiers"] = {t["metadata"]["name"]: (t.get("spec") or {}).get("priority") for t in listed.items}
    return state


def _policy_note(state: Any) -> str:
    missing = sorted(plural for plural, served in state["served"].items() if not served)
    if missing:
        return (
            f"missing {', '.join(f'{p}.{ANTREA_CRD_GROUP}' for p in missing)}: ClusterNetworkPolicies cannot be "
            "replicated here; without Antrea apply deploy/optional/antrea-policy-crds.yml, then "
            "antrea-default-tiers.yml"
        )
    return f"served; Tiers: {', '.join(sorted(state['tiers'])) or 'none'}"


def _clusterset_note(cs: Any) -> str:
    status = cs.get("status") or {}
    return f"{cs['metadata']['name']}: {status.get('readyClusters', 0)}/{status.get('totalClusters', 0)} ready"


def _members_note(members: Any) -> str:
    down = [str(m.get("clusterID")) for m in members if not (m.get("status") or {}).get("connected")]
    return f"disconnected: {', '.join(down)}" if down else "all connected"


def _member_clusterset_note(items: Any) -> str:
    if not items:
        return "no ClusterSet: not joined"
    cs = items[0]
    ready = next((c for c in (cs.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    return f"{cs['metadata']['name']}: Ready={ready.get('status') if ready else 'unknown'}"


def _events_note(events: Any) -> str:
    if not events:
        return ""
    latest = events[0]
    return f"latest: {latest.get('reason', '')}: {str(latest.get('message', ''))[:80]}"
