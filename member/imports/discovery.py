"""Which versions of an API group serve a resource, from the API server's discovery.

CRDs come and go while the member runs (Antrea installed after the member, an MCS
CRD upgraded), so answers are kept only briefly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kube.client import KubeClient
from kube.errors import NotFound, TemporaryError


class ApiDiscovery:
    def __init__(self, client: KubeClient, ttl: float = 10.0) -> None:
        """``ttl``: seconds an answer is reused."""
        self._client = client
        self._ttl = ttl
        # group -> (expiry on the loop clock, plural -> versions serving it, in the group's order)
        self._cache: dict[str, tuple[float, dict[str, list[str]]]] = {}
        # Lookups under way: concurrent askers share one (one set of requests per expiry, not one each).
        self._pending: dict[str, asyncio.Future[dict[str, list[str]]]] = {}

    def forget(self) -> None:
        self._cache.clear()

    async def versions_serving(self, group: str, plural: str) -> list[str]:
        """Versions of ``group`` that serve ``plural``; empty when none does (CRD not installed)."""
        return list((await self._group(group)).get(plural, []))

    async def pick_version(self, group: str, plural: str, preference: Sequence[str]) -> str | None:
        """The first of ``preference`` that is served, else any served version, else None."""
        served = await self.versions_serving(group, plural)
        for version in preference:
            if version in served:
                return version
        return served[0] if served else None

    async def _group(self, group: str) -> dict[str, list[str]]:
        now = asyncio.get_running_loop().time()
        cached = self._cache.get(group)
        if cached is not None and cached[0] > now:
            return cached[1]
        pending = self._pending.get(group)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[dict[str, list[str]]] = asyncio.get_running_loop().create_future()
        self._pending[group] = future
        try:
            resources = await self._fetch(group)
        except BaseException as err:
            # Askers sharing this lookup fail too, but are not cancelled by our cancellation.
            cancelled = isinstance(err, asyncio.CancelledError)
            future.set_exception(TemporaryError("API discovery was cancelled") if cancelled else err)
            future.exception()  # retrieved: the askers waiting on it get it, nobody else needs to
            raise
        finally:
            self._pending.pop(group, None)
        future.set_result(resources)
        self._cache[group] = (now + self._ttl, resources)
        return resources

    async def _fetch(self, group: str) -> dict[str, list[str]]:
        # The list of every group (always there), rather than the group itself (404 when absent).
        document: Any = await self._client.request("GET", "/apis")
        versions: list[str] = []
        for entry in (document or {}).get("groups") or []:
            if isinstance(entry, dict) and entry.get("name") == group:
                versions = [v["version"] for v in entry.get("versions") or [] if isinstance(v, dict) and "version" in v]
        resources: dict[str, list[str]] = {}
        for version in versions:
            try:
                listing: Any = await self._client.request("GET", f"/apis/{group}/{version}")
            except NotFound:
                continue  # removed in between
            for item in (listing or {}).get("resources") or []:
                plural = item.get("name", "") if isinstance(item, dict) else ""
                if plural and "/" not in plural:  # "x/status" is a subresource
                    resources.setdefault(plural, []).append(version)
        return resources
