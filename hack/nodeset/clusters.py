"""Clusters with nodes: the ones `../shared/envtest` starts here, or a user's own.

``EnvtestNodes`` starts real clusters with real nodes (kubelet, containerd, kube-proxy, each
node a network namespace on a shared underlay) with the workplace's envtest scripts, imports
image archives into every node, and can stop and start a node as a failing machine would
(its kubelet frozen and its link down). ``user_clusters()`` reads the kubeconfigs of clusters
a user already has (kind on a laptop, say) from ``MCHUB_E2E_CLUSTERS``; those cannot be
failed on purpose, so tests that need that skip there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from hack.nodeset.kubectl import Kubectl

REPO = Path(__file__).resolve().parents[2]
CLUSTERS_ENV = "MCHUB_E2E_CLUSTERS"
"""``NAME=KUBECONFIG[@CONTEXT],...`` (the leader first): run against these clusters instead."""


@dataclass(frozen=True)
class Node:
    name: str
    ip: str
    pod_cidr: str


@dataclass
class Cluster:
    name: str
    kubectl: Kubectl
    nodes: list[Node]
    pod_cidr: str | None = None
    service_cidr: str | None = None
    cluster_dns: str | None = None
    """The kubelets' clusterDNS address, where a cluster DNS must answer (envtest has none)."""

    @property
    def kubeconfig(self) -> Path:
        return self.kubectl.kubeconfig

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)


def envtest_dir() -> Path | None:
    for candidate in (os.environ.get("MCHUB_ENVTEST", ""), str(REPO.parent / "shared" / "envtest")):
        if candidate and (Path(candidate) / "up").is_file():
            return Path(candidate)
    return None


NODE_TOOLS = ("containerd", "runc", "iptables", "conntrack", "nsenter", "mmdebstrap")


def nodes_unavailable_reason() -> str | None:
    """Why envtest nodes cannot run here (None when they can)."""
    import shutil  # noqa: PLC0415

    if envtest_dir() is None:
        return "no envtest: neither MCHUB_ENVTEST nor ../shared/envtest holds the up script"
    if os.geteuid() != 0:
        return "real nodes need root (network namespaces, containerd)"
    missing = [tool for tool in NODE_TOOLS if shutil.which(tool) is None]
    if shutil.which("buildah") is None and shutil.which("podman") is None:
        missing.append("buildah or podman")
    if not any(Path(p, "bridge").exists() for p in ("/usr/lib/cni", "/opt/cni/bin")):
        missing.append("containernetworking-plugins")
    if missing:
        packages = "containerd runc containernetworking-plugins iptables conntrack mmdebstrap buildah"
        return f"real nodes need {', '.join(missing)} (apt-get install {packages})"
    return None


