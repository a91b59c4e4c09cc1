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

from hub.auth.bearer import bearer_token, identify
from hub.auth.identity import ADMIN
from hub.errors import HubError, quote, store_unavailable
from hub.rest import shapes
from hub.rest.context import HUB_KEY, IDENTITY_KEY, hub_of, require_admin
from hub.rest.dashboard import PUBLIC_PATHS as DASHBOARD_PUBLIC_PATHS
from hub.rest.dashboard import add_dashboard_routes
from hub.rest.errors import error_response, refusal_response
from hub.rest.live import add_live_routes
from hub.rest.membership import add_membership_routes
from hub.rest.openapi import OPENAPI
from hub.store.base import StoreError

if TYPE_CHECKING:
    from hub.rest import RestHub

# The dashboard's HTML shell and assets load without a token (the page asks for one).
_PUBLIC = {"/healthz", "/readyz", "/readyz/watches", *DASHBOARD_PUBLIC_PATHS}


@web.middleware
async def _auth(request: web.Request, handler: Any) -> web.StreamResponse:
    if request.path in _PUBLIC:
        response: web.StreamResponse = await handler(request)
        return response
    # Browsers' EventSource cannot set headers: the dashboard passes ?token=.
    token = bearer_token(request.headers.get("Authorization", "")) or request.query.get("token", "").strip()
    hub = hub_of(request)
    try:
        request[IDENTITY_KEY] = await identify(
            hub.authenticator, token, hub.metrics.auth_failures, header="Authorization"
        )
        response = await handler(request)
    except HubError as exc:
        return refusal_response(exc)
    except StoreError as exc:  # the write did not complete; the caller may retry
        return error_response(503, "ServiceUnavailable", store_unavailable(exc))
    return response


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    """Ready to take writes: the leader (the Service members send writes to follows it)."""
    if hub_of(request).is_ready():
        return web.Response(text="ok")
    return web.Response(status=503, text="not ready")


async def readyz_watches(request: web.Request) -> web.Response:
    """Ready to serve watches and reads: the leader, or a follower holding the leader's history."""
    if hub_of(request).is_ready_for_watches():
        return web.Response(text="ok")
    return web.Response(status=503, text="not ready")


async def metrics(request: web.Request) -> web.Response:
    hub = hub_of(request)
    hub.refresh_metrics()
    body = generate_latest(hub.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def members(request: web.Request) -> web.Response:
    return web.json_response(shapes.item_list("MemberClusterAnnounceList", shapes.members(hub_of(request))))


def _filters(request: web.Request) -> dict[str, str]:
    return {k: request.query[k] for k in ("clusterID", "kind", "namespace") if request.query.get(k)}


async def list_exports(request: web.Request) -> web.Response:
    items = shapes.exports(hub_of(request), **_filters(request))
    return web.json_response(shapes.item_list("ResourceExportList", items))


async def list_imports(request: web.Request) -> web.Response:
    items = shapes.imports(hub_of(request), **_filters(request))
    return web.json_response(shapes.item_list("ResourceImportList", items))


async def create_export(request: web.Request) -> web.Response:
    require_admin(request)
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error_response(400, "BadRequest", "the body must be a JSON ResourceExport")
    export = shapes.admin_export_from_body(body, hub_of(request).config.leader_cluster_id)
    hub = hub_of(request)
    answer = await hub.engine.upsert(ADMIN, export)
    stored = hub.engine.index.exports.get(export.export_name)
    payload = shapes.export_item(stored, hub.config.namespace) if stored is not None else {}
    return web.json_response(
        {"verdict": shapes.verdict_name(answer.status.verdict), "revision": answer.revision, "item": payload},
        status=201,
    )


async def delete_export(request: web.Request) -> web.Response:
    require_admin(request)
    name = request.match_info["name"]
    hub = hub_of(request)
    if name not in hub.engine.index.exports:
        return error_response(404, "NotFound", f"resourceexport {quote(name)} not found")
    answer = await hub.engine.delete(ADMIN, name)
    return web.json_response({"deleted": name, "revision": answer.revision})


async def openapi(_: web.Request) -> web.Response:
    return web.json_response(OPENAPI)


def build_rest_app(hub: RestHub) -> web.Application:
    app = web.Application(middlewares=[_auth], client_max_size=hub.config.max_message_bytes)
    app[HUB_KEY] = hub
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/readyz/watches", readyz_watches)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/api/v1/members", members)
    add_membership_routes(app)
    app.router.add_get("/api/v1/resourceexports", list_exports)
    app.router.add_post("/api/v1/resourceexports", create_export)
    app.router.add_delete("/api/v1/resourceexports/{name}", delete_export)
    app.router.add_get("/api/v1/resourceimports", list_imports)
    app.router.add_get("/api/v1/openapi.json", openapi)
    add_live_routes(app, hub)
    add_dashboard_routes(app)
    return app
