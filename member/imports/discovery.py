"""Which versions of an API group serve a resource, from the API server's discovery.

CRDs come and go while the member runs (Antrea installed after the member, an MCS
CRD upgraded), so answers are kept only briefly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kube.client import KubeClient
from kube.errors import NotFound


class ApiDiscovery:
    def __init__(self, client: KubeClient, ttl: float = 10.0) -> None:
        """``ttl``: seconds an answer is reused."""
        self._client = client
        self._ttl = ttl
        # group -> (expiry on the loop clock, plural -> versions serving it, in the group's order)
        self._cache: dict[str, tuple[float, dict[str, list[str]]]] = {}

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
        resources = await self._fetch(group)
        self._cache[group] = (now + self._ttl, resources)
        return resources

    async def _fetch(self, group: str) -> dict[str, list[str]]:
        try:
            document: Any = await self._client.request("GET", f"/apis/{group}")
        except NotFound:
            return {}
        versions = [v.get("version") for v in (document or {}).get("versions") or [] if isinstance(v, dict)]
        resources: dict[str, list[str]] = {}
        for version in versions:
            if not isinstance(version, str):
                continue
            try:
                listing: Any = await self._client.request("GET", f"/apis/{group}/{version}")
            except NotFound:
                continue
            for entry in (listing or {}).get("resources") or []:
                plural = entry.get("name", "") if isinstance(entry, dict) else ""
                if plural and "/" not in plural:  # "x/status" is a subresource
                    resources.setdefault(plural, []).append(version)
        return resources
