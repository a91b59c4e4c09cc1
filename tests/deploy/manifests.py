"""The rendered manifests of deploy/build, read as objects."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = ROOT / "deploy" / "build"

LEADER = BUILD_DIR / "antrea-multicluster-leader.yml"
LEADER_NAMESPACED = BUILD_DIR / "antrea-multicluster-leader-namespaced.yml"
LEADER_TLS = BUILD_DIR / "antrea-multicluster-leader-tls.yml"
HUB_NODEPORT = BUILD_DIR / "mchub-hub-nodeport.yml"
MEMBER = BUILD_DIR / "antrea-multicluster-member.yml"
AGENT = BUILD_DIR / "mchub-agent.yml"
ALL = (LEADER, LEADER_TLS, LEADER_NAMESPACED, MEMBER, AGENT, HUB_NODEPORT)
# Where the tests install the namespaced leader with the user guide's sed recipe.
ELSEWHERE_NAMESPACE = "mc-leader-elsewhere"

Obj = dict[str, Any]


def load(path: Path, text: str | None = None) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(text if text is not None else path.read_text()) if doc]


def workloads(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if o["kind"] in ("Deployment", "DaemonSet")]


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise AssertionError(f"no {kind} {name} in the manifest")


@dataclass(frozen=True)
class Ref:
    """How kubectl names one object of a manifest."""

    kind: str
    plural: str
    name: str
    namespace: str | None

    @property
    def type_name(self) -> str:
        """`roles.rbac.authorization.k8s.io/mchub-hub`: what `kubectl get -o name` prints."""
        return f"{self.plural}/{self.name}"


def get_args(refs: list[Ref]) -> list[list[str]]:
    """`kubectl get` commands (one per Namespace, cluster-scoped objects with any) listing what exists of `refs`."""
    by_namespace: dict[str, list[str]] = {}
    for ref in refs:
        by_namespace.setdefault(ref.namespace or "", []).append(ref.type_name)
    commands = []
    for namespace, names in by_namespace.items():
        scope = ["-n", namespace] if namespace else []
        commands.append(["get", *names, *scope, "--ignore-not-found", "-o", "name"])
    return commands


# kubectl resource names (plural.group) of the kinds the manifests hold.
PLURALS = {
    "Namespace": "namespaces",
    "CustomResourceDefinition": "customresourcedefinitions.apiextensions.k8s.io",
    "ServiceAccount": "serviceaccounts",
    "Secret": "secrets",
    "ConfigMap": "configmaps",
    "ClusterRole": "clusterroles.rbac.authorization.k8s.io",
    "ClusterRoleBinding": "clusterrolebindings.rbac.authorization.k8s.io",
    "Role": "roles.rbac.authorization.k8s.io",
    "RoleBinding": "rolebindings.rbac.authorization.k8s.io",
    "Service": "services",
    "Deployment": "deployments.apps",
    "DaemonSet": "daemonsets.apps",
}


def refs(objects: list[Obj]) -> list[Ref]:
    return [Ref(o["kind"], PLURALS[o["kind"]], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objects]
