"""Remote Gateway reachability -> the ``GatewayReachable`` condition of each ClusterInfoImport.

Only the agent on the active Gateway Node writes it (it is the one probing). Per import:

* probed and answering: ``True``/``Reachable``, the round trip in the message;
* probed, ``health.missThreshold`` probes in a row unanswered: ``False``/``Unreachable``;
* probed, no verdict yet: ``Unknown``/``Probing``;
* not routed at all (agent.desired excluded it): ``Unknown`` with the exclusion's reason
  (``OverlapsLocalCIDR``, ``NoGatewayIP``, ...) and messages.

With active-active remotes the message also names the remote's Gateways this Node set aside
(its probes unanswered; agent.desired), while it sends to another that answers.

Written only on change: the message of a verdict is fixed when the verdict starts (the
RTT measured then), so a steady link is never rewritten, whatever its jitter. The CRD's
status holds conditions only, so the RTT lives in the message. A restarted agent (a rolling
update) or a new Gateway Node starts without a verdict of its own: it leaves a standing
``Reachable`` or ``Unreachable`` in place until its probes reach one, and does not rewrite
a ``Reachable`` that differs only in its RTT (each write also goes to the hub as the
import's status, and a flap to ``Unknown`` would show every link down for a moment).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.health import PeerHealth, Reachability
from agent.state import DesiredDatapath, Exclusion, Role
from kube.client import KubeClient
from kube.conditions import Status, find_condition, set_condition
from kube.errors import Conflict, KubeError, NotFound
from kube.resources import name_of, namespace_of
from mcapi import names
from mcapi.resources import CLUSTER_INFO_IMPORTS

log = logging.getLogger(__name__)

CONDITION_GATEWAY_REACHABLE = names.CONDITION_GATEWAY_REACHABLE
RETRY_DELAY = 1.0


@dataclass(frozen=True)
class WantedCondition:
    status: Status
    reason: str
    message: str

    def already_said_by(self, current: Mapping[str, Any] | None) -> bool:
        """Whether the live condition needs no write: it says this, or a restarted agent's
        ``Probing`` meets a standing verdict, or a ``Reachable`` differs only in its RTT."""
        if current is None:
            return False
        status, reason, message = current.get("status"), current.get("reason"), str(current.get("message") or "")
        if (status, reason) == (self.status, self.reason):
            same_stem = message.partition(RTT_SEPARATOR)[0] == self.message.partition(RTT_SEPARATOR)[0]
            return message == self.message or (reason == REASON_REACHABLE and same_stem)
        return self.reason == REASON_PROBING and reason in (REASON_REACHABLE, REASON_UNREACHABLE)


_VerdictKey = tuple[str, str, str, datetime, tuple[str, ...]]
REASON_REACHABLE, REASON_UNREACHABLE, REASON_PROBING = "Reachable", "Unreachable", "Probing"
RTT_SEPARATOR = "; RTT "


def reachability_condition(node_name: str, health: PeerHealth, set_aside: Sequence[str] = ()) -> WantedCondition:
    """``set_aside``: the cluster's other Gateways this Node stopped sending to (agent.desired)."""
    ip, cid = health.gateway_ip, health.cluster_id
    aside = f"; set aside, unanswered: {', '.join(set_aside)}" if set_aside else ""
    if health.reachability is Reachability.REACHABLE:
        rtt = f"{health.rtt_seconds * 1000:.3f} ms" if health.rtt_seconds is not None else "unknown"
        answers = f"Gateway {ip} of cluster {cid} answers {node_name}{aside}"
        return WantedCondition("True", REASON_REACHABLE, f"{answers}{RTT_SEPARATOR}{rtt}")
    if health.reachability is Reachability.UNREACHABLE:
        missed = f"missed {health.consecutive_misses} probes in a row from {node_name}"
        return WantedCondition("False", REASON_UNREACHABLE, f"Gateway {ip} of cluster {cid} {missed}{aside}")
    return WantedCondition("Unknown", REASON_PROBING, f"{node_name} is probing Gateway {ip} of cluster {cid}{aside}")


