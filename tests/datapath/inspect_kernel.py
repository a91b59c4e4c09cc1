"""Independent views of a namespace's kernel state (through ``ip -j`` and ``nft -j``),
so tests do not take the agent's word for what it left behind."""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent.linux.ownership import ROUTE_PROTOCOL
from agent.state import RouteTable
from tests.datapath.topology import CommandFailed, sh


@dataclass(frozen=True)
class AgentFootprint:
    links: tuple[str, ...]
    routes: tuple[str, ...]
    rules: tuple[str, ...]
    nft_tables: tuple[str, ...]
    nexthops: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.links or self.routes or self.rules or self.nft_tables or self.nexthops)


async def footprint(netns: str) -> AgentFootprint:
    links = json.loads(await sh("ip", "-n", netns, "-j", "link", "show"))
    ours = tuple(link["ifname"] for link in links if link["ifname"].startswith("mc"))
    routes: list[str] = []
    for table in RouteTable:
        try:
            listed = json.loads(await sh("ip", "-n", netns, "-j", "route", "show", "table", str(int(table))) or "[]")
        except CommandFailed:  # a table that never held a route "does not exist": it holds none
            listed = []
        routes += [f"{r['dst']} table {int(table)}" for r in listed]
    main = json.loads(await sh("ip", "-n", netns, "-j", "route", "show", "table", "all") or "[]")
    routes += [str(r["dst"]) for r in main if str(r.get("protocol")) == str(ROUTE_PROTOCOL)]
    rules = json.loads(await sh("ip", "-n", netns, "-j", "rule", "show"))
    our_tables = {str(int(t)) for t in RouteTable}
    our_rules = tuple(
        str(r.get("priority"))
        for r in rules
        if str(r.get("table")) in our_tables or str(r.get("protocol")) == str(ROUTE_PROTOCOL)
    )
    tables = json.loads(await sh("ip", "netns", "exec", netns, "nft", "-j", "list", "tables"))["nftables"]
    nft = tuple(t["table"]["name"] for t in tables if "table" in t and t["table"]["name"] in {"mchub", "mchub_policy"})
    nexthops = json.loads(await sh("ip", "-n", netns, "-j", "nexthop", "show") or "[]")
    our_nexthops = tuple(str(n["id"]) for n in nexthops if str(n.get("protocol")) == str(ROUTE_PROTOCOL))
    return AgentFootprint(ours, tuple(routes), our_rules, nft, our_nexthops)
