"""Wiring: one hub process = store + engine + gRPC server + REST facade."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from aiohttp import web
from grpc_health.v1 import health, health_pb2

from hub.auth.identity import Authenticator
from hub.auth.tokenreview import ChainAuthenticator
from hub.auth.tokens import TokenStore, ensure_admin_token
from hub.clusterset.end import EndRecord, deleted_through_rest, held_by_cr
from hub.clusterset.identity import ClusterSetIdentity
from hub.config import HubConfig
from hub.engine import ClusterSetEnd, Engine, utc_now
from hub.grpc.server import start_server
from hub.grpc.service import SERVICE_NAME, CommonAreaService
from hub.leader_cluster.kubectl_exports import LeaderExportsWatch
from hub.metrics import HubMetrics
from hub.mirror.feed import ChangeFeed, FeedingStore
from hub.mirror.leader import LeaderCluster
from hub.replicas.follower import Follower, FollowSource
from hub.replicas.kube_source import KubeFollowSource
from hub.replicas.leadership import KubeLeadership
from hub.replicas.pod_role import FOLLOWER, LEADER
from hub.replicas.sqlite_source import SqliteFollowSource
from hub.rest.app import build_rest_app
from hub.store.base import Store
from hub.store.sqlite import SqliteStore
from hub.tls import ensure_tls, server_ssl_context
from hub.watch.batches import ImportBatch
from kube.backoff import Backoff, Retries
from kube.manager import Manager, Step
from kube.waiting import cancel_and_wait

log = logging.getLogger(__name__)

# A follower that cannot start yet (the CRDs or the data dir are not there) tries again.
_START_BACKOFF = Backoff(initial=0.5, maximum=10.0, jitter=0.0)


def _listening(address: str, port: int) -> str:
    """Where a server listens: its configured host (all addresses when none) and the port it got."""
    return f"{address.rpartition(':')[0] or '*'}:{port}"


def _client_host(address: str) -> str:
    """The host a local client dials for a listen address: a wildcard means loopback; IPv6 in brackets."""
    host = address.rpartition(":")[0].strip("[]")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class HubApp:
    """A running hub. `await start()`, then `await stop()`.

    With the sqlite store the process serves as soon as it started. With the
    kube store, replicas elect a leader through a Lease: only the holder loads
    the index from the CRs and takes writes; the others follow the leader's CRs
    (hub.replicas.follower) and serve WatchImports and the REST read views with the
    leader's epoch and revisions, answering writes with UNAVAILABLE and a hint
    naming the leader, until they take over. `SqliteStoreConfig.follow` makes a SQLite-store
    process such a follower of another process's data dir.
    """

    def __init__(
        self,
        config: HubConfig,
        *,
        store: Store | None = None,
        authenticator: Authenticator | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.config = config.validate()
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.tokens = TokenStore(self.config.tokens_db)
        self.admin_token = ensure_admin_token(self.tokens, self.config.admin_token_file)
        self.authenticator: Authenticator = authenticator or self.tokens
        self.metrics = HubMetrics()
        self._clock = clock
        self._given_store = store
        # --mirror-kubeconfig: the SQLite store tells the mirror what each commit changed.
        self.mirror_feed: ChangeFeed | None = None
        if store is None and self.config.mirror is not None:
            self.mirror_feed = ChangeFeed()
            store = FeedingStore(SqliteStore(self.config.data_dir), self.mirror_feed)
        self.engine = Engine(store or SqliteStore(self.config.data_dir), self.config, clock)
        # The leader cluster a SQLite hub mirrors into (hub.mirror.leader).
        self.leader_cluster: LeaderCluster | None = None
        # Kube store, while leading: ResourceExports a person applies (hub.leader_cluster.kubectl_exports).
        self.kubectl_exports: LeaderExportsWatch | None = None
        # Whether (and why) this data dir's ClusterSet was deleted (SQLite store; the kube store
        # follows the leader ClusterSet CR instead).
        self.end_record = EndRecord(self.config.data_dir)
        self.kube: KubeLeadership | None = None
        # Serving watches and reads from the leader's history (a replica that does not lead).
        self.follower: Follower | None = None
        self._following: asyncio.Task[None] | None = None
        self._serving = False
        self._grpc: grpc.aio.Server | None = None
        self._health = health.aio.HealthServicer()
        self._rest: web.AppRunner | None = None
        self._parts: Manager | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.grpc_port = 0
        self.rest_port = 0
        # The CA clients trust, when the hub generated its TLS material (None with
        # --tls-cert/--tls-key, whose issuer the operator knows, and with --insecure).
        self.ca_cert: Path | None = None
        # The certificate gRPC and REST both serve (None with --insecure).
        self.serving_cert: Path | None = None
        self.started = False

    @property
    def store(self) -> Store:
        return self.engine.store

    # ---- addresses -----------------------------------------------------------

    @property
    def grpc_target(self) -> str:
        return f"{_client_host(self.config.grpc_address)}:{self.grpc_port}"

    @property
    def rest_url(self) -> str:
        scheme = "http" if self.config.insecure else "https"
        return f"{scheme}://{_client_host(self.config.rest_address)}:{self.rest_port}"

    def now(self) -> datetime:
        return self._clock()

    def is_ready(self) -> bool:
        """Ready to take writes (the leader, serving): `/readyz`."""
        return self.started and self._serving

    def is_ready_for_watches(self) -> bool:
        """Ready to serve watches and reads, as leader or as a follower holding its history: `/readyz/watches`."""
        return self.started and self.serves_watches()

    def is_leader(self) -> bool:
        return self._serving

    def serves_watches(self) -> bool:
        if self._serving:
            return True
        follower = self.follower
        return follower is not None and follower.synced.is_set() and follower.engine is self.engine

    def leader_hint(self) -> str:
        """Where writes go, as this replica knows it ("" when it does not)."""
        if self.config.leader_address:
            return self.config.leader_address
        if self.kube is not None and self.kube.elector.holder:
            return f"replica {self.kube.elector.holder}"
        return ""

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Start the parts in order, each ready before the next; a part that fails stops those
        before it again (kube.manager), so a failed start leaves no server listening."""
        tls = self._serving_tls()  # one certificate for both servers
        self._parts = Manager(
            "hub",
            [
                Step(self._start_data, self._stop_data),
                Step(self._start_mirror, self._stop_mirror),
                Step(partial(self._start_grpc, tls), self._stop_grpc),
                Step(partial(self._start_rest, tls), self._stop_rest),
                Step(self._start_loops, self._stop_loops),
                Step(self._start_leadership, self._stop_leadership),
            ],
        )
        await self._parts.start()
        log.info(
            "hub serving",
            extra={
                "grpc": _listening(self.config.grpc_address, self.grpc_port),
                "tls": not self.config.insecure,
                "rest": _listening(self.config.rest_address, self.rest_port),
                "adminTokenFile": str(self.config.admin_token_file),
                "certificate": self._certificate_origin(),
            },
        )

    async def stop(self) -> None:
        """Drain: end streams with UNAVAILABLE (members resume), then close."""
        self.started = False
        try:
            if self._parts is not None:
                await self._parts.stop()
        finally:
            self.tokens.close()

    # ---- the parts, in start order -------------------------------------------

    async def _start_data(self) -> None:
        """The store and what serves from it: this process's engine, or a follower of the leader's."""
        kube_store = self.config.kube_store
        if kube_store is not None and self._given_store is None:
            self.kube = await KubeLeadership.connect(self, kube_store)
            self.authenticator = ChainAuthenticator(self.authenticator, self.kube.authenticator)
            self.engine = self.kube.new_engine()
            self._follow(KubeFollowSource(self.kube.client, self.config.namespace))
        elif self.config.follows:
            self._follow(SqliteFollowSource(self.config.data_dir))
        else:
            await self.engine.start()
            ended = self.end_record.reason(self.config.cluster_set_id)
            if ended:  # refused from the first call; and whatever a crash mid-deletion left goes
                await self.engine.end_clusterset(ended)
            self._serving = True

    async def _stop_data(self) -> None:
        await self._stop_following()
        await self.store.close()
        if self.kube is not None:
            await self.kube.close()

    async def _start_mirror(self) -> None:
        if self._serving and self.mirror_feed is not None and self.config.mirror is not None:
            registry = self.metrics.registry
            self.leader_cluster = await LeaderCluster.connect(self, self.config.mirror, self.mirror_feed, registry)
            self.leader_cluster.start()

    async def _stop_mirror(self) -> None:
        leader_cluster, self.leader_cluster = self.leader_cluster, None
        if leader_cluster is not None:
            await leader_cluster.stop()

    async def _start_loops(self) -> None:
        self._tasks = [
            asyncio.create_task(self._status_loop(), name="hub-status"),
            asyncio.create_task(self._bookmark_loop(), name="hub-bookmarks"),
        ]
        self.started = True
        await self._set_health(self._serving)

    async def _stop_loops(self) -> None:
        self.started = False
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)

    async def _start_leadership(self) -> None:
        """Kube store: stand for the Lease (a follower until this replica holds it)."""
        if self.kube is not None:
            await self._label_role(FOLLOWER)
            self.kube.start()

    async def _stop_leadership(self) -> None:
        await self._stop_kubectl_exports()
        if self.kube is not None:
            await self.kube.stop()

    def _certificate_origin(self) -> str:
        """For the log: where the serving certificate comes from."""
        if self.serving_cert is None:
            return "none (--insecure)"
        if self.ca_cert is None:
            return f"--tls-cert {self.serving_cert}"
        return f"generated {self.serving_cert}, CA {self.ca_cert}"

    def _serving_tls(self) -> tuple[Path, Path] | None:
        """The certificate and key gRPC and REST serve: the operator's, else generated; None with --insecure."""
        if self.config.insecure:
            return None
        if self.config.tls_cert and self.config.tls_key:
            cert, key = self.config.tls_cert, self.config.tls_key
        else:
            files = ensure_tls(self.config.tls_dir, self.config.tls_sans)
            self.ca_cert, cert, key = files.ca_cert, files.cert, files.key
        self.serving_cert = cert
        return cert, key

    async def _start_grpc(self, tls: tuple[Path, Path] | None) -> None:
        limit = self.config.max_message_bytes
        service = CommonAreaService(
            lambda: self.engine,
            self.authenticator,
            self.metrics,
            self.is_leader,
            serves_watches=self.serves_watches,
            leader_hint=self.leader_hint,
            max_message_bytes=limit,
        )
        self._grpc, self.grpc_port = await start_server(
            service,
            self._health,
            self.authenticator,
            self.metrics,
            address=self.config.grpc_address,
            tls=tls,
            max_message_bytes=limit,
        )

    async def _stop_grpc(self) -> None:
        await self._health.enter_graceful_shutdown()
        self.engine.close_watches()
        server, self._grpc = self._grpc, None
        if server is not None:
            await server.stop(self.config.shutdown_grace)

    async def _start_rest(self, tls: tuple[Path, Path] | None) -> None:
        runner = web.AppRunner(build_rest_app(self), access_log=None)
        self._rest = runner
        await runner.setup()
        host, _, port = self.config.rest_address.rpartition(":")
        ssl_context = server_ssl_context(*tls) if tls is not None else None
        site = web.TCPSite(runner, host.strip("[]"), int(port), ssl_context=ssl_context)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.rest_port = sockets[0].getsockname()[1] if sockets else int(port)

    async def _stop_rest(self) -> None:
        runner, self._rest = self._rest, None
        if runner is not None:
            await runner.cleanup()

    async def _set_health(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        await self._health.set("", status)
        await self._health.set(SERVICE_NAME, status)

    def _follow(self, source: FollowSource) -> None:
        """Serve watches and reads from the leader's history, once the follower has it."""
        follower = Follower(source, self.config, self._clock)
        if self.kube is not None:
            follower.engine.adopt_end(self.kube.clusterset.ended)
        self.follower, self.engine = follower, follower.engine
        self._following = asyncio.create_task(self._run_follower(follower), name="hub-follow")

    async def _run_follower(self, follower: Follower) -> None:
        retries = Retries(_START_BACKOFF)
        while True:
            try:
                await follower.start()
                log.info("hub replica follows the leader", extra={"replica": self._replica()})
                return
            except Exception as exc:  # the CRDs or the data dir are not there yet: try again
                delay = retries.next_delay()
                log.warning("hub follower could not start", extra={"error": str(exc), "delaySeconds": delay})
                await asyncio.sleep(delay)

    async def _stop_following(self) -> None:
        follower, task = self.follower, self._following
        self.follower, self._following = None, None
        await cancel_and_wait(task)
        if follower is not None:
            await follower.stop()

    async def take_over(self, engine: Engine) -> None:
        """This replica now holds the Lease: serve from a freshly loaded index."""
        await engine.start()
        await self._stop_following()  # its watchers end (UNAVAILABLE) and resume here, as leader
        self.engine = engine
        self._serving = True
        await self._set_health(True)
        await self._label_role(LEADER)
        if self.kube is not None:
            self.kubectl_exports = LeaderExportsWatch(self.kube.client, self.config.namespace, lambda: self.engine)
            self.kubectl_exports.start()
        log.info("hub replica is the leader", extra={"replica": self._replica(), "epoch": engine.epoch})

    async def step_down(self) -> None:
        """Lost the Lease: stop taking writes; open streams end and members reconnect; follow again."""
        if not self._serving:
            return
        self._serving = False
        await self._stop_kubectl_exports()
        self.engine.close_watches()
        await self._set_health(False)
        await self._label_role(FOLLOWER)
        log.warning("hub replica stepped down", extra={"replica": self._replica()})
        if self.kube is not None and self.started:
            self._follow(KubeFollowSource(self.kube.client, self.config.namespace))

    async def _label_role(self, role: str) -> None:
        if self.kube is not None:
            await self.kube.label_role(role)

    def _replica(self) -> str:
        """This replica's name in the Lease ("" with the SQLite store)."""
        kube_store = self.config.kube_store
        return kube_store.replica_id if kube_store is not None else ""

    async def _stop_kubectl_exports(self) -> None:
        watch, self.kubectl_exports = self.kubectl_exports, None
        if watch is not None:
            await watch.stop()

    async def adopt_identity(self, identity: ClusterSetIdentity) -> None:
        """Serve the ClusterSet the leader's ClusterSet CR describes (hub.clusterset.identity)."""
        cfg = self.config
        if (cfg.cluster_set_id, cfg.leader_cluster_id) == (identity.cluster_set_id, identity.leader_cluster_id):
            return
        self.config = replace(cfg, cluster_set_id=identity.cluster_set_id, leader_cluster_id=identity.leader_cluster_id)
        self.engine.configure(self.config)
        log.warning(
            "hub serves the ClusterSet of the leader's ClusterSet CR",
            extra={"clusterSet": identity.cluster_set_id, "leader": identity.leader_cluster_id},
        )

    async def end_clusterset(self) -> ClusterSetEnd:
        """Delete the ClusterSet (REST `DELETE /api/v1/clusterset`, SQLite store): recorded in the
        data dir first, then every announce, export and import is deleted; members are refused."""
        cfg = self.config
        if cfg.kube_store is not None:
            raise held_by_cr(cfg.cluster_set_id, cfg.namespace)
        reason = deleted_through_rest(cfg.cluster_set_id, self.now())
        self.end_record.write(cfg.cluster_set_id, reason)
        return await self.engine.end_clusterset(reason)

    # ---- background ----------------------------------------------------------

    async def _status_loop(self) -> None:
        while True:
            try:
                self.refresh_metrics()
                if self.kube is not None and self._serving:
                    await self.kube.publish_status()
                elif self.kube is not None and self.follower is not None:
                    self.follower.engine.adopt_end(self.kube.clusterset.ended)  # what the REST views show
            except asyncio.CancelledError:
                raise
            except Exception:  # one failed pass must not end the status updates for the life of the process
                log.exception("hub status pass failed")
            await asyncio.sleep(self.config.status_interval)

    def refresh_metrics(self) -> None:
        self.metrics.refresh(self.engine, self._clock(), self.config.disconnect_after)

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.bookmark_interval)
            self.engine.imports_bus.publish_all(ImportBatch(self.engine.published_revision, []))


if TYPE_CHECKING:
    from hub.replicas.leadership import LeaderSeat
    from hub.rest import RestHub

    # mypy checks here that HubApp offers the narrow views its parts are handed:
    # the Lease election drives a LeaderSeat, the REST layer reads a RestHub.
    def _views(app: HubApp) -> tuple[LeaderSeat, RestHub]:
        return app, app
