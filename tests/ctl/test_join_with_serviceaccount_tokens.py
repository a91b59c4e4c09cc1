"""The production path end to end: a hub on the leader cluster's API (kube store, members'
ServiceAccount tokens checked with TokenReview), `mcctl init` and `create membertoken` there,
`get joinconfig` into `mcctl join -f` in a member running the member controller, which then
connects with the token mcctl made.

On sandboxes (the user guide's Namespaces) and on the real `leader` and `east` clusters, whose
token controller fills the member token's Secret and whose API server reviews it; there the
leader and member Namespaces are the test's own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.config import HubConfig, KubeStoreConfig
from kube.client import KubeClient
from kube.leader import LeaseTiming
from mcapi import names
from mcapi.resources import CLUSTER_SETS
from member.app import MemberApp
from tests.contract.leader_api import leader_api
from tests.ctl.conftest import Mcctl

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Site:
    """A cluster and the Namespace mchub uses in it."""

    client: KubeClient
    kubeconfig: Path
    namespace: str


@pytest.fixture
async def sites(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Site, Site]]:
    async with (
        leader_api(cluster_kind, request, tmp_path / "leader", cluster="leader") as leader,
        leader_api(cluster_kind, request, tmp_path / "member", cluster="east") as member,
    ):
        if leader.real:
            leader_ns, member_ns = await leader.namespace("leader"), await member.namespace("member")
        else:
            leader_ns = await leader.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE)
            member_ns = names.DEFAULT_MEMBER_NAMESPACE
        yield Site(leader.client, leader.kubeconfig, leader_ns), Site(member.client, member.kubeconfig, member_ns)


@pytest.fixture
async def kube_hub(sites: tuple[Site, Site], tmp_path: Path) -> AsyncIterator[HubApp]:
    leader, _ = sites
    config = HubConfig(
        data_dir=tmp_path / "hub",
        grpc_address="127.0.0.1:0",
        rest_address="127.0.0.1:0",
        store=KubeStoreConfig(kubeconfig=leader.kubeconfig, lease=LeaseTiming(3.0, 2.0, 0.5)),
        namespace=leader.namespace,
        cluster_set_id="test-clusterset",
        leader_cluster_id="north",
    )
    hub = HubApp(config)
    await hub.start()
    try:
        deadline = time.monotonic() + 15
        while not hub.is_ready():
            assert time.monotonic() < deadline, "the hub never took the Lease"
            await asyncio.sleep(0.1)
        yield hub
    finally:
        await hub.stop()


async def test_a_member_joined_with_mcctl_connects_to_the_hub_with_its_serviceaccount_token(
    mcctl: Mcctl, sites: tuple[Site, Site], kube_hub: HubApp, tmp_path: Path
) -> None:
    leader, member = sites
    on_leader = ("--kubeconfig", leader.kubeconfig, "-n", leader.namespace)
    assert kube_hub.ca_cert is not None
    init = await mcctl(
        "init", "--clusterset", "test-clusterset", "--clusterid", "north", "--hub-server", f"https://{kube_hub.grpc_target}",
        *on_leader,
    )  # fmt: skip
    assert init.code == 0, init.err
    token = ("create", "membertoken", "east-token", "--cluster-id", "east", *on_leader)
    assert (await mcctl(*token)).code == 0
    printed = await mcctl(
        "get", "joinconfig", "--member-token", "east-token", "--hub-ca-file", kube_hub.ca_cert, *on_leader
    )  # fmt: skip
    assert printed.code == 0, printed.err
    join_file = tmp_path / "join.yml"
    join_file.write_text(printed.out)

    controller = MemberApp(member.client, member.namespace)
    await controller.start()
    try:
        join = await mcctl(
            "join", "-f", join_file, "--clusterid", "east", "--wait", "20",
            "--kubeconfig", member.kubeconfig, "-n", member.namespace,
        )  # fmt: skip
        assert join.code == 0, join.err
        assert "Member cluster joined successfully" in join.out

        hub_args = ("--hub-url", kube_hub.rest_url, "--token", kube_hub.admin_token, "--hub-ca-file", kube_hub.ca_cert)
        verify = await mcctl(
            "verify", *hub_args, "--member-kubeconfig", member.kubeconfig, "--member-namespace", member.namespace,
            "-o", "json",
        )  # fmt: skip
        assert '"east: connected to hub"' in verify.out and verify.code == 0, verify.out + verify.err

        assert (await mcctl("leave", "--kubeconfig", member.kubeconfig, "-n", member.namespace)).code == 0
    finally:
        await controller.stop()
    assert (await mcctl("destroy", "--clusterset", "test-clusterset", *on_leader)).code == 0
    assert (await member.client.list_all(CLUSTER_SETS, namespace=member.namespace)).items == []
