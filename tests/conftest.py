"""Session-wide fixtures: real Kubernetes clusters, shared by every suite that runs on them.

- `real_control_plane`: four real clusters (kube-apiserver + kube-controller-manager v1.28.7 on
  loopback: `leader`, `east`, `west`, `north`) with the mchub CRDs installed, started once per
  session on first use and stopped at its end (tests/kubeenv/envtest.py says where the binaries
  come from: KUBEBUILDER_ASSETS or ../shared/envtest). A test that asks for it is marked `real`
  and skips, with the reason, only when no real control plane can be had here (under CI=true,
  where .ci/run installs what it needs, that is a failure instead).
- `cluster_kind`: "sandbox" or "real"; a test that takes it runs once on each.
- `needs` markers (tests/needs.py): what a test needs from the machine (root, a Debian tool, a
  browser) is checked at set-up; unmet, the test skips with the reason, or fails under CI=true.

Every real-cluster test works in Namespaces of its own and removes what it made, so tests share
the clusters without seeing each other. The summary line `real-cluster tests: ...` counts them;
when this session ran the upstream MCS conformance suite (tests/nodes/test_conformance.py), the
summary ends with its table, the one the README shows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubeenv.envtest import RealCluster, RealControlPlane, unavailable_reason
from tests.needs import check_needs, unmet

_PLANE = RealControlPlane()
_real_outcomes: dict[str, int] = {}
# Seconds of set-up, call and tear-down per folder under tests/: where the suite's time goes.
_seconds_by_folder: dict[str, float] = {}
_SESSION_STARTED = time.time()
CONFORMANCE_TABLE = Path(__file__).resolve().parents[1] / "test-artifacts" / "conformance" / "table.md"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("cluster_kind") if callspec is not None else None
        if "real_control_plane" in fixtures or "real_clusters" in fixtures or kind == "real":
            item.add_marker(pytest.mark.real)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    parts = report.nodeid.split("/")
    folder = parts[1] if len(parts) > 2 else parts[-1].split("::")[0]
    _seconds_by_folder[folder] = _seconds_by_folder.get(folder, 0.0) + report.duration
    if "real" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _real_outcomes[report.outcome] = _real_outcomes.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _seconds_by_folder:
        by_time = sorted(_seconds_by_folder.items(), key=lambda item: -item[1])
        terminalreporter.write_line("seconds per folder: " + ", ".join(f"{f} {s:.0f}" for f, s in by_time))
    if _real_outcomes:
        counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(_real_outcomes.items()))
        terminalreporter.write_line(f"real-cluster tests (kube-apiserver v1.28): {counts}")
    if CONFORMANCE_TABLE.exists() and CONFORMANCE_TABLE.stat().st_mtime >= _SESSION_STARTED:
        terminalreporter.write_sep("-", "upstream MCS conformance suite, this run")
        for line in CONFORMANCE_TABLE.read_text().splitlines():
            terminalreporter.write_line(line)


def pytest_sessionfinish() -> None:
    _PLANE.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    check_needs(item)


def _require_real_clusters() -> None:
    """Skip with the reason when real clusters cannot be had; in CI (CI=true) that is a failure."""
    reason = unavailable_reason()
    if reason is not None:
        unmet(f"real clusters: {reason}")


@pytest.fixture(scope="session")
def real_control_plane() -> Iterator[RealControlPlane]:
    _require_real_clusters()
    yield _PLANE


@pytest.fixture(scope="session")
def real_clusters(real_control_plane: RealControlPlane) -> dict[str, RealCluster]:
    return real_control_plane.clusters()


@pytest.fixture(params=["sandbox", "real"])
def cluster_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "real":
        _require_real_clusters()
    return kind
