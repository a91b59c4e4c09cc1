"""mchub installed the way deploy/INSTALL.md tells a user, with kubectl and openssl only.

Leader (``install_leader``): the Namespace, a CA and a serving certificate whose SANs name
the hub's Service and the leader's node IPs (members dial a NodePort), Secret
``mchub-hub-tls``, the rendered leader manifest, the hub-tls patch, and the gRPC NodePort
Service (deploy/build/mchub-hub-nodeport.yml), then the guide's ClusterSet.
Members (``join_member``): one ServiceAccount per member in the leader with its token,
the member and agent manifests, the token Secret with the hub's CA, the member's
ClusterSet naming the hub at ``https://<leader node IP>:30051``, and the Gateway
annotation on the chosen Nodes. Options of the member (MultiClusterConfig) and of the
agent are changed the way the guide says: edit the ConfigMap, restart the workload.
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hack.nodeset.clusters import REPO, Cluster
from hack.nodeset.kubectl import Kubectl, until

BUILD = REPO / "deploy" / "build"
LEADER_NS = "antrea-multicluster"
MEMBER_NS = "kube-system"
CLUSTERSET = "test-clusterset"
HUB_NODE_PORT = 30051
HUB_CONFIG = "mchub-hub-config"
MEMBER_CONFIG = ("antrea-mc-controller-config", "controller_manager_config.yaml", "deployment/mchub-member")
AGENT_CONFIG = ("mchub-agent-config", "mchub-agent.conf", "daemonset/mchub-agent")


def cluster_id(name: str) -> str:
    return f"test-cluster-{name}"


@dataclass
class Installed:
    """What the installation made and how long it took."""

    leader: Cluster
    hub_url: str
    ca_crt: Path
    members: dict[str, Cluster] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_hub_certificate(directory: Path, node_ips: list[str]) -> None:
    """INSTALL.md step 1: a CA and a serving certificate with the hub's names and addresses."""
    directory.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-days",
        "3650",
        "-subj",
        "/CN=mchub-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        cwd=directory,
    )
    _openssl("req", *ec, "-subj", "/CN=mchub-hub", "-keyout", "tls.key", "-out", "tls.csr", cwd=directory)
    names = [f"DNS:mchub-hub.{LEADER_NS}.svc", f"DNS:mchub-hub-watch.{LEADER_NS}.svc", *(f"IP:{ip}" for ip in node_ips)]
    (directory / "san.ext").write_text(f"subjectAltName={','.join(names)}\nextendedKeyUsage=serverAuth\n")
    _openssl(
        "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "3650", "-extfile", "san.ext", "-out", "tls.crt", cwd=directory,
    )  # fmt: skip


def leader_manifest(**hub_config: str) -> str:
    """The rendered leader manifest (with the hub-tls component) with ``hub_config`` set in
    ConfigMap mchub-hub-config (keys with "-" as "_"), as a user edits the file before applying it."""
    objects = list(yaml.safe_load_all((BUILD / "antrea-multicluster-leader-tls.yml").read_text()))
    for obj in objects:
        if obj and obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == HUB_CONFIG:
            obj["data"].update({key.replace("_", "-"): value for key, value in hub_config.items()})
    return yaml.safe_dump_all([obj for obj in objects if obj])


def install_leader(leader: Cluster, tls_dir: Path, *, global_cidr: str = "") -> Installed:
    """INSTALL.md's leader; ``global_cidr`` set in mchub-hub-config (overlapping members)."""
    started = time.monotonic()
    kubectl = leader.kubectl
    make_hub_certificate(tls_dir, [node.ip for node in leader.nodes])
    if not kubectl.exists("namespace", LEADER_NS):
        kubectl("create", "namespace", LEADER_NS)
    if not kubectl.exists("secret", "mchub-hub-tls", "-n", LEADER_NS):
        kubectl(
            "create", "secret", "generic", "mchub-hub-tls", "-n", LEADER_NS,
            *(f"--from-file={tls_dir / key}" for key in ("tls.crt", "tls.key", "ca.crt")),
        )  # fmt: skip
    if global_cidr:
        kubectl.apply(leader_manifest(global_cidr=global_cidr))
    else:
        kubectl("apply", "-f", str(BUILD / "antrea-multicluster-leader-tls.yml"))
    kubectl("apply", "-n", LEADER_NS, "-f", str(BUILD / "mchub-hub-nodeport.yml"))
    kubectl.apply(
        yaml.safe_dump(
            {
                "apiVersion": "multicluster.crd.antrea.io/v1alpha2",
                "kind": "ClusterSet",
                "metadata": {"name": CLUSTERSET, "namespace": LEADER_NS},
                "spec": {"clusterID": cluster_id(leader.name), "leaders": [{"clusterID": cluster_id(leader.name)}]},
            }
        )
    )
    wait_rollout(kubectl, LEADER_NS, "deployment/mchub-hub")
    installed = Installed(leader, f"https://{leader.nodes[0].ip}:{HUB_NODE_PORT}", tls_dir / "ca.crt")
    installed.seconds["leader"] = time.monotonic() - started
    return installed


def wait_rollout(kubectl: Kubectl, namespace: str, workload: str, timeout: float = 180) -> None:
    kubectl("-n", namespace, "rollout", "status", workload, f"--timeout={int(timeout)}s", timeout=timeout + 10)


