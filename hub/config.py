"""The hub's configuration: one validated tree, loaded once, passed explicitly."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path

from mcapi import names


class HubConfigError(ValueError):
    """The hub was configured in a way it cannot run with."""


def _split_host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise HubConfigError(f"address {address!r} must be HOST:PORT")
    return host.strip("[]"), int(port)


def is_loopback(address: str) -> bool:
    host, _ = _split_host_port(address)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HubConfig:
    """Everything `mchub hub` can be told.

    Durations are in seconds.
    """

    data_dir: Path = Path("mchub-data")
    # gRPC listen address, HOST:PORT (port 0 picks a free one).
    grpc_address: str = "127.0.0.1:50051"
    # REST/dashboard listen address, HOST:PORT.
    rest_address: str = "127.0.0.1:8080"
    # Serve gRPC and REST without TLS: only allowed when both listen on loopback
    # (REST carries bearer tokens as gRPC does, so neither goes out in plaintext).
    insecure: bool = False
    # Operator-provided serving certificate and key (PEM) for gRPC and REST; generated when unset.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Extra DNS names/IPs for the generated serving certificate.
    tls_sans: tuple[str, ...] = ()
    cluster_set_id: str = "test-clusterset"
    leader_cluster_id: str = "leader"
    # Antrea's older merge rule: exporters' ports must be identical.
    strict_ports: bool = False
    # How often members announce (told to them in AnnounceResponse).
    heartbeat_interval: float = 10.0
    # A member without an announce for this long is Disconnected.
    disconnect_after: float = 30.0
    # How often idle watchers get a bookmark with the current revision.
    bookmark_interval: float = 15.0
    # How often the liveness sweep runs; with the kube store it also rewrites the leader
    # ClusterSet's status when it changed (Antrea refreshes it every 30 s).
    status_interval: float = 2.0
    # Largest gRPC message accepted, bytes.
    max_message_bytes: int = 4 * 1024 * 1024
    # Import changes (verdicts, for an Export stream) a slow watcher may fall behind before it
    # is cut off and told to resume; a single batch larger than this is still given whole.
    watch_queue_limit: int = 10_000
    # Grace given to open streams on shutdown.
    shutdown_grace: float = 5.0
    # Where the hub keeps its state: "sqlite" (embedded, in data_dir) or "kube"
    # (CRs in `namespace` of the cluster `kubeconfig` reaches, or in-cluster).
    store: str = "sqlite"
    kubeconfig: Path | None = None
    namespace: str = names.DEFAULT_LEADER_NAMESPACE
    # Lease election between replicas (kube store only), seconds.
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # This replica's name in the Lease (default: the host name, i.e. the Pod name).
    replica_id: str = field(default_factory=socket.gethostname)
    # SQLite store: serve watches and reads from the change log of a data dir another hub
    # process writes (hub.replicas.sqlite_source), never writing. (Kube-store replicas that do not hold
    # the Lease always follow the leader's CRs.)
    follow: bool = False
    # The address members send writes to, named by a follower that refuses one (UNAVAILABLE with
    # trailing metadata `mchub-leader`); without it a kube follower names the leader replica.
    leader_address: str = ""
    # SQLite store: mirror the hub's state into CRs of `namespace` in the cluster this
    # kubeconfig reaches (hub.mirror), and take in AntreaClusterNetworkPolicy ResourceExports
    # a person applies there. SQLite stays the source of truth; None: no mirror.
    mirror_kubeconfig: Path | None = None
    # The mirror's client-side rate limit, requests per second (bursts of twice as many).
    mirror_qps: float = 50.0
    # Kube store: this replica's Pod, labelled `mchub.antrea.io/hub-role: leader|follower` so a
    # Service can select the leader for writes ("" leaves the Pod alone).
    pod_name: str = ""

    def validate(self) -> HubConfig:
        for address in (self.grpc_address, self.rest_address):
            _split_host_port(address)
        if self.insecure:
            for address, what in ((self.grpc_address, "gRPC"), (self.rest_address, "REST")):
                if not is_loopback(address):
                    raise HubConfigError(
                        f"--insecure serves gRPC and REST without TLS and is only allowed on loopback, "
                        f"not on the {what} address {address!r}"
                    )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise HubConfigError("--tls-cert and --tls-key go together")
        for value, what in ((self.cluster_set_id, "ClusterSet ID"), (self.leader_cluster_id, "leader ID")):
            if not names.is_valid_cluster_id(value):
                raise HubConfigError(f"{what} {value!r} must be a DNS-1123 label")
        if self.store not in ("sqlite", "kube"):
            raise HubConfigError(f"store {self.store!r} must be sqlite or kube")
        if self.mirror_kubeconfig is not None and (self.store != "sqlite" or self.follow):
            raise HubConfigError(
                "--mirror-kubeconfig mirrors the sqlite store of the hub that writes it; "
                "the kube store keeps its state in CRs already"
            )
        if self.mirror_qps <= 0:
            raise HubConfigError("the mirror's QPS must be positive")
        if self.follow and self.store != "sqlite":
            raise HubConfigError("--follow is for the sqlite store; kube-store replicas follow by themselves")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise HubConfigError("lease timing needs 0 < retry period < renew deadline < lease duration")
        if self.heartbeat_interval <= 0 or self.disconnect_after <= self.heartbeat_interval:
            raise HubConfigError("disconnect_after must exceed heartbeat_interval, both positive")
        return self

    @property
    def tls_dir(self) -> Path:
        return self.data_dir / "tls"

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin.token"

    @property
    def tokens_db(self) -> Path:
        return self.data_dir / "tokens.db"