@dataclass
class EnvtestNodes:
    """One envtest directory: its clusters, their nodes, and control over them."""

    directory: Path
    clusters: dict[str, Cluster] = field(default_factory=dict)
    started_in: float = 0.0

    @classmethod
    def up(cls, directory: Path, spec: dict[str, int], *, env: dict[str, str] | None = None) -> EnvtestNodes:
        """``spec``: cluster name -> node count, in the order envtest numbers them."""
        scripts = envtest_dir()
        assert scripts is not None
        started = time.monotonic()
        done = subprocess.run(
            ["bash", str(scripts / "up"), str(directory), *(f"{name}:{count}" for name, count in spec.items())],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            # The kubelets' clusterDNS: the tenth address of each Service CIDR, as kubeadm's.
            env={**os.environ, "ENVTEST_CLUSTER_DNS": "+10", **(env or {})},
        )
        if done.returncode != 0:
            raise RuntimeError(f"envtest up exited {done.returncode}: {done.stderr.strip()[-3000:]}")
        nodes = cls(directory, started_in=time.monotonic() - started)
        for line in done.stdout.splitlines():
            nodes._add(line.split()[0])
        return nodes

    @classmethod
    def attach(cls, directory: Path) -> EnvtestNodes:
        """The clusters an earlier ``up`` left running in ``directory`` (in envtest's order)."""
        nodes = cls(directory)
        infos = sorted(directory.glob("*/cluster.json"), key=lambda p: json.loads(p.read_text())["podCIDR"])
        for info in infos:
            nodes._add(info.parent.name)
        return nodes

    def _add(self, name: str) -> None:
        info = json.loads((self.directory / name / "cluster.json").read_text())
        self.clusters[name] = Cluster(
            name,
            Kubectl(Path(info["kubeconfig"])),
            [Node(n["name"], n["ip"], n["podCIDR"]) for n in info.get("nodes", [])],
            pod_cidr=info.get("podCIDR"),
            service_cidr=info.get("serviceCIDR"),
            cluster_dns=info.get("clusterDNS") or None,
        )

    def down(self) -> None:
        scripts = envtest_dir()
        if scripts is not None and self.directory.exists():
            subprocess.run(
                ["bash", str(scripts / "down"), str(self.directory)], capture_output=True, timeout=300, check=False
            )

    def load_images(self, *archives: Path) -> None:
        scripts = envtest_dir()
        assert scripts is not None
        done = subprocess.run(
            ["bash", str(scripts / "load-image"), str(self.directory), *map(str, archives)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"load-image exited {done.returncode}: {done.stderr.strip()[-2000:]}")

    # ---- one node, as a machine that fails -------------------------------------

    def _pid(self, node: str, process: str) -> int:
        return int((self.directory / "pids" / f"{node}.{process}.pid").read_text().strip())

    def node_exec(self, node: str, *command: str, check: bool = True) -> str:
        """Run a command in the node's namespaces (network, mount, UTS)."""
        done = subprocess.run(
            ["nsenter", "-t", str(self._pid(node, "holder")), "-m", "-n", "-u", *command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{node}: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def _cable(self, node: str) -> tuple[str, str]:
        """The underlay namespace's holder PID and the name of the node's port on its bridge."""
        line = self.node_exec(node, "ip", "-o", "link", "show", "eth0")
        peer_index = line.split(":", 2)[1].strip().partition("@if")[2]
        underlay = str(self._pid_file("underlay"))
        links = subprocess.run(
            ["nsenter", "-t", underlay, "-n", "ip", "-o", "link"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
        for entry in links.splitlines():
            index, name = (part.strip() for part in entry.split(":")[:2])
            if index == peer_index:
                return underlay, name.partition("@")[0]
        raise RuntimeError(f"{node}: no underlay port with ifindex {peer_index}")

    def _pid_file(self, name: str) -> int:
        return int((self.directory / "pids" / f"{name}.pid").read_text().strip())

    def _set_cable(self, node: str, state: str) -> None:
        underlay, port = self._cable(node)
        subprocess.run(["nsenter", "-t", underlay, "-n", "ip", "link", "set", port, state], check=True, timeout=30)

    def fail_node(self, node: str) -> None:
        """The node stops: its kubelet freezes (no more status: NotReady after the controller
        manager's grace period) and its cable is pulled (its port on the underlay bridge goes
        down: no packet in or out, while the node keeps its own addresses and routes)."""
        os.kill(self._pid(node, "kubelet"), signal.SIGSTOP)
        self._set_cable(node, "down")

    def recover_node(self, node: str) -> None:
        self._set_cable(node, "up")
        os.kill(self._pid(node, "kubelet"), signal.SIGCONT)

    def cut_link(self, node: str) -> None:
        """Only the node's cable is pulled (a cut link): its kubelet and everything else keep running."""
        self._set_cable(node, "down")

    def restore_link(self, node: str) -> None:
        self._set_cable(node, "up")


def user_clusters() -> dict[str, Cluster] | None:
    """The clusters named by MCHUB_E2E_CLUSTERS, if it is set (leader first)."""
    text = os.environ.get(CLUSTERS_ENV, "").strip()
    if not text:
        return None
    clusters: dict[str, Cluster] = {}
    for item in text.split(","):
        name, _, where = item.strip().partition("=")
        kubeconfig, _, context = where.partition("@")
        if not name or not kubeconfig:
            raise ValueError(f"{CLUSTERS_ENV}: {item!r} is not NAME=KUBECONFIG[@CONTEXT]")
        kubectl = Kubectl(Path(kubeconfig).expanduser(), context or None)
        nodes = []
        for node in kubectl.json("get", "nodes")["items"]:
            addresses = {a["type"]: a["address"] for a in node["status"].get("addresses", [])}
            nodes.append(
                Node(node["metadata"]["name"], addresses.get("InternalIP", ""), node["spec"].get("podCIDR", ""))
            )
        clusters[name] = Cluster(name, kubectl, sorted(nodes, key=lambda n: n.name))
    return clusters
