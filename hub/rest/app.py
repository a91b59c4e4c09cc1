"""REST facade: health, metrics, and read views shaped like the CRDs.

Everything but /healthz and /readyz needs a bearer token (member or admin);
writes need the admin token. Items are shaped like the Kubernetes objects
kubectl would show (apiVersion, kind, metadata, spec, status), so the CLI and
the dashboard read one vocabulary whether the hub stores in SQLite or CRs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from hub.auth.identity import ADMIN, Identity
from hub.errors import Forbidden, HubError, NotLeader, bounded, quote
from hub.rest import shapes
from hub.rest.dashboard import PUBLIC_PATHS as DASHBOARD_PUBLIC_PATHS
from hub.rest.dashboard import add_dashboard_routes
from hub.rest.errors import error_response, http_status
from hub.rest.live import add_live_routes
from hub.rest.openapi import OPENAPI
from hub.store.base import StoreError

if TYPE_CHECKING:
    from hub.app import HubApp

HUB_KEY: web.AppKey[HubApp] = web.AppKey("hub")
IDENTITY_KEY: web.RequestKey[Identity] = web.RequestKey("identity", Identity)
# The dashboard's HTML shell and assets load without a token (the page asks for one).
_PUBLIC = {"/healthz", "/readyz", *DASHBOARD_PUBLIC_PATHS}


def _hub(request: web.Request) -> HubApp:
    return request.app[HUB_KEY]


def _identity(request: web.Request) -> Identity:
    identity: Identity = request[IDENTITY_KEY]
    return identity


@web.middleware
async def _auth(request: web.Request, handler: Any) -> web.StreamResponse:
    if request.path in _PUBLIC:
        response: web.StreamResponse = await handler(request)
        return response
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        # Browsers' EventSource cannot set headers: the dashboard passes ?token=.
        token = request.query.get("token", "")
    if not token:
        return error_response(401, "Unauthorized", "missing 'Authorization: Bearer <token>'")
    try:
        identity = await _hub(request).authenticator.authenticate(token.strip())
    except HubError as exc:  # cannot tell now: not a verdict on the token
        code, reason = http_status(exc)
        return error_response(code, reason, str(exc))
    if identity is None:
        _hub(request).metrics.auth_failures.inc()
        return error_response(401, "Unauthorized", "the bearer token is not valid")
    request[IDENTITY_KEY] = identity
    try:
        response = await handler(request)
    except HubError as exc:
        code, reason = http_status(exc)
        return error_response(code, reason, str(exc))
    except StoreError as exc:  # the write did not complete; the caller may retry
        detail = bounded(str(exc), 512)
        return error_response(503, "ServiceUnavailable", f"the hub could not use its store ({detail}); retry later")
    return response


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    if _hub(request).is_ready():
        return web.Response(text="ok")
    return web.Response(status=503, text="not ready")


async def metrics(request: web.Request) -> web.Response:
    hub = _hub(request)
    hub.refresh_metrics()
    body = generate_latest(hub.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def clusterset(request: web.Request) -> web.Response:
    return web.json_response(shapes.clusterset(_hub(request)))


async def members(request: web.Request) -> web.Response:
    return web.json_response(shapes.item_list("MemberClusterAnnounceList", shapes.members(_hub(request))))


def _filters(request: web.Request) -> dict[str, str]:
    return {k: request.query[k] for k in ("clusterID", "kind", "namespace") if request.query.get(k)}


async def list_exports(request: web.Request) -> web.Response:
    items = shapes.exports(_hub(request), **_filters(request))
    return web.json_response(shapes.item_list("ResourceExportList", items))


async def list_imports(request: web.Request) -> web.Response:
    items = shapes.imports(_hub(request), **_filters(request))
    return web.json_response(shapes.item_list("ResourceImportList", items))


def _require_admin(request: web.Request) -> None:
    if _identity(request) != ADMIN:
        raise Forbidden("this call needs the admin token")
    if not _hub(request).is_leader():
        raise NotLeader("this hub replica is not the leader; send writes to the leader (the ready replica)")


async def create_export(request: web.Request) -> web.Response:
    _require_admin(request)
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error_response(400, "BadRequest", "the body must be a JSON ResourceExport")
    export = shapes.admin_export_from_body(body, _hub(request).config.leader_cluster_id)
    hub = _hub(request)
    answer = await hub.engine.upsert(ADMIN, export)
    stored = hub.engine.index.exports.get(export.export_name)
    payload = shapes.export_item(stored, hub.config.namespace) if stored is not None else {}
    return web.json_response(
        {"verdict": shapes.verdict_name(answer.status.verdict), "revision": answer.revision, "item": payload},
        status=201,
    )


async def delete_export(request: web.Request) -> web.Response:
    _require_admin(request)
    name = request.match_info["name"]
    hub = _hub(request)
    if name not in hub.engine.index.exports:
        return error_response(404, "NotFound", f"resourceexport {quote(name)} not found")
    answer = await hub.engine.delete(ADMIN, name)
    return web.json_response({"deleted": name, "revision": answer.revision})


async def delete_member(request: web.Request) -> web.Response:
    """Remove a member and everything it exported (after revoking its token)."""
    _require_admin(request)
    cluster_id = request.match_info["cluster_id"]
    hub = _hub(request)
    if cluster_id not in hub.engine.index.members:
        return error_response(404, "NotFound", f"member {quote(cluster_id)} not found")
    await hub.engine.forget_member(cluster_id)
    return web.json_response({"deleted": cluster_id, "revision": hub.engine.revision})


async def openapi(_: web.Request) -> web.Response:
    return web.json_response(OPENAPI)


def build_rest_app(hub: HubApp) -> web.Application:
    app = web.Application(middlewares=[_auth], client_max_size=hub.config.max_message_bytes)
    app[HUB_KEY] = hub
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/api/v1/clusterset", clusterset)
    app.router.add_get("/api/v1/members", members)
    app.router.add_delete("/api/v1/members/{cluster_id}", delete_member)
    app.router.add_get("/api/v1/resourceexports", list_exports)
    app.router.add_post("/api/v1/resourceexports", create_export)
    app.router.add_delete("/api/v1/resourceexports/{name}", delete_export)
    app.router.add_get("/api/v1/resourceimports", list_imports)
    app.router.add_get("/api/v1/openapi.json", openapi)
    add_live_routes(app, hub)
    add_dashboard_routes(app)
    return app
