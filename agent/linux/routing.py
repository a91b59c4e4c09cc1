"""Routes in the agent's own tables and the policy rules that consult them."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from agent.linux import netlink
from agent.linux.ownership import ROUTE_PROTOCOL
from agent.state import RULE_PRIORITY, PolicyRule, Route, RouteTable

_RTNH_F_ONLINK = 4
_FIB_RULE_INVERT = 2
_SCOPE_LINK = 253
_SCOPE_UNIVERSE = 0

# (destination, table) -> (oif, gateway)
_RouteKey = tuple[str, int]
_RouteValue = tuple[int, str | None]


async def reconcile_routes(ipr: Any, routes: tuple[Route, ...], indexes: Mapping[str, int], changes: list[str]) -> None:
    """Exactly ``routes`` in our tables (``indexes`` maps device names to ifindex)."""
    wanted: dict[_RouteKey, _RouteValue] = {
        (str(r.destination), int(r.table)): (indexes[r.device], None if r.via is None else str(r.via)) for r in routes
    }
    # Table SPREAD's routes point at nexthop objects, which this netlink library cannot read
    # (agent.linux.spread keeps them).
    for table_id in (int(t) for t in RouteTable if t is not RouteTable.SPREAD):
        present = await netlink.collect(
            f"dump table {table_id}", ipr.route("dump", table=table_id, family=socket.AF_INET)
        )
        for msg in present:
            if msg.get("table") != table_id:
                continue
            key = (f"{msg.get('dst') or '0.0.0.0'}/{msg['dst_len']}", table_id)
            value = (msg.get("oif"), msg.get("gateway"))
            if wanted.get(key) == value and msg["proto"] == ROUTE_PROTOCOL:
                wanted.pop(key)
                continue
            if key in wanted:
                # Replaced below in one step: deleting it first would leave the destination
                # without a route for a moment, and a packet then gets "network unreachable"
                # (a re-pairing changes a remote CIDR's next hop under live traffic).
                continue
            await netlink.delete(
                f"del route {key[0]} table {table_id}",
                ipr.route("del", dst=key[0], table=table_id, family=socket.AF_INET),
            )
            changes.append(f"del route {key[0]} table {table_id}")
    for (dst, table), (oif, via) in sorted(wanted.items()):
        spec: dict[str, Any] = {"dst": dst, "table": table, "oif": oif, "proto": ROUTE_PROTOCOL}
        if via is None:
            spec["scope"] = _SCOPE_LINK
        else:
            spec.update(gateway=via, flags=_RTNH_F_ONLINK, scope=_SCOPE_UNIVERSE)
        await netlink.call(f"route {dst} table {table}", ipr.route("replace", **spec))
        changes.append(f"set route {dst} table {table} via {via or '-'} oif {oif}")


async def reconcile_rules(ipr: Any, rules: tuple[PolicyRule, ...], changes: list[str]) -> None:
    """Exactly ``rules`` among the rules we own (our protocol, or our priority+table)."""
    wanted = {_wanted_key(r) for r in rules}
    ours = {(p, int(t)) for t, p in RULE_PRIORITY.items()}
    for msg in await netlink.collect("dump rules", ipr.rule("dump", family=socket.AF_INET)):
        priority, table = msg.get("priority"), msg.get("table")
        if msg.get("protocol") != ROUTE_PROTOCOL and (priority, table) not in ours:
            continue
        key = _live_key(msg)
        if key in wanted and msg.get("protocol") == ROUTE_PROTOCOL:
            wanted.discard(key)
            continue
        # Also a rule of an older agent, e.g. ``not iif lo`` where we now match a mark.
        await netlink.delete(
            f"del rule {priority}", ipr.rule("del", priority=priority, table=table, family=socket.AF_INET)
        )
        changes.append(f"del rule pref {priority} table {table}")
    for priority, table, fwmark, _selectors in sorted(wanted, key=lambda k: (k[0], k[1])):
        spec: dict[str, Any] = {"priority": priority, "table": table, "protocol": ROUTE_PROTOCOL}
        if fwmark is not None:
            spec.update(fwmark=fwmark, fwmask=fwmark)
        await netlink.call(f"rule {priority}", ipr.rule("add", family=socket.AF_INET, **spec))
        changes.append(f"add rule pref {priority}{_describe_mark(fwmark)} table {table}")


# (priority, table, fwmark (== its mask), any other selector present)
_RuleKey = tuple[int, int, int | None, bool]


def _wanted_key(rule: PolicyRule) -> _RuleKey:
    return (rule.priority, int(rule.table), rule.fwmark, False)


def _live_key(msg: Any) -> _RuleKey:
    mark, mask = msg.get("fwmark"), msg.get("fwmask")
    fwmark = mark if mark and mask == mark else None
    others = bool(
        (mark and fwmark is None)
        or msg["flags"] & _FIB_RULE_INVERT
        or msg.get("iifname")
        or msg.get("oifname")
        or msg["src_len"]
        or msg["dst_len"]
    )
    return (msg.get("priority"), msg.get("table"), fwmark, others)


def _describe_mark(fwmark: int | None) -> str:
    return "" if fwmark is None else f" fwmark {fwmark:#x}/{fwmark:#x}"
