"""Which versions of an API group serve a resource, from the API server's discovery.

CRDs come and go while the member runs (Antrea installed after the member, an MCS
CRD upgraded), so answers are kept only briefly: an answer older than ``ttl`` is still
given, and refreshed in the background, so that no import waits for discovery requests
after the first answer. A refresh whose answer differs from the one it replaces is told to
``on_change``: the importer then tries its blocked imports at once, rather than at their next
backoff step (up to its retry interval after the CRDs came).

An answer that a resource is not served is the one that blocks an import, and the one most
likely out of date (the CRDs installed since): given when it is older than ``RECHECK_AFTER``,
it is refreshed at once in the background, rather than once it expires, so an import that
arrives soon after its CRDs is applied as soon as the refresh tells ``on_change``, not up to
``ttl`` later. At most one such refresh a group per ``RECHECK_AFTER``, and only while asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from kube.client import KubeClient
from kube.errors import NotFound
from kube.waiting import cancel_and_wait

# Seconds after which an answer that a resource is not served is refreshed when given.
RECHECK_AFTER = 1.0


class ApiDiscovery:
    def __init__(self, client: KubeClient, ttl: float = 10.0, on_change: Callable[[str], None] | None = None) -> None:
        """``ttl``: seconds an answer is reused; ``on_change(group)``: called when a refresh of
        ``group`` answers otherwise than the answer it replaces."""
        self._client = client
        self._ttl = ttl
        self._on_change = on_change
        # group -> (expiry on the loop clock, plural -> versions serving it, in the group's order)
        self._cache: dict[str, tuple[float, dict[str, list[str]]]] = {}
        # group -> when it was last looked up (loop clock), answered or not: not the cache's
        # expiry, so that a failing API server is asked no more than once a RECHECK_AFTER either
        self._asked: dict[str, float] = {}
        # Lookups under way: concurrent askers share one (one set of requests per expiry, not one each).
        self._pending: dict[str, asyncio.Task[dict[str, list[str]]]] = {}

    def forget(self) -> None:
        self._cache.clear()
        self._asked.clear()

    async def close(self) -> None:
        """Cancel the refreshes under way."""
        pending = list(self._pending.values())
        await cancel_and_wait(*pending)

    async def versions_serving(self, group: str, plural: str) -> list[str]:
        """Versions of ``group`` that serve ``plural``; empty when none does (CRD not installed)."""
        served = list((await self._group(group)).get(plural, []))
        if not served and asyncio.get_running_loop().time() - self._asked.get(group, 0.0) >= RECHECK_AFTER:
            self._refresh(group)  # maybe installed since: have it looked at now
        return served

    async def pick_version(self, group: str, plural: str, preference: Sequence[str]) -> str | None:
        """The first of ``preference`` that is served, else any served version, else None."""
        served = await self.versions_serving(group, plural)
        for version in preference:
            if version in served:
                return version
        return served[0] if served else None

    async def _group(self, group: str) -> dict[str, list[str]]:
        cached = self._cache.get(group)
        if cached is not None:
            if cached[0] <= asyncio.get_running_loop().time():
                self._refresh(group)  # stale: answer it, and have it renewed
            return cached[1]
        return await asyncio.shield(self._refresh(group))

    def _refresh(self, group: str) -> asyncio.Task[dict[str, list[str]]]:
        """The lookup of ``group`` under way, or a new one: concurrent askers share it."""
        task = self._pending.get(group)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._lookup(group), name=f"discovery-{group}")
            self._pending[group] = task
            task.add_done_callback(lambda t: self._pending.pop(group, None) if self._pending.get(group) is t else None)
            # A failed background refresh keeps the old answer; its error is not lost in the log.
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def _lookup(self, group: str) -> dict[str, list[str]]:
        self._asked[group] = asyncio.get_running_loop().time()
        resources = await self._fetch(group)
        replaced = self._cache.get(group)
        self._cache[group] = (asyncio.get_running_loop().time() + self._ttl, resources)
        if replaced is not None and replaced[1] != resources and self._on_change is not None:
            self._on_change(group)
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