def member_access(installed: Installed, member: Cluster) -> str:
    """INSTALL.md "Set up access to the hub": the member's ServiceAccount, token and RoleBinding
    in the leader; returns the token."""
    name = f"member-{member.name}"
    installed.leader.kubectl.apply(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": name,
                        "namespace": LEADER_NS,
                        "annotations": {"multicluster.antrea.io/cluster-id": cluster_id(member.name)},
                    },
                },
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/service-account-token",
                    "metadata": {
                        "name": f"{name}-token",
                        "namespace": LEADER_NS,
                        "annotations": {"kubernetes.io/service-account.name": name},
                    },
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": LEADER_NS},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Role",
                        "name": "antrea-mc-member-cluster-role",
                    },
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": LEADER_NS}],
                },
            ]
        )
    )
    encoded = until(
        f"the token of {name}",
        lambda: installed.leader.kubectl(
            "get", "secret", f"{name}-token", "-n", LEADER_NS, "-o", "jsonpath={.data.token}"
        ),
        timeout=60,
    )
    return base64.b64decode(encoded).decode()


def member_manifest(**config: Any) -> str:
    """The rendered member manifest with ``config`` set in its MultiClusterConfig, as a user
    edits the file before applying it."""
    objects = list(yaml.safe_load_all((BUILD / "antrea-multicluster-member.yml").read_text()))
    for obj in objects:
        if obj and obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == MEMBER_CONFIG[0]:
            document = yaml.safe_load(obj["data"][MEMBER_CONFIG[1]])
            document.update(config)
            obj["data"][MEMBER_CONFIG[1]] = yaml.safe_dump(document, sort_keys=False)
    return yaml.safe_dump_all([obj for obj in objects if obj])


def join_member(
    installed: Installed, member: Cluster, gateways: list[str], *, wait: bool = True, **config: Any
) -> None:
    """INSTALL.md "Deploy in a member cluster" and "Initialize ClusterSet" for one member, with
    ``config`` set in its MultiClusterConfig. ``wait``: until its member and agents are Ready
    (else ``wait_member``)."""
    started = time.monotonic()
    token = member_access(installed, member)
    kubectl = member.kubectl
    kubectl.apply(member_manifest(**config))
    kubectl("apply", "-f", str(BUILD / "mchub-agent.yml"))
    secret = f"member-{member.name}-token"
    if not kubectl.exists("secret", secret, "-n", MEMBER_NS):
        kubectl(
            "create", "secret", "generic", secret, "-n", MEMBER_NS,
            f"--from-literal=token={token}", f"--from-file=ca.crt={installed.ca_crt}",
        )  # fmt: skip
    kubectl.apply(
        yaml.safe_dump(
            {
                "apiVersion": "multicluster.crd.antrea.io/v1alpha2",
                "kind": "ClusterSet",
                "metadata": {"name": CLUSTERSET, "namespace": MEMBER_NS},
                "spec": {
                    "clusterID": cluster_id(member.name),
                    "leaders": [
                        {"clusterID": cluster_id(installed.leader.name), "secret": secret, "server": installed.hub_url}
                    ],
                    "namespace": LEADER_NS,
                },
            }
        )
    )
    for node in gateways:
        kubectl("annotate", "node", node, "multicluster.antrea.io/gateway=true", "--overwrite")
    installed.members[member.name] = member
    if wait:
        wait_member(member)
    installed.seconds[member.name] = time.monotonic() - started


def wait_member(member: Cluster) -> None:
    wait_rollout(member.kubectl, MEMBER_NS, "deployment/mchub-member")
    wait_rollout(member.kubectl, MEMBER_NS, "daemonset/mchub-agent")


def leader_clusterset(installed: Installed) -> dict[str, Any]:
    result: dict[str, Any] = installed.leader.kubectl.json("get", "clusterset", CLUSTERSET, "-n", LEADER_NS)
    return result


def clusterset_ready(installed: Installed) -> bool:
    """The leader's ClusterSet counts every member, all Ready."""
    status = leader_clusterset(installed).get("status") or {}
    expected = len(installed.members)
    return status.get("totalClusters") == expected and status.get("readyClusters") == expected


# ---- options, changed as the guide says: edit the ConfigMap, restart -------------


def read_config(cluster: Cluster, which: tuple[str, str, str]) -> dict[str, Any]:
    name, key, _ = which
    data = cluster.kubectl.json("get", "configmap", name, "-n", MEMBER_NS)["data"][key]
    loaded: dict[str, Any] = yaml.safe_load(data) or {}
    return loaded


def set_config(cluster: Cluster, which: tuple[str, str, str], *, restart: bool = True, **fields: Any) -> bool:
    """Set ``fields`` (nested keys as ``a__b``) in the ConfigMap; restart the workload if
    anything changed and ``restart``. Returns whether it changed."""
    name, key, workload = which
    document = read_config(cluster, which)
    root = document.get("multicluster", document)
    changed = False
    for dotted, value in fields.items():
        target = root
        *parents, leaf = dotted.split("__")
        for parent in parents:
            target = target.setdefault(parent, {})
        if target.get(leaf) != value:
            target[leaf] = value
            changed = True
    if not changed:
        return False
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": MEMBER_NS},
        "data": {key: yaml.safe_dump(document, sort_keys=False)},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        yaml.safe_dump(configmap, file)
        file.flush()
        cluster.kubectl("replace", "-f", file.name)
    if restart:
        restart_workloads([(cluster, workload)])
    return True


def restart_workloads(workloads: list[tuple[Cluster, str]], namespace: str = MEMBER_NS) -> None:
    """``kubectl rollout restart`` each, then wait for every one of them."""
    for cluster, workload in workloads:
        cluster.kubectl("-n", namespace, "rollout", "restart", workload)
    for cluster, workload in workloads:
        wait_rollout(cluster.kubectl, namespace, workload)
