"""Export churn: a cluster's user exporting and unexporting Services, one change after another,
while something else goes on (an upgrade rolling through the ClusterSet, say).

Each Service selects the given Pods; the churn turns their ServiceExports on and off in turn from
a thread, the way a user's ``kubectl`` would, until stopped. What counts at the end is what the
API server holds (``exported``), not what the thread meant to do: a change that failed or
timed out is read back, not assumed.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterable
from types import TracebackType

import yaml

from hack.nodeset.clusters import Cluster
from hack.nodeset.kubectl import KubectlError
from hack.nodeset.workloads import service_export


class ExportChurn:
    """``count`` Services named ``<prefix>-<i>`` in ``namespace``, their exports toggled in turn
    every ``interval`` seconds while the context is open."""

    def __init__(
        self, cluster: Cluster, namespace: str, prefix: str, *, count: int, selector: dict[str, str], interval: float
    ) -> None:
        self.cluster, self.namespace, self.prefix = cluster, namespace, prefix
        self.names = tuple(f"{prefix}-{i}" for i in range(count))
        self.selector, self.interval = selector, interval
        self.changes = 0
        """Creates and deletes of a ServiceExport that kubectl reported done."""
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"export-churn-{prefix}", daemon=True)

    def __enter__(self) -> ExportChurn:
        services = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {"selector": self.selector, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
            }
            for name in self.names
        ]
        self.cluster.kubectl.apply(yaml.safe_dump_all(services))
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        exported: set[str] | None = None
        turn = 0
        while not self._stop.wait(self.interval):
            name = self.names[turn % len(self.names)]
            try:
                if exported is None:  # at the start, and after a change whose outcome is unknown
                    exported = self.exported()
                if name in exported:
                    self.cluster.kubectl("delete", "serviceexport", name, "-n", self.namespace, "--wait=false")
                    exported.discard(name)
                else:
                    self.cluster.kubectl.apply(yaml.safe_dump(service_export(self.namespace, name)))
                    exported.add(name)
                self.changes += 1
                turn += 1
            except (KubectlError, subprocess.SubprocessError) as error:
                self.errors.append(str(error))
                exported = None

    def exported(self) -> set[str]:
        """The churned Services that have a ServiceExport now, as the API server says."""
        items = self.cluster.kubectl.json("get", "serviceexports", "-n", self.namespace)["items"]
        return {item["metadata"]["name"] for item in items} & set(self.names)

    def remove(self) -> None:
        """Delete the Services and their exports (not waiting for the imports to go)."""
        for kind in ("serviceexport", "service"):
            self.cluster.kubectl(
                "delete", kind, *self.names, "-n", self.namespace, "--ignore-not-found", "--wait=false"
            )


def imported(cluster: Cluster, namespace: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` the cluster has a ServiceImport of, with its ClusterSet IP written."""
    wanted = set(names)
    items = cluster.kubectl.json("get", "serviceimports", "-n", namespace)["items"]
    return {item["metadata"]["name"] for item in items if item["spec"].get("ips")} & wanted
