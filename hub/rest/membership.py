"""REST verbs of membership: read and delete the ClusterSet, remove a member.

- `GET /api/v1/clusterset`: the leader's ClusterSet with its status (404 once deleted).
- `DELETE /api/v1/clusterset` (admin): end the ClusterSet (SQLite store; with the Kubernetes
  store the ClusterSet CR is deleted instead, and this answers 409 saying so).
- `DELETE /api/v1/members/CLUSTER_ID` (admin): remove a member, its announce and every export
  it made; `revokeTokens=true` first revokes the hub tokens issued for that cluster.

Both deletions take Kubernetes' `dryRun=All`: the answer lists what would go, nothing changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from hub.clusterset.end import held_by_cr
from hub.clusterset.status import MemberHealth, member_health
from hub.errors import quote
from hub.rest import shapes
from hub.rest.context import hub_of, is_dry_run, require_admin
from hub.rest.errors import error_response
from mcapi import names

if TYPE_CHECKING:
    from hub.engine import ClusterSetEnd, MemberRemoval
    from hub.rest import RestHub

_TRUE = ("true", "1", "yes")


def _ended(hub: RestHub) -> web.Response:
    return error_response(404, "NotFound", hub.engine.ended)


async def get_clusterset(request: web.Request) -> web.Response:
    hub = hub_of(request)
    if hub.engine.ended:
        return _ended(hub)
    return web.json_response(shapes.clusterset(hub))


def _end_body(hub: RestHub, end: ClusterSetEnd, dry_run: bool) -> dict[str, Any]:
    return {
        "deleted": hub.config.cluster_set_id,
        "dryRun": dry_run,
        "members": end.members,
        "exports": end.exports,
        "imports": end.imports,
        "revision": end.revision,
    }


async def delete_clusterset(request: web.Request) -> web.Response:
    require_admin(request)
    hub = hub_of(request)
    if hub.engine.ended:
        return _ended(hub)
    if is_dry_run(request):
        if hub.config.kube_store is not None:
            raise held_by_cr(hub.config.cluster_set_id, hub.config.namespace)
        return web.json_response(_end_body(hub, hub.engine.end_plan(), dry_run=True))
    return web.json_response(_end_body(hub, await hub.end_clusterset(), dry_run=False))


def _health(hub: RestHub, cluster_id: str) -> MemberHealth | None:
    record = hub.engine.index.members.get(cluster_id)
    return member_health(record, hub.now(), hub.config.disconnect_after) if record is not None else None


def _removal_body(
    hub: RestHub, removal: MemberRemoval, health: MemberHealth | None, tokens: list[str], revoked: list[str]
) -> dict[str, Any]:
    """What goes (or went): the member's liveness as it was, its announce, exports, the imports
    they made, and its credentials."""
    return {
        "clusterID": removal.cluster_id,
        "dryRun": removal.revision == 0,
        "connected": health.connected if health is not None else False,
        "heartbeatAgeSeconds": round(health.heartbeat_age, 3) if health is not None else None,
        "announce": names.member_announce_name(removal.cluster_id),
        "exports": removal.exports,
        "importsDeleted": removal.imports_deleted,
        "importsChanged": removal.imports_changed,
        # The hub's own tokens for this cluster (`mchub hub token`) still valid, and those revoked now.
        "tokens": [t for t in tokens if t not in revoked],
        "revokedTokens": revoked,
        # ServiceAccount tokens (TokenReview) are the leader cluster's to revoke, not the hub's.
        "serviceAccountTokens": hub.config.kube_store is not None,
        "leaderNamespace": hub.config.namespace,
        "revision": removal.revision,
    }


async def delete_member(request: web.Request) -> web.Response:
    """Remove a member and everything it exported; a running member with a valid token joins again."""
    require_admin(request)
    cluster_id = request.match_info["cluster_id"]
    hub = hub_of(request)
    engine = hub.engine
    if cluster_id not in engine.index.members and not engine.index.owned_by(cluster_id, admin=False):
        return error_response(404, "NotFound", f"member {quote(cluster_id)} not found")
    tokens = sorted(t.name for t in hub.tokens.list() if t.cluster_id == cluster_id and not t.admin)
    health = _health(hub, cluster_id)
    if is_dry_run(request):
        return web.json_response(_removal_body(hub, engine.removal_plan(cluster_id), health, tokens, []))
    revoked: list[str] = []
    if request.query.get("revokeTokens", "").lower() in _TRUE:
        # Before the removal, so that the member cannot announce again in between.
        revoked = [name for name in tokens if hub.tokens.delete(name)]
    removal = await engine.remove_member(
        cluster_id, f"cluster {quote(cluster_id)} was removed from the ClusterSet by its administrator"
    )
    if removal is None:
        return error_response(404, "NotFound", f"member {quote(cluster_id)} not found")
    return web.json_response(_removal_body(hub, removal, health, tokens, revoked))


def add_membership_routes(app: web.Application) -> None:
    app.router.add_get("/api/v1/clusterset", get_clusterset)
    app.router.add_delete("/api/v1/clusterset", delete_clusterset)
    app.router.add_delete("/api/v1/members/{cluster_id}", delete_member)
