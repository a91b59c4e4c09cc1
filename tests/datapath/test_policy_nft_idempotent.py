"""The Gateway's policy table is written once: reconciling the same policy again (the agent's
resync every few seconds) finds it in place and writes nothing."""

from __future__ import annotations

from ipaddress import IPv4Address

from agent.linux.policy_nft import reconcile_policy_nft
from agent.policy.model import Action
from agent.policy.state import IngressRule, PolicyDatapath, TierRules
from tests.datapath.topology import Topology

POD = IPv4Address("10.1.1.10")
POLICY = PolicyDatapath(
    tunnel_interface="mc-tun0",
    tunnel_port=4798,
    tunnel_vni=1702,
    remote_gateways=(IPv4Address("198.18.2.1"),),
    pod_identities=((POD, 7),),
    identity_ids=(7, 9),
    ingress=(TierRules("securityops", 100, (IngressRule(Action.DROP, (9,), (POD,), (), "acnp/a ingress[0]"),)),),
    egress=(),
)


async def test_the_same_policy_reconciled_again_writes_nothing(topology: Topology) -> None:
    netns = topology.clusters["east"].nodes[0].netns
    first: list[str] = []
    await reconcile_policy_nft(netns, POLICY, first)
    assert first, "the first reconcile writes the table"
    again: list[str] = []
    await reconcile_policy_nft(netns, POLICY, again)
    assert again == []
    await reconcile_policy_nft(netns, None, again)
    assert again == ["delete nft table ip mchub_policy"]
