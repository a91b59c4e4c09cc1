"""Member-side verbs: join (the token Secret and the ClusterSet v1alpha2) and leave."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from dataclasses import dataclass
from pathlib import Path

from ctl.cleanup import delete_created_by_ctl
from ctl.clusterset import member_clusterset, the_clusterset
from ctl.errors import NotFoundError, OperationFailed, UsageError
from ctl.joinconfig import JoinConfig, parse, read_secret_file, read_text
from ctl.leader import check_hub_server
from ctl.output import note, progress, say
from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import SECRETS, Obj
from mcapi import names
from mcapi.resources import CLUSTER_SETS

JOIN_HINT = "run `mcctl join` first"


@dataclass
class JoinFlags:
    config_file: Path | None
    clusterset: str
    clusterid: str
    leader_clusterid: str
    leader_namespace: str
    leader_apiserver: str
    token_secret_name: str
    token_secret_file: Path | None
    namespace: str
    wait: float


def resolve(flags: JoinFlags) -> JoinConfig:
    """The join parameters: the config file's, with flags filling what it leaves out (as antctl)."""
    config = JoinConfig()
    if flags.config_file is not None:
        config = parse(read_text(flags.config_file, "-f"), str(flags.config_file))
    config.clusterSetID = config.clusterSetID or flags.clusterset
    config.clusterID = config.clusterID or flags.clusterid
    config.leaderClusterID = config.leaderClusterID or flags.leader_clusterid
    config.leaderNamespace = config.leaderNamespace or flags.leader_namespace
    config.leaderAPIServer = config.leaderAPIServer or flags.leader_apiserver
    config.namespace = config.namespace or flags.namespace
    # Precedence, as antctl: token Secret name > token Secret file > the Secret in the config file.
    config.tokenSecretName = flags.token_secret_name or config.tokenSecretName
    secret_file = flags.token_secret_file or (Path(config.tokenSecretFile) if config.tokenSecretFile else None)
    if not config.tokenSecretName and secret_file is not None:
        config.secret = read_secret_file(secret_file)
    missing = [
        flag
        for flag, value in (
            ("--clusterset", config.clusterSetID),
            ("--clusterid", config.clusterID),
            ("--leader-clusterid", config.leaderClusterID),
            ("--leader-namespace", config.leaderNamespace),
            ("--leader-apiserver", config.leaderAPIServer),
        )
        if not value
    ]
    if missing:
        raise UsageError(f"join needs {', '.join(missing)} (or -f joinconfig.yml from `mcctl init -j`)")
    if not config.tokenSecretName and config.secret is None:
        raise UsageError(
            "join needs a member token: --token-secret-name, --token-secret-file, or a Secret in the -f file"
        )
    if not names.is_valid_cluster_id(config.clusterID):
        raise UsageError(f"cluster ID {config.clusterID!r} must be a DNS-1123 label")
    check_hub_server(config.leaderAPIServer)
    return config


async def join(client: KubeClient, config: JoinConfig, wait: float) -> None:
    ns = config.namespace or names.DEFAULT_MEMBER_NAMESPACE
    existing = (await client.list_all(CLUSTER_SETS, ns)).items
    if existing:
        name = existing[0]["metadata"]["name"]
        raise OperationFailed(
            f"this cluster already joined ClusterSet {name!r} in Namespace {ns}: run `mcctl leave -n {ns}` first"
        )
    created_secret = ""
    try:
        if config.secret is not None:
            secret = _member_secret(config.secret, ns)
            try:
                await client.create(SECRETS, secret, ns)
            except AlreadyExists:
                raise OperationFailed(
                    f"Secret {ns}/{secret['metadata']['name']} already exists: delete it or use --token-secret-name"
                ) from None
            created_secret = secret["metadata"]["name"]
            config.tokenSecretName = created_secret
            say(f'Secret "{created_secret}" created in Namespace {ns}')
        else:
            try:
                await client.get(SECRETS, config.tokenSecretName, ns)
            except NotFound:
                raise NotFoundError(
                    f"no Secret {config.tokenSecretName!r} in Namespace {ns}: create it from the leader's token "
                    "manifest (`mcctl create membertoken NAME -o file` there) or pass --token-secret-file"
                ) from None
        await client.create(
            CLUSTER_SETS,
            member_clusterset(
                clusterset_id=config.clusterSetID,
                namespace=ns,
                cluster_id=config.clusterID,
                leader_cluster_id=config.leaderClusterID,
                leader_namespace=config.leaderNamespace,
                hub_server=config.leaderAPIServer,
                secret_name=config.tokenSecretName,
            ),
        )
        say(f'ClusterSet "{config.clusterSetID}" created in Namespace {ns}')
    except BaseException:
        if created_secret:
            note("Failed to join the ClusterSet: deleting the Secret this run created")
            with contextlib.suppress(NotFound):
                await client.delete(SECRETS, created_secret, ns)
        raise
    if wait > 0:
        with progress(f"Waiting up to {wait:.0f}s for cluster {config.clusterID} to be Ready in the ClusterSet"):
            await _wait_ready(client, config.clusterSetID, ns, wait)
        say("Member cluster joined successfully")
    else:
        note("The member controller connects to the hub now: `mcctl get clusterset -n " + ns + "` shows its status.")


def _member_secret(manifest: Obj, namespace: str) -> Obj:
    secret = copy.deepcopy(manifest)
    meta = secret.setdefault("metadata", {})
    if not meta.get("name"):
        raise UsageError("the token Secret manifest has no metadata.name")
    meta["namespace"] = namespace
    meta.setdefault("annotations", {})[names.ANNOTATION_CREATED_BY_ANTCTL] = "true"
    for server_field in ("resourceVersion", "uid", "creationTimestamp"):
        meta.pop(server_field, None)
    secret["type"] = "Opaque"
    return secret


async def _wait_ready(client: KubeClient, name: str, namespace: str, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            cs = await client.get(CLUSTER_SETS, name, namespace)
        except NotFound:
            cs = {}
        for cond in (cs.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready" and cond.get("status") == "True":
                return
        await asyncio.sleep(0.5)
    raise OperationFailed(
        f"ClusterSet {namespace}/{name} is not Ready after {within:.0f}s: "
        "is the member controller running, and does the hub accept the token? (`mcctl get clusterset`)"
    )


async def leave(client: KubeClient, clusterset_id: str | None, namespace: str) -> None:
    cs = await the_clusterset(client, namespace, clusterset_id, JOIN_HINT)
    name = cs["metadata"]["name"]
    try:
        await client.delete(CLUSTER_SETS, name, namespace)
        say(f'ClusterSet "{name}" deleted in Namespace {namespace}')
    except NotFound:
        pass
    for ref in await delete_created_by_ctl(client, namespace):
        say(f"{ref} deleted")
