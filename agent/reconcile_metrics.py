"""Counters of the datapath's reconciles, for the agent's /metrics.

``mchub_agent_datapath_reconciles_total{trigger,result}``: ``trigger`` is ``inputs`` (new
inputs), ``retry`` (after a temporary failure) or ``resync`` (unchanged inputs applied
again); ``result`` is ``unchanged`` (the kernel already matched: nothing written),
``changed`` or ``failed``. A ``resync`` that ``changed`` repaired drift: something else
changed or removed what the agent owns; a ``health`` reconcile followed a verdict of this
Node's probes (agent.desired, ``unreachable``); a ``retired`` one ended this Node's time as a
retiring Gateway (``tunnel.retireSeconds``). ``mchub_agent_datapath_changes_total`` counts
the kernel changes those reconciles made. ``mchub_agent_gateway_verdicts_total{reachability}``
counts the verdicts of this Node's probes as they change (``Reachable``, ``Unreachable``).
"""

from __future__ import annotations

import enum

from prometheus_client import CollectorRegistry, Counter


class Trigger(enum.Enum):
    INPUTS = "inputs"
    RETRY = "retry"
    RESYNC = "resync"
    HEALTH = "health"
    RETIRED = "retired"


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.reconciles = Counter(
            "mchub_agent_datapath_reconciles",
            "Datapath reconciles, by what started them and what they did.",
            ["trigger", "result"],
            registry=registry,
        )
        self.changes = Counter(
            "mchub_agent_datapath_changes",
            "Kernel changes (links, addresses, neighbours, routes, rules, nft tables, sysctls) the agent made.",
            registry=registry,
        )
        self.verdicts = Counter(
            "mchub_agent_gateway_verdicts",
            "Changes of the verdicts of this Node's Gateway probes, by the new verdict.",
            ["reachability"],
            registry=registry,
        )

    def observe(self, trigger: Trigger, changes: int, *, failed: bool) -> None:
        result = "failed" if failed else "changed" if changes else "unchanged"
        self.reconciles.labels(trigger=trigger.value, result=result).inc()
        self.changes.inc(changes)
