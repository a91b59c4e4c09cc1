"""An asyncio Kubernetes client over plain dicts.

kubernetes-asyncio provides transport and authentication (kubeconfig, in-cluster
ServiceAccount, client certificates, exec plugins); every call here goes through
its ``ApiClient.call_api`` with a REST path built from a ``Resource``, so CRDs
created at runtime work like built-in kinds and no generated model is involved.
Failures are raised as the typed errors of ``kube.errors``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration

from kube.config import bearer_configuration, load_configuration
from kube.errors import (
    ConnectionFailed,
    KubeError,
    NotConnected,
    TooManyRequests,
    error_from_status,
    parse_retry_after,
    status_from_body,
)
from kube.metrics import NO_ANSWER, ClientMetrics
from kube.ratelimit import TokenBucket
from kube.resources import Obj, Resource, name_of, namespace_of
from kube.transport import describe_request, keep_connections_alive, query_params, skip_env_lookups

log = logging.getLogger(__name__)

# Seconds to open a connection to the API server. A healthy one answers in milliseconds (2 s leaves
# room for one lost SYN); an endpoint behind a Node that died never does, and the next attempt may
# reach another (a Service's endpoints are chosen per connection), so a request whose connection
# could not be opened, and so was never sent, is sent again at once on a new one, up to
# CONNECT_ATTEMPTS times: with one dead endpoint of two, a request fails 1 time in 8, not 1 in 2.
CONNECT_TIMEOUT = 2.0
CONNECT_ATTEMPTS = 4

_AUTH = ["BearerToken"]

WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
PropagationPolicy = Literal["Foreground", "Background", "Orphan"]

# A 429 (API Priority and Fairness, max-in-flight) means the request was not served: sending it
# again after the server's Retry-After is safe for every verb. client-go also tries 10 times.
MAX_THROTTLED_RETRIES = 10
# An object is at most about 1.5 MiB in etcd; a watch line far longer than any is a broken stream.
MAX_WATCH_EVENT_BYTES = 32 * 1024 * 1024
_THROTTLED_DEFAULT_DELAY = 1.0


class PatchType(StrEnum):
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class ObjectList:
    """One page of a list: its items, the list's resourceVersion (a watch starts there)
    and the token of the next page (None on the last one)."""

    items: list[Obj]
    resource_version: str
    continue_token: str | None


@dataclass(frozen=True)
class WatchEvent:
    type: WatchEventType
    object: Obj


class KubeClient:
    """A connection to one API server. Safe to share between tasks; close it once.

    ``qps``/``burst``: a client-side rate limit on every request (watches included, as in
    client-go); None: no limit. ``metrics`` counts every request (``client.metrics``).
    """

    def __init__(
        self,
        api: ApiClient,
        request_timeout: float = 30.0,
        *,
        qps: float | None = None,
        burst: int | None = None,
        metrics: ClientMetrics | None = None,
    ) -> None:
        self._api = api
        self.request_timeout = request_timeout
        skip_env_lookups(api)
        keep_connections_alive(api)
        self.metrics = metrics if metrics is not None else ClientMetrics(self.host)
        self._limiter: TokenBucket | None = None
        self.set_rate_limit(qps, burst)

    @classmethod
    def from_configuration(
        cls,
        configuration: Configuration,
        request_timeout: float = 30.0,
        *,
        qps: float | None = None,
        burst: int | None = None,
    ) -> KubeClient:
        return cls(ApiClient(configuration=configuration), request_timeout, qps=qps, burst=burst)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def set_rate_limit(self, qps: float | None, burst: int | None = None) -> None:
        """Limit requests to ``qps`` per second with bursts of ``burst`` (default 2 x qps);
        None or 0: no limit."""
        if not qps:
            self._limiter = None
            self.metrics.set_limit(0.0, 0)
            return
        size = burst if burst else max(1, int(2 * qps))
        self._limiter = TokenBucket(qps, size)
        self.metrics.set_limit(qps, size)

    @property
    def rate_limit(self) -> tuple[float, int] | None:
        """(qps, burst) in force, None without a limit."""
        return (self._limiter.qps, self._limiter.burst) if self._limiter is not None else None

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # Transport

    async def _open(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: object = None,
        content_type: str = "application/json",
        client_timeout: aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        """Send a request (after the rate limit lets it go; again after a 429, as the server
        asks); return the response once its status is known to be a success."""
        verb, resource = describe_request(method, path, query)
        attempt = connects = 0
        while True:
            try:
                return await self._send(
                    method,
                    path,
                    verb=verb,
                    resource=resource,
                    query=query,
                    body=body,
                    content_type=content_type,
                    client_timeout=client_timeout,
                )
            except NotConnected:
                connects += 1
                if connects >= CONNECT_ATTEMPTS:
                    raise
            except TooManyRequests as err:
                if type(err) is not TooManyRequests or attempt >= MAX_THROTTLED_RETRIES:
                    raise  # a 5xx (a subclass) is the caller's to retry
                attempt += 1
                delay = err.delay if err.delay is not None else _THROTTLED_DEFAULT_DELAY
                log.info(
                    "requestThrottled",
                    extra={"verb": verb, "resource": resource, "retryAfterSeconds": delay, "attempt": attempt},
                )
                await asyncio.sleep(delay)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Sequence[tuple[str, str]],
        body: object,
        content_type: str,
        client_timeout: aiohttp.ClientTimeout | None,
    ) -> aiohttp.ClientResponse:
        if self._limiter is not None:
            waited = await self._limiter.acquire()
            self.metrics.observe_wait(verb, waited)
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            response: aiohttp.ClientResponse = await self._api.call_api(
                path,
                method,
                query_params=list(query),
                header_params=headers,
                body=body,
                auth_settings=_AUTH,
                _preload_content=False,
                _request_timeout=client_timeout
                or aiohttp.ClientTimeout(total=self.request_timeout, sock_connect=CONNECT_TIMEOUT),
            )
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as err:
            self.metrics.count_request(NO_ANSWER, method, verb, resource)
            raise NotConnected(f"{method} {path}: {err!r}") from err
        except (aiohttp.ClientError, OSError) as err:
            # TimeoutError is an OSError: a request that timed out is a connection failure too.
            self.metrics.count_request(NO_ANSWER, method, verb, resource)
            raise ConnectionFailed(f"{method} {path}: {err!r}") from err
        self.metrics.count_request(response.status, method, verb, resource)
        if response.status >= 300:
            raw = await _body(response, method, path)
            status = status_from_body(raw, response.status, response.reason or "")
            raise error_from_status(status, response.status, parse_retry_after(response.headers.get("Retry-After")))
        return response

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: object = None,
        content_type: str = "application/json",
    ) -> Any:
        """Any API call by path; returns the decoded JSON body (None when empty)."""
        response = await self._open(method, path, query=query, body=body, content_type=content_type)
        raw = await _body(response, method, path)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as err:
            raise KubeError(f"{method} {path}: response is not JSON") from err

    async def text(self, path: str) -> str:
        """GET a path that answers plain text (/readyz, /livez); raises like any request on an
        error status (the body, e.g. readyz's failed checks, is the error's message)."""
        raw = await _body(await self._open("GET", path), "GET", path)
        return raw.decode("utf-8", "replace")

    async def _object(self, method: str, path: str, **kwargs: Any) -> Obj:
        result = await self.request(method, path, **kwargs)
        if not isinstance(result, dict):
            raise KubeError(f"{method} {path}: expected an object, got {type(result).__name__}")
        return result

    # Reads

    async def server_version(self) -> dict[str, str]:
        return await self._object("GET", "/version")

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        return await self._object("GET", resource.path(namespace, name))

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        """One page (all of it without ``limit``). A namespaced resource with no namespace
        lists every namespace."""
        query = query_params(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            **{"continue": continue_token},
        )
        body = await self._object("GET", resource.path(namespace), query=query)
        meta = body.get("metadata") or {}
        items = [self._with_type(resource, item) for item in body.get("items") or []]
        return ObjectList(items, str(meta.get("resourceVersion", "")), meta.get("continue") or None)

    async def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList:
        """Every page of a list; the resourceVersion is the first page's (the snapshot's)."""
        items: list[Obj] = []
        token: str | None = None
        first_version = ""
        while True:
            page = await self.list(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
            )
            items.extend(page.items)
            first_version = first_version or page.resource_version
            token = page.continue_token
            if token is None:
                return ObjectList(items, first_version, None)

    @staticmethod
    def _with_type(resource: Resource, item: Obj) -> Obj:
        # List items come without apiVersion/kind; callers compare them with watched objects that have them.
        item.setdefault("apiVersion", resource.api_version)
        item.setdefault("kind", resource.kind)
        return item

    # Writes

    def _target(self, resource: Resource, obj: Obj, namespace: str | None) -> str | None:
        ns = namespace or namespace_of(obj)
        if resource.namespaced and not ns:
            raise ValueError(f"{resource.kind} is namespaced: give a namespace")
        return ns if resource.namespaced else None

    async def create(self, resource: Resource, obj: Obj, namespace: str | None = None, *, dry_run: bool = False) -> Obj:
        """POST the object; with ``dry_run`` the server validates and answers but stores nothing."""
        ns = self._target(resource, obj, namespace)
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        query = [("dryRun", "All")] if dry_run else []
        return await self._object("POST", resource.path(ns), body=body, query=query)

    async def replace(self, resource: Resource, obj: Obj) -> Obj:
        """PUT the whole object; its metadata.resourceVersion makes the write conditional."""
        return await self._put(resource, obj, None)

    async def replace_status(self, resource: Resource, obj: Obj) -> Obj:
        return await self._put(resource, obj, "status")

    async def _put(self, resource: Resource, obj: Obj, subresource: str | None) -> Obj:
        ns = self._target(resource, obj, None)
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        return await self._object("PUT", resource.path(ns, name_of(obj), subresource), body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = PatchType.MERGE,
    ) -> Obj:
        """Patch an object. Merge patch (RFC 7386) is the default because it works for every
        kind; strategic merge is only understood for built-in kinds."""
        return await self._patch(resource, name, patch, namespace, patch_type=patch_type, subresource=None)

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = PatchType.MERGE,
    ) -> Obj:
        return await self._patch(resource, name, patch, namespace, patch_type=patch_type, subresource="status")

    async def _patch(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str | None,
        *,
        patch_type: PatchType,
        subresource: str | None,
    ) -> Obj:
        if not patch:
            # kubernetes-asyncio drops an empty body; an empty patch changes nothing anyway.
            return await self.get(resource, name, namespace)
        path = resource.path(namespace if resource.namespaced else None, name, subresource)
        return await self._object("PATCH", path, body=patch, content_type=str(patch_type))

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj:
        """Delete; ``uid``/``resource_version`` are preconditions (409 Conflict when stale).
        Returns what the server answered: the object (possibly still terminating) or a Status."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        path = resource.path(namespace if resource.namespaced else None, name)
        return await self._object("DELETE", path, body=options)

    # Watching

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        inactivity_timeout: float | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream the changes after ``resource_version``.

        Ends quietly when the server closes the stream, or when nothing (not even a
        bookmark) arrived for ``inactivity_timeout`` seconds; the caller re-watches from
        the last resourceVersion it saw. An ERROR event is raised as its typed error
        (410 Gone: relist). Close the generator (``aclosing``) to drop the connection.
        """
        query = query_params(
            watch=True,
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            allowWatchBookmarks=allow_bookmarks or None,
            timeoutSeconds=timeout_seconds,
        )
        path = resource.path(namespace)
        response = await self._open(
            "GET",
            path,
            query=query,
            client_timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT),
        )
        # Read what has arrived, not a line at a time: a burst of events is one read, and the
        # inactivity timer is armed once per read, not once per event.
        partial: list[bytes] = []  # the start of a line whose end has not arrived yet
        partial_bytes = 0
        try:
            while True:
                try:
                    async with asyncio.timeout(inactivity_timeout):
                        chunk = await response.content.readany()
                except TimeoutError:
                    log.info("watchInactive", extra={"resource": resource.qualified_name, "path": path})
                    return
                except (aiohttp.ClientError, OSError) as err:
                    raise ConnectionFailed(f"watch {path}: {err!r}") from err
                if not chunk:
                    last = b"".join(partial)
                    if last.strip():
                        yield self._event(resource, last)
                    return
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    line = chunk[start:end]
                    if partial:
                        line = b"".join([*partial, line])
                        partial, partial_bytes = [], 0
                    start = end + 1
                    if line.strip():
                        yield self._event(resource, line)
                if start < len(chunk):
                    partial.append(chunk[start:])
                    partial_bytes += len(chunk) - start
                    if partial_bytes > MAX_WATCH_EVENT_BYTES:
                        raise ConnectionFailed(f"watch {path}: an event longer than {MAX_WATCH_EVENT_BYTES} bytes")
        finally:
            response.close()

    def _event(self, resource: Resource, line: bytes) -> WatchEvent:
        try:
            decoded = json.loads(line)
            event_type, obj = decoded["type"], decoded["object"]
        except (ValueError, KeyError, TypeError) as err:
            raise ConnectionFailed(f"watch {resource.qualified_name}: undecodable event") from err
        if event_type == "ERROR":
            raise error_from_status(obj if isinstance(obj, dict) else {})
        if event_type not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") or not isinstance(obj, dict):
            raise ConnectionFailed(f"watch {resource.qualified_name}: unknown event type {event_type!r}")
        return WatchEvent(event_type, obj)


async def connect(
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    qps: float | None = None,
    burst: int | None = None,
) -> KubeClient:
    """A client for the cluster a kubeconfig (or the pod's ServiceAccount) points at, limited
    to ``qps``/``burst`` when given.

    No request is made: an unreachable server shows up as ConnectionFailed on first use.
    """
    return KubeClient.from_configuration(await load_configuration(kubeconfig, context), qps=qps, burst=burst)


async def _body(response: aiohttp.ClientResponse, method: str, path: str) -> bytes:
    """The whole body of ``response``, which is released; ConnectionFailed when it cannot be read."""
    try:
        return await response.read()
    except (aiohttp.ClientError, OSError) as err:
        raise ConnectionFailed(f"{method} {path}: {err!r}") from err
    finally:
        response.release()


__all__ = [
    "KubeClient",
    "ObjectList",
    "PatchType",
    "WatchEvent",
    "bearer_configuration",
    "connect",
]
