"""HTTP handlers for resources: list/watch, create, get, update, patch, delete, subresources."""

from __future__ import annotations

import json
import logging
from typing import Any

import yaml
from aiohttp import web

from kube.resources import Obj
from sandbox import errors
from sandbox.auth import Authenticated, token_review_status
from sandbox.context import ApiContext
from sandbox.kinds.service_accounts import token_request
from sandbox.listing import list_page, object_matcher
from sandbox.registry import DeleteOptions
from sandbox.resources import ResourceType
from sandbox.routing import ResourcePath
from sandbox.table import render_table, wants_table
from sandbox.watch import WatchRequest, serve_watch

log = logging.getLogger(__name__)

# Where the authentication middleware leaves the caller's identity.
USER_KEY = web.RequestKey("mchub.sandbox.user", Authenticated)

_REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(), status=status, content_type="application/json"
    )


async def read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    try:
        if "yaml" in request.content_type:
            return yaml.safe_load(raw.decode())
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc


def _dry_run(values: list[str]) -> bool:
    for value in values:
        if value != "All":
            raise errors.bad_request(f'unsupported dry run value: {value!r}, supported values: "All"')
    return bool(values)


def _list_body(rt: ResourceType, items: list[Obj], rv: str, token: str, remaining: int | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}


class ResourceHandler:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def handle(self, request: web.Request, path: ResourcePath) -> web.StreamResponse:
        method = request.method
        if path.name is None:
            if method == "GET":
                self._require(path.rt, "watch" if self._is_watch(request) else "list")
                if self._is_watch(request):
                    return await self._watch(request, path)
                return self._list(request, path)
            if method == "POST":
                self._require(path.rt, "create")
                return await self._create(request, path)
            if method == "DELETE":
                self._require(path.rt, "deletecollection")
                return await self._delete_collection(request, path)
            raise errors.method_not_allowed()
        if path.subresource == "token" and method == "POST":
            return await self._token(request, path)
        if path.subresource in ("status", None):
            if method == "GET":
                self._require(path.rt, "get")
                return self._get(request, path)
            if method == "PUT":
                self._require(path.rt, "update")
                return await self._update(request, path)
            if method == "PATCH":
                self._require(path.rt, "patch")
                return await self._patch(request, path)
            if method == "DELETE" and path.subresource is None:
                self._require(path.rt, "delete")
                return await self._delete(request, path)
        if path.subresource == "finalize" and method == "PUT":
            return await self._update(request, path)
        raise errors.method_not_allowed()

    @staticmethod
    def _require(rt: ResourceType, verb: str) -> None:
        if verb not in rt.verbs:
            raise errors.method_not_allowed()

    @staticmethod
    def _is_watch(request: web.Request) -> bool:
        return request.query.get("watch", "") in ("true", "1", "True")

    # Reads

    def _list(self, request: web.Request, path: ResourcePath) -> web.Response:
        page = list_page(self.ctx.store, path.rt, path.namespace, request.query)
        items = [path.rt.to_api(o) for o in page.items]
        if wants_table(request.headers.get("Accept", "")):
            return json_response(
                render_table(
                    path.rt,
                    items,
                    resource_version=page.resource_version,
                    continue_token=page.continue_token,
                    include_object=request.query.get("includeObject", "Metadata"),
                )
            )
        return json_response(_list_body(path.rt, items, page.resource_version, page.continue_token, page.remaining))

    def _get(self, request: web.Request, path: ResourcePath) -> web.Response:
        assert path.name is not None
        obj = path.rt.to_api(self.ctx.registry.get(path.rt, path.namespace or "", path.name))
        if wants_table(request.headers.get("Accept", "")) and path.subresource is None:
            return json_response(
                render_table(
                    path.rt,
                    [obj],
                    resource_version=obj["metadata"].get("resourceVersion", ""),
                    include_object=request.query.get("includeObject", "Metadata"),
                )
            )
        return json_response(obj)

    async def _watch(self, request: web.Request, path: ResourcePath) -> web.StreamResponse:
        query = request.query
        timeout = query.get("timeoutSeconds", "")
        rv = query.get("resourceVersion", "")
        if rv and not rv.isdigit():
            raise errors.bad_request(f"invalid resource version {rv!r}")
        req = WatchRequest(
            rt=path.rt,
            namespace=path.namespace,
            resource_version=rv,
            matches=object_matcher(path.rt, query),
            allow_bookmarks=query.get("allowWatchBookmarks", "") in ("true", "1"),
            send_initial_events=query.get("sendInitialEvents", "") in ("true", "1"),
            timeout_seconds=float(timeout) if timeout.isdigit() and int(timeout) > 0 else None,
            table=wants_table(request.headers.get("Accept", "")),
            include_object=query.get("includeObject", "Metadata"),
        )
        return await serve_watch(request, self.ctx, req)

    # Writes

    async def _create(self, request: web.Request, path: ResourcePath) -> web.Response:
        body = await read_body(request)
        if path.rt.storage_key in _REVIEWS:
            return json_response(self._review(path.rt, body, request.get(USER_KEY)), 201)
        obj = self.ctx.registry.create(
            path.rt, path.namespace or "", body, dry_run=_dry_run(request.query.getall("dryRun", []))
        )
        return json_response(obj, 201)

    async def _update(self, request: web.Request, path: ResourcePath) -> web.Response:
        assert path.name is not None
        body = await read_body(request)
        obj = self.ctx.registry.update(
            path.rt,
            path.namespace or "",
            path.name,
            body,
            subresource=path.subresource,
            dry_run=_dry_run(request.query.getall("dryRun", [])),
        )
        return json_response(obj)

    async def _patch(self, request: web.Request, path: ResourcePath) -> web.Response:
        assert path.name is not None
        existed = self.ctx.store.get(path.rt.storage_key, path.namespace or "", path.name) is not None
        obj = self.ctx.registry.patch(
            path.rt,
            path.namespace or "",
            path.name,
            request.content_type,
            await request.read(),
            subresource=path.subresource,
            dry_run=_dry_run(request.query.getall("dryRun", [])),
        )
        return json_response(obj, 200 if existed else 201)

    def _delete_options(self, request: web.Request, body: Any) -> DeleteOptions:
        body = body if isinstance(body, dict) else {}
        preconditions = body.get("preconditions") or {}
        propagation = request.query.get("propagationPolicy") or body.get("propagationPolicy")
        if propagation is None and body.get("orphanDependents") is True:
            propagation = "Orphan"
        if propagation not in (None, "Background", "Foreground", "Orphan"):
            raise errors.bad_request(f"unsupported propagationPolicy {propagation!r}")
        dry = request.query.getall("dryRun", []) + list(body.get("dryRun") or [])
        return DeleteOptions(
            propagation=propagation or "Background",
            uid=preconditions.get("uid"),
            resource_version=preconditions.get("resourceVersion"),
            dry_run=_dry_run(dry),
        )

    async def _delete(self, request: web.Request, path: ResourcePath) -> web.Response:
        assert path.name is not None
        raw = await request.read()
        body = json.loads(raw) if raw.strip() else None
        options = self._delete_options(request, body)
        obj = self.ctx.registry.delete(path.rt, path.namespace or "", path.name, options)
        return json_response(obj)

    async def _delete_collection(self, request: web.Request, path: ResourcePath) -> web.Response:
        raw = await request.read()
        options = self._delete_options(request, json.loads(raw) if raw.strip() else None)
        matches = object_matcher(path.rt, request.query)
        for obj in self.ctx.store.list_objects(path.rt.storage_key, path.namespace):
            if matches(obj):
                meta = obj["metadata"]
                self.ctx.registry.delete(path.rt, meta.get("namespace", ""), meta["name"], options)
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})

    # Subresources and virtual resources

    async def _token(self, request: web.Request, path: ResourcePath) -> web.Response:
        assert path.name is not None
        sa = self.ctx.registry.get(path.rt, path.namespace or "", path.name)
        body = await read_body(request)
        return json_response(token_request(self.ctx.authority, sa, body if isinstance(body, dict) else {}), 201)

    def _review(self, rt: ResourceType, body: Any, caller: Authenticated | None) -> dict[str, Any]:
        body = body if isinstance(body, dict) else {}
        spec = body.get("spec") or {}
        if rt.plural == "selfsubjectreviews":
            status: dict[str, Any] = {"userInfo": caller.user.to_dict() if caller else {}}
        elif rt.plural == "tokenreviews":
            result = self.ctx.authenticator.authenticate(spec.get("token", ""))
            status = token_review_status(result, list(spec.get("audiences") or []))
        else:
            # Authorization is not enforced, so every access review is allowed.
            status = {"allowed": True, "reason": "the sandbox does not enforce RBAC"}
        return {
            "kind": rt.kind,
            "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
