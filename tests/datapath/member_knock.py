"""Where a member run by the sandbox-driven tests knocks on a reported Node from.

The member checks a report of an unreachable Gateway with its own TCP SYN to the Node
(member.gateway.controller). In a cluster it sends it from its Pod, on the cluster's network; the
tests run the member in the test host's namespace, whose default route leads out of the machine
(where something may answer any SYN). So the knock is sent from another Node of the reported Node's
cluster, as if the member's Pod ran there.
"""

from __future__ import annotations

import socket

import pytest

from agent.linux.netns import async_call_in_netns
from kube.kernel_probe import knock
from mcapi import names
from member.gateway import controller as controller_module
from tests.datapath.topology import Topology


def knock_from_the_cluster(topo: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every member started afterwards knocks from a Node of the cluster (not the one knocked on)."""

    async def from_another_node(ip: str) -> bool:
        nodes = next((c.nodes for c in topo.clusters.values() if any(n.underlay_ip == ip for n in c.nodes)), ())
        vantage = next((n for n in nodes if n.underlay_ip != ip), None)
        if vantage is None:  # not a Node of the topology, or a cluster of one: nobody to ask
            return False
        sock = await async_call_in_netns(vantage.netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        sock.setblocking(False)
        return await knock(sock, ip, names.GATEWAY_HEALTH_PORT, controller_module.KNOCK_WITHIN_SECONDS)

    monkeypatch.setattr(controller_module, "_knock_health_port", from_another_node)
