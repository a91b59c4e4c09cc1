"""The production path end to end: a hub on the leader cluster's API (kube store, members'
ServiceAccount tokens checked with TokenReview), `mcctl init` and `create membertoken` there,
`get joinconfig` into `mcctl join -f` in a member running the member controller, which then
connects with the token mcctl made."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.config import HubConfig
from kube.resources import CLUSTER_SETS
from mcapi import names
from member.app import MemberApp
from tests.ctl.conftest import Cluster, Mcctl
from tests.kubeenv.cluster import ensure_namespace

pytestmark = pytest.mark.slow


@pytest.fixture
async def kube_hub(leader: Cluster, tmp_path: Path) -> AsyncIterator[HubApp]:
    await ensure_namespace(leader.client, names.DEFAULT_LEADER_NAMESPACE)
    config = HubConfig(
        data_dir=tmp_path / "hub",
        grpc_address="127.0.0.1:0",
        rest_address="127.0.0.1:0",
        store="kube",
        kubeconfig=leader.kubeconfig,
        cluster_set_id="test-clusterset",
        leader_cluster_id="north",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
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
    mcctl: Mcctl, leader: Cluster, member: Cluster, kube_hub: HubApp, tmp_path: Path
) -> None:
    assert kube_hub.ca_cert is not None
    init = await mcctl(
        "init", "--clusterset", "test-clusterset", "--clusterid", "north", "--hub-server", f"https://{kube_hub.grpc_target}",
        "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert init.code == 0, init.err
    token = ("create", "membertoken", "east-token", "--cluster-id", "east", "--kubeconfig", leader.kubeconfig)
    assert (await mcctl(*token)).code == 0
    printed = await mcctl(
        "get", "joinconfig", "--member-token", "east-token", "--hub-ca-file", kube_hub.ca_cert,
        "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert printed.code == 0, printed.err
    join_file = tmp_path / "join.yml"
    join_file.write_text(printed.out)

    controller = MemberApp(member.client)
    await controller.start()
    try:
        join = await mcctl(
            "join", "-f", join_file, "--clusterid", "east", "--wait", "20", "--kubeconfig", member.kubeconfig
        )
        assert join.code == 0, join.err
        assert "Member cluster joined successfully" in join.out

        hub_args = ("--hub-url", kube_hub.rest_url, "--token", kube_hub.admin_token)
        verify = await mcctl("verify", *hub_args, "--member-kubeconfig", member.kubeconfig, "-o", "json")
        assert '"east: connected to hub"' in verify.out and verify.code == 0, verify.out + verify.err

        assert (await mcctl("leave", "--kubeconfig", member.kubeconfig)).code == 0
    finally:
        await controller.stop()
    assert (await mcctl("destroy", "--clusterset", "test-clusterset", "--kubeconfig", leader.kubeconfig)).code == 0
    assert (await member.client.list_all(CLUSTER_SETS)).items == []
