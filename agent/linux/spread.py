"""Table SPREAD (active-active Gateways): the remote CIDRs via one resilient nexthop group.

The group has a nexthop per local Gateway (its internalIP, onlink through the tunnel device)
and a fixed number of buckets. The kernel hashes each flow onto a bucket (with
``fib_multipath_hash_policy`` 1: addresses, protocol and ports), so one flow keeps one Gateway.
Resilient rather than plain ECMP because of what happens when the set changes: a Gateway that
leaves gives its buckets to the others and no other bucket moves (plain ECMP redraws the hash
ranges, moving flows between Gateways that are both still up, which breaks them, since each
Gateway SNATs to its own address); a Gateway that joins receives only buckets idle for
``IDLE_TIMER`` seconds, so no live flow moves to it, until the group has been unbalanced for
``UNBALANCED_TIMER`` seconds: then busy buckets move too (their flows break once), or a busy
cluster would never give a returning Gateway any traffic.

Nexthop objects are read and written with iproute2's ``ip`` (JSON output): the netlink library
the agent uses for links and routes does not know them. Ours carry protocol ROUTE_PROTOCOL;
a member nexthop keeps its ID while its Gateway stays, which is what keeps the buckets put.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from ipaddress import ip_network
from typing import Any

from agent.errors import DatapathError
from agent.linux.netns import run_command, write_sysctl
from agent.linux.ownership import ROUTE_PROTOCOL
from agent.state import RouteTable, SpreadRoutes

GROUP_ID = 0x6D5E0000
"""The group's nexthop ID; the members take the IDs after it."""
_MEMBER_IDS = range(GROUP_ID + 1, GROUP_ID + 4096)
BUCKETS = 128
IDLE_TIMER = 30
UNBALANCED_TIMER = 300
_HASH_POLICY = ("net/ipv4/fib_multipath_hash_policy", "1")
_TABLE = str(int(RouteTable.SPREAD))


async def _ip(netns: str | None, args: Sequence[str], *, absent_ok: str | None = None) -> str:
    """``ip`` with ``args``; its output. ``absent_ok``: an error saying so means "nothing"."""
    result = await run_command(netns, ["ip", *args])
    if not result.ok:
        if absent_ok is not None and absent_ok in result.stderr.decode(errors="replace"):
            return ""
        raise DatapathError(result.describe())
    return result.stdout.decode()


async def _ip_json(netns: str | None, args: Sequence[str], *, absent_ok: str | None = None) -> list[dict[str, Any]]:
    text = (await _ip(netns, ["-N", "-j", *args], absent_ok=absent_ok)).strip()
    found = json.loads(text) if text else []
    return [item for item in found if isinstance(item, dict)]


def _ours(item: dict[str, Any]) -> bool:
    return str(item.get("protocol")) == str(ROUTE_PROTOCOL)


async def reconcile_spread(netns: str | None, spread: SpreadRoutes | None, changes: list[str]) -> None:
    """Exactly ``spread`` (None: nothing) in table SPREAD and among our nexthop objects."""
    nexthops = [n for n in await _ip_json(netns, ["nexthop", "show"]) if _ours(n)]
    members = {int(n["id"]): n for n in nexthops if "group" not in n}
    group = next((n for n in nexthops if int(n["id"]) == GROUP_ID), None)
    wanted_ids: list[int] = []
    if spread is not None:
        if await asyncio.to_thread(write_sysctl, netns, *_HASH_POLICY):
            changes.append(f"sysctl {_HASH_POLICY[0]}={_HASH_POLICY[1]}")
        wanted_ids = await _ensure_members(netns, spread, members, changes)
        await _ensure_group(netns, group, wanted_ids, changes)
    await _reconcile_routes(netns, spread, changes)
    if spread is None and group is not None:
        await _ip(netns, ["nexthop", "del", "id", str(GROUP_ID)])
        changes.append("del nexthop group")
    for nid in sorted(set(members) - set(wanted_ids)):
        await _ip(netns, ["nexthop", "del", "id", str(nid)])
        changes.append(f"del nexthop {nid} via {members[nid].get('gateway')}")


async def _ensure_members(
    netns: str | None, spread: SpreadRoutes, members: dict[int, dict[str, Any]], changes: list[str]
) -> list[int]:
    by_hop = {(str(n.get("gateway")), str(n.get("dev"))): nid for nid, n in members.items()}
    taken = set(members)
    ids: list[int] = []
    for hop in spread.hops:
        nid = by_hop.get((str(hop), spread.device))
        if nid is None:
            nid = next(i for i in _MEMBER_IDS if i not in taken)
            taken.add(nid)
            args = ["nexthop", "add", "id", str(nid), "via", str(hop), "dev", spread.device, "onlink"]
            await _ip(netns, [*args, "proto", str(ROUTE_PROTOCOL)])
            changes.append(f"add nexthop {nid} via {hop} dev {spread.device}")
        ids.append(nid)
    return ids


async def _ensure_group(netns: str | None, group: dict[str, Any] | None, ids: list[int], changes: list[str]) -> None:
    if group is not None:
        live = sorted(int(m["id"]) for m in group.get("group") or [])
        args = group.get("resilient_args") or {}
        found = (group.get("type"), args.get("buckets"), args.get("idle_timer"), args.get("unbalanced_timer"))
        settled = found == ("resilient", BUCKETS, IDLE_TIMER, UNBALANCED_TIMER)
        if live == sorted(ids) and settled:
            return
    verb = "add" if group is None or group.get("type") != "resilient" else "replace"
    if verb == "add" and group is not None:
        await _ip(netns, ["nexthop", "del", "id", str(GROUP_ID)])
    members = "/".join(str(i) for i in ids)
    shape = ["type", "resilient", "buckets", str(BUCKETS), "idle_timer", str(IDLE_TIMER)]
    shape += ["unbalanced_timer", str(UNBALANCED_TIMER)]
    await _ip(netns, ["nexthop", verb, "id", str(GROUP_ID), "group", members, *shape, "proto", str(ROUTE_PROTOCOL)])
    changes.append(f"set nexthop group {members}")


async def _reconcile_routes(netns: str | None, spread: SpreadRoutes | None, changes: list[str]) -> None:
    wanted = {str(d) for d in spread.destinations} if spread is not None else set()
    # A table the kernel never held a route in "does not exist".
    for route in await _ip_json(netns, ["route", "show", "table", _TABLE], absent_ok="table does not exist"):
        dst = str(ip_network(str(route.get("dst")), strict=False)) if route.get("dst") != "default" else "0.0.0.0/0"
        if dst in wanted and route.get("nhid") == GROUP_ID and _ours(route):
            wanted.discard(dst)
            continue
        await _ip(netns, ["route", "del", dst, "table", _TABLE])
        changes.append(f"del route {dst} table {_TABLE}")
    for dst in sorted(wanted):
        args = ["route", "replace", dst, "nhid", str(GROUP_ID), "table", _TABLE, "proto", str(ROUTE_PROTOCOL)]
        await _ip(netns, args)
        changes.append(f"set route {dst} table {_TABLE} via nexthop group")
