"""Label identities at scale: 10,000 Pods of 500 distinct label sets, exported and imported
everywhere, next to a floor measured in the same run.

In one process (hub with its SQLite store, three sandbox API servers, three members with
``enableStretchedNetworkPolicy``; ``mchub_cli.localset``):

- west holds N Pods (default 10,000) in 10 Namespaces, 20 Pods per label set, so I distinct
  identities (default 500); the Pods are created before the members start;
- *cold start*: the three members join at once; timed from the joins until every member holds
  all I LabelIdentity CRs with one ID each (the member builds its identities from its Pod and
  Namespace informer caches, so the figure is the informers' first list, one export per
  identity, the hub's merge and every member's LabelIdentity writes);
- exports handed to the hub session by west's member: one per identity, not per Pod;
- *withdraw*: the Pods of 10 identities deleted; timed until no member holds them (includes
  the member's 3 s withdraw delay, which keeps an identity while its Pods are replaced);
- *floor*, measured before mchub starts: the same I LabelIdentity CRs written straight into
  each of the three clusters with the member's import concurrency (8 writers per cluster).

Usage: python -m bench.label_identities [--pods 10000] [--identities 500] [--json FILE]
Writes bench/results/label_identities.json unless --json says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from kube.client import KubeClient
from kube.errors import AlreadyExists
from kube.resources import CONFIG_MAPS, NAMESPACES, PODS
from mcapi import names
from mcapi.labels import normalized_label
from mcapi.resources import LABEL_IDENTITIES
from mchub_cli.localset import LocalClusterSet

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
WEST = "test-cluster-west"
NAMESPACES_USED = 10
WRITERS = 8  # the member's import workers
CREATE_CONCURRENCY = 64
STRETCHED = (
    "apiVersion: multicluster.crd.antrea.io/v1alpha1\nkind: MultiClusterConfig\nenableStretchedNetworkPolicy: true\n"
)


def plan(pods: int, identities: int) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, pod name, labels) for every Pod: ``identities`` label sets spread over the Namespaces."""
    per_identity = max(1, pods // identities)
    made = []
    for i in range(pods):
        identity = (i // per_identity) % identities
        namespace = f"bench-{identity % NAMESPACES_USED}"
        labels = {"app": f"app-{identity}", "tier": ("front", "back")[identity % 2]}
        made.append((namespace, f"pod-{i}", labels))
    return made


def expected_labels(layout: list[tuple[str, str, dict[str, str]]]) -> set[str]:
    return {normalized_label(ns, {"team": "bench"}, labels) for ns, _, labels in layout}


async def in_parallel(jobs: list[Any], concurrency: int) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def one(job: Any) -> None:
        async with slots:
            await job

    await asyncio.gather(*(one(j) for j in jobs))


async def create_pods(client: KubeClient, layout: list[tuple[str, str, dict[str, str]]]) -> float:
    for index in range(NAMESPACES_USED):
        body = {"metadata": {"name": f"bench-{index}", "labels": {"team": "bench"}}}
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, body)
    start = time.monotonic()
    jobs = [
        client.create(
            PODS,
            {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "a", "image": "pause"}]}},
            namespace,
        )
        for namespace, name, labels in layout
    ]
    await in_parallel(jobs, CREATE_CONCURRENCY)
    return time.monotonic() - start


async def floor(local: LocalClusterSet, labels: list[str]) -> float:
    """The same LabelIdentity CRs written straight into every cluster, then removed."""
    start = time.monotonic()
    jobs = [
        cluster.client.create(
            LABEL_IDENTITIES,
            {"metadata": {"name": f"floor-{names.label_hash(label)}"}, "spec": {"label": label, "id": i + 1}},
        )
        for cluster in local.clusters.values()
        for i, label in enumerate(labels)
    ]
    await in_parallel(jobs, WRITERS * len(local.clusters))
    elapsed = time.monotonic() - start
    for cluster in local.clusters.values():
        await in_parallel(
            [cluster.client.delete(LABEL_IDENTITIES, f"floor-{names.label_hash(label)}") for label in labels],
            WRITERS,
        )
    return elapsed


