"""`deploy leadercluster|membercluster`: apply the rendered manifests (deploy/build/) object by
object through the API, creating what is missing and updating what differs. Kinds are found
with API discovery, so CRDs created earlier in the same manifest are usable later in it."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import yaml

from ctl.errors import NotFoundError, OperationFailed, UsageError
from ctl.output import progress, say
from kube.apply import ensure
from kube.client import KubeClient
from kube.errors import KubeError, NotFound
from kube.resources import Obj, Resource
from mcapi import names

BUILD_DIR = Path(__file__).resolve().parent.parent / "deploy" / "build"
DEFAULT_MANIFESTS = {
    "leadercluster": (BUILD_DIR / "antrea-multicluster-leader.yml", names.DEFAULT_LEADER_NAMESPACE),
    "membercluster": (BUILD_DIR / "antrea-multicluster-member.yml", names.DEFAULT_MEMBER_NAMESPACE),
}
DISCOVERY_WAIT_SECONDS = 20.0


def load_manifest(path: Path) -> list[Obj]:
    if not path.is_file():
        raise OperationFailed(
            f"manifest {path} does not exist: build the deploy manifests first, or pass -f PATH to a manifest file"
        )
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"cannot read manifest {path}: {exc}") from exc
    objects = [d for d in docs if isinstance(d, dict) and d.get("kind") and d.get("apiVersion")]
    if not objects:
        raise UsageError(f"manifest {path} holds no Kubernetes objects")
    return objects


def renamespace(obj: Obj, default_ns: str, namespace: str) -> Obj:
    """The object with the manifest's default Namespace replaced by `namespace` (-n)."""
    if namespace == default_ns:
        return obj
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    if meta.get("namespace") == default_ns:
        meta["namespace"] = namespace
    if out["kind"] == "Namespace" and meta.get("name") == default_ns:
        meta["name"] = namespace
    for subject in out.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("namespace") == default_ns:
            subject["namespace"] = namespace
    for hook in out.get("webhooks") or []:
        service = ((hook or {}).get("clientConfig") or {}).get("service") or {}
        if service.get("namespace") == default_ns:
            service["namespace"] = namespace
    return out


class Discovery:
    """apiVersion/kind -> Resource, from the API server's discovery documents."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._cache: dict[str, dict[str, Resource]] = {}

    async def resource(self, api_version: str, kind: str) -> Resource:
        deadline = time.monotonic() + DISCOVERY_WAIT_SECONDS
        while True:
            found = (await self._group_version(api_version, refresh=api_version in self._cache)).get(kind)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise NotFoundError(f"the cluster serves no {kind} in {api_version}: is its CRD installed?")
            await asyncio.sleep(0.3)  # a CRD applied just before may not be established yet

    async def _group_version(self, api_version: str, *, refresh: bool) -> dict[str, Resource]:
        if api_version in self._cache and not refresh:
            return self._cache[api_version]
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            body: Any = await self._client.request("GET", path)
        except NotFound:
            body = {}
        kinds: dict[str, Resource] = {}
        for entry in (body or {}).get("resources") or []:
            if "/" in entry.get("name", ""):
                continue  # subresources
            kinds[entry["kind"]] = Resource(group, version, entry["name"], entry["kind"], bool(entry.get("namespaced")))
        self._cache[api_version] = kinds
        return kinds


async def deploy(client: KubeClient, target: str, manifest: Path | None, namespace: str | None) -> None:
    default_path, default_ns = DEFAULT_MANIFESTS[target]
    path = manifest or default_path
    objects = [renamespace(o, default_ns, namespace or default_ns) for o in load_manifest(path)]
    discovery = Discovery(client)
    with progress(f"Applying {len(objects)} objects from {path}"):
        for obj in objects:
            resource = await discovery.resource(obj["apiVersion"], obj["kind"])
            if resource.namespaced and not (obj.get("metadata") or {}).get("namespace"):
                obj["metadata"]["namespace"] = namespace or default_ns
            try:
                applied = await ensure(client, resource, obj)
            except KubeError as exc:
                raise OperationFailed(
                    f"applying {resource.ref(obj['metadata'].get('namespace'), obj['metadata']['name'])}: {exc}"
                ) from exc
            ref = resource.ref(
                obj["metadata"].get("namespace") if resource.namespaced else None, obj["metadata"]["name"]
            )
            say(f"{ref} {applied.outcome.value}")
    say(f"Antrea Multi-cluster {target.removesuffix('cluster')} manifests applied from {path}")
