"""mcctl against a running ClusterSet: a hub and three sandbox clusters with members joined
(mchub_cli.LocalClusterSet), read through the hub's REST facade."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kube.resources import SERVICES
from mcapi.resources import SERVICE_EXPORTS
from mchub_cli.localset import LocalClusterSet
from tests.ctl.conftest import Mcctl
from tests.integration.hub_fixtures import rest_session

pytestmark = pytest.mark.slow


@pytest.fixture
async def clusterset(tmp_path: Path) -> AsyncIterator[LocalClusterSet]:
    local = LocalClusterSet(
        work_dir=tmp_path,
        hub_overrides={"heartbeat_interval": 0.5, "disconnect_after": 2.0, "status_interval": 0.2},
    )
    try:
        await local.start()
        await wait_members(local, lambda m: all(x["status"]["connected"] for x in m) and len(m) == 3)
        yield local
    finally:
        await local.stop()


async def members(local: LocalClusterSet) -> list[dict[str, Any]]:
    assert local.hub is not None
    async with (
        rest_session(local.hub, headers={"Authorization": f"Bearer {local.hub.admin_token}"}) as http,
        http.get("/api/v1/members") as response,
    ):
        items: list[dict[str, Any]] = (await response.json())["items"]
        return items


async def wait_members(local: LocalClusterSet, ready: Callable[[list[dict]], bool], within: float = 20) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + within
    while not ready(await members(local)):
        assert time.monotonic() < deadline, "the hub never saw the members as expected"
        await asyncio.sleep(0.1)


def hub_args(local: LocalClusterSet) -> list[str]:
    assert local.hub is not None and local.hub.ca_cert is not None
    return ["--hub-url", local.hub.rest_url, "--token", local.hub.admin_token, "--hub-ca-file", str(local.hub.ca_cert)]


def member_args(local: LocalClusterSet, *names: str) -> list[str]:
    args: list[str] = []
    for name in names:
        args += ["--member-kubeconfig", str(local.clusters[name].kubeconfig)]
    return args


async def test_verify_passes_on_a_healthy_clusterset_and_leaves_no_test_service(
    mcctl: Mcctl, clusterset: LocalClusterSet
) -> None:
    ran = await mcctl("verify", *hub_args(clusterset), *member_args(clusterset, *clusterset.clusters), "-o", "json")
    assert ran.code == 0, ran.out + ran.err
    checks = json.loads(ran.out)
    results = {c["check"]: c["result"] for c in checks}
    assert results["hub reachable"] == "PASS"
    assert all(results[f"{name}: connected to hub"] == "PASS" for name in clusterset.clusters)
    round_trip = next(c for c in checks if c["check"].startswith("service export round trip"))
    assert round_trip["result"] == "PASS", round_trip
    assert {c["result"] for c in checks if "Gateways" in c["check"]} <= {"PASS", "WARN"}
    for cluster in clusterset.clusters.values():
        services = (await cluster.client.list_all(SERVICES, "default")).items
        assert not [s for s in services if "mcctl-verify-" in s["metadata"]["name"]]


async def test_verify_fails_with_exit_one_when_a_member_is_stopped(mcctl: Mcctl, clusterset: LocalClusterSet) -> None:
    await clusterset.stop_member("test-cluster-west")
    await wait_members(
        clusterset, lambda m: any(x["clusterID"] == "test-cluster-west" and not x["status"]["connected"] for x in m)
    )

    ran = await mcctl("verify", *hub_args(clusterset), *member_args(clusterset, *clusterset.clusters), "--timeout", "2")
    assert ran.code == 1
    assert ran.header() == ["CHECK", "RESULT", "DETAIL"]
    west = next(line for line in ran.out.splitlines() if line.startswith("test-cluster-west: connected to hub"))
    assert "FAIL" in west
    assert "round trip" in ran.out and "test-cluster-west" in ran.out


async def test_get_exports_and_imports_from_the_hub_and_diagnose_writes_its_report(
    mcctl: Mcctl, clusterset: LocalClusterSet, tmp_path: Path
) -> None:
    east = clusterset.clusters["test-cluster-east"].client
    service = {"metadata": {"name": "nginx"}, "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
    await east.create(SERVICES, service, "default")
    await east.create(SERVICE_EXPORTS, {"metadata": {"name": "nginx"}}, "default")
    try:
        deadline = time.monotonic() + 20
        while True:
            ran = await mcctl("get", "resourceimport", *hub_args(clusterset), "-o", "json")
            if any(i["spec"]["kind"] == "ServiceImport" for i in json.loads(ran.out)):
                break
            assert time.monotonic() < deadline, "the hub never imported the Service"
            await asyncio.sleep(0.1)

        exports = await mcctl("get", "resourceexport", "--cluster-id", "test-cluster-east", *hub_args(clusterset))
        assert exports.code == 0, exports.err
        assert exports.header() == ["CLUSTER-ID", "NAMESPACE", "NAME", "KIND"]
        assert "test-cluster-east-default-nginx-service" in exports.out
        imports = await mcctl("get", "resourceimport", *hub_args(clusterset))
        assert imports.header() == ["NAMESPACE", "NAME", "KIND"]
        assert "default-nginx-service" in imports.out

        report = tmp_path / "report"
        diag = await mcctl(
            "diagnose", *hub_args(clusterset), *member_args(clusterset, "test-cluster-east"), "--output-dir", report
        )
        assert diag.code == 0, diag.err
        for relative in ("hub/clusterset.json", "hub/members.json", "hub/resourceexports.json",
                         "hub/resourceimports.json", "hub/metrics.txt", "summary.json",
                         "members/test-cluster-east/clusterset.yaml", "members/test-cluster-east/serviceexports.yaml",
                         "members/test-cluster-east/serviceimports.yaml", "members/test-cluster-east/gateways.yaml",
                         "members/test-cluster-east/clusterinfoimports.yaml",
                         "members/test-cluster-east/warning-events.yaml"):  # fmt: skip
            assert (report / relative).is_file(), relative
        assert "test-cluster-east-default-nginx-service" in (report / "hub/resourceexports.json").read_text()
        assert "nginx" in (report / "members/test-cluster-east/serviceexports.yaml").read_text()
        assert diag.header() == ["SOURCE", "ITEM", "COUNT", "NOTE"]
    finally:
        await east.delete(SERVICE_EXPORTS, "nginx", "default")
        await east.delete(SERVICES, "nginx", "default")


async def test_the_installed_mcctl_script_reads_the_hub_with_environment_credentials(
    clusterset: LocalClusterSet,
) -> None:
    assert clusterset.hub is not None and clusterset.hub.ca_cert is not None
    script = shutil.which("mcctl", path=str(Path(sys.executable).parent)) or "mcctl"
    env = {
        **os.environ,
        "MCHUB_HUB_URL": clusterset.hub.rest_url,
        "MCHUB_TOKEN": clusterset.hub.admin_token,
        "MCHUB_HUB_CA": str(clusterset.hub.ca_cert),
    }
    member_kubeconfig = str(clusterset.clusters["test-cluster-east"].kubeconfig)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([script, *argv], env=env, capture_output=True, text=True, timeout=30, check=False)

    exports = await asyncio.to_thread(run, "get", "resourceexport", "-o", "yaml")
    assert exports.returncode == 0, exports.stderr
    clusterset_rows = await asyncio.to_thread(run, "get", "clusterset", "--kubeconfig", member_kubeconfig)
    assert clusterset_rows.returncode == 0, clusterset_rows.stderr
    assert clusterset_rows.stdout.split("\n")[0].split() == [
        "CLUSTER-ID",
        "NAMESPACE",
        "CLUSTERSET-ID",
        "TYPE",
        "STATUS",
        "REASON",
    ]
    assert "test-cluster-north" in clusterset_rows.stdout
    bad_token = await asyncio.to_thread(
        lambda: subprocess.run([script, "get", "resourceimport"], env={**env, "MCHUB_TOKEN": "wrong"},
                               capture_output=True, text=True, timeout=30, check=False)
    )  # fmt: skip
    assert bad_token.returncode == 1
    assert "refused the token" in bad_token.stderr
