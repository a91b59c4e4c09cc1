"""A Gateway Node drained while an east Pod sends requests to a west Service through it: which
Node is the Gateway, how to get it off the member controller's Node, and the drain itself."""

from __future__ import annotations

import time

from hack.nodeset.clusters import Cluster
from hack.nodeset.install import MEMBER_NS
from hack.nodeset.kubectl import until
from hack.nodeset.workloads import fetch_until, loop_outcomes, request_loop
from tests.nodes.conftest import record

MOST_FAILED_IN_A_DRAIN = 3
"""Zero in the runs since a replaced Gateway's tunnel entries go only after the routes
(docs/performance.md); a few allowed, as a busy machine can still lose a packet, against about
40 in a failover that waits for NotReady."""


def gateway_node(cluster: Cluster) -> str | None:
    items = cluster.kubectl.json("get", "gateway", "-n", MEMBER_NS)["items"]
    return items[0]["metadata"]["name"] if items else None


def gateway_off_the_member_node(west: Cluster) -> tuple[str, str]:
    """(active, standby): west's Gateway Node and its other Node, with the member controller on
    the standby, so that failing or draining the Gateway Node leaves the controller that moves
    the Gateway running. A cordon moves the Gateway (a cordoned Node hands over); the uncordon
    does not move it back."""
    member = west.kubectl.json("get", "pods", "-n", MEMBER_NS, "-l", "component=mchub-member")["items"][0]
    member_node = member["spec"]["nodeName"]
    if until("west's Gateway", lambda: gateway_node(west)) == member_node:
        west.kubectl("cordon", member_node)
        try:
            until("west's Gateway off the member's Node", lambda: gateway_node(west) not in (None, member_node))
        finally:
            west.kubectl("uncordon", member_node)
    active = until("west's Gateway", lambda: gateway_node(west))
    (standby,) = {node.name for node in west.nodes} - {active}
    assert standby == member_node
    return active, standby


def drain_while_requests_flow(
    east: Cluster, west: Cluster, namespace: str, url: str, figure: str, *, client: str = "client"
) -> None:
    """``kubectl drain`` west's Gateway Node (``gateway_off_the_member_node``; the backend must be
    on the other one) while a Pod on east's last Node GETs ``url`` every 0.1 s (``client``, a Pod
    in ``namespace``, first waits for an answer); assert that at most MOST_FAILED_IN_A_DRAIN requests failed and record
    the figures as ``figure_*``. The Node is uncordoned after."""
    active = until("west's Gateway", lambda: gateway_node(west))
    (standby,) = {node.name for node in west.nodes} - {active}
    fetch_until(east, namespace, client, url)
    loop = f"loop-{figure.replace('_', '-')}"
    request_loop(east, namespace, loop, node=east.nodes[-1].name, url=url)
    time.sleep(3)
    drained_at = time.time()
    try:
        west.kubectl("drain", active, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=120s")
        until("west's Gateway on its other Node", lambda: gateway_node(west) == standby, timeout=60)
        moved_at = time.time()
        time.sleep(10)  # requests go on through the new Gateway
        outcomes = [o for o in loop_outcomes(east, namespace, loop) if o.at >= drained_at]
        failed = sum(not o.ok for o in outcomes)
        record(
            **{
                f"{figure}_requests": len(outcomes),
                f"{figure}_failed_requests": failed,
                f"{figure}_handover_s": round(moved_at - drained_at, 1),
            }
        )
        assert len(outcomes) >= 50, "the request loop did not run"
        failures = [(round(o.at - drained_at, 2), o.code) for o in outcomes if not o.ok]
        assert failed <= MOST_FAILED_IN_A_DRAIN, (
            f"{failed} of {len(outcomes)} requests failed across the drain (seconds after it began, curl's code:"
            f" {failures}; the Gateway moved after {moved_at - drained_at:.1f} s)"
        )
        print(f"{figure}: failed (seconds after it began, curl's code): {failures}")
    finally:
        west.kubectl("uncordon", active)
        east.kubectl("-n", namespace, "delete", "pod", loop, "--wait=false")
