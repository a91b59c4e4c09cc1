"""Exit codes scripts can trust: 0 ok, 1 failed, 2 usage error, 3 not found / not connected."""

from __future__ import annotations

from pathlib import Path

from tests.ctl.conftest import Cluster, Mcctl


async def test_help_documents_the_exit_codes_and_exits_zero(mcctl: Mcctl) -> None:
    ran = await mcctl("--help")
    assert ran.code == 0
    assert "exit codes:" in ran.out and "3  not found or not connected" in ran.out


async def test_usage_errors_exit_two(mcctl: Mcctl, tmp_path: Path) -> None:
    assert (await mcctl("get", "nosuchkind")).code == 2
    assert (await mcctl("get", "clusterset", "-o", "xml")).code == 2
    assert (await mcctl("create", "membertoken", "tok")).code == 2  # --cluster-id is required
    missing = await mcctl("join", "--clusterid", "east", "--kubeconfig", tmp_path / "nope")
    assert missing.code == 2
    assert "--clusterset" in missing.err and "--leader-apiserver" in missing.err
    bad_file = tmp_path / "bad.yml"
    bad_file.write_text("apiVersion: v1\nkind: Pod\n")
    wrong_kind = await mcctl("join", "-f", bad_file)
    assert wrong_kind.code == 2
    assert "ClusterSetJoinConfig" in wrong_kind.err
    assert (await mcctl("get", "clusterset", "--kubeconfig", tmp_path / "absent")).code == 2
    assert (await mcctl("verify")).code == 2  # needs --hub-url


async def test_missing_objects_exit_three_with_what_to_do(mcctl: Mcctl, member: Cluster) -> None:
    leave = await mcctl("leave", "--kubeconfig", member.kubeconfig)
    assert leave.code == 3
    assert "no ClusterSet in namespace kube-system: run `mcctl join` first" in leave.err

    get = await mcctl("get", "clusterset", "--kubeconfig", member.kubeconfig)
    assert get.code == 3
    assert "mcctl join" in get.err

    joinconfig = await mcctl("get", "joinconfig", "--kubeconfig", member.kubeconfig)
    assert joinconfig.code == 3
    assert "mcctl init" in joinconfig.err

    token = await mcctl("get", "membertoken", "nope", "--kubeconfig", member.kubeconfig)
    assert token.code == 3

    destroy = await mcctl("destroy", "--clusterset", "nope", "--kubeconfig", member.kubeconfig)
    assert destroy.code == 3

    no_secret = await mcctl(
        "join", "--clusterset", "cs", "--clusterid", "east", "--leader-clusterid", "north", "--leader-namespace",
        "antrea-multicluster", "--leader-apiserver", "https://hub:1", "--token-secret-name", "absent",
        "--kubeconfig", member.kubeconfig,
    )  # fmt: skip
    assert no_secret.code == 3
    assert "--token-secret-file" in no_secret.err


async def test_an_unreachable_cluster_or_hub_exits_three(mcctl: Mcctl, member: Cluster, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "dead.kubeconfig"
    text = member.kubeconfig.read_text().replace(f":{member.server.port}", ":1")
    kubeconfig.write_text(text)
    dead_cluster = await mcctl("get", "clusterset", "--kubeconfig", kubeconfig)
    assert dead_cluster.code == 3
    assert "cannot reach the cluster" in dead_cluster.err

    dead_hub = await mcctl("get", "resourceexport", "--hub-url", "http://127.0.0.1:1", "--token", "t")
    assert dead_hub.code == 3
    assert "cannot reach the hub" in dead_hub.err
