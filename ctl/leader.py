"""Leader-side verbs: init, destroy (in the leader cluster and/or on the hub), get joinconfig."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from ctl.access import HubAccess, HubConflict, HubRest
from ctl.cleanup import delete_created_by_ctl, delete_namespace_if_ours
from ctl.clusterset import ANNOTATION_HUB_SERVER, created_by_ctl_meta, leader_clusterset, the_clusterset
from ctl.errors import NotFoundError, OperationFailed, UsageError
from ctl.joinconfig import JoinConfig, render
from ctl.output import note, progress, say, write_private
from ctl.tokens import (
    DEFAULT_TOKEN,
    create_member_token,
    delete_member_token,
    get_token_secret,
    member_secret_manifest,
    read_hub_ca,
)
from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import NAMESPACES, Obj
from mcapi import names
from mcapi.resources import CLUSTER_SETS, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS

# What the hub writes in the leader Namespace (Kubernetes store), deleted when its ClusterSet is.
HUB_STATE = (MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS)
INIT_HINT = "run `mcctl init --clusterset ID --clusterid ID` in the leader cluster first"


def check_hub_server(url: str) -> str:
    if url and not url.startswith(("https://", "http://")):
        raise UsageError(f"hub server {url!r} must be a URL: https://HOST:PORT (the hub's gRPC address)")
    return url


@dataclass(frozen=True)
class InitRequest:
    clusterset_id: str
    cluster_id: str
    namespace: str
    hub_server: str
    join_config_file: Path | None
    hub_ca_file: Path | None
    create_token: bool = True


async def init(client: KubeClient, req: InitRequest) -> None:
    for value, flag in ((req.clusterset_id, "--clusterset"), (req.cluster_id, "--clusterid")):
        if not names.is_valid_cluster_id(value):
            raise UsageError(f"{flag} {value!r} must be a DNS-1123 label (lower case letters, digits and '-')")
    check_hub_server(req.hub_server)
    if req.join_config_file is not None and not req.hub_server:
        raise UsageError("-j needs --hub-server https://HOST:PORT: the address members reach the hub's gRPC server at")
    hub_ca = read_hub_ca(req.hub_ca_file)
    rollback: list[tuple[str, str]] = []  # ("namespace"|"clusterset"|"token", name)
    try:
        if await _ensure_namespace(client, req.namespace):
            rollback.append(("namespace", req.namespace))
            say(f"Namespace {req.namespace} created")
        if await _ensure_leader_clusterset(client, req):
            rollback.append(("clusterset", req.clusterset_id))
            say(f'ClusterSet "{req.clusterset_id}" created in Namespace {req.namespace}')
        secret: Obj | None = None
        if req.create_token:
            with progress(f"Creating member token {DEFAULT_TOKEN}"):
                try:
                    secret = await get_token_secret(client, DEFAULT_TOKEN, req.namespace)
                except NotFoundError:
                    secret = await create_member_token(client, DEFAULT_TOKEN, req.namespace, "*")
                    rollback.append(("token", DEFAULT_TOKEN))
                    say(f"Member token {DEFAULT_TOKEN} created (a ServiceAccount shared by members, cluster-id '*')")
        if req.join_config_file is not None:
            manifest = member_secret_manifest(secret, names.DEFAULT_MEMBER_NAMESPACE, hub_ca) if secret else None
            config = JoinConfig(
                clusterSetID=req.clusterset_id,
                leaderClusterID=req.cluster_id,
                leaderNamespace=req.namespace,
                leaderAPIServer=req.hub_server,
                secret=manifest,
            )
            write_private(req.join_config_file, render(config))
            say(f"Saved ClusterSet join parameters to file: {req.join_config_file}")
    except BaseException:
        note("Failed to initialize the ClusterSet: deleting what this run created")
        await _rollback(client, req.namespace, rollback)
        raise
    say(f"Successfully initialized ClusterSet {req.clusterset_id}")
    note(f"Run `mcctl get joinconfig -n {req.namespace}` to print what a member needs to join.")


async def _ensure_namespace(client: KubeClient, namespace: str) -> bool:
    try:
        await client.get(NAMESPACES, namespace)
        return False
    except NotFound:
        pass
    meta = created_by_ctl_meta(namespace, "")
    del meta["namespace"]
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return True


async def _ensure_leader_clusterset(client: KubeClient, req: InitRequest) -> bool:
    existing = (await client.list_all(CLUSTER_SETS, req.namespace)).items
    for cs in existing:
        meta, spec = cs["metadata"], cs.get("spec") or {}
        if meta["name"] == req.clusterset_id and spec.get("clusterID") == req.cluster_id:
            note(f'ClusterSet "{req.clusterset_id}" already exists in Namespace {req.namespace}')
            return False
        raise OperationFailed(
            f"Namespace {req.namespace} already holds ClusterSet {meta['name']!r} (cluster {spec.get('clusterID')!r}): "
            f"one ClusterSet per Namespace; run `mcctl destroy --clusterset {meta['name']} -n {req.namespace}` first"
        )
    try:
        await client.create(
            CLUSTER_SETS, leader_clusterset(req.clusterset_id, req.namespace, req.cluster_id, req.hub_server)
        )
    except AlreadyExists:
        return False
    return True


async def _rollback(client: KubeClient, namespace: str, created: list[tuple[str, str]]) -> None:
    for what, name in reversed(created):
        try:
            if what == "clusterset":
                await client.delete(CLUSTER_SETS, name, namespace)
            elif what == "token":
                await delete_member_token(client, name, namespace)
            elif what == "namespace":
                await delete_namespace_if_ours(client, namespace)
        except (NotFound, NotFoundError):
            pass


async def destroy(client: KubeClient, clusterset_id: str, namespace: str, wait: float = 30.0) -> bool:
    """The guide's "Remove a Leader Cluster" in the leader cluster: delete the ClusterSet CR, wait
    until the hub deleted what it wrote, delete the member tokens and the Namespace mcctl made.
    Whether anything was there to delete."""
    removed_clusterset = False
    try:
        await client.delete(CLUSTER_SETS, clusterset_id, namespace)
        removed_clusterset = True
        say(f'ClusterSet "{clusterset_id}" deleted in Namespace {namespace}')
    except NotFound:
        note(f'ClusterSet "{clusterset_id}" not found in Namespace {namespace}')
    await wait_hub_state_gone(client, namespace, wait if removed_clusterset else 0.0)
    deleted = await delete_created_by_ctl(client, namespace)
    for ref in deleted:
        say(f"{ref} deleted")
    with progress(f"Deleting Namespace {namespace} if mcctl created it"):
        if await delete_namespace_if_ours(client, namespace):
            say(f"Namespace {namespace} deleted")
    return removed_clusterset or bool(deleted)


async def _hub_state(client: KubeClient, namespace: str) -> list[str]:
    found: list[str] = []
    for resource in HUB_STATE:
        try:
            items = (await client.list_all(resource, namespace)).items
        except NotFound:  # the CRD is not installed: nothing of that kind
            continue
        found += [f"{resource.kind} {namespace}/{o['metadata']['name']}" for o in items]
    return found


async def wait_hub_state_gone(client: KubeClient, namespace: str, within: float) -> None:
    """Until the hub (seeing its ClusterSet deleted) has deleted its CRs; fail naming what is left."""
    left = await _hub_state(client, namespace)
    if left and within > 0:
        with progress(f"Waiting up to {within:.0f}s for the hub to delete its {', '.join(r.kind for r in HUB_STATE)}s"):
            deadline = time.monotonic() + within
            while left and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                left = await _hub_state(client, namespace)
    if not left:
        return
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    kinds = ",".join(r.plural for r in HUB_STATE)
    raise OperationFailed(
        f"the hub did not delete what it wrote in {namespace} ({shown}): is it running? "
        f"If it was uninstalled already, delete them: kubectl delete {kinds} --all -n {namespace}"
    )


async def end_on_hub(hub: HubAccess, clusterset_id: str) -> str:
    """Delete the ClusterSet the hub serves: "ended" (SQLite store: done), "cr" (the leader
    ClusterSet CR holds it: delete that), or "gone" (deleted before)."""
    async with HubRest(hub) as rest:
        try:
            served = await rest.json("/api/v1/clusterset")
        except NotFoundError:
            note(f"The hub at {hub.url} serves no ClusterSet any more (it was deleted)")
            return "gone"
        served_id = str((served.get("metadata") or {}).get("name", ""))
        if served_id != clusterset_id:
            raise UsageError(f"the hub at {hub.url} serves ClusterSet {served_id!r}, not {clusterset_id!r}")
        try:
            ended = await rest.write("DELETE", "/api/v1/clusterset")
        except HubConflict:
            return "cr"
    counts = ", ".join(
        f"{len(ended.get(key) or [])} {label}{'' if len(ended.get(key) or []) == 1 else 's'}"
        for key, label in (("members", "member"), ("exports", "export"), ("imports", "import"))
    )
    say(f'ClusterSet "{clusterset_id}" deleted on the hub: {counts} removed; members are refused from now on')
    return "ended"


async def join_config(
    client: KubeClient, namespace: str, member_token: str | None, hub_server: str, hub_ca_file: Path | None
) -> str:
    cs = await the_clusterset(client, namespace, None, INIT_HINT)
    leaders = (cs.get("spec") or {}).get("leaders") or []
    if not leaders:
        raise OperationFailed(f"invalid ClusterSet {cs['metadata']['name']}: no leader cluster")
    server = check_hub_server(hub_server) or ((cs["metadata"].get("annotations") or {}).get(ANNOTATION_HUB_SERVER, ""))
    if not server:
        raise UsageError(
            f"ClusterSet {namespace}/{cs['metadata']['name']} does not record the hub's address: "
            "pass --hub-server https://HOST:PORT"
        )
    manifest = None
    if member_token:
        secret = await get_token_secret(client, member_token, namespace)
        manifest = member_secret_manifest(secret, names.DEFAULT_MEMBER_NAMESPACE, read_hub_ca(hub_ca_file))
    config = JoinConfig(
        clusterSetID=cs["metadata"]["name"],
        leaderClusterID=str(leaders[0].get("clusterID", "")),
        leaderNamespace=namespace,
        leaderAPIServer=server,
        secret=manifest,
    )
    return render(config)
