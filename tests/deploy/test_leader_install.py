"""The leader manifest installed on a cluster (a sandbox, and the real `north` cluster), the
hub run exactly as its Deployment runs it, a member joined with the default token Secret,
then the user guide's uninstall.

The hub runs as a subprocess with the Deployment's command, arguments and resolved
environment; only what a Pod gets from its surroundings is substituted: the emptyDir at
--data-dir is a temporary directory, the listen addresses are free loopback ports, and
--kubeconfig points at the cluster in place of in-cluster config, with the credential the
kubelet would give the Pod: a token of its ServiceAccount `mchub-hub` (so on the real
cluster the hub runs with exactly the RBAC the manifest grants it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import ssl
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import grpc
import pytest
import yaml

from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from mcapi.names import CLUSTER_ID_METADATA
from tests.deploy import manifests
from tests.deploy.conftest import DeployCluster
from tests.deploy.installed import wait_nothing_made_by_controllers
from tests.deploy.kubectl import Kubectl, needs_kubectl
from tests.deploy.podspec import PodIdentity, command_line, container_env, flag_value, replace_flag_value

pytestmark = [pytest.mark.kubectl, needs_kubectl]

NAMESPACE = "antrea-multicluster"
HUB_TLS_PATCH = manifests.ROOT / "deploy" / "config" / "components" / "hub-tls" / "patch.yaml"
MEMBER = "test-cluster-east"
LEADER_CLUSTERSET = f"""
apiVersion: multicluster.crd.antrea.io/v1alpha2
kind: ClusterSet
metadata:
  name: test-clusterset
  namespace: {NAMESPACE}
spec:
  clusterID: test-cluster-north
  leaders:
    - clusterID: test-cluster-north
