"""What the kube store writes is what kubectl shows, with Antrea's columns, from a sandbox and
from a real kube-apiserver (where the columns come from the CRD's additionalPrinterColumns)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hub.store.base import WriteBatch
from hub.store.kube import KubeStore
from mcapi import names
from tests.contract import samples
from tests.contract.leader_api import leader_api
from tests.sandbox.kubectl_runner import KUBECTL, Kubectl, normalized

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]


async def test_kubectl_lists_describes_and_watches_what_the_hub_stored(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with leader_api(cluster_kind, request, tmp_path / "leader") as leader:
        # The sandbox is the test's own: the hub's default Namespace; a real cluster is shared.
        if leader.real:
            namespace = await leader.namespace("leader")
        else:
            namespace = await leader.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE)
        store = KubeStore(leader.client, namespace)
        await store.open()
        export = samples.service_export("east", "default", "nginx")
        await store.commit(WriteBatch(put_exports=[export], put_imports=[samples.service_import("default", "nginx")]))
        kubectl = Kubectl(leader.kubeconfig)

        listed = await kubectl("get", "resourceexport", "-n", namespace)
        assert listed.code == 0, listed.stderr
        header, row = (normalized(line) for line in listed.stdout.strip().splitlines())
        assert header == "NAME CLUSTER ID KIND NAMESPACE NAME AGE"
        assert row.startswith("east-default-nginx-service east Service default nginx ")

        imports = await kubectl("get", "resourceimport", "-n", namespace)
        assert normalized(imports.stdout.splitlines()[0]) == "NAME KIND NAMESPACE NAME AGE"
        assert normalized(imports.stdout.splitlines()[1]).startswith(
            "default-nginx-service ServiceImport default nginx "
        )

        described = await kubectl("describe", "resourceexport", "east-default-nginx-service", "-n", namespace)
        assert described.code == 0, described.stderr
        assert "Cluster ID:  east" in described.stdout or "Cluster ID: east" in " ".join(described.stdout.split("  "))

        watch = await asyncio.create_subprocess_exec(
            KUBECTL or "kubectl", "get", "resourceexport", "-n", namespace, "-w",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=kubectl.env,
        )  # fmt: skip
        try:
            assert watch.stdout is not None
            first = await asyncio.wait_for(watch.stdout.readline(), 30)
            assert normalized(first.decode()) == "NAME CLUSTER ID KIND NAMESPACE NAME AGE"
            await asyncio.wait_for(watch.stdout.readline(), 30)  # the existing row
            await store.commit(WriteBatch(put_exports=[samples.service_export("west", "default", "nginx")]))
            while True:
                line = normalized((await asyncio.wait_for(watch.stdout.readline(), 30)).decode())
                if line.startswith("west-default-nginx-service"):
                    break
            assert line.startswith("west-default-nginx-service west Service default nginx")
        finally:
            watch.kill()
            await watch.wait()
