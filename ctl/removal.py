"""`mcctl delete member CLUSTER_ID`: remove a member that died without leaving, through the hub.

A member leaves by itself when its ClusterSet is deleted (`mcctl leave` in that cluster). One
that died stays in the ClusterSet, Disconnected, keeping it from being Ready: the operator
removes it here. The hub is asked first what would go (a dry run), that is printed, and only
after a yes (`--yes`, or an answer on the terminal; without a terminal mcctl refuses) is the
member removed. Its hub tokens are revoked with it unless `--keep-tokens`; ServiceAccount
tokens belong to the leader cluster, and mcctl says how to revoke them.
"""

from __future__ import annotations

import sys
from typing import Any

from ctl.access import HubAccess, HubRest
from ctl.errors import UsageError
from ctl.output import note, say
from mcapi import names


def _age(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "never"
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m ago"
    return f"{minutes}m{secs}s ago" if minutes else f"{secs}s ago"


def _listing(title: str, items: list[str]) -> list[str]:
    if not items:
        return [f"  {title}: none"]
    return [f"  {title} ({len(items)}):", *(f"    {item}" for item in items)]


def describe(plan: dict[str, Any], keep_tokens: bool) -> list[str]:
    """The lines that say what removing the member takes (from the hub's dry run)."""
    state = "Connected" if plan.get("connected") else "Disconnected"
    tokens = list(plan.get("tokens") or [])
    fate = "kept (--keep-tokens)" if keep_tokens else "revoked with it"
    lines = [
        f"Member {plan['clusterID']} ({state}, last announce {_age(plan.get('heartbeatAgeSeconds'))}) "
        "will be removed from the ClusterSet, with:",
        f"  announce: {plan.get('announce') or names.member_announce_name(plan['clusterID'])}",
        *_listing("its exports", list(plan.get("exports") or [])),
        *_listing("imports deleted (made only of its exports)", list(plan.get("importsDeleted") or [])),
        *_listing("imports changed (it no longer contributes)", list(plan.get("importsChanged") or [])),
    ]
    if tokens:
        lines.append(f"  hub tokens naming it, {fate}: {', '.join(tokens)}")
    return lines


def confirm(question: str) -> bool:
    """Ask on the terminal; refuse (UsageError) when stdin is not one."""
    if not sys.stdin.isatty():
        raise UsageError("refusing to delete without a confirmation: stdin is not a terminal; pass --yes")
    note(f"{question} [y/N] ")
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


async def delete_member(hub: HubAccess, cluster_id: str, *, yes: bool, keep_tokens: bool) -> bool:
    """Whether the member was removed (False: the operator said no)."""
    path = f"/api/v1/members/{cluster_id}"
    async with HubRest(hub) as rest:
        plan = await rest.write("DELETE", path, {"dryRun": "All"})
        for line in describe(plan, keep_tokens):
            say(line)
        if plan.get("connected"):
            note(
                f"warning: {cluster_id} is connected: it joins again at its next announce unless its token is "
                "revoked. To take a running member out, delete its ClusterSet (`mcctl leave` in that cluster)."
            )
        if not yes and not confirm(f"Delete member {cluster_id}?"):
            note("Nothing deleted")
            return False
        params = {} if keep_tokens else {"revokeTokens": "true"}
        removed = await rest.write("DELETE", path, params)
    say(f"Member {cluster_id} deleted (hub revision {removed.get('revision', 0)})")
    for token in removed.get("revokedTokens") or []:
        say(f"Hub token {token} revoked")
    for token in removed.get("tokens") or []:
        note(f"Hub token {token} still admits {cluster_id}: revoke it on the hub with `mchub hub token delete {token}`")
    if removed.get("serviceAccountTokens"):
        namespace = removed.get("leaderNamespace") or names.DEFAULT_LEADER_NAMESPACE
        note(
            f"A ServiceAccount token of the leader Namespace {namespace} whose ServiceAccount is annotated "
            f"{names.ANNOTATION_CLUSTER_ID}={cluster_id} still admits it: delete that ServiceAccount "
            f"(`mcctl delete membertoken NAME -n {namespace}` for one mcctl created, else "
            f"`kubectl delete serviceaccount NAME -n {namespace}`)."
        )
    return True


def check_cluster_id(cluster_id: str) -> None:
    if not names.is_valid_cluster_id(cluster_id):
        raise UsageError(f"cluster ID {cluster_id!r} must be a DNS-1123 label")
