"""The hub's configuration: one validated tree, loaded once, passed explicitly."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from hub.merge.global_addressing import DEFAULT_BLOCK_PREFIX, GlobalCIDR, GlobalCIDRError
from kube.leader import LeaseTiming
from mcapi import names
from mcapi.addresses import is_loopback_host


class HubConfigError(ValueError):
    """The hub was configured in a way it cannot run with."""


def _split_host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise HubConfigError(f"address {address!r} must be HOST:PORT")
    return host.strip("[]"), int(port)


def is_loopback(address: str) -> bool:
    return is_loopback_host(_split_host_port(address)[0])


@dataclass(frozen=True)
class MirrorConfig:
    """Mirror a SQLite hub's state into CRs of the leader Namespace of the cluster `kubeconfig`
    reaches (hub.mirror), and take in the AntreaClusterNetworkPolicy ResourceExports a person
    applies there. SQLite stays the source of truth."""

    kubeconfig: Path
    # The mirror's client-side rate limit, requests per second (bursts of twice as many).
    qps: float = 50.0


@dataclass(frozen=True)
class SqliteStoreConfig:
    """State in the data dir's SQLite database. This process writes it (and may mirror it), or,
    with `follow`, serves watches and reads from the change log of a data dir another hub
    process writes (hub.replicas.sqlite_source), never writing."""

    follow: bool = False
    mirror: MirrorConfig | None = None


@dataclass(frozen=True)
class KubeStoreConfig:
    """State in CRs of the leader Namespace of the cluster `kubeconfig` reaches (None: the
    in-cluster one). Replicas elect a leader through a Lease; the others follow its CRs."""

    kubeconfig: Path | None = None
    lease: LeaseTiming = field(default_factory=LeaseTiming)
    # This replica's name in the Lease (default: the host name, i.e. the Pod name).
    replica_id: str = field(default_factory=socket.gethostname)
    # This replica's Pod, labelled `mchub.antrea.io/hub-role: leader|follower` so a Service can
    # select the leader for writes ("" leaves the Pod alone).
    pod_name: str = ""


# Where the hub keeps its state, and how this process takes part.
StoreConfig = SqliteStoreConfig | KubeStoreConfig


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
    # The leader Namespace: where the kube store keeps its CRs, or the mirror writes them.
    namespace: str = names.DEFAULT_LEADER_NAMESPACE
    # Antrea's older merge rule: exporters' ports must be identical.
    strict_ports: bool = False
    # The ClusterSet's global CIDR ("" : off): members whose ranges overlap another's are reached
    # through a block of it, `global_block_prefix` long (hub.merge.global_addressing).
    global_cidr: str = ""
    global_block_prefix: int = DEFAULT_BLOCK_PREFIX
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
    store: StoreConfig = field(default_factory=SqliteStoreConfig)
    # The address members send writes to, named by a follower that refuses one (UNAVAILABLE with
    # trailing metadata `mchub-leader`); without it a kube follower names the leader replica.
    leader_address: str = ""

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
        if isinstance(self.store, SqliteStoreConfig) and self.store.mirror is not None:
            if self.store.follow:
                raise HubConfigError(MIRROR_NEEDS_THE_WRITER)
            if self.store.mirror.qps <= 0:
                raise HubConfigError(MIRROR_QPS)
        if self.heartbeat_interval <= 0 or self.disconnect_after <= self.heartbeat_interval:
            raise HubConfigError("disconnect_after must exceed heartbeat_interval, both positive")
        self.global_addressing  # noqa: B018 - raises HubConfigError for an unusable one
        return self

    @property
    def global_addressing(self) -> GlobalCIDR | None:
        """The parsed global CIDR (None: off); HubConfigError when it is unusable."""
        try:
            return GlobalCIDR.parse(self.global_cidr, self.global_block_prefix)
        except GlobalCIDRError as err:
            raise HubConfigError(str(err)) from None

    @property
    def kube_store(self) -> KubeStoreConfig | None:
        """The kube store's settings (None with the SQLite store)."""
        return self.store if isinstance(self.store, KubeStoreConfig) else None

    @property
    def follows(self) -> bool:
        """A SQLite-store follower of another process's data dir."""
        return isinstance(self.store, SqliteStoreConfig) and self.store.follow

    @property
    def mirror(self) -> MirrorConfig | None:
        return self.store.mirror if isinstance(self.store, SqliteStoreConfig) else None

    @property
    def tls_dir(self) -> Path:
        return self.data_dir / "tls"

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin.token"

    @property
    def tokens_db(self) -> Path:
        return self.data_dir / "tokens.db"


# Refusals the CLI gives too, mapping its flags onto a StoreConfig.
MIRROR_NEEDS_THE_WRITER = (
    "--mirror-kubeconfig mirrors the sqlite store of the hub that writes it; "
    "the kube store keeps its state in CRs already"
)
MIRROR_QPS = "the mirror's QPS must be positive"
