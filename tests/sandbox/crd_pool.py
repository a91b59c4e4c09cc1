"""Fresh Probe CRDs on a real cluster without the 2 s wait that new ones cost.

A real kube-apiserver holds back creates of a CRD's resources until 2 s after the CRD became
Established (kubernetes/kubernetes#99199, for HA consistency). Tests that each made a new
CRD would each wait that long, so on a real cluster the pool makes the CRDs the session's
tests will need in one batch, ahead, and lets them age once. A test takes one no other test
has used, gives it the versions it wants (the pool waits until the apiserver serves the new
schema) and deletes it afterwards; the unused ones are deleted when the session ends.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.sandbox.cluster import Cluster
from tests.sandbox.probe_crd import CRDS, ProbeCRD, Version, create_crd, probe_version, wait_established

# A field only the pool's own schema knows (and refuses): while a dry-run create that sets it
# is refused for it, the apiserver still serves the pool's schema rather than the test's.
MARKER = "mchubPoolMarker"
_NOW_OR_LATER = 0.05


def _pooled_version() -> Version:
    version = probe_version()
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"][MARKER] = {"type": "string", "enum": ["pooled"]}
    return version


def _established_at(crd: dict[str, Any]) -> float:
    condition = next(c for c in crd["status"]["conditions"] if c["type"] == "Established")
    return datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00")).timestamp()


class ProbeCRDPool:
    def __init__(self, expected_uses: int) -> None:
        self.expected_uses = max(expected_uses, 1)
        self._ready: list[ProbeCRD] = []
        self._made: list[ProbeCRD] = []
        self._taken: list[ProbeCRD] = []
        self._kubeconfig: Path | None = None

    async def take(self, cluster: Cluster, versions: list[Version] | None = None) -> ProbeCRD:
        if not self._ready:
            await self._make_batch(cluster, max(self.expected_uses - len(self._taken), 2))
        crd = self._ready.pop(0)
        self._taken.append(crd)
        current = await cluster.request("GET", f"{CRDS}/{crd.name}")
        assert current.status == 200, current.body
        current.body["spec"]["versions"] = crd.body(versions)["spec"]["versions"]
        replaced = await cluster.request("PUT", f"{CRDS}/{crd.name}", body=current.body)
        assert replaced.status == 200, replaced.body
        await self._until_schema_served(cluster, crd)
        await wait_established(cluster, crd.name)
        return crd

    async def _make_batch(self, cluster: Cluster, count: int) -> None:
        batch = [ProbeCRD(group=f"p{secrets.token_hex(4)}.sandbox.mchub.io") for _ in range(min(count, 24))]
        self._kubeconfig = cluster.kubeconfig
        self._made += batch
        made = await asyncio.gather(*(create_crd(cluster, crd.body([_pooled_version()])) for crd in batch))
        self._ready += batch
        # The apiserver's rule is time-based (lastTransitionTime, whole seconds): nothing to await.
        ready_at = max(_established_at(crd) for crd in made) + 2 + _NOW_OR_LATER
        await asyncio.sleep(max(0.0, ready_at - time.time()))

    async def _until_schema_served(self, cluster: Cluster, crd: ProbeCRD) -> None:
        probe = {**crd.object("pool-check", ""), MARKER: "taken"}
        async with asyncio.timeout(30):
            while True:
                reply = await cluster.request("POST", crd.path("default"), body=probe, query={"dryRun": "All"})
                causes = ((reply.body or {}).get("details") or {}).get("causes") or []
                if not (reply.status == 422 and any(c.get("field") == MARKER for c in causes)):
                    return
                await asyncio.sleep(0.01)

    def close(self) -> None:
        """Delete the CRDs no test took (synchronously: the session's event loops are gone)."""
        unused = [crd.name for crd in self._made if crd not in self._taken]
        self._ready.clear()
        if unused and self._kubeconfig is not None:
            command = ["kubectl", "--kubeconfig", str(self._kubeconfig), "delete", "crd", "--wait=false"]
            subprocess.run(
                [*command, "--ignore-not-found", *unused],
                capture_output=True,
                timeout=60,
                check=False,
            )
