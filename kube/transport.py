"""The client's request plumbing under kubernetes-asyncio: query strings, how a request is
named for metrics, one proxy decision per session, and TCP keepalive on every connection."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio.client import ApiClient
from yarl import URL

_VERB_OF_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def query_params(**params: object) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        else:
            out.append((key, str(value)))
    return out


def describe_request(method: str, path: str, query: Sequence[tuple[str, str]] = ()) -> tuple[str, str]:
    """The Kubernetes verb and the resource (``plural.group[/subresource]``; "" for discovery
    and other non-resource paths) of a REST request, for metrics."""
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    if len(segments) >= 2 and segments[0] == "api":
        group, rest = "", segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, rest = segments[1], segments[3:]
    else:
        rest, group = [], ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return ("get" if method == "GET" else method.lower()), ""
    resource = f"{rest[0]}.{group}" if group else rest[0]
    named = len(rest) > 1
    if len(rest) > 2:
        resource += "/" + "/".join(rest[2:])
    if method == "GET":
        if ("watch", "true") in query:
            return "watch", resource
        return ("get" if named else "list"), resource
    if method == "DELETE" and not named:
        return "deletecollection", resource
    return _VERB_OF_METHOD.get(method, method.lower()), resource


def skip_env_lookups(api: ApiClient) -> None:
    """kubernetes-asyncio's session trusts the environment, so aiohttp looks up ~/.netrc and the
    proxy variables on every request, each in a thread: two thread hops per request. The server
    is fixed, so the proxy decision is made once; without a proxy for it, there is nothing to look
    up (credentials come from the kubeconfig, never from ~/.netrc)."""
    session = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    if not isinstance(session, aiohttp.ClientSession) or not session.trust_env:
        return
    try:
        get_env_proxy_for_url(URL(str(api.configuration.host)))
    except LookupError:
        session._trust_env = False  # in aiohttp's own attribute list; no public setter
    # else: a proxy applies to this server, and aiohttp keeps honouring the environment.


# TCP keepalive on every connection to the API server: an idle watch whose server (or the node a
# Service sent it to) went away is noticed within about 5 s, instead of when the informer's
# inactivity timer runs out (minutes), and re-opened elsewhere. Shorter than client-go's 30 s: a
# Gateway failover waits for the member's Node watch, which may have gone through the Node that
# died (an API server endpoint on each Node); a probe every few seconds per idle connection is
# the price.
KEEPALIVE_IDLE = 3
KEEPALIVE_INTERVAL = 1
KEEPALIVE_PROBES = 2
# The same for a request whose bytes the other end never acknowledges (keepalive waits only on an
# idle connection): without it a write through a Node that died waits for the request timeout
# (30 s), which held a Gateway failover up for that long.
USER_TIMEOUT_MS = 5000


def keepalive_socket(addr_info: Any) -> socket.socket:
    """aiohttp's socket factory, with TCP keepalive on and a limit on unacknowledged data."""
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):  # Linux; other systems keep their defaults
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_PROBES)
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, USER_TIMEOUT_MS)
    return sock


def keep_connections_alive(api: ApiClient) -> None:
    session = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    connector = session.connector if isinstance(session, aiohttp.ClientSession) else None
    if isinstance(connector, aiohttp.TCPConnector):
        connector._socket_factory = keepalive_socket  # kubernetes-asyncio builds the connector; no public setter
