"""The built-in resource types a fresh sandbox serves.

Only kinds mchub, kubectl and the user guide touch are here. Workloads (apps/v1)
and RBAC are stored, never run or enforced.
"""

from __future__ import annotations

from sandbox.kinds.events import CORE_EVENT_FIELDS, EVENTS_V1_FIELDS, EVENTS_V1_VIEW
from sandbox.resources import CREATE_ONLY, ResourceCatalog, ResourceType


def builtin_types() -> list[ResourceType]:
    core = [
        ResourceType(
            "",
            "v1",
            "namespaces",
            "Namespace",
            False,
            "namespace",
            ("ns",),
            status_subresource=True,
            extra_subresources=("finalize",),
            selectable_fields=("status.phase",),
        ),
        ResourceType("", "v1", "services", "Service", True, "service", ("svc",), ("all",), status_subresource=True),
        ResourceType("", "v1", "endpoints", "Endpoints", True, "endpoints", ("ep",), allow_create_on_update=True),
        ResourceType(
            "",
            "v1",
            "nodes",
            "Node",
            False,
            "node",
            ("no",),
            status_subresource=True,
            selectable_fields=("spec.unschedulable",),
        ),
        ResourceType("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",)),
        ResourceType("", "v1", "secrets", "Secret", True, "secret", selectable_fields=("type",)),
        ResourceType(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            True,
            "serviceaccount",
            ("sa",),
            extra_subresources=("token",),
        ),
        ResourceType(
            "",
            "v1",
            "pods",
            "Pod",
            True,
            "pod",
            ("po",),
            ("all",),
            status_subresource=True,
            selectable_fields=("spec.nodeName", "status.phase", "status.podIP", "spec.serviceAccountName"),
        ),
        ResourceType("", "v1", "events", "Event", True, "event", ("ev",), selectable_fields=CORE_EVENT_FIELDS),
    ]
    grouped = [
        ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True, "endpointslice"),
        ResourceType(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            True,
            "event",
            ("ev",),
            storage_group="",
            storage_version="v1",
            view=EVENTS_V1_VIEW,
            selectable_fields=EVENTS_V1_FIELDS,
        ),
        ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, "lease"),
        ResourceType(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            True,
            "deployment",
            ("deploy",),
            ("all",),
            status_subresource=True,
            tracks_generation=True,
        ),
        ResourceType(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            True,
            "daemonset",
            ("ds",),
            ("all",),
            status_subresource=True,
            tracks_generation=True,
        ),
        ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True, "role"),
        ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, "rolebinding"),
        ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, "clusterrole"),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            False,
            "clusterrolebinding",
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            False,
            "mutatingwebhookconfiguration",
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            False,
            "validatingwebhookconfiguration",
        ),
        ResourceType(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            "customresourcedefinition",
            ("crd", "crds"),
            status_subresource=True,
            tracks_generation=True,
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "tokenreviews",
            "TokenReview",
            False,
            "tokenreview",
            verbs=CREATE_ONLY,
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "selfsubjectreviews",
            "SelfSubjectReview",
            False,
            "selfsubjectreview",
            verbs=CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            False,
            "selfsubjectaccessreview",
            verbs=CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
            False,
            "subjectaccessreview",
            verbs=CREATE_ONLY,
        ),
    ]
    return core + grouped


def builtin_catalog() -> ResourceCatalog:
    catalog = ResourceCatalog()
    for rt in builtin_types():
        catalog.add(rt)
    return catalog
