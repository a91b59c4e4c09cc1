"""Fixtures of the datapath suite (root, Linux network namespaces).

* ``topology``: three clusters (east, west, north) of two Nodes each, built from fresh
  namespaces with names unique to the test run; every namespace (and so every link,
  route and nft table in it) and every wireguard-go daemon of the run is removed
  afterwards, whatever happened.
* ``clusterset``: a ClusterSetDriver with one DatapathAgent per Node (VXLAN mode);
  its agents are stopped with cleanup before the topology goes.
* ``wireguard_clusterset``: the same in wireGuard mode (needs wireguard-go and wg).
* every test, set-up and teardown included, fails if this process forked (a Python-level
  fork; subprocesses are fine): the agents run beside gRPC threads here, as they do in
  production, and such a fork can abort the child (tests/datapath/forks.py).

Traffic only ever flows between addresses inside these namespaces.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.datapath.driver import ClusterSetDriver
from tests.datapath.forks import recording_forks
from tests.datapath.topology import Topology, built_topology
from tests.needs import needs, tool_missing
from tests.others_done import wait_for_the_other_tests


def _why_no_netns() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    missing = tool_missing("ip", package="iproute2") or tool_missing("nft", package="nftables")
    if missing is not None:
        return missing
    probe = f"mcprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, check=False)
    if made.returncode != 0:
        return f"cannot create network namespaces: {made.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


_NO_NETNS = _why_no_netns()
requires_netns = needs(_NO_NETNS)
requires_wireguard = needs(tool_missing("wireguard-go", "wg", package="wireguard-go, wireguard-tools"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    datapath = [item for item in items if "tests/datapath/" in str(item.path)]
    for item in datapath:
        item.add_marker(pytest.mark.root)
        item.add_marker(requires_netns)
    if datapath:  # its set-up may wait for the suite's other processes (after_the_other_tests)
        datapath[0].add_marker(pytest.mark.timeout(50 * 60))


@pytest.fixture(scope="session", autouse=True)
def after_the_other_tests() -> None:
    """Agents probe every 50 ms here, and several tests assert their verdicts: under `make test`
    they begin once the processes running the other folders have ended."""
    wait_for_the_other_tests()


@pytest.fixture(autouse=True)
def no_fork_in_this_process() -> Iterator[None]:
    with recording_forks() as recorder:
        yield
    assert recorder.forks == [], "\n".join(recorder.forks)


@pytest.fixture
async def topology() -> AsyncIterator[Topology]:
    async with built_topology() as topo:
        yield topo


@pytest.fixture
async def clusterset(topology: Topology) -> AsyncIterator[ClusterSetDriver]:
    driver = ClusterSetDriver(topology)
    try:
        yield driver
    finally:
        await driver.stop_all(cleanup=True)


@pytest.fixture
async def wireguard_clusterset(topology: Topology) -> AsyncIterator[ClusterSetDriver]:
    driver = ClusterSetDriver(topology, wireguard=True)
    try:
        yield driver
    finally:
        await driver.stop_all(cleanup=True)
