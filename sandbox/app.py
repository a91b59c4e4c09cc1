"""The aiohttp application: authentication, error rendering, and dispatch by path."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from sandbox import discovery, errors, openapi
from sandbox.context import ApiContext
from sandbox.handlers import USER_KEY, ResourceHandler, json_response
from sandbox.routing import builtin_group_version, resolve, split_group_version

log = logging.getLogger(__name__)

CTX_KEY = web.AppKey("ctx", ApiContext)
# Paths a real apiserver lets anyone read (system:public-info-viewer).
_PUBLIC = {"/version", "/healthz", "/livez", "/readyz"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def errors_as_status(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.ApiError as exc:
        return json_response(exc.to_status(), exc.code)
    except errors.PageNotFound:
        return web.Response(
            status=404,
            text="404 page not found\n",
            content_type="text/plain",
            headers={"X-Content-Type-Options": "nosniff"},
        )
    except web.HTTPException:
        raise
    except Exception:
        log.exception("request failed", extra={"method": request.method, "path": request.path})
        failure = errors.ApiError(500, "InternalError", "Internal error occurred: the sandbox failed")
        return json_response(failure.to_status(), 500)


@web.middleware
async def bearer_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path not in _PUBLIC:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        ctx = request.app[CTX_KEY]
        found = ctx.authenticator.authenticate(token.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            raise errors.unauthorized()
        request[USER_KEY] = found
    return await handler(request)


def _discovery(ctx: ApiContext, path: str) -> web.Response | None:
    if path == "/version":
        return json_response(discovery.version_info())
    if path in ("/healthz", "/livez", "/readyz"):
        return web.Response(text="ok")
    if path == "/api":
        return json_response(discovery.api_versions(ctx))
    if path == "/apis":
        return json_response(discovery.api_group_list(ctx))
    if path == "/openapi/v3":
        return json_response(openapi.index(ctx))
    segments = [s for s in path.split("/") if s]
    if len(segments) == 2 and segments[0] == "apis":
        group = discovery.api_group(ctx, segments[1])
        if group is None:
            raise errors.PageNotFound()
        return json_response(group)
    if segments[:2] == ["openapi", "v3"]:
        parsed = split_group_version("/" + "/".join(segments[2:]))
        document = None
        if parsed is not None and not parsed[1]:
            document = openapi.group_version_document(ctx, parsed[0].group, parsed[0].version)
        if document is None:
            raise errors.unknown_resource()
        return json_response(document)
    return None


async def dispatch(request: web.Request) -> web.StreamResponse:
    ctx = request.app[CTX_KEY]
    path = request.path.rstrip("/") or "/"
    if request.method == "GET":
        answer = _discovery(ctx, path)
        if answer is not None:
            return answer
    parsed = split_group_version(path)
    if parsed is None:
        raise errors.PageNotFound()
    gv, rest = parsed
    if not rest:
        if request.method != "GET":
            raise errors.method_not_allowed()
        resources = discovery.api_resource_list(ctx, gv.group, gv.version)
        if resources is None:
            raise errors.unknown_path(builtin_group_version(ctx.catalog, gv))
        return json_response(resources)
    target = resolve(ctx.catalog, gv, rest)
    return await ResourceHandler(ctx).handle(request, target)


def build_app(ctx: ApiContext) -> web.Application:
    app = web.Application(middlewares=[errors_as_status, bearer_auth], client_max_size=16 * 1024 * 1024)
    app[CTX_KEY] = ctx
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app
