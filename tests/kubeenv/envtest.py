"""Real Kubernetes control planes for tests: kube-apiserver + kube-controller-manager on loopback.

Where the binaries come from, first match wins:

1. `KUBEBUILDER_ASSETS` (controller-runtime's envtest convention): a directory holding
   `kube-apiserver` (and `etcd`, and optionally `kube-controller-manager`), e.g. what
   `setup-envtest use -p path 1.28.x` prints;
2. `MCHUB_ENVTEST` or the workplace's `../shared/envtest/` next to this checkout: the bundled
   v1.28.7 binaries, with etcd from Debian's `etcd-server`.

Both are driven through the same `up DIR NAME...` / `down DIR` scripts, which start one etcd and
one apiserver (+ controller-manager) per cluster name, each on free loopback ports, and print a
kubeconfig per cluster. `RealControlPlane` starts them once, lazily, and stops them at exit.

`unavailable_reason()` says, in one sentence, why real clusters cannot be had here (None when
they can): real-cluster tests skip with exactly that reason, and only then.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The clusters every real-cluster test may use. One control plane per pytest session; tests
# keep apart by working in Namespaces (and member Namespaces) of their own.
CLUSTER_NAMES = ("leader", "east", "west", "north")
# Each cluster's Service CIDR, as `up` assigns them (10.96.0.0/16, 10.97.0.0/16, ... in NAME order).
SERVICE_CIDRS = {name: f"10.{96 + index}.0.0/16" for index, name in enumerate(CLUSTER_NAMES)}
CRD_DIR = REPO / "deploy" / "crds"


def envtest_dir() -> Path | None:
    """The directory holding the `up` and `down` scripts, if any."""
    candidates = [os.environ.get("MCHUB_ENVTEST", ""), str(REPO.parent / "shared" / "envtest")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "up").is_file() and (Path(candidate) / "down").is_file():
            return Path(candidate)
    return None


def unavailable_reason() -> str | None:
    scripts = envtest_dir()
    if scripts is None:
        return "no real control plane: neither MCHUB_ENVTEST nor ../shared/envtest holds the up/down scripts"
    assets = os.environ.get("KUBEBUILDER_ASSETS", "")
    if assets:
        if not (Path(assets) / "kube-apiserver").is_file():
            return f"KUBEBUILDER_ASSETS={assets} has no kube-apiserver"
        if not (Path(assets) / "etcd").is_file() and shutil.which("etcd") is None:
            return f"no etcd: KUBEBUILDER_ASSETS={assets} has none and etcd-server is not installed"
        return None
    if not (scripts / "kube-apiserver.xz").is_file():
        return f"{scripts} has no bundled kube-apiserver and KUBEBUILDER_ASSETS is not set"
    if shutil.which("etcd") is None and not Path("/usr/bin/etcd").is_file():
        return "etcd is not installed (apt-get install etcd-server), and KUBEBUILDER_ASSETS is not set"
    if shutil.which("kubectl") is None:
        return "kubectl is not installed"
    return None


@dataclass
class RealCluster:
    name: str
    server: str
    kubeconfig: Path

    @property
    def service_cidr(self) -> str:
        return SERVICE_CIDRS[self.name]

    def kubectl(self, *args: str, input_text: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout


@dataclass
class RealControlPlane:
    """Starts the clusters on first use (thread-safe), stops them with `stop()`."""

    names: tuple[str, ...] = CLUSTER_NAMES
    _dir: Path | None = None
    _clusters: dict[str, RealCluster] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _failure: str | None = None

    def clusters(self) -> dict[str, RealCluster]:
        with self._lock:
            if self._failure is not None:
                raise RuntimeError(self._failure)
            if not self._clusters:
                try:
                    self._start()
                except Exception as exc:
                    self._failure = f"the real control plane did not start: {exc}"
                    raise
            return self._clusters

    def _start(self) -> None:
        scripts = envtest_dir()
        assert scripts is not None, unavailable_reason()
        self._dir = Path(tempfile.mkdtemp(prefix="mchub-envtest-")) / "ct"
        done = subprocess.run(
            ["bash", str(scripts / "up"), str(self._dir), *self.names],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"up exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        for line in done.stdout.splitlines():
            name, server, kubeconfig = line.split()
            self._clusters[name] = RealCluster(name, server, Path(kubeconfig))
        for cluster in self._clusters.values():
            cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
            cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(CRD_DIR))

    def stop(self) -> None:
        with self._lock:
            if self._dir is None:
                return
            scripts = envtest_dir()
            if scripts is not None:
                subprocess.run(
                    ["bash", str(scripts / "down"), str(self._dir)], check=False, capture_output=True, timeout=120
                )
            shutil.rmtree(self._dir.parent, ignore_errors=True)
            self._dir = None
            self._clusters.clear()
