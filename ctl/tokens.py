"""Member tokens in the leader Namespace, as antctl makes them: a ServiceAccount annotated
with the member's cluster ID (the hub's TokenReview maps the token to it), a RoleBinding to
Role antrea-mc-member-cluster-role and a kubernetes.io/service-account-token Secret."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from pathlib import Path
from typing import Any

from ctl.clusterset import created_by_ctl_meta, is_created_by_ctl
from ctl.errors import NotFoundError, OperationFailed, UsageError
from ctl.output import to_yaml
from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import ANNOTATION_SA_NAME, SA_TOKEN_TYPE, SECRETS, SERVICE_ACCOUNTS, Obj, Resource
from mcapi import names

ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
MEMBER_ROLE = "antrea-mc-member-cluster-role"
DEFAULT_TOKEN = "default-member-token"
TOKEN_HEADER = ("NAMESPACE", "NAME")
TOKEN_WAIT_SECONDS = 15.0


def token_objects(name: str, namespace: str, cluster_id: str) -> list[tuple[Resource, Obj]]:
    """What one member token is, in creation order."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": created_by_ctl_meta(name, namespace, {names.ANNOTATION_CLUSTER_ID: cluster_id}),
    }
    binding = {
        "apiVersion": ROLE_BINDINGS.api_version,
        "kind": "RoleBinding",
        "metadata": created_by_ctl_meta(name, namespace),
        "roleRef": {"apiGroup": ROLE_BINDINGS.group, "kind": "Role", "name": MEMBER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SA_TOKEN_TYPE,
        "metadata": created_by_ctl_meta(name, namespace, {ANNOTATION_SA_NAME: name}),
    }
    return [(SERVICE_ACCOUNTS, account), (ROLE_BINDINGS, binding), (SECRETS, secret)]


async def create_member_token(client: KubeClient, name: str, namespace: str, cluster_id: str) -> Obj:
    """Create the three objects (rolled back on failure) and return the filled token Secret."""
    if not names.is_dns1123_subdomain(name):
        raise UsageError(f"member token name {name!r} must be a DNS-1123 subdomain (lower case, digits, '-', '.')")
    if cluster_id != "*" and not names.is_valid_cluster_id(cluster_id):
        raise UsageError(f"--cluster-id {cluster_id!r} must be a DNS-1123 label (or '*' for a shared token)")
    created: list[tuple[Resource, str]] = []
    try:
        for resource, obj in token_objects(name, namespace, cluster_id):
            try:
                await client.create(resource, obj, namespace)
            except AlreadyExists:
                raise OperationFailed(
                    f"{resource.kind} {namespace}/{name} already exists: "
                    f"delete it (`mcctl delete membertoken {name} -n {namespace}`) or pick another name"
                ) from None
            except NotFound:
                raise NotFoundError(
                    f"namespace {namespace} does not exist in the leader cluster: run `mcctl init` "
                    "or `mcctl deploy leadercluster` first"
                ) from None
            created.append((resource, name))
        return await wait_for_token(client, name, namespace)
    except BaseException:
        for resource, created_name in reversed(created):
            with contextlib.suppress(NotFound):
                await client.delete(resource, created_name, namespace)
        raise


async def wait_for_token(client: KubeClient, name: str, namespace: str) -> Obj:
    """The token controller fills data.token shortly after the Secret is written."""
    deadline = time.monotonic() + TOKEN_WAIT_SECONDS
    while True:
        secret = await client.get(SECRETS, name, namespace)
        if (secret.get("data") or {}).get("token"):
            return secret
        if time.monotonic() > deadline:
            raise OperationFailed(
                f"Secret {namespace}/{name} got no token within {TOKEN_WAIT_SECONDS:.0f}s: "
                "is the token controller of the leader cluster running?"
            )
        await asyncio.sleep(0.1)


async def get_token_secret(client: KubeClient, name: str, namespace: str) -> Obj:
    try:
        secret = await client.get(SECRETS, name, namespace)
    except NotFound:
        raise NotFoundError(
            f"no member token {name!r} in namespace {namespace}: "
            f"create one with `mcctl create membertoken {name} --cluster-id ID -n {namespace}`"
        ) from None
    if secret.get("type") != SA_TOKEN_TYPE or not (secret.get("data") or {}).get("token"):
        raise NotFoundError(f"Secret {namespace}/{name} is not a member token (no service-account token in it)")
    return secret


async def list_token_secrets(client: KubeClient, namespace: str | None) -> list[Obj]:
    """Member tokens mcctl/antctl created (every Namespace when None)."""
    items = (await client.list_all(SECRETS, namespace)).items
    return [s for s in items if is_created_by_ctl(s) and s.get("type") == SA_TOKEN_TYPE]


async def delete_member_token(client: KubeClient, name: str, namespace: str) -> list[str]:
    """Delete the token's objects that mcctl created; returns what was deleted. NotFoundError if none existed."""
    deleted: list[str] = []
    seen = False
    for resource, _ in reversed(token_objects(name, namespace, "")):
        try:
            live = await client.get(resource, name, namespace)
        except NotFound:
            continue
        seen = True
        if not is_created_by_ctl(live):
            continue
        try:
            await client.delete(resource, name, namespace)
            deleted.append(f"{resource.kind} {namespace}/{name}")
        except NotFound:
            pass
    if not seen:
        raise NotFoundError(
            f"no member token {name!r} in namespace {namespace}: `mcctl get membertoken -n {namespace}`"
        )
    return deleted


def member_secret_manifest(secret: Obj, member_namespace: str, hub_ca: bytes | None = None) -> Obj:
    """The token Secret for a member, as the user guide's sed recipe makes it: type Opaque, in the
    member's Namespace, data token and ca.crt (the hub's CA when given, else the leader cluster's)."""
    data = secret.get("data") or {}
    ca = base64.b64encode(hub_ca).decode() if hub_ca is not None else data.get("ca.crt", "")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret["metadata"]["name"],
            "namespace": member_namespace,
            "annotations": {names.ANNOTATION_CREATED_BY_ANTCTL: "true"},
        },
        "type": "Opaque",
        "data": {"ca.crt": ca, "token": data.get("token", "")},
    }


def secret_manifest_text(manifest: Obj) -> str:
    return "# Manifest to create a Secret for an Antrea Multi-cluster member token.\n---\n" + to_yaml(manifest)


def read_hub_ca(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read --hub-ca-file {path}: {exc.strerror}") from exc


def token_rows(data: Any) -> list[tuple[str, ...]]:
    items = data if isinstance(data, list) else [data]
    return [(str(s["metadata"].get("namespace", "")), str(s["metadata"]["name"])) for s in items]
