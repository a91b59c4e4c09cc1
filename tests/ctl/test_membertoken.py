"""`mcctl create|get|delete membertoken` in a leader cluster."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml

from kube.errors import NotFound
from kube.resources import NAMESPACES, SECRETS, SERVICE_ACCOUNTS
from mcapi import names
from tests.ctl.conftest import Cluster, Mcctl
from tests.kubeenv.cluster import ensure_namespace

NS = names.DEFAULT_LEADER_NAMESPACE
CREATED_BY = names.ANNOTATION_CREATED_BY_ANTCTL


async def test_create_membertoken_makes_an_annotated_service_account_binding_and_token_secret(
    mcctl: Mcctl, leader: Cluster, tmp_path: Path
) -> None:
    await ensure_namespace(leader.client, NS)
    manifest = tmp_path / "east-token.yml"
    ran = await mcctl(
        "create", "membertoken", "east-token", "--cluster-id", "east", "-o", manifest, "--kubeconfig", leader.kubeconfig
    )
    assert ran.code == 0, ran.err

    account = await leader.client.get(SERVICE_ACCOUNTS, "east-token", NS)
    assert account["metadata"]["annotations"][names.ANNOTATION_CLUSTER_ID] == "east"
    assert account["metadata"]["annotations"][CREATED_BY] == "true"
    binding = await leader.client.request(
        "GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings/east-token"
    )
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "antrea-mc-member-cluster-role",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "east-token", "namespace": NS}]
    secret = await leader.client.get(SECRETS, "east-token", NS)
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"][CREATED_BY] == "true"

    # The file is what the user guide's sed recipe makes: Opaque, in kube-system, token and ca.crt.
    written = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    assert len(written) == 1
    member_secret = written[0]
    assert member_secret["type"] == "Opaque"
    assert member_secret["metadata"]["namespace"] == "kube-system"
    assert set(member_secret["data"]) == {"token", "ca.crt"}
    assert member_secret["data"]["token"] == secret["data"]["token"]
    assert base64.b64decode(member_secret["data"]["ca.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")
    assert manifest.stat().st_mode & 0o077 == 0


async def test_get_membertoken_lists_tokens_under_antctl_columns_and_as_json(mcctl: Mcctl, leader: Cluster) -> None:
    await ensure_namespace(leader.client, NS)
    for name, cluster_id in (("east-token", "east"), ("west-token", "west")):
        assert (
            await mcctl("create", "membertoken", name, "--cluster-id", cluster_id, "--kubeconfig", leader.kubeconfig)
        ).code == 0

    table = await mcctl("get", "membertoken", "--kubeconfig", leader.kubeconfig)
    assert table.code == 0
    assert table.header() == ["NAMESPACE", "NAME"]
    assert "east-token" in table.out and "west-token" in table.out

    as_json = await mcctl("get", "membertoken", "-o", "json", "--kubeconfig", leader.kubeconfig)
    parsed = json.loads(as_json.out)
    assert sorted(s["metadata"]["name"] for s in parsed) == ["east-token", "west-token"]
    assert all(s["type"] == "Opaque" for s in parsed)

    one = await mcctl("get", "membertoken", "east-token", "-o", "yaml", "--kubeconfig", leader.kubeconfig)
    assert yaml.safe_load(one.out)["metadata"]["name"] == "east-token"


async def test_delete_membertoken_removes_its_objects_and_a_second_delete_is_not_found(
    mcctl: Mcctl, leader: Cluster
) -> None:
    await ensure_namespace(leader.client, NS)
    assert (
        await mcctl("create", "membertoken", "east-token", "--cluster-id", "east", "--kubeconfig", leader.kubeconfig)
    ).code == 0

    deleted = await mcctl("delete", "membertoken", "east-token", "--kubeconfig", leader.kubeconfig)
    assert deleted.code == 0, deleted.err
    for resource in (SECRETS, SERVICE_ACCOUNTS):
        try:
            await leader.client.get(resource, "east-token", NS)
            raise AssertionError(f"{resource.kind} east-token survived")
        except NotFound:
            pass

    again = await mcctl("delete", "membertoken", "east-token", "--kubeconfig", leader.kubeconfig)
    assert again.code == 3
    assert "no member token 'east-token'" in again.err


async def test_create_membertoken_without_the_leader_namespace_says_to_init_first(
    mcctl: Mcctl, leader: Cluster
) -> None:
    ran = await mcctl("create", "membertoken", "east-token", "--cluster-id", "east", "--kubeconfig", leader.kubeconfig)
    assert ran.code == 3
    assert "mcctl init" in ran.err
    assert "antrea-multicluster" not in [n["metadata"]["name"] for n in (await leader.client.list(NAMESPACES)).items]


async def test_a_token_manifest_written_over_an_existing_readable_file_is_made_private(
    mcctl: Mcctl, leader: Cluster, tmp_path: Path
) -> None:
    await ensure_namespace(leader.client, NS)
    manifest = tmp_path / "east-token.yml"
    manifest.write_text("old\n")
    manifest.chmod(0o644)
    ran = await mcctl(
        "create", "membertoken", "east-token", "--cluster-id", "east", "-o", manifest, "--kubeconfig", leader.kubeconfig
    )
    assert ran.code == 0, ran.err
    assert "token" in manifest.read_text()
    assert manifest.stat().st_mode & 0o077 == 0


async def test_init_writes_the_join_config_with_its_token_privately_even_over_an_existing_file(
    mcctl: Mcctl, leader: Cluster, tmp_path: Path
) -> None:
    join_file = tmp_path / "join-config.yml"
    join_file.write_text("old\n")
    join_file.chmod(0o644)
    ran = await mcctl(
        "init", "--clusterset", "cs1", "--clusterid", "north", "--hub-server", "https://hub.example:50051",
        "-j", join_file, "--kubeconfig", leader.kubeconfig,
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert "default-member-token" in join_file.read_text()
    assert join_file.stat().st_mode & 0o077 == 0
