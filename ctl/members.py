"""The member clusters a verify/diagnose run looks at (`--member-kubeconfig`, repeated)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctl.access import open_cluster
from kube.client import KubeClient
from kube.errors import KubeError
from kube.resources import Obj
from mcapi.resources import CLUSTER_SETS


@dataclass
class MemberCluster:
    kubeconfig: Path
    client: KubeClient
    clusterset: Obj | None = None
    error: str = ""

    @property
    def cluster_id(self) -> str:
        if self.clusterset is None:
            return ""
        return str((self.clusterset.get("spec") or {}).get("clusterID", ""))

    @property
    def label(self) -> str:
        return self.cluster_id or str(self.kubeconfig)


async def open_members(kubeconfigs: list[Path], namespace: str) -> list[MemberCluster]:
    """A client per kubeconfig, with the member's ClusterSet read (or why it could not be)."""
    members: list[MemberCluster] = []
    for path in kubeconfigs:
        member = MemberCluster(path, await open_cluster(path))
        members.append(member)
        try:
            items = (await member.client.list_all(CLUSTER_SETS, namespace)).items
        except KubeError as exc:
            member.error = f"cannot read ClusterSets: {exc}"
            continue
        if items:
            member.clusterset = items[0]
        else:
            member.error = f"no ClusterSet in namespace {namespace}: run `mcctl join` there"
    return members


async def close_members(members: list[MemberCluster]) -> None:
    for member in members:
        await member.client.close()
