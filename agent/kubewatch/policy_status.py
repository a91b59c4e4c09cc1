"""The Gateway agent's verdict on each policy with ClusterSet rules -> Events, status, metrics.

Only the agent on the active Gateway publishes (it is the one enforcing). Per policy:

* a Warning Event ``ClusterSetRulesNotEnforced`` on the policy, naming the typed reason
  (UnknownField, UnsupportedPeer, UnsupportedField, Invalid, TierNotFound) and what it
  found, when it becomes unenforced; a Normal ``ClusterSetRulesEnforced`` when it recovers;
* the condition ``ClusterSetRulesEnforced`` in its status (True/Enforced or False/<reason>),
  with the generation it judged; Antrea's own conditions are kept;
* ``mchub_agent_clusterset_policies{state="enforced"|"skipped"}`` and
  ``mchub_agent_clusterset_policy_skips_total{reason}`` (one count per policy generation
  newly refused).

Written only on change; an API failure is logged and retried at the next change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

from agent.kubewatch.policy_view import CLUSTER_NETWORK_POLICIES, NETWORK_POLICIES
from agent.policy.state import PolicyReport
from kube.client import KubeClient
from kube.conditions import Status, set_condition
from kube.errors import KubeError
from kube.events import EventRecorder
from kube.resources import Obj

log = logging.getLogger(__name__)

CONDITION_ENFORCED = "ClusterSetRulesEnforced"
EVENT_NOT_ENFORCED = "ClusterSetRulesNotEnforced"
EVENT_ENFORCED = "ClusterSetRulesEnforced"
COMPONENT = "mchub-agent"

_Key = tuple[str, str, str]


class PolicyMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.policies = Gauge(
            "mchub_agent_clusterset_policies",
            "Policies with ClusterSet-scoped rules seen by the Gateway agent, by state.",
            ["state"],
            registry=registry,
        )
        self.skips = Counter(
            "mchub_agent_clusterset_policy_skips",
            "Policy generations whose ClusterSet rules the agent refused to enforce, by reason.",
            ["reason"],
            registry=registry,
        )


class PolicyReporter:
    def __init__(
        self,
        client: KubeClient,
        node_name: str,
        current: Callable[[str, str, str], Obj | None],
        registry: CollectorRegistry | None = None,
    ) -> None:
        """``current(kind, namespace, name)``: the live policy object (from the informer cache)."""
        self.client = client
        self.events = EventRecorder(client, COMPONENT, host=node_name)
        self.metrics = PolicyMetrics(registry)
        self._current = current
        self._published: dict[_Key, PolicyReport] = {}

    def pending(self, reports: tuple[PolicyReport, ...]) -> bool:
        """Whether ``reports`` hold anything not yet written (new, changed or failed before)."""
        return {(r.kind, r.namespace, r.name): r for r in reports} != self._published

    async def publish(self, reports: tuple[PolicyReport, ...]) -> None:
        enforced = sum(1 for r in reports if r.enforced)
        self.metrics.policies.labels(state="enforced").set(enforced)
        self.metrics.policies.labels(state="skipped").set(len(reports) - enforced)
        wanted = {(r.kind, r.namespace, r.name): r for r in reports}
        for key in [k for k in self._published if k not in wanted]:
            del self._published[key]
        for key, report in wanted.items():
            previous = self._published.get(key)
            if previous == report:
                continue
            if not report.enforced and (
                previous is None or previous.enforced or previous.generation != report.generation
            ):
                self.metrics.skips.labels(reason=report.reason).inc()
            if await self._write(report, previous):
                self._published[key] = report

    async def _write(self, report: PolicyReport, previous: PolicyReport | None) -> bool:
        obj = self._current(report.kind, report.namespace, report.name)
        if obj is None:
            return False
        resource = CLUSTER_NETWORK_POLICIES if report.kind == "ClusterNetworkPolicy" else NETWORK_POLICIES
        if not report.enforced:
            message = f"{report.reason}: {report.message}"
            await self.events.warning(obj, EVENT_NOT_ENFORCED, message, resource)
            log.warning(
                "clusterSetPolicyNotEnforced",
                extra={
                    "policy": f"{report.namespace}/{report.name}",
                    "reason": report.reason,
                    "detail": report.message,
                },
            )
        elif previous is not None and not previous.enforced:
            await self.events.normal(obj, EVENT_ENFORCED, report.message, resource)
        conditions = [dict(c) for c in ((obj.get("status") or {}).get("conditions") or [])]
        status: Status = "True" if report.enforced else "False"
        set_condition(conditions, CONDITION_ENFORCED, status, report.reason, report.message)
        patch = {"status": {"conditions": conditions, "observedGeneration": report.generation}}
        try:
            await self.client.patch_status(resource, report.name, patch, report.namespace or None)
        except KubeError as err:
            log.warning("clusterSetPolicyStatusFailed", extra={"policy": report.name, "error": str(err)})
            return False
        return True
