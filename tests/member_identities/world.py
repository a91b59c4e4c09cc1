"""Namespaces and Pods of a cluster, for label identity tests, on a sandbox or a real apiserver.

`PodWorld` makes Namespaces (names of its own, so tests share real clusters) and Pods in
them, and removes its Namespaces at the end. Real clusters have no kubelet and no scheduler:
Pods stay Pending, unscheduled (deleting one is immediate); they count all the same. The
ServiceAccount admission of a real apiserver refuses Pods until kube-controller-manager has
made the Namespace's `default` ServiceAccount, so `create_pod` waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kube.client import KubeClient, PatchType
from kube.errors import AlreadyExists, KubeError, NotFound
from kube.resources import NAMESPACES, PODS, SERVICE_ACCOUNTS
from mcapi.labels import normalized_label

_RUN = secrets.token_hex(2)
_counter = itertools.count()
SA_WAIT = 30.0


def pod_body(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}],
        },
    }


@dataclass
class PodWorld:
    client: KubeClient
    real: bool
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    def fresh_name(self, stem: str = "li") -> str:
        return f"{stem}-{_RUN}-{next(_counter)}"

    async def namespace(self, labels: dict[str, str] | None = None, name: str | None = None) -> str:
        name = name or self.fresh_name()
        body = {"metadata": {"name": name, "labels": dict(labels or {})}}
        with contextlib.suppress(AlreadyExists):
            await self.client.create(NAMESPACES, body)
        self.namespaces[name] = dict(labels or {})
        if self.real:
            await self._wait_default_service_account(name)
        return name

    async def _wait_default_service_account(self, namespace: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SA_WAIT
        while True:
            try:
                await self.client.get(SERVICE_ACCOUNTS, "default", namespace)
                return
            except NotFound:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def relabel_namespace(self, namespace: str, labels: dict[str, str]) -> None:
        """Replace the Namespace's labels (kubernetes.io/metadata.name stays: the apiserver keeps it)."""
        current = await self.client.get(NAMESPACES, namespace)
        old = (current.get("metadata") or {}).get("labels") or {}
        patch_labels: dict[str, str | None] = {k: None for k in old if k != "kubernetes.io/metadata.name"}
        patch_labels.update(labels)
        await self.client.patch(
            NAMESPACES, namespace, {"metadata": {"labels": patch_labels}}, patch_type=PatchType.MERGE
        )
        self.namespaces[namespace] = dict(labels)

    async def pod(self, namespace: str, name: str, labels: dict[str, str]) -> None:
        await self.client.create(PODS, pod_body(name, labels), namespace)

    async def relabel_pod(self, namespace: str, name: str, labels: dict[str, str]) -> None:
        current = await self.client.get(PODS, name, namespace)
        old = (current.get("metadata") or {}).get("labels") or {}
        patch_labels: dict[str, str | None] = {k: None for k in old}
        patch_labels.update(labels)
        await self.client.patch(
            PODS, name, {"metadata": {"labels": patch_labels}}, namespace, patch_type=PatchType.MERGE
        )

    async def delete_pod(self, namespace: str, name: str) -> None:
        await self.client.delete(PODS, name, namespace)

    def label(self, namespace: str, pod_labels: dict[str, str]) -> str:
        """The normalized label a Pod with these labels has in ``namespace`` (as Antrea writes it)."""
        return normalized_label(namespace, self.namespaces[namespace], pod_labels)

    async def close(self) -> None:
        for name in self.namespaces:
            with contextlib.suppress(KubeError):
                await self.client.delete(NAMESPACES, name)


async def until(check: Callable[[], bool], within: float = 20.0, what: str = "") -> None:
    """Until ``check()`` holds (every 20 ms); AssertionError after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what or check}")
        await asyncio.sleep(0.02)