"""
_GRPC = re.compile(r"hub: gRPC on (\S+)")
_REST = re.compile(r"hub: REST on (\S+)")


@dataclass
class RunningHub:
    process: asyncio.subprocess.Process
    target: str
    rest_url: str
    ca: bytes
    log: Path


@contextlib.asynccontextmanager
async def hub_as_deployed(kubeconfig: Path, data_dir: Path) -> AsyncIterator[RunningHub]:
    objects = manifests.load(manifests.LEADER)
    deployment = manifests.find(objects, "Deployment", "mchub-hub")
    pod_spec = deployment["spec"]["template"]["spec"]
    (container,) = pod_spec["containers"]
    env = container_env(objects, container, PodIdentity("mchub-hub-6b8f9c-x2x7q", deployment["metadata"]["namespace"]))
    argv = command_line(container, env)
    assert argv[:2] == ["mchub", "hub"]
    # The Pod's emptyDir at --data-dir.
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    empty_dirs = {v["name"] for v in pod_spec["volumes"] if "emptyDir" in v}
    assert mounted[flag_value(argv, "--data-dir")] in empty_dirs
    argv = replace_flag_value(argv, "--data-dir", str(data_dir))
    argv = replace_flag_value(argv, "--grpc-address", "127.0.0.1:0")
    argv = replace_flag_value(argv, "--rest-address", "127.0.0.1:0")
    argv = [sys.executable, "-m", "mchub_cli.main", *argv[1:], "--kubeconfig", str(kubeconfig)]

    log = data_dir.parent / "hub.log"
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *argv, env={**_inherited_env(), **env}, stdout=asyncio.subprocess.PIPE, stderr=stderr
        )
    try:
        assert process.stdout is not None
        target = rest = ""
        async with asyncio.timeout(30):
            while not (target and rest):
                line = (await process.stdout.readline()).decode()
                assert line, f"the hub exited before listening: {log.read_text()[-2000:]}"
                if match := _GRPC.search(line):
                    target = match.group(1)
                if match := _REST.search(line):
                    rest = match.group(1)
        yield RunningHub(process, target, rest, (data_dir / "tls" / "ca.crt").read_bytes(), log)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def pod_kubeconfig(kubectl: Kubectl, cluster_kubeconfig: Path, path: Path) -> Path:
    """A kubeconfig with the cluster's address and CA and, as the Pod's credential, a token of
    the Deployment's ServiceAccount (what the kubelet projects into the Pod)."""
    deployment = manifests.find(manifests.load(manifests.LEADER), "Deployment", "mchub-hub")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    token = (await kubectl("create", "token", account, "-n", NAMESPACE, "--duration", "10m")).check()
    config = yaml.safe_load(cluster_kubeconfig.read_text())
    config["users"] = [{"name": account, "user": {"token": token.stdout.strip()}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _inherited_env() -> dict[str, str]:
    """The test's environment (PATH, the virtualenv), under the container's own variables."""
    return dict(os.environ)


async def wait_ready(hub: RunningHub, within: float) -> None:
    """Until /readyz answers 200 over HTTPS, the hub's certificate verified against its CA."""
    deadline = time.monotonic() + within
    assert hub.rest_url.startswith("https://")
    trust = aiohttp.TCPConnector(ssl=ssl.create_default_context(cadata=hub.ca.decode()))
    async with aiohttp.ClientSession(connector=trust) as http:
        while time.monotonic() < deadline:
            try:
                async with http.get(f"{hub.rest_url}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientConnectorCertificateError:
                raise  # not a hub still starting: a certificate its CA does not vouch for
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"the hub was not ready within {within}s")


async def default_member_token(kubectl: Kubectl) -> str:
    """The token Kubernetes filled into Secret antrea-mc-member-access-token, as a member admin copies it."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        result = await kubectl(
            "get", "secret", "antrea-mc-member-access-token", "-n", NAMESPACE, "-o", "jsonpath={.data.token}"
        )
        if result.check().stdout.strip():
            return base64.b64decode(result.stdout.strip()).decode()
        await asyncio.sleep(0.1)
    raise AssertionError("the token controller never filled antrea-mc-member-access-token")


def member_channel(hub: RunningHub, token: str) -> grpc.aio.Channel:
    creds = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=hub.ca), grpc.access_token_call_credentials(token)
    )
    # The address members use is the Service's DNS name, a SAN of the hub's certificate.
    override = ("grpc.ssl_target_name_override", f"mchub-hub.{NAMESPACE}.svc")
    return grpc.aio.secure_channel(hub.target, creds, options=[override])


def nginx_export() -> pb.ResourceExport:
    spec = pb.ServiceSpec(type="ClusterIP", cluster_ip="10.96.0.10", session_affinity="None")
    spec.ports.append(pb.ServicePort(name="http", port=80, protocol="TCP"))
    return pb.ResourceExport(
        export_name=names.service_export_name(MEMBER, "default", "nginx"),
        cluster_id=MEMBER,
        namespace="default",
        name="nginx",
        service=spec,
    )


async def wait_clusterset_counts(kubectl: Kubectl, *, total: int, ready: int, within: float) -> None:
    deadline = time.monotonic() + within
    counts = ""
    while time.monotonic() < deadline:
        jsonpath = "jsonpath={.status.totalClusters}/{.status.readyClusters}"
        counts = (await kubectl("get", "clusterset", "test-clusterset", "-n", NAMESPACE, "-o", jsonpath)).check().stdout
        if counts == f"{total}/{ready}":
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"the leader ClusterSet's status says {counts!r} (total/ready) after {within}s")


async def names_in_namespace(kubectl: Kubectl, kinds: str) -> list[str]:
    result = (await kubectl("get", kinds, "-n", NAMESPACE, "-o", "name", "--ignore-not-found")).check()
    return result.stdout.split()


async def test_the_deployed_hub_serves_a_member_joined_with_the_default_token_and_uninstalls_cleanly(
    deploy_cluster: DeployCluster, tmp_path: Path
) -> None:
    kubectl = deploy_cluster.kubectl()
    (await kubectl("create", "namespace", NAMESPACE)).check()
    for manifest in (manifests.LEADER, manifests.LEADER_NAMESPACED):
        result = (await kubectl("apply", "--dry-run=server", "-f", str(manifest))).check()
        assert result.stdout.count("(server dry run)") == len(manifests.load(manifest)), result.stdout
    (await kubectl("apply", "-f", str(manifests.LEADER))).check()
    # The guide's certificate patch is valid for the API server as well.
    patch = ("patch", "deployment", "mchub-hub", "--type", "json", "--patch-file", str(HUB_TLS_PATCH))
    (await kubectl("-n", NAMESPACE, *patch, "--dry-run=server")).check()
    (await kubectl("wait", "--for=condition=Established", "--timeout=20s", "crd", "--all")).check()
    (await kubectl("apply", "-f", "-", stdin=LEADER_CLUSTERSET)).check()
    token = await default_member_token(kubectl)
    metadata = ((CLUSTER_ID_METADATA, MEMBER),)

    as_pod = await pod_kubeconfig(kubectl, deploy_cluster.kubeconfig, tmp_path / "pod.kubeconfig")
    async with hub_as_deployed(as_pod, tmp_path / "emptydir") as hub:
        await wait_ready(hub, 20)
        async with member_channel(hub, token) as channel:
            stub = pb_grpc.CommonAreaServiceStub(channel)
            joined = await stub.Announce(
                pb.AnnounceRequest(
                    cluster_id=MEMBER, cluster_set_id="test-clusterset", leader_cluster_id="test-cluster-north"
                ),
                metadata=metadata,
            )
            assert joined.leader_cluster_id == "test-cluster-north"
            export = stub.Export(metadata=metadata)
            await export.write(pb.ExportRequest(sequence=1, upsert=nginx_export()))
            accepted = await export.read()
            assert isinstance(accepted, pb.ExportResponse), accepted
            assert accepted.status.verdict == pb.VERDICT_ACCEPTED, accepted

            # What Antrea's users check in the leader, with kubectl: the hub writes the ClusterSet's status.
            await wait_clusterset_counts(kubectl, total=1, ready=1, within=15)
            assert await names_in_namespace(kubectl, "memberclusterannounces") == [
                f"memberclusterannounce.multicluster.crd.antrea.io/{names.member_announce_name(MEMBER)}"
            ]
            assert await names_in_namespace(kubectl, "resourceexports") == [
                "resourceexport.multicluster.crd.antrea.io/test-cluster-east-default-nginx-service"
            ]
            assert "resourceimport.multicluster.crd.antrea.io/default-nginx-service" in await names_in_namespace(
                kubectl, "resourceimports"
            )

            # The member leaves: it deletes its ServiceExports (the hub drops the exports) and stops.
            await export.write(
                pb.ExportRequest(sequence=2, delete=pb.ExportDelete(export_name=nginx_export().export_name))
            )
            deleted = await export.read()
            assert isinstance(deleted, pb.ExportResponse), deleted
            assert deleted.sequence == 2 and deleted.status.verdict == pb.VERDICT_DELETED, deleted
            export.cancel()
            # ... and leaves the ClusterSet, as a member whose ClusterSet is deleted does: its
            # announce goes with it (before the answer).
            left = await stub.Leave(pb.LeaveRequest(cluster_id=MEMBER), metadata=metadata)
            assert left.was_member, left

        # Uninstall the leader as the user guide says: no MemberClusterAnnounce, ResourceExport
        # or ResourceImport is left once the members are gone (nothing to delete by hand); then
        # the ClusterSet, then the manifest.
        assert await names_in_namespace(kubectl, "memberclusterannounces,resourceexports,resourceimports") == []
        logged_before_uninstall = hub.log.stat().st_size
        (await kubectl("delete", "clusterset", "test-clusterset", "-n", NAMESPACE)).check()
        (await kubectl("delete", "-f", str(manifests.LEADER), "--ignore-not-found", "--wait=true")).check()
        # The Deployment is gone, so the kubelet stops the Pods.
        hub.process.terminate()
        async with asyncio.timeout(15):
            # Its Namespace is gone by now: stopping must not hang on the Lease it cannot release.
            assert await hub.process.wait() == 0
        # Nothing the hub asked of the API server was refused by the RBAC the manifest grants it
        # (until the uninstall took its ServiceAccount away).
        served = hub.log.read_bytes()[:logged_before_uninstall].decode(errors="replace")
        assert "forbidden" not in served.lower(), served[-3000:]

    objects = manifests.load(manifests.LEADER)
    for args in manifests.get_args(manifests.refs(objects)):
        assert (await kubectl(*args)).check().stdout.strip() == "", args
    gone = await kubectl("get", "namespace", NAMESPACE, "-o", "json", "--ignore-not-found")
    assert gone.check().stdout.strip() == "", f"the Namespace is stuck: {json.loads(gone.stdout).get('status')}"
    if deploy_cluster.real:
        # The Deployment's ReplicaSet and Pods, which a real cluster's controllers made.
        await wait_nothing_made_by_controllers(kubectl)
