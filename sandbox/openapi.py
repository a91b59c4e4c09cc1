"""A minimal OpenAPI v3 surface, enough for kubectl's field-validation probe.

kubectl (1.27+) decides whether the server validates fields by looking for a
`fieldValidation` query parameter on each kind's PATCH operation in /openapi/v3.
The documents here list one PATCH path per resource with that parameter and the
patch media types the sandbox accepts. They carry no schemas, so kubectl computes
strategic merge patches from its compiled-in types, as it does against servers
without OpenAPI. /openapi/v2 is not served (404), which kubectl tolerates.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sandbox.context import ApiContext
from sandbox.resources import ResourceType


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _patch_path(rt: ResourceType) -> str:
    base = "/" + _gv_path(rt.group, rt.version)
    if rt.namespaced:
        return f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
    return f"{base}/{rt.plural}/{{name}}"


def group_version_document(ctx: ApiContext, group: str, version: str) -> dict[str, Any] | None:
    types = ctx.catalog.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in types:
        if "patch" not in rt.verbs:
            continue
        media = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        paths[_patch_path(rt)] = {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                ],
                "requestBody": {"content": {m: {"schema": {"type": "object"}} for m in media}, "required": True},
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def index(ctx: ApiContext) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    group_versions = {("", "v1")} | {(g, v) for g in ctx.catalog.groups() for v in ctx.catalog.versions(g)}
    for group, version in sorted(group_versions):
        doc = group_version_document(ctx, group, version)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
