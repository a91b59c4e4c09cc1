"""Discovery documents: /version, /api, /apis, /apis/<group>, and APIResourceLists.

Only legacy (non-aggregated) discovery is served: clients that ask for the
aggregated apidiscovery.k8s.io/v2 form get plain JSON and fall back, as they do
with older apiservers.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.context import ApiContext
from sandbox.resources import ResourceType

KUBE_VERSION = (1, 31, 0)


def version_info() -> dict[str, str]:
    major, minor, patch = KUBE_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.{patch}+mchub-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "python",
        "platform": "linux/amd64",
    }


def api_versions(ctx: ApiContext) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ctx.server_address}],
    }


def _group(ctx: ApiContext, group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in ctx.catalog.versions(group)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(ctx: ApiContext) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(ctx, g) for g in ctx.catalog.groups()]}


def api_group(ctx: ApiContext, group: str) -> dict[str, Any] | None:
    if not ctx.catalog.versions(group):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(ctx, group)}


def _storage_hash(rt: ResourceType) -> str:
    digest = hashlib.sha256(f"{rt.group}/{rt.storage_version or rt.version}/{rt.kind}".encode()).digest()
    return digest[:8].hex()


def _entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular or rt.kind.lower(),
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    if rt.verbs != ("create",):
        main["storageVersionHash"] = _storage_hash(rt)
    entries = [main]
    for sub in rt.subresources:
        if sub == "token":
            kind, group, version, verbs = "TokenRequest", "authentication.k8s.io", "v1", ["create"]
            entries.append(
                {
                    "name": f"{rt.plural}/token",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "group": group,
                    "version": version,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
            continue
        verbs = ["update"] if sub == "finalize" else ["get", "patch", "update"]
        entries.append(
            {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": verbs,
            }
        )
    return entries


def api_resource_list(ctx: ApiContext, group: str, version: str) -> dict[str, Any] | None:
    types = ctx.catalog.in_group_version(group, version)
    if not types:
        return None
    resources = [entry for rt in sorted(types, key=lambda t: t.plural) for entry in _entries(rt)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
