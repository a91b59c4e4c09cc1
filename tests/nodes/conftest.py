"""The ClusterSet on real nodes, once per session (hack/nodeset).

``node_clusterset`` builds the image (``make image``) and the test images while envtest starts
north (leader and member), east and west with real nodes, loads the images into every node
and installs mchub exactly as deploy/INSTALL.md tells a user. Its ranges overlap: east and west
share one Pod CIDR and one Service CIDR and reach each other through their global blocks, north
keeps its own ranges and is reached at them (hack/nodeset/clusterset.py), so every test proves
its path both through NAT and direct where it involves both. ``MCHUB_E2E_CLUSTERS`` runs the
same tests against clusters a user already has (their images loaded beforehand); tests that
fail a node on purpose skip there.

``MCHUB_NODESET_DIR=DIR`` reuses the ClusterSet ``python -m hack.nodeset up DIR`` left running
(and leaves it running), for repeated runs while developing.

Each module asks for the ClusterSet in the mode it needs (``in_mode``), so the options
change only between modules. A test that needs root or the node packages skips with the
reason when they are truly absent; under CI=true that is a failure.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pytest

from hack.nodeset.clusters import Cluster, EnvtestNodes, nodes_unavailable_reason, user_clusters
from hack.nodeset.clusterset import Mode, NodeClusterSet, attach, install_into
from hack.nodeset.install import MEMBER_NS
from mcapi.global_addresses import CONFIGMAP, GlobalAddresses
from tests.needs import unmet
from tests.nodes.early import EARLY
from tests.others_done import wait_for_the_other_tests

FIGURES = Path(__file__).resolve().parents[2] / "test-artifacts" / "nodes-figures.json"


def record(**figures: object) -> None:
    """Keep figures the tests measure (test-artifacts/nodes-figures.json) for the README."""
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    known = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    known.update(figures)
    FIGURES.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    nodes = [item for item in items if "tests/nodes/" in str(item.fspath)]
    for item in nodes:
        item.add_marker(pytest.mark.nodes)
    if nodes:
        # The first node test waits for the ClusterSet and, with it, the conformance suite
        # (tests/nodes/early.py): more than the default limit when little else ran before.
        nodes[0].add_marker(pytest.mark.timeout(50 * 60))


def _unavailable() -> str | None:
    return nodes_unavailable_reason() if user_clusters() is None else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the node ClusterSet now if node tests were selected (tests/nodes/early.py)."""
    if session.config.option.collectonly:
        return
    wanted = any("tests/nodes/" in str(item.fspath) for item in session.items)
    if wanted and _unavailable() is None and user_clusters() is None and not os.environ.get("MCHUB_NODESET_DIR"):
        suite = any("tests/nodes/test_conformance.py" in str(item.fspath) for item in session.items)
        EARLY.begin(with_conformance=suite)


def pytest_sessionfinish() -> None:
    EARLY.stop()


@pytest.fixture(scope="session")
def node_clusterset() -> NodeClusterSet:
    reason = _unavailable()
    if reason is not None:
        unmet(f"real nodes: {reason}")
    wait_for_the_other_tests()
    running = os.environ.get("MCHUB_NODESET_DIR")
    if running:  # `python -m hack.nodeset up DIR` left it running: use it, leave it running
        return attach(Path(running))
    users = user_clusters()
    if users is not None:
        return install_into(users)
    clusterset = EARLY.result()  # stopped at the session's end
    record(**{key: round(value, 1) for key, value in clusterset.figures.items()})
    return clusterset


@pytest.fixture(scope="session")
def envtest_nodes(node_clusterset: NodeClusterSet) -> EnvtestNodes:
    """The envtest nodes, for tests that fail a node on purpose (not on a user's clusters)."""
    if node_clusterset.envtest is None:
        pytest.skip("failing a node on purpose needs envtest's nodes, not MCHUB_E2E_CLUSTERS")
    return node_clusterset.envtest


@dataclass
class Members:
    """The ClusterSet and its three members, as a module's tests use them."""

    clusterset: NodeClusterSet
    east: Cluster
    west: Cluster
    north: Cluster

    @classmethod
    def of(cls, clusterset: NodeClusterSet) -> Self:
        return cls(clusterset, *(clusterset.cluster(name) for name in ("east", "west", "north")))


def endpoint_ips(cluster: Cluster, namespace: str, name: str) -> set[str]:
    """The ready addresses of the Endpoints ``name`` (e.g. an import's antrea-mc-<name>)."""
    endpoints = cluster.kubectl.json("get", "endpoints", name, "-n", namespace)
    return {a["ip"] for subset in endpoints.get("subsets") or [] for a in subset.get("addresses") or []}


def global_addresses(cluster: Cluster) -> GlobalAddresses:
    """The member's record of its global addressing (ConfigMap mchub-global-addresses)."""
    found = cluster.kubectl("get", "configmap", CONFIGMAP, "-n", MEMBER_NS, "--ignore-not-found", "-o", "json")
    return GlobalAddresses.from_data(json.loads(found).get("data") if found.strip() else None)


def overlapping(clusterset: NodeClusterSet) -> NodeClusterSet:
    """The ClusterSet, for tests of overlapping ranges (a user's clusters do not overlap so)."""
    if not clusterset.overlapping:
        pytest.skip("east and west must share their ranges (envtest's ClusterSet; MCHUB_E2E_CLUSTERS names others)")
    return clusterset


def in_mode(clusterset: NodeClusterSet, mode: Mode) -> NodeClusterSet:
    clusterset.ensure(mode)
    return clusterset
