"""Antrea's Tiers are a watched input of the policy importer, as in Antrea: a replicated
ClusterNetworkPolicy waits for its Tier and applies as soon as the Tier is created, goes when
its Tier is deleted, and the importer learns which Tiers exist from a watch, not from a read
per import.

Every case runs on a sandbox and on a real kube-apiserver (`cluster_kind`; the session's
`west`), with Antrea's policy CRDs from deploy/optional. Tiers and policies are cluster-scoped,
so each test names its own (a random suffix) and deletes them afterwards; the CRDs it installed
on a real cluster are deleted too.

Fixtures: `member` here overrides the sandbox-only one of conftest.py, so `appliers` builds
its importers on either kind of cluster.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.client import KubeClient, connect
from kube.errors import AlreadyExists, NotFound
from kube.resources import CRDS, Obj, Resource
from tests.kubeenv.cluster import sandbox_cluster
from tests.member_imports.conftest import CLUSTER_ID, Appliers, Reports, Settling, eventually
from tests.member_imports.messages import acnp_import
from tests.member_imports.test_service_imports import eventually_applied

OPTIONAL = Path(__file__).resolve().parents[2] / "deploy" / "optional"
ACNP = Resource("crd.antrea.io", "v1beta1", "clusternetworkpolicies", "ClusterNetworkPolicy", False)
TIER = Resource("crd.antrea.io", "v1beta1", "tiers", "Tier", False)
TIERS_RESOURCE = "tiers.crd.antrea.io"
# The import must follow its Tier this fast: far below the work queue's backoff (up to 30 s).
TIER_BUDGET = 2.0
# Failures after which the work queue's next retry of a blocked import (50 ms * 2**6) is due
# later than TIER_BUDGET: from then on only the Tier's own event can bring the import back in time.
REQUEUES_PAST_BUDGET = 7


def _policy_crds() -> list[Obj]:
    return [crd for crd in yaml.safe_load_all((OPTIONAL / "antrea-policy-crds.yml").read_text()) if crd]


async def _install_policy_crds(client: KubeClient) -> list[str]:
    """deploy/optional's CRDs, served when this returns; the names of those this call created."""
    created: list[str] = []
    for crd in _policy_crds():
        name = crd["metadata"]["name"]

        async def installed(crd: Obj = crd, name: str = name) -> bool:
            try:
                await client.create(CRDS, crd)
                created.append(name)
            except AlreadyExists:
                current = await client.get(CRDS, name)
                if current["metadata"].get("deletionTimestamp"):
                    return False  # an earlier test's CRD still going away: create it again once gone
            return True

        await eventually(installed, wait=60.0)
    for resource in (ACNP, TIER):
        await eventually(partial(_served, client, resource), wait=30.0)
    return created


async def _served(client: KubeClient, resource: Resource) -> bool:
    """Whether the API server serves ``resource``: a list of it answers (its CRD established) and
    discovery lists it (what the importer asks, a moment later than the list on a real server)."""
    return await _listed(client, resource) and await _discovered(client, resource)


async def _discovered(client: KubeClient, resource: Resource) -> bool:
    """Whether the API server's discovery lists ``resource``."""
    try:
        listing: Any = await client.request("GET", f"/apis/{resource.group}/{resource.version}")
    except NotFound:
        return False
    return resource.plural in {entry.get("name") for entry in (listing or {}).get("resources") or []}


async def _listed(client: KubeClient, resource: Resource) -> bool:
    """Whether the API server answers a list of ``resource`` (404 once its CRD is gone)."""
    try:
        await client.list(resource)
    except NotFound:
        return False
    return True


