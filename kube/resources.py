"""Resource descriptors: what the REST path of a kind is, and Kubernetes' own kinds.

A ``Resource`` is all the client needs, so kinds whose CRD was created at runtime
work like built-in ones; mchub's and the MCS API's kinds are in mcapi.resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

Obj = dict[str, Any]
"""A Kubernetes object as decoded JSON."""


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified_name(self) -> str:
        """`services`, `resourceexports.multicluster.crd.antrea.io`: how the apiserver names it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path; a namespaced resource without a namespace is the all-namespaces collection."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base

    def ref(self, namespace: str | None, name: str) -> str:
        """`Kind namespace/name` for logs and messages."""
        return f"{self.kind} {namespace}/{name}" if self.namespaced and namespace else f"{self.kind} {name}"


def _core(plural: str, kind: str, namespaced: bool = True) -> Resource:
    return Resource("", "v1", plural, kind, namespaced)


SERVICES = _core("services", "Service")
ENDPOINTS = _core("endpoints", "Endpoints")
NODES = _core("nodes", "Node", namespaced=False)
NAMESPACES = _core("namespaces", "Namespace", namespaced=False)
SECRETS = _core("secrets", "Secret")
CONFIG_MAPS = _core("configmaps", "ConfigMap")
SERVICE_ACCOUNTS = _core("serviceaccounts", "ServiceAccount")
EVENTS = _core("events", "Event")
PODS = _core("pods", "Pod")

ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)

# A ServiceAccount token Secret: its type and the annotation naming its ServiceAccount.
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
ANNOTATION_SA_NAME = "kubernetes.io/service-account.name"


def name_of(obj: Obj) -> str:
    name = obj.get("metadata", {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    return name


def namespace_of(obj: Obj) -> str | None:
    ns = obj.get("metadata", {}).get("namespace")
    return ns if isinstance(ns, str) and ns else None


def object_ref(obj: Obj) -> str:
    """`namespace/name` (or `name`) for log fields."""
    meta = obj.get("metadata", {})
    ns, name = meta.get("namespace"), meta.get("name", "")
    return f"{ns}/{name}" if ns else str(name)
