"""The end of a ClusterSet, as the hub remembers it.

With the Kubernetes store the leader's ClusterSet CR is the truth: deleting it ends the
ClusterSet, creating it again starts a new one (hub/leader_cluster/clusterset_cr.py). With the SQLite
store there is no CR: the operator ends the ClusterSet through the REST facade
(`DELETE /api/v1/clusterset`, `mcctl destroy`) and the hub writes that down in its data dir
(`clusterset-ended.json`), so a restarted hub still refuses members. A data dir whose
ClusterSet ended serves again only under another ClusterSet ID (or as a new data dir).
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path

from hub.errors import Conflict, quote

log = logging.getLogger(__name__)

RECORD_FILE = "clusterset-ended.json"


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def deleted_through_rest(cluster_set_id: str, at: datetime) -> str:
    """Why members are refused after `DELETE /api/v1/clusterset` (SQLite store)."""
    return (
        f"ClusterSet {quote(cluster_set_id)} was deleted at {_when(at)}: this hub admits no member "
        "(a new ClusterSet needs a new hub data dir or another ClusterSet ID)"
    )


def deleted_cr(cluster_set_id: str, namespace: str, at: datetime) -> str:
    """Why members are refused after the leader's ClusterSet CR was deleted (Kubernetes store)."""
    return (
        f"ClusterSet {quote(cluster_set_id)} was deleted from Namespace {quote(namespace)} at {_when(at)}: "
        "this hub admits no member until the ClusterSet is created again"
    )


def held_by_cr(cluster_set_id: str, namespace: str) -> Conflict:
    """The refusal of REST `DELETE /api/v1/clusterset` by a hub whose ClusterSet is a CR."""
    return Conflict(
        f"this hub keeps its ClusterSet as the ClusterSet CR {quote(cluster_set_id)} in Namespace "
        f"{quote(namespace)}: delete that (kubectl delete clusterset {cluster_set_id} -n {namespace}, "
        "or mcctl destroy with the leader's kubeconfig); the hub then deletes what it wrote"
    )


class EndRecord:
    """`<data-dir>/clusterset-ended.json`: which ClusterSet ended and why (SQLite store)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / RECORD_FILE

    def reason(self, cluster_set_id: str) -> str:
        """Why `cluster_set_id` ended, "" when it did not (or another ClusterSet did)."""
        try:
            record = json.loads(self.path.read_text())
        except FileNotFoundError:
            return ""
        except (OSError, ValueError) as exc:
            # A record that cannot be read must not quietly re-admit members of a deleted ClusterSet.
            return f"the hub cannot read {self.path} ({exc}); fix or remove it"
        if not isinstance(record, dict) or record.get("clusterSetID") != cluster_set_id:
            return ""
        return str(record.get("reason") or f"ClusterSet {quote(cluster_set_id)} was deleted")

    def write(self, cluster_set_id: str, reason: str) -> None:
        """Durably, before anything is deleted: a crash halfway still leaves the ClusterSet ended."""
        text = json.dumps({"clusterSetID": cluster_set_id, "reason": reason}, indent=2) + "\n"
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        log.info("clusterset end recorded", extra={"clusterSet": cluster_set_id, "record": str(self.path)})