@pytest.fixture
async def member(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """The importing cluster "west" with Antrea's policy CRDs: a fresh sandbox, or the session's real west."""
    if cluster_kind == "sandbox":
        async with sandbox_cluster(tmp_path / "west", name=CLUSTER_ID) as (_, client):
            await _install_policy_crds(client)
            yield client
        return
    real = request.getfixturevalue("real_clusters")["west"]
    client = await connect(real.kubeconfig)
    try:
        created = await _install_policy_crds(client)
        yield client
        for name in created:
            with suppress(NotFound):
                await client.delete(CRDS, name)
    finally:
        await client.close()


class Made:
    """Tiers and policies of one test, uniquely named on a shared real cluster, deleted at its end."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.suffix = secrets.token_hex(3)
        self.tiers: list[str] = []

    def tier_name(self, base: str = "tier") -> str:
        return f"{base}-{self.suffix}"

    def policy_name(self, base: str = "isolation") -> str:
        return f"{base}-{self.suffix}"

    async def create_tier(self, name: str, priority: int = 120) -> None:
        self.tiers.append(name)
        await self.client.create(TIER, {"metadata": {"name": name}, "spec": {"priority": priority}})

    async def cleanup(self) -> None:
        try:
            policies = (await self.client.list(ACNP)).items
        except NotFound:
            return  # the test removed Antrea's CRDs, and their objects with them
        for policy in policies:
            if policy["metadata"]["name"].endswith(self.suffix):
                with suppress(NotFound):
                    await self.client.delete(ACNP, policy["metadata"]["name"])
        for tier in self.tiers:
            with suppress(NotFound):
                await self.client.delete(TIER, tier)


@pytest.fixture
async def made(member: KubeClient, appliers: Appliers) -> AsyncIterator[Made]:
    objects = Made(member)
    try:
        yield objects
    finally:
        # The importers first: running, they would put back the policies deleted here.
        await appliers.close()
        appliers.started.clear()
        await objects.cleanup()


def policy_spec(tier: str) -> dict[str, Any]:
    return {
        "priority": 1,
        "tier": tier,
        "appliedTo": [{"namespaceSelector": {}}],
        "ingress": [{"action": "Pass", "from": [{"namespaces": {"match": "Self"}}], "name": "PassFromSameNS"}],
    }


def tier_missing(tier: str) -> tuple[bool, str, str]:
    return (False, "TierNotFound", f"ACNP Tier {tier} does not exist in the importing cluster {CLUSTER_ID}")


async def _imported(client: KubeClient, policy: str) -> Obj | None:
    try:
        return await client.get(ACNP, f"antrea-mc-{policy}")
    except NotFound:
        return None


async def test_an_import_waiting_for_its_tier_applies_within_two_seconds_of_the_tier_being_created(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    applier = await appliers.new(retry_interval=30.0)
    tier, policy = made.tier_name(), made.policy_name()
    upsert = acnp_import(policy, policy_spec(tier))
    await applier.handle(upsert)
    assert reports.last(upsert.import_name) == tier_missing(tier)
    assert await _imported(member, policy) is None

    async def backed_off() -> bool:
        return applier.applier.requeues(upsert.import_name) >= REQUEUES_PAST_BUDGET

    await eventually(backed_off)
    await made.create_tier(tier)
    # Within the budget from the Tier's creation: the policy written, and its import reported
    # applied (the report follows the write: the policy may be seen a moment before it is made).
    async with asyncio.timeout(TIER_BUDGET):
        await eventually(lambda: _imported(member, policy))
        await eventually_applied(reports, upsert.import_name)


async def test_deleting_its_tier_removes_the_imported_policy_and_recreating_the_tier_brings_it_back(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    tier, policy = made.tier_name(), made.policy_name()
    await made.create_tier(tier)
    applier = await appliers.new(retry_interval=30.0)
    upsert = acnp_import(policy, policy_spec(tier))
    await applier.handle(upsert)
    assert reports.last(upsert.import_name) == (True, "Succeeded", "")
    assert await _imported(member, policy) is not None

    await member.delete(TIER, tier)

    async def removed() -> bool:
        return await _imported(member, policy) is None

    await eventually(removed, wait=TIER_BUDGET)
    await eventually(lambda: _reported(reports, upsert.import_name, tier_missing(tier)), wait=TIER_BUDGET)

    await made.create_tier(tier)
    await eventually(lambda: _imported(member, policy), wait=TIER_BUDGET)
    await eventually_applied(reports, upsert.import_name)


async def _reported(reports: Reports, import_name: str, outcome: tuple[bool, str, str]) -> bool:
    return reports.last(import_name) == outcome


async def test_deleting_a_tier_removes_only_the_policies_in_it(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    kept_tier, gone_tier = made.tier_name("kept"), made.tier_name("gone")
    await made.create_tier(kept_tier)
    await made.create_tier(gone_tier, priority=121)
    applier = await appliers.new(retry_interval=30.0)
    kept = acnp_import(made.policy_name("kept"), policy_spec(kept_tier))
    witness = acnp_import(made.policy_name("witness"), policy_spec(gone_tier))
    await applier.handle(kept)
    await applier.handle(witness)
    await applier.handle(acnp_import(made.policy_name("moved"), policy_spec(gone_tier)))
    # This one leaves the Tier about to be deleted: that deletion must not touch it.
    moved = acnp_import(made.policy_name("moved"), policy_spec(kept_tier))
    await applier.handle(moved)

    await member.delete(TIER, gone_tier)

    async def witness_removed() -> bool:
        return await _imported(member, made.policy_name("witness")) is None

    await eventually(witness_removed, wait=TIER_BUDGET)
    async with asyncio.timeout(TIER_BUDGET):
        await applier.applier.settled()
    assert await _imported(member, made.policy_name("kept")) is not None
    assert await _imported(member, made.policy_name("moved")) is not None
    assert reports.last(kept.import_name) == (True, "Succeeded", "")
    assert reports.last(moved.import_name) == (True, "Succeeded", "")
    assert reports.last(witness.import_name) == tier_missing(gone_tier)


async def test_applying_many_policy_imports_reads_no_tier_from_the_api_server(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    tier = made.tier_name()
    await made.create_tier(tier)
    applier = await appliers.new()

    def tier_reads(verb: str) -> int:
        return member.metrics.total(verbs=[verb], resource=TIERS_RESOURCE)

    gets, lists = tier_reads("get"), tier_reads("list")
    imports = [acnp_import(made.policy_name(f"p{index}"), policy_spec(tier)) for index in range(20)]
    for upsert in imports:
        await applier.handle(upsert)
    assert all(reports.last(upsert.import_name) == (True, "Succeeded", "") for upsert in imports)

    assert tier_reads("get") == gets
    assert tier_reads("list") - lists <= 1


async def test_an_importer_whose_policy_crd_went_away_still_removes_its_imports_and_says_the_crd_is_missing(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    tier, policy = made.tier_name(), made.policy_name()
    await made.create_tier(tier)
    # Discovery answers are reused for a minute: it still lists the CRD after the CRD is gone.
    applier = await appliers.new(discovery_ttl=60.0)
    await applier.handle(acnp_import(policy, policy_spec(tier)))
    assert await _imported(member, policy) is not None

    for crd in _policy_crds():
        with suppress(NotFound):
            await member.delete(CRDS, crd["metadata"]["name"])

    async def gone() -> bool:
        return not await _listed(member, ACNP)

    await eventually(gone, wait=60.0)
    missing = (False, "CRDNotInstalled", "ClusterNetworkPolicy CRD not installed: is Antrea running?")
    # A real server ends the old watch about a second after the CRD is gone; until the importer
    # hears that, a new policy may be refused for its (equally gone) Tier instead.
    await eventually(_new_imports_until(applier, reports, made, tier, missing), wait=10.0)
    await applier.applier.remove_all()  # leaving the ClusterSet: nothing left to remove, no error


def _new_imports_until(
    applier: Settling, reports: Reports, made: Made, tier: str, outcome: tuple[bool, str, str]
) -> Callable[[], Awaitable[bool]]:
    """A probe that hands the importer a new policy import in ``tier`` at each call, and says
    whether that one was reported ``outcome``."""
    tries = iter(range(1_000))

    async def reported() -> bool:
        other = acnp_import(made.policy_name(f"later{next(tries)}"), policy_spec(tier))
        await applier.handle(other)
        return reports.last(other.import_name) == outcome

    return reported


async def test_a_tier_crd_removed_after_discovery_listed_it_counts_as_not_installed_and_discovery_is_asked_again(
    member: KubeClient, appliers: Appliers, reports: Reports, made: Made
) -> None:
    tier = made.tier_name()
    await made.create_tier(tier)
    # Discovery answers are reused for a minute: it still lists Tiers after their CRD is gone.
    applier = await appliers.new(discovery_ttl=60.0)
    first = acnp_import(made.policy_name(), policy_spec(tier))
    await applier.handle(first)
    assert reports.last(first.import_name) == (True, "Succeeded", "")

    await member.delete(CRDS, TIERS_RESOURCE)

    async def gone() -> bool:
        return not await _listed(member, TIER) and not await _discovered(member, TIER)

    await eventually(gone, wait=60.0)
    # Tiers not installed: nothing to check a policy's Tier against, as when discovery never listed
    # them. A real server ends the Tier watch about a second after the CRD is gone; until the
    # importer hears that, a policy is refused for its (equally gone) Tier instead.
    await eventually(_new_imports_until(applier, reports, made, tier, (True, "Succeeded", "")), wait=10.0)
    # Discovery was asked again (its answer of a minute is not kept): no Tier is looked for any more.
    before = member.metrics.total(resource=TIERS_RESOURCE)
    for index in range(3):
        upsert = acnp_import(made.policy_name(f"after{index}"), policy_spec(tier))
        await applier.handle(upsert)
        assert reports.last(upsert.import_name) == (True, "Succeeded", "")
    assert member.metrics.total(resource=TIERS_RESOURCE) == before
