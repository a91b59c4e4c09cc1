"""init, get joinconfig, join, get clusterset, leave, destroy: a round trip leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kube.client import KubeClient
from kube.resources import CONFIG_MAPS, NAMESPACES, SECRETS, SERVICE_ACCOUNTS, Resource
from mcapi import names
from mcapi.resources import CLUSTER_SETS
from tests.ctl.conftest import Cluster, Mcctl

ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
HUB = "https://hub.example:50051"


async def inventory(client: KubeClient) -> set[str]:
    """Every object of the kinds init/join create, as `kind ns/name`."""
    found: set[str] = set()
    for resource in (NAMESPACES, SERVICE_ACCOUNTS, SECRETS, ROLE_BINDINGS, CLUSTER_SETS):
        for obj in (await client.list_all(resource)).items:
            meta = obj["metadata"]
            found.add(f"{resource.kind} {meta.get('namespace', '')}/{meta['name']}")
    return found


async def test_init_join_leave_destroy_round_trip_leaves_no_residue(
    mcctl: Mcctl, leader: Cluster, member: Cluster, tmp_path: Path
) -> None:
    leader_before, member_before = await inventory(leader.client), await inventory(member.client)
    join_file = tmp_path / "join-config.yml"

    init = await mcctl(
        "init", "--clusterset", "test-clusterset", "--clusterid", "north", "--hub-server", HUB, "-j", join_file,
        "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert init.code == 0, init.err
    leader_cs = await leader.client.get(CLUSTER_SETS, "test-clusterset", names.DEFAULT_LEADER_NAMESPACE)
    assert leader_cs["spec"] == {"clusterID": "north", "leaders": [{"clusterID": "north"}]}
    docs = [d for d in yaml.safe_load_all(join_file.read_text()) if d]
    assert docs[0] == {
        "apiVersion": "multicluster.antrea.io/v1alpha1",
        "kind": "ClusterSetJoinConfig",
        "clusterSetID": "test-clusterset",
        "leaderClusterID": "north",
        "leaderNamespace": "antrea-multicluster",
        "leaderAPIServer": HUB,
    }
    assert docs[1]["kind"] == "Secret" and docs[1]["metadata"]["name"] == "default-member-token"

    join = await mcctl("join", "-f", join_file, "--clusterid", "east", "--kubeconfig", member.kubeconfig)
    assert join.code == 0, join.err
    member_cs = await member.client.get(CLUSTER_SETS, "test-clusterset", "kube-system")
    assert member_cs["spec"] == {
        "clusterID": "east",
        "namespace": "antrea-multicluster",
        "leaders": [{"clusterID": "north", "server": HUB, "secret": "default-member-token"}],
    }
    token_secret = await member.client.get(SECRETS, "default-member-token", "kube-system")
    assert token_secret["type"] == "Opaque" and set(token_secret["data"]) >= {"token", "ca.crt"}

    assert (await mcctl("leave", "--kubeconfig", member.kubeconfig)).code == 0
    destroy = await mcctl("destroy", "--clusterset", "test-clusterset", "--kubeconfig", leader.kubeconfig)
    assert destroy.code == 0, destroy.err

    assert await inventory(member.client) == member_before
    assert await inventory(leader.client) == leader_before


async def test_get_joinconfig_with_a_member_token_round_trips_into_join(
    mcctl: Mcctl, leader: Cluster, member: Cluster, tmp_path: Path
) -> None:
    init = ("init", "--clusterset", "test-clusterset", "--clusterid", "north", "--hub-server", HUB, "--no-create-token")
    assert (await mcctl(*init, "--kubeconfig", leader.kubeconfig)).code == 0
    create = ("create", "membertoken", "east-token", "--cluster-id", "east")
    assert (await mcctl(*create, "--kubeconfig", leader.kubeconfig)).code == 0

    printed = await mcctl("get", "joinconfig", "--member-token", "east-token", "--kubeconfig", leader.kubeconfig)
    assert printed.code == 0, printed.err
    assert '#clusterID: ""' in printed.out  # antctl's layout: unset optional fields commented out
    config = tmp_path / "east.yml"
    config.write_text(printed.out)

    join = await mcctl("join", "-f", config, "--clusterid", "east", "--kubeconfig", member.kubeconfig)
    assert join.code == 0, join.err
    member_cs = await member.client.get(CLUSTER_SETS, "test-clusterset", "kube-system")
    assert member_cs["spec"]["leaders"][0] == {"clusterID": "north", "server": HUB, "secret": "east-token"}
    leader_token = await leader.client.get(SECRETS, "east-token", names.DEFAULT_LEADER_NAMESPACE)
    member_token = await member.client.get(SECRETS, "east-token", "kube-system")
    assert member_token["data"]["token"] == leader_token["data"]["token"]

    again = await mcctl("join", "-f", config, "--clusterid", "east", "--kubeconfig", member.kubeconfig)
    assert again.code == 1
    assert "mcctl leave" in again.err


async def test_get_clusterset_prints_antctl_columns_and_json_that_parses_back(
    mcctl: Mcctl, leader: Cluster, member: Cluster
) -> None:
    assert (
        await mcctl("init", "--clusterset", "cs1", "--clusterid", "north", "--kubeconfig", leader.kubeconfig)
    ).code == 0
    status = {
        "totalClusters": 1,
        "readyClusters": 1,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
        "clusterStatuses": [
            {
                "clusterID": "north",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                    {"type": "IsLeader", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                ],
            }
        ],
    }
    join = ("join", "--clusterset", "cs1", "--clusterid", "east", "--leader-clusterid", "north",
            "--leader-namespace", "antrea-multicluster", "--leader-apiserver", HUB)  # fmt: skip
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tok"},
        "data": {"token": "dG9r", "ca.crt": ""},
    }
    secret_file = Path(leader.server.work_dir) / "tok.yml"
    secret_file.write_text(yaml.safe_dump(secret))
    assert (await mcctl(*join, "--token-secret-file", secret_file, "--kubeconfig", member.kubeconfig)).code == 0
    await member.client.patch_status(CLUSTER_SETS, "cs1", {"status": status}, "kube-system")

    table = await mcctl("get", "clusterset", "--kubeconfig", member.kubeconfig)
    assert table.code == 0, table.err
    assert table.header() == ["CLUSTER-ID", "NAMESPACE", "CLUSTERSET-ID", "TYPE", "STATUS", "REASON"]
    rows = [line.split() for line in table.out.splitlines()[1:]]
    assert rows == [
        ["north", "kube-system", "cs1", "IsLeader", "True"],
        ["north", "kube-system", "cs1", "Ready", "True"],
    ]

    as_json = await mcctl("get", "clusterset", "-o", "json", "--kubeconfig", member.kubeconfig)
    live = await member.client.get(CLUSTER_SETS, "cs1", "kube-system")
    assert json.loads(as_json.out) == [live]
    as_yaml = await mcctl(
        "get", "clusterset", "cs1", "-n", "kube-system", "-o", "yaml", "--kubeconfig", member.kubeconfig
    )
    assert yaml.safe_load(as_yaml.out) == live

    leader_table = await mcctl("get", "clusterset", "-A", "--kubeconfig", leader.kubeconfig)
    assert leader_table.code == 0
    assert "antrea-multicluster" in leader_table.out and "cs1" in leader_table.out


async def test_destroy_keeps_a_namespace_it_created_once_others_put_objects_in_it(
    mcctl: Mcctl, leader: Cluster
) -> None:
    init = ("init", "--clusterset", "cs1", "--clusterid", "north", "--no-create-token")
    assert (await mcctl(*init, "--kubeconfig", leader.kubeconfig)).code == 0
    ns = names.DEFAULT_LEADER_NAMESPACE
    # Deployed into the Namespace after init created it (e.g. `mcctl deploy leadercluster`): not mcctl's to remove.
    hub_config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hub-config", "namespace": ns}}
    await leader.client.create(CONFIG_MAPS, hub_config, ns)

    destroy = await mcctl("destroy", "--clusterset", "cs1", "--kubeconfig", leader.kubeconfig)
    assert destroy.code == 0, destroy.err
    assert (await leader.client.get(CONFIG_MAPS, "hub-config", ns))["metadata"]["name"] == "hub-config"
    assert "ConfigMap" in destroy.err and "hub-config" in destroy.err  # says why the Namespace stays
    assert (await leader.client.list_all(CLUSTER_SETS, ns)).items == []
