"""ClusterSet policy datapath: rule update latency and the size of the nftables state.

Builds two namespace clusters (tests/datapath/topology.py) with one DatapathAgent per Node
and stretched NetworkPolicy on, then, in the same run:
- ``state``: east's Gateway table for 500 label identities x 1,000 local Pods (synthetic
  Pods beside the real ones) and 20 policies: elements, rules, bytes of ``nft list``, the
  compile time (pure) and the time to write it (one ``nft -f`` transaction);
- ``update_latency``: a policy edit (Drop west's tenant, then remove the Drop) until the
  tenant's verdict has flipped, measured by real TCP connections, with the small state
  (baseline) and with the 500 x 1,000 state loaded; p50/p99/max over ``--flips`` edits.
  It includes the recompile, the reconcile of all four agents and the witness itself: a
  connection that is dropped is only known as such after its 0.5 s timeout.
Figures go to stderr; one JSON document goes to stdout. Needs root. ~1 min.

Usage: sudo .venv/bin/python bench/policy_datapath.py [--flips 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.policy.compile import LocalPod, PolicyObject, PolicySources, compile_policies
from agent.policy.labels import LabelIdentity, identity_from_label
from agent.policy.state import CompiledPolicy
from mcapi.labels import normalized_label
from tests.datapath.driver import ClusterSetDriver
from tests.datapath.policy_world import PolicyWorld, ingress_from_cluster_set
from tests.datapath.topology import Topology, build_topology, destroy_topology, sh
from tests.datapath.traffic import peer_reporting_server, seen_source

IDENTITIES, PODS, POLICIES = 500, 1000, 20


def synthetic(world: PolicyWorld) -> tuple[tuple[LabelIdentity, ...], tuple[LocalPod, ...], list[PolicyObject]]:
    labels = [normalized_label("bench", {}, {"app": f"app-{i}"}) for i in range(IDENTITIES)]
    identities = tuple(i for n, label in enumerate(labels) if (i := identity_from_label(0x300000 + n, label)))
    pods = tuple(
        LocalPod(
            "bench",
            f"pod-{n}",
            IPv4Address(f"10.1.{200 + n // 250}.{n % 250 + 1}"),
            (("app", f"app-{n % IDENTITIES}"),),
        )
        for n in range(PODS)
    )
    policies = [
        ingress_from_cluster_set(
            f"bench-{p}",
            "Allow" if p % 2 else "Drop",
            {"app": f"app-{p}"},
            priority=10 + p,
            applied_to={"app": f"app-{p + 1}"},
        )
        for p in range(POLICIES)
    ]
    return identities, pods, policies


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def reaches(netns: str, ip: str) -> bool:
    try:
        await seen_source(netns, ip, deadline=0.5)
    except (OSError, TimeoutError):
        return False
    return True


async def flip_latencies(world: PolicyWorld, driver: ClusterSetDriver, topo: Topology, flips: int) -> list[float]:
    west, target = topo.clusters["west"], topo.clusters["east"].nodes[1].pod
    tenant = west.nodes[0].pod.netns
    base = list(world.policies.get("east", []))
    samples: list[float] = []
    async with peer_reporting_server(target.netns):
        for n in range(flips):
            dropping = n % 2 == 0
            world.policies["east"] = (
                [*base, ingress_from_cluster_set("flip", "Drop", {"role": "tenant"})] if dropping else base
            )
            started = time.monotonic()
            await driver.sync()
            # Traffic is the only witness of the verdict: poll it (a dropped try costs its 0.5 s timeout).
            while await reaches(tenant, target.ip) == dropping:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            samples.append(time.monotonic() - started)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50_s": statistics.median(samples),
        "p99_s": percentile(samples, 0.99),
        "max_s": max(samples),
        "samples": len(samples),
    }


async def run(flips: int) -> dict[str, Any]:
    topo = await build_topology(("east", "west"))
    results: dict[str, Any] = {}
    try:
        world = PolicyWorld(topo, labels={"west-a": {"role": "tenant"}, "west-b": {"role": "client"}})
        big: dict[str, Any] = {}

        def compiled(cluster_id: str) -> CompiledPolicy:
            if cluster_id != "east" or not big:
                return world.compiled(cluster_id)
            started = time.perf_counter()
            sources = PolicySources(
                policies=tuple(world.policies.get("east", [])) + tuple(big["policies"]),
                identities=world.identities() + big["identities"],
                pods=small_pods(world, "east") + big["pods"],
                namespaces={"default": {}, "bench": {}},
            )
            result = compile_policies(sources)
            big["compile_s"] = time.perf_counter() - started
            return result

        driver = ClusterSetDriver(topo, policy=compiled)
        try:
            await driver.sync()
            results["update_latency_baseline"] = summary(await flip_latencies(world, driver, topo, flips))
            identities, pods, policies = synthetic(world)
            big.update(identities=identities, pods=pods, policies=policies)
            started = time.monotonic()
            outcomes = await driver.sync()
            results["state_write_s"] = time.monotonic() - started
            assert outcomes["east-a"].applied
            results["compile_s"] = big["compile_s"]
            listed = await sh(
                "ip",
                "netns",
                "exec",
                topo.clusters["east"].nodes[0].netns,
                "nft",
                "list",
                "table",
                "ip",
                "mchub_policy",
            )
            listing = json.loads(
                await sh(
                    "ip",
                    "netns",
                    "exec",
                    topo.clusters["east"].nodes[0].netns,
                    "nft",
                    "-j",
                    "list",
                    "table",
                    "ip",
                    "mchub_policy",
                )
            )["nftables"]
            elements = sum(len(o[k].get("elem", [])) for o in listing for k in ("set", "map") if k in o)
            results["state"] = {
                "identities": IDENTITIES,
                "pods": PODS,
                "policies": POLICIES,
                "elements": elements,
                "rules": sum(1 for o in listing if "rule" in o),
                "sets_and_maps": sum(1 for o in listing if "set" in o or "map" in o),
                "nft_list_bytes": len(listed.encode()),
            }
            results["update_latency_500x1000"] = summary(await flip_latencies(world, driver, topo, flips))
        finally:
            await driver.stop_all(cleanup=True)
    finally:
        await destroy_topology(topo)
    results["budget_s"] = 5.0
    return results


def small_pods(world: PolicyWorld, cluster_id: str) -> tuple[LocalPod, ...]:
    return tuple(
        LocalPod("default", f"{n.name}-pod", IPv4Address(n.pod.ip), tuple(sorted(world.labels.get(n.name, {}).items())))
        for n in world.topo.clusters[cluster_id].nodes
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flips", type=int, default=10, help="policy edits measured per state size")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/policy_datapath.py needs root (network namespaces)", file=sys.stderr)
        return 2
    started = time.monotonic()
    results = asyncio.run(run(args.flips))
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    for name in ("update_latency_baseline", "update_latency_500x1000"):
        r = results[name]
        print(
            f"{name}: p50 {r['p50_s'] * 1000:.0f} ms, p99 {r['p99_s'] * 1000:.0f} ms, max {r['max_s'] * 1000:.0f} ms",
            file=sys.stderr,
        )
    s = results["state"]
    print(
        f"state {s['identities']} identities x {s['pods']} Pods: {s['elements']} elements, {s['rules']} rules, "
        f"{s['nft_list_bytes']} bytes listed; compile {results['compile_s'] * 1000:.0f} ms, "
        f"write {results['state_write_s'] * 1000:.0f} ms",
        file=sys.stderr,
    )
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
