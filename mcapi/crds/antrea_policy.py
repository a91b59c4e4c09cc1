"""The Antrea-native policy kinds mchub reads (crd.antrea.io/v1beta1): ClusterNetworkPolicy,
NetworkPolicy and Tier, and Antrea's default Tiers.

Where Antrea runs, Antrea serves these CRDs and creates the default Tiers; these models are
only for clusters without Antrea, where the member replicates ClusterNetworkPolicies and
the agent enforces ClusterSet-scoped rules beside another CNI. hack/gen_crds.py renders
them, with the default Tiers as objects, into deploy/optional/antrea-policy-crds.yml, which
nothing applies by default (`mcctl diagnose` says when a member lacks them).

The schemas type what mchub itself reads (a policy's tier and priority, a rule's action,
a Tier's priority) with Antrea's bounds, and keep every selector, peer, port and service
of a rule whole (x-kubernetes-preserve-unknown-fields), so that nothing a policy says is
pruned by a schema narrower than Antrea's.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from mcapi.crds.base import AGE_COLUMN, KubeModel, KubeObject, PrinterColumn

ANTREA_CRD_GROUP = "crd.antrea.io"
POLICY_VERSION = "v1beta1"
# The Tier of a policy that names none.
DEFAULT_TIER = "application"

# Antrea's static Tiers and their priorities (lower is evaluated first); "baseline" policies
# come after Kubernetes NetworkPolicies.
DEFAULT_TIERS: tuple[tuple[str, int, str], ...] = (
    ("emergency", 50, "Policies of an emergency, evaluated before every other Tier."),
    ("securityops", 100, "Policies of the security operations team."),
    ("networkops", 150, "Policies of the network operations team."),
    ("platform", 200, "Policies of the platform team."),
    ("application", 250, "Policies of application owners; the default Tier of a policy without one."),
    ("baseline", 253, "Policies evaluated after Kubernetes NetworkPolicies."),
)

FreeForm = dict[str, Any]


class PolicyRule(KubeModel):
    """One ingress or egress rule; its peers, ports and services are kept as written."""

    action: Literal["Allow", "Drop", "Reject", "Pass"] = Field(description="What the rule does with matching traffic.")
    name: str | None = Field(default=None, description="Name of the rule, unique within its policy.")
    enable_logging: bool | None = Field(default=None, alias="enableLogging")
    log_label: str | None = Field(default=None, alias="logLabel")
    applied_to: list[FreeForm] | None = Field(default=None, alias="appliedTo")
    ports: list[FreeForm] | None = None
    protocols: list[FreeForm] | None = None
    l7_protocols: list[FreeForm] | None = Field(default=None, alias="l7Protocols")
    from_peers: list[FreeForm] | None = Field(default=None, alias="from", description="Ingress peers.")
    to_peers: list[FreeForm] | None = Field(default=None, alias="to", description="Egress peers.")
    to_services: list[FreeForm] | None = Field(default=None, alias="toServices")


class PolicySpec(KubeModel):
    tier: str | None = Field(default=None, description="The Tier of the policy (default: application).")
    priority: float = Field(ge=1.0, le=10000.0, description="Priority within the Tier; lower goes first.")
    applied_to: list[FreeForm] | None = Field(default=None, alias="appliedTo")
    ingress: list[PolicyRule] | None = None
    egress: list[PolicyRule] | None = None


class PolicyStatus(KubeModel):
    phase: str | None = None
    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    current_nodes_realized: int | None = Field(default=None, alias="currentNodesRealized")
    desired_nodes_realized: int | None = Field(default=None, alias="desiredNodesRealized")
    conditions: list[FreeForm] | None = None


_POLICY_COLUMNS = (
    PrinterColumn("Tier", ".spec.tier", "string", "The Tier the policy belongs to."),
    PrinterColumn("Priority", ".spec.priority", "number", "Priority of the policy within its Tier."),
    PrinterColumn("Desired Nodes", ".status.desiredNodesRealized", "number", "Nodes that should realize it."),
    PrinterColumn("Current Nodes", ".status.currentNodesRealized", "number", "Nodes that realized it."),
    AGE_COLUMN,
)


class ClusterNetworkPolicy(KubeObject):
    """An Antrea ClusterNetworkPolicy (cluster-scoped)."""

    GROUP: ClassVar[str] = ANTREA_CRD_GROUP
    VERSION: ClassVar[str] = POLICY_VERSION
    KIND: ClassVar[str] = "ClusterNetworkPolicy"
    PLURAL: ClassVar[str] = "clusternetworkpolicies"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("acnp",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = _POLICY_COLUMNS
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: PolicySpec
    status: PolicyStatus | None = None


class NetworkPolicy(KubeObject):
    """An Antrea NetworkPolicy (namespaced)."""

    GROUP: ClassVar[str] = ANTREA_CRD_GROUP
    VERSION: ClassVar[str] = POLICY_VERSION
    KIND: ClassVar[str] = "NetworkPolicy"
    PLURAL: ClassVar[str] = "networkpolicies"
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("anp",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = _POLICY_COLUMNS
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: PolicySpec
    status: PolicyStatus | None = None


class TierSpec(KubeModel):
    priority: int = Field(ge=0, le=255, description="Priority of the Tier relative to other Tiers; lower first.")
    description: str | None = None


class Tier(KubeObject):
    """A Tier groups policies; Tiers are evaluated in priority order."""

    GROUP: ClassVar[str] = ANTREA_CRD_GROUP
    VERSION: ClassVar[str] = POLICY_VERSION
    KIND: ClassVar[str] = "Tier"
    PLURAL: ClassVar[str] = "tiers"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("tr",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Priority", ".spec.priority", "integer", "Priority of the Tier relative to other Tiers."),
        AGE_COLUMN,
    )

    spec: TierSpec


POLICY_KINDS: tuple[type[KubeObject], ...] = (ClusterNetworkPolicy, NetworkPolicy, Tier)


def default_tiers() -> list[dict[str, Any]]:
    """Antrea's default Tiers as objects to apply."""
    return [
        {
            "apiVersion": Tier.API_VERSION,
            "kind": Tier.KIND,
            "metadata": {"name": name},
            "spec": {"priority": priority, "description": description},
        }
        for name, priority, description in DEFAULT_TIERS
    ]
