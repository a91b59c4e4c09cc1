"""The upstream mcs-api conformance suite, as published (issue 25), on the node ClusterSet.

../shared/mcs-conformance's binary (kubernetes-sigs/mcs-api v0.5.0 plus its 60 s Pod wait) runs
with every member as a context, the first one exporting, against mchub installed as a user
installs it, with the test clusters' DNS forwarding clusterset.local to the member. Its
report.yaml, report.html, junit.xml and log are kept in test-artifacts/conformance/ and the
README's table is taken from report.yaml. Every spec, Required and Optional, must pass.

The ClusterSet's east and west share their Pod and Service CIDRs (tests/nodes/conftest.py), so
north, with ranges of its own, is the first context (conformance.contexts says why): the suite's
clients in east and west reach its exports at north's own addresses, and the StrictPortConflict
Connectivity specs, which export from east too, reach east's share through its global addresses.

When the session started the ClusterSet itself, the suite ran right after it started, in the
background (tests/nodes/early.py); this test reads that run's report.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from hack.nodeset import conformance
from hack.nodeset.clusterset import Mode, NodeClusterSet
from hack.nodeset.install import LEADER_NS, MEMBER_NS
from hack.nodeset.kubectl import KubectlError
from tests.nodes.conftest import in_mode, record
from tests.nodes.early import EARLY


@pytest.mark.timeout(45 * 60)  # the suite's own limit is 40 minutes
def test_the_upstream_mcs_conformance_suite_passes_every_spec(node_clusterset: NodeClusterSet) -> None:
    if conformance.suite_archive() is None:
        reason = f"no conformance suite in {conformance.SUITE_DIR} (or ${conformance.SUITE_ENV})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the conformance suite: {reason}")
        pytest.skip(reason)
    clusterset = in_mode(node_clusterset, Mode())
    report = EARLY.conformance_report()
    if report is None:
        report = conformance.run(conformance.contexts(clusterset.clusters, overlapping=clusterset.overlapping))
    (report.directory / "table.md").write_text(report.table() + "\n")
    record(
        conformance_passed=report.passed,
        conformance_total=report.total,
        conformance_s=round(report.seconds),
        conformance_on_overlapping_ranges=clusterset.overlapping,
    )
    failed = [f"{spec.desc}{spec.message}" for spec in report.specs if not spec.passed]
    assert not report.suite_failure, report.suite_failure
    assert failed == [], "\n".join([*failed, *_what_mchub_said(clusterset)])
    assert report.all_passed and report.total == 27, (report.passed, report.total, report.exit_code)


def _what_mchub_said(clusterset: NodeClusterSet) -> list[str]:
    """For a failed spec: mchub's Pods (restarts) and their warnings and errors, so a failure in
    CI, where only the output is kept, says what the hub and the members went through."""
    lines: list[str] = []
    leader = clusterset.leader.name
    for name, cluster in {leader: clusterset.leader, **clusterset.clusters}.items():
        for namespace in dict.fromkeys((LEADER_NS if name == leader else MEMBER_NS, MEMBER_NS)):
            try:
                pods = cluster.kubectl.json("get", "pods", "-n", namespace, "-l", "app=antrea")["items"]
                for pod in pods:
                    pod_name = pod["metadata"]["name"]
                    restarts = sum(c.get("restartCount", 0) for c in pod["status"].get("containerStatuses") or [])
                    lines.append(f"{name} {pod_name} on {pod['spec'].get('nodeName')}: {restarts} restarts")
                    log = cluster.kubectl("-n", namespace, "logs", pod_name, "--since=20m", timeout=30)
                    lines += [f"  {line[:300]}" for line in log.splitlines() if line[13:15] in ("W ", "E ")][-20:]
            except (KubectlError, subprocess.TimeoutExpired) as err:
                lines.append(f"{name}: logs incomplete: {err}")
    return lines