def exclusion_condition(exclusions: Sequence[Exclusion]) -> WantedCondition:
    reason = exclusions[-1].reason.value  # the cluster-level verdict comes last
    return WantedCondition("Unknown", reason, "Not routed: " + "; ".join(e.message for e in exclusions) + ".")


class ReachabilityPublisher:
    """Writes GatewayReachable whenever poked and something differs."""

    def __init__(
        self,
        client: KubeClient,
        node_name: str,
        imports: Callable[[], list[dict[str, Any]]],
        desired: Callable[[], DesiredDatapath | None],
        health: Callable[[], Mapping[str, PeerHealth]],
    ) -> None:
        self._client = client
        self._node_name = node_name
        self._imports = imports
        self._desired = desired
        self._health = health
        self._poked = asyncio.Event()
        self._messages: dict[str, tuple[_VerdictKey, WantedCondition]] = {}
        self.writes = 0

    def poke(self, *_: object) -> None:
        """Look again (usable as the agent's on_health callback)."""
        self._poked.set()

    async def run(self) -> None:
        while True:
            await self._poked.wait()
            self._poked.clear()
            try:
                await self.publish()
            except (Conflict, NotFound):
                pass  # the informer brings the newer object, and a poke with it
            except KubeError as err:
                log.warning("reachabilityPublishFailed", extra={"error": str(err)})
                loop = asyncio.get_running_loop()
                loop.call_later(RETRY_DELAY, self._poked.set)

    def wanted(self) -> dict[str, WantedCondition]:
        """Cluster ID -> the condition its import should carry (empty unless this Node is the Gateway)."""
        desired = self._desired()
        if desired is None or desired.role is not Role.GATEWAY or not desired.reports_reachability:
            return {}
        wanted: dict[str, WantedCondition] = {}
        health = self._health()
        # Keyed by cluster ID: the Gateway sent to. Keyed by cluster/IP: a remote's Gateway on
        # standby (set aside), or one of our own cluster's (active-active), which has no import.
        set_aside: dict[str, list[str]] = {}
        for probed, peer in health.items():
            if probed != peer.cluster_id:
                set_aside.setdefault(peer.cluster_id, []).append(peer.gateway_ip)
        for probed, peer in health.items():
            cid = peer.cluster_id
            if probed != cid:
                continue
            aside = tuple(sorted(set_aside.get(cid, ())))
            key = (peer.reachability.value, peer.gateway_ip, cid, peer.changed_at, aside)
            memo = self._messages.get(cid)
            if memo is None or memo[0] != key:
                memo = (key, reachability_condition(self._node_name, peer, aside))
                self._messages[cid] = memo
            wanted[cid] = memo[1]
        excluded: dict[str, list[Exclusion]] = {}
        for exclusion in desired.exclusions:
            excluded.setdefault(exclusion.cluster_id, []).append(exclusion)
        for cid, items in excluded.items():
            if cid not in desired.remote_clusters:
                wanted[cid] = exclusion_condition(items)
        return wanted

    async def publish(self) -> None:
        wanted = self.wanted()
        if not wanted:
            return
        for live in self._imports():
            cid = str((live.get("spec") or {}).get("clusterID") or "")
            condition = wanted.get(cid)
            if condition is None or (live.get("metadata") or {}).get("deletionTimestamp"):
                continue
            current = find_condition((live.get("status") or {}).get("conditions"), CONDITION_GATEWAY_REACHABLE)
            if condition.already_said_by(current):
                continue
            conditions = copy.deepcopy((live.get("status") or {}).get("conditions") or [])
            set_condition(
                conditions, CONDITION_GATEWAY_REACHABLE, condition.status, condition.reason, condition.message
            )
            patch = {
                "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
                "status": {"conditions": conditions},
            }
            with contextlib.suppress(NotFound):
                await self._client.patch_status(CLUSTER_INFO_IMPORTS, name_of(live), patch, namespace_of(live))
                self.writes += 1
                log.info(
                    "gatewayReachabilityPublished",
                    extra={
                        "clusterInfoImport": f"{namespace_of(live)}/{name_of(live)}",
                        "status": condition.status,
                        "reason": condition.reason,
                    },
                )
