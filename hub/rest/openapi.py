"""The REST facade's OpenAPI 3 description, served at /api/v1/openapi.json."""

from __future__ import annotations

from typing import Any

_FILTERS = [
    {
        "name": "clusterID",
        "in": "query",
        "schema": {"type": "string"},
        "description": "exporting/target cluster",
    },
    {"name": "kind", "in": "query", "schema": {"type": "string"}, "description": "spec.kind, e.g. Service"},
    {"name": "namespace", "in": "query", "schema": {"type": "string"}, "description": "source Namespace"},
]
_OBJECT = {"type": "object", "additionalProperties": True}
_LIST = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "items": {"type": "array", "items": _OBJECT},
    },
}
_STATUS = {
    "type": "object",
    "properties": {"code": {"type": "integer"}, "reason": {"type": "string"}, "message": {"type": "string"}},
}
_JSON_STATUS = {"application/json": {"schema": _STATUS}}
_DRY_RUN = {
    "name": "dryRun",
    "in": "query",
    "schema": {"type": "string", "enum": ["All"]},
    "description": "answer what would be deleted; change nothing",
}


def _ok(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "200": {"description": description, "content": {"application/json": {"schema": schema}}},
        "401": {"description": "no or bad token", "content": {"application/json": {"schema": _STATUS}}},
    }


OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "mchub hub REST facade", "version": "v1"},
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/healthz": {"get": {"security": [], "responses": {"200": {"description": "the process is up"}}}},
        "/readyz": {
            "get": {
                "security": [],
                "responses": {
                    "200": {"description": "takes writes (the leader replica)"},
                    "503": {"description": "not ready or a follower"},
                },
            }
        },
        "/readyz/watches": {
            "get": {
                "security": [],
                "responses": {
                    "200": {"description": "serves watches and reads (the leader, or a follower holding its history)"},
                    "503": {"description": "not ready"},
                },
            }
        },
        "/metrics": {"get": {"responses": {"200": {"description": "Prometheus text format"}}}},
        "/api/v1/clusterset": {
            "get": {
                "responses": {
                    **_ok(_OBJECT, "the ClusterSet with status"),
                    "404": {"description": "the ClusterSet was deleted", "content": _JSON_STATUS},
                }
            },
            "delete": {
                "description": (
                    "admin only: delete the ClusterSet (SQLite store): every announce, export and import goes and "
                    "members are refused from then on, also after a restart. With the Kubernetes store the "
                    "leader's ClusterSet CR holds it: delete that instead (409)."
                ),
                "parameters": [_DRY_RUN],
                "responses": {
                    "200": {"description": "deleted (or, dry run, what would be): members, exports, imports"},
                    "403": {"description": "not the admin", "content": _JSON_STATUS},
                    "404": {"description": "deleted already", "content": _JSON_STATUS},
                    "409": {"description": "the ClusterSet is a CR (Kubernetes store)", "content": _JSON_STATUS},
                },
            },
        },
        "/api/v1/members": {"get": {"responses": _ok(_LIST, "MemberClusterAnnounces")}},
        "/api/v1/members/{clusterID}": {
            "delete": {
                "description": (
                    "admin only: remove a member (its announce) and every export it made, re-merging the imports "
                    "they were part of; its open Export streams end with FAILED_PRECONDITION. A running member "
                    "whose token is still valid joins again at its next announce."
                ),
                "parameters": [
                    {"name": "clusterID", "in": "path", "required": True, "schema": {"type": "string"}},
                    _DRY_RUN,
                    {
                        "name": "revokeTokens",
                        "in": "query",
                        "schema": {"type": "boolean"},
                        "description": "first revoke the hub tokens issued for this cluster",
                    },
                ],
                "responses": {
                    "200": {
                        "description": (
                            "removed (or, dry run, what would be): connected, heartbeatAgeSeconds, announce, "
                            "exports, importsDeleted, importsChanged, tokens, revokedTokens, serviceAccountTokens"
                        )
                    },
                    "403": {"description": "not the admin", "content": _JSON_STATUS},
                    "404": {"description": "no such member", "content": _JSON_STATUS},
                },
            }
        },
        "/api/v1/resourceexports": {
            "get": {"parameters": _FILTERS, "responses": _ok(_LIST, "ResourceExports")},
            "post": {
                "description": "admin only: export an AntreaClusterNetworkPolicy",
                "requestBody": {"content": {"application/json": {"schema": _OBJECT}}},
                "responses": {
                    "201": {"description": "accepted, with its verdict"},
                    "400": {"description": "malformed", "content": {"application/json": {"schema": _STATUS}}},
                    "403": {
                        "description": "not the admin",
                        "content": {"application/json": {"schema": _STATUS}},
                    },
                },
            },
        },
        "/api/v1/resourceexports/{name}": {
            "delete": {
                "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "deleted"},
                    "403": {
                        "description": "not the admin",
                        "content": {"application/json": {"schema": _STATUS}},
                    },
                    "404": {
                        "description": "no such export",
                        "content": {"application/json": {"schema": _STATUS}},
                    },
                },
            }
        },
        "/api/v1/resourceimports": {"get": {"parameters": _FILTERS, "responses": _ok(_LIST, "ResourceImports")}},
        "/api/v1/openapi.json": {"get": {"responses": _ok(_OBJECT, "this document")}},
        "/api/v1/events": {
            "get": {
                "description": (
                    "The dashboard's live view as server-sent events: `snapshot` on connect and `changed` "
                    "(the whole view model: clusterSet, members, exports with verdicts, serviceImports, "
                    "policies, gateways, gatewayLinks), `liveness` (clusterSet and members only), and "
                    "`: keep-alive` comments after 15 s of silence. EventSource cannot set headers, so the "
                    "token may be passed as `?token=`."
                ),
                "parameters": [
                    {
                        "name": "token",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "bearer token, for clients that cannot set the Authorization header",
                    }
                ],
                "responses": {
                    "200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {}}}},
                    "401": {"description": "no or bad token", "content": {"application/json": {"schema": _STATUS}}},
                },
            }
        },
        "/": {
            "get": {
                "security": [],
                "description": "the dashboard page (its data calls need a token); assets under /static/",
                "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
            }
        },
    },
}
