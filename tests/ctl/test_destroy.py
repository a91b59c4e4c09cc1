"""`mcctl destroy`: the guide's "Remove a Leader Cluster", with the hub's state gone too.

- A hub with the SQLite store ends its ClusterSet through REST (`--hub-url`, admin token): no
  kubeconfig needed; members are refused afterwards.
- With the Kubernetes store the leader ClusterSet CR is deleted (`--kubeconfig`) and mcctl
  waits until the hub has deleted its MemberClusterAnnounces, ResourceExports and
  ResourceImports, so `kubectl get ... -n antrea-multicluster` is empty when it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from hub.app import HubApp
from hub.config import KubeStoreConfig
from mcapi import names
from mcapi.resources import CLUSTER_SETS, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.ctl.conftest import Cluster, Mcctl
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, service_export

NS = names.DEFAULT_LEADER_NAMESPACE


def hub_args(hub: HubApp) -> list[str]:
    assert hub.ca_cert is not None
    return ["--hub-url", hub.rest_url, "--token", hub.admin_token, "--hub-ca-file", str(hub.ca_cert)]


@pytest.fixture
async def connect(hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(hub)
    try:
        yield factory
    finally:
        await factory.close()


async def test_destroy_through_a_sqlite_hub_ends_its_clusterset_without_a_kubeconfig(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    east = await connect("east")
    await east.export(service_export("east", "default", "nginx"))

    ran = await mcctl("destroy", "--clusterset", hub.config.cluster_set_id, *hub_args(hub))

    assert ran.code == 0, ran.err
    assert "deleted on the hub" in ran.out and "1 member" in ran.out
    assert hub.engine.ended
    assert (hub.engine.index.members, hub.engine.index.exports, hub.engine.index.imports) == ({}, {}, {})
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await east.announce()
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    again = await mcctl("destroy", "--clusterset", hub.config.cluster_set_id, *hub_args(hub))
    assert again.code == 3 and "deleted" in again.err


async def test_destroy_through_the_hub_refuses_another_clusterset_id(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    await connect("east")
    ran = await mcctl("destroy", "--clusterset", "another-clusterset", *hub_args(hub))
    assert ran.code == 2 and hub.config.cluster_set_id in ran.err
    assert not hub.engine.ended and "east" in hub.engine.index.members


@contextlib.asynccontextmanager
async def kube_hub(leader: Cluster, tmp_path: Path) -> AsyncIterator[HubApp]:
    config = replace(hub_config(tmp_path / "hub"), store=KubeStoreConfig(kubeconfig=leader.kubeconfig), namespace=NS)
    app = HubApp(config)
    await app.start()
    try:
        deadline = time.monotonic() + 15
        while not app.is_ready():  # with the kube store it serves once it holds the Lease
            assert time.monotonic() < deadline, "the kube-store hub did not take the Lease within 15 s"
            await asyncio.sleep(0.05)
        yield app
    finally:
        await app.stop()


async def test_destroy_with_a_kube_store_hub_deletes_the_cr_and_returns_once_the_hub_cleaned_up(
    mcctl: Mcctl, leader: Cluster, tmp_path: Path
) -> None:
    init = await mcctl(
        "init", "--clusterset", "test-clusterset", "--clusterid", "leader", "--no-create-token",
        "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert init.code == 0, init.err
    async with kube_hub(leader, tmp_path) as hub:
        factory = MemberFactory(hub)
        try:
            for cluster_id in ("east", "west"):
                member = await factory(cluster_id)
                await member.export(service_export(cluster_id, "default", "nginx"))
            assert (await leader.client.list(MEMBER_CLUSTER_ANNOUNCES, NS)).items

            ran = await mcctl(
                "destroy", "--clusterset", "test-clusterset", "--kubeconfig", leader.kubeconfig, *hub_args(hub)
            )

            assert ran.code == 0, ran.err
            for resource in (MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS, CLUSTER_SETS):
                assert (await leader.client.list(resource, NS)).items == [], resource.kind
            assert hub.engine.ended
        finally:
            await factory.close()


async def test_destroy_without_a_running_hub_names_what_it_left(mcctl: Mcctl, leader: Cluster, tmp_path: Path) -> None:
    init = await mcctl(
        "init", "--clusterset", "test-clusterset", "--clusterid", "leader", "--no-create-token",
        "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert init.code == 0, init.err
    async with kube_hub(leader, tmp_path) as hub:
        factory = MemberFactory(hub)
        try:
            await factory("east")
        finally:
            await factory.close()
    # The hub is stopped: nothing removes its CRs any more.
    ran = await mcctl("destroy", "--clusterset", "test-clusterset", "--kubeconfig", leader.kubeconfig, "--timeout", "1")
    assert ran.code == 1
    assert names.member_announce_name("east") in ran.err
    assert "kubectl delete" in ran.err