async def held(client: KubeClient, labels: set[str]) -> dict[str, int]:
    listed = await client.list(LABEL_IDENTITIES)
    return {o["spec"]["label"]: int(o["spec"]["id"]) for o in listed.items if o["spec"]["label"] in labels}


async def wait_until(check: Any, limit: float = 600.0, poll: float = 0.2) -> float:
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > limit:
            raise TimeoutError(f"not converged within {limit}s")
        await asyncio.sleep(poll)
    return time.monotonic() - start


async def run(pods: int, identities: int) -> dict[str, Any]:
    layout = plan(pods, identities)
    labels = expected_labels(layout)
    results: dict[str, Any] = {"pods": pods, "identities": len(labels), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="mchub-bench-li-") as work:
        local = LocalClusterSet(Path(work))
        try:
            await local.start(join=False)
            results["pods_created_seconds"] = await create_pods(local.clusters[WEST].client, layout)
            results["floor_seconds"] = await floor(local, sorted(labels))
            for name, cluster in local.clusters.items():
                config = {
                    "metadata": {"name": names.MC_CONTROLLER_CONFIGMAP, "namespace": local.member_namespace},
                    "data": {names.MC_CONTROLLER_CONFIG_KEY: STRETCHED},
                }
                await cluster.client.create(CONFIG_MAPS, config, local.member_namespace)
                await local.write_join_objects(name)

            start = time.monotonic()
            await asyncio.gather(*(local.start_member(name) for name in local.clusters))
            results["members_started_seconds"] = time.monotonic() - start

            async def everywhere() -> bool:
                found = [await held(c.client, labels) for c in local.clusters.values()]
                return all(len(f) == len(labels) for f in found) and all(f == found[0] for f in found)

            await wait_until(everywhere)
            results["cold_start_seconds"] = time.monotonic() - start
            ids = await held(local.clusters[WEST].client, labels)
            results["distinct_ids"] = len(set(ids.values()))
            member = local.clusters[WEST].member
            assert member is not None and member.identities is not None
            results["exports_handed_to_session"] = len(member.identities.exported) + member.identities.sets
            assert local.hub is not None
            results["hub_label_exports"] = sum(
                1 for e in local.hub.engine.index.exports.values() if e.HasField("label_identity")
            )

            gone = sorted(labels)[:10]
            victims = [(ns, name) for ns, name, lab in layout if normalized_label(ns, {"team": "bench"}, lab) in gone]
            start = time.monotonic()
            await in_parallel(
                [local.clusters[WEST].client.delete(PODS, name, ns) for ns, name in victims], CREATE_CONCURRENCY
            )

            async def withdrawn() -> bool:
                for cluster in local.clusters.values():
                    if set(await held(cluster.client, set(gone))):
                        return False
                return True

            await wait_until(withdrawn)
            results["withdraw_seconds"] = time.monotonic() - start
            results["withdrawn_identities"] = len(gone)
        finally:
            await local.stop()
    results["cold_start_vs_floor"] = results["cold_start_seconds"] / results["floor_seconds"]
    return results


def report(figures: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"{figures['pods']} Pods, {figures['identities']} identities, 3 members (one process, 2 cores)",
            f"  cold start until every member holds every identity: {figures['cold_start_seconds']:.2f} s",
            f"  floor (the same LabelIdentities written straight into 3 clusters): {figures['floor_seconds']:.2f} s"
            f"  -> x{figures['cold_start_vs_floor']:.1f}",
            f"  exports handed to the hub session by west: {figures['exports_handed_to_session']}"
            f" (hub holds {figures['hub_label_exports']}, {figures['distinct_ids']} distinct IDs)",
            f"  {figures['withdrawn_identities']} identities withdrawn everywhere in "
            f"{figures['withdraw_seconds']:.2f} s (3 s of it the member's withdraw delay)",
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--identities", type=int, default=500)
    parser.add_argument("--json", type=Path, default=RESULTS / "label_identities.json")
    cli = parser.parse_args()
    figures = asyncio.run(run(cli.pods, cli.identities))
    print(report(figures))
    print(json.dumps(figures, sort_keys=True))
    cli.json.parent.mkdir(parents=True, exist_ok=True)
    cli.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
