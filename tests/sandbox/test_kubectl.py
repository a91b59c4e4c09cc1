"""kubectl against the cluster: get, apply, describe, get -w, delete.

kubectl sends bearer tokens only over HTTPS and asks for server-side Tables, so
these tests also check the TLS set-up and the Table columns as users see them.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.sandbox.cluster import Cluster
from tests.sandbox.kubectl_runner import KUBECTL, Kubectl, normalized
from tests.sandbox.probe_crd import ProbeCRD

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "deploy" / "crds"


@pytest.fixture
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster.kubeconfig, cluster.work_dir / "kubectl-cache")


async def test_kubectl_get_namespaces_lists_them_with_status(kubectl: Kubectl) -> None:
    result = await kubectl("get", "ns")
    assert result.code == 0, result.stderr
    lines = [normalized(line) for line in result.stdout.splitlines()]
    assert lines[0] == "NAME STATUS AGE"
    assert any(line.startswith("default Active ") for line in lines)


async def test_kubectl_applies_a_crd_then_a_custom_resource_and_shows_its_columns(
    kubectl: Kubectl, cluster: Cluster, namespace: str, unique: str
) -> None:
    crd = ProbeCRD(group=f"k{unique}.sandbox.mchub.io")
    applied = await kubectl("apply", "-f", "-", stdin=yaml.safe_dump(crd.body()))
    assert applied.code == 0, applied.stderr
    try:
        await kubectl("wait", "--for=condition=Established", f"crd/{crd.name}", "--timeout=30s")
        probe = crd.object("p1", "east")
        result = await kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(probe))
        assert result.code == 0, result.stderr
        assert "created" in result.stdout

        probe["spec"]["clusterID"] = "west"
        result = await kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(probe))
        assert result.code == 0, result.stderr
        assert "configured" in result.stdout

        got = await kubectl("get", f"probes.{crd.group}", "-n", namespace)
        assert got.code == 0, got.stderr
        lines = [normalized(line) for line in got.stdout.splitlines()]
        assert lines[0] == "NAME CLUSTER ID READY AGE"
        assert lines[1].startswith("p1 west ")
    finally:
        await kubectl("delete", "crd", crd.name, "--wait=false")


async def test_kubectl_apply_configures_a_service_with_a_strategic_merge_patch(
    kubectl: Kubectl, namespace: str
) -> None:
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}], "selector": {"a": "b"}},
    }
    assert (await kubectl("apply", "-f", "-", stdin=yaml.safe_dump(service))).code == 0
    service["spec"]["ports"] = [{"name": "http", "port": 80}]
    result = await kubectl("apply", "-f", "-", stdin=yaml.safe_dump(service))
    assert result.code == 0, result.stderr
    shown = json.loads((await kubectl("get", "svc", "web", "-n", namespace, "-o", "json")).stdout)
    assert [p["port"] for p in shown["spec"]["ports"]] == [80]


async def test_kubectl_describe_shows_a_custom_resource_and_its_events(
    kubectl: Kubectl, cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    created = (await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))).body
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "p1.first"},
        "involvedObject": {
            "apiVersion": f"{probe_crd.group}/{probe_crd.version}",
            "kind": "Probe",
            "name": "p1",
            "namespace": namespace,
            "uid": created["metadata"]["uid"],
        },
        "reason": "Probed",
        "message": "the probe answered",
        "type": "Normal",
        "source": {"component": "semantics-suite"},
        "count": 1,
        "firstTimestamp": created["metadata"]["creationTimestamp"],
        "lastTimestamp": created["metadata"]["creationTimestamp"],
    }
    posted = await cluster.request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
    assert posted.status == 201, posted.body
    result = await kubectl("describe", f"probes.{probe_crd.group}", "p1", "-n", namespace)
    assert result.code == 0, result.stderr
    assert "Cluster ID:  east" in result.stdout
    assert "Probed" in result.stdout and "the probe answered" in result.stdout


async def test_kubectl_get_watch_prints_a_later_change(
    cluster: Cluster, probe_crd: ProbeCRD, namespace: str, kubectl: Kubectl
) -> None:
    await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))
    process = await kubectl.start("get", f"probes.{probe_crd.group}", "-n", namespace, "-w")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            header = normalized((await process.stdout.readline()).decode())
            assert header == "NAME CLUSTER ID READY AGE"
            first = normalized((await process.stdout.readline()).decode())
            assert first.startswith("p1 east")
            patch = {"spec": {"clusterID": "south"}}
            await cluster.request(
                "PATCH", f"{probe_crd.path(namespace)}/p1", body=patch, content_type="application/merge-patch+json"
            )
            changed = normalized((await process.stdout.readline()).decode())
        assert changed.startswith("p1 south")
    finally:
        process.kill()
        await process.wait()


async def test_kubectl_delete_removes_a_custom_resource(
    kubectl: Kubectl, cluster: Cluster, probe_crd: ProbeCRD, namespace: str
) -> None:
    await cluster.request("POST", probe_crd.path(namespace), body=probe_crd.object("p1", "east"))
    result = await kubectl("delete", f"probes.{probe_crd.group}", "p1", "-n", namespace)
    assert result.code == 0, result.stderr
    assert "deleted" in result.stdout
    assert (await cluster.request("GET", f"{probe_crd.path(namespace)}/p1")).status == 404


async def test_kubectl_applies_the_mchub_crds_and_shows_resource_export_columns(
    kubectl: Kubectl, cluster: Cluster, namespace: str
) -> None:
    if not any(CRD_DIR.glob("*.yaml")):
        pytest.skip("deploy/crds not generated yet")
    if cluster.sandbox is not None:
        result = await kubectl("apply", "-f", str(CRD_DIR))
        assert result.code == 0, result.stderr
    else:
        # A real cluster's CRDs are its own (the session's clusters have the mchub ones): not changed here.
        installed = await kubectl("get", "crd", "resourceexports.multicluster.crd.antrea.io")
        if installed.code != 0:
            pytest.skip("the real cluster has no mchub CRDs installed")
    export = {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ResourceExport",
        "metadata": {"name": "east-default-web-service", "namespace": namespace},
        "spec": {"clusterID": "east", "kind": "Service", "namespace": "default", "name": "web"},
    }
    created = await kubectl("apply", "-f", "-", stdin=yaml.safe_dump(export))
    assert created.code == 0, created.stderr
    got = await kubectl("get", "resourceexport", "-n", namespace)
    assert got.code == 0, got.stderr
    lines = [normalized(line) for line in got.stdout.splitlines()]
    assert lines[0] == "NAME CLUSTER ID KIND NAMESPACE NAME AGE"
    assert lines[1].startswith("east-default-web-service east Service default web ")
