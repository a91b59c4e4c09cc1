"""SandboxServer: one in-memory Kubernetes-API-compatible cluster on 127.0.0.1.

    srv = SandboxServer(name="east", service_cidr="10.96.0.0/12", work_dir=Path("/tmp/east"))
    await srv.start()   # srv.url, srv.kubeconfig_path, srv.admin_token, srv.ca_path
    ...
    await srv.stop()

Several servers can share one event loop. At start the namespaces default,
kube-system, kube-public and kube-node-lease exist, as does the kubernetes Service
(first address of the Service CIDR) and its Endpoints; the event log then starts
empty, so a watch from any earlier resourceVersion (e.g. "1") is 410 Gone.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
from pathlib import Path

from aiohttp import web

from sandbox.app import build_app
from sandbox.auth import Authenticator, TokenAuthority
from sandbox.builtin_kinds import builtin_catalog
from sandbox.context import ApiContext
from sandbox.kinds.crds import CRDS, CRDBehaviour, CRDController
from sandbox.kinds.garbage_collector import GarbageCollector
from sandbox.kinds.namespaces import NamespaceBehaviour, NamespaceController
from sandbox.kinds.nodes import NodeBehaviour
from sandbox.kinds.service_accounts import SecretBehaviour, TokenController
from sandbox.kinds.services import ClusterIPAllocator, ServiceBehaviour
from sandbox.kubeconfig import write_kubeconfig
from sandbox.registry import NAMESPACES, Registry
from sandbox.resources import ResourceCatalog
from sandbox.store import ObjectStore
from sandbox.tls import prepare_tls

log = logging.getLogger(__name__)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_SHUTDOWN_TIMEOUT = 2.0


class SandboxServer:
    def __init__(
        self,
        name: str,
        service_cidr: str = "10.96.0.0/12",
        work_dir: Path | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        bookmark_interval: float = 60.0,
        event_window: int = 100_000,
    ) -> None:
        self.name = name
        self.service_cidr = service_cidr
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix=f"mchub-sandbox-{name}-"))
        self.host = host
        self.admin_token = secrets.token_urlsafe(32)
        self._requested_port = port
        self._bookmark_interval = bookmark_interval
        self._event_window = event_window
        self._runner: web.AppRunner | None = None
        self._port = 0
        self.store = ObjectStore(event_window)
        self.catalog: ResourceCatalog = builtin_catalog()
        self.registry = Registry(self.store)

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self._port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.work_dir / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        return self.work_dir / "ca.crt"

    async def start(self) -> None:
        tls = prepare_tls(self.work_dir, self.name)
        ca_pem = tls.ca_pem()
        authority = TokenAuthority(f"https://kubernetes.default.svc.cluster.local#{self.name}", self.admin_token)
        ctx = ApiContext(
            name=self.name,
            catalog=self.catalog,
            store=self.store,
            registry=self.registry,
            authority=authority,
            authenticator=Authenticator(authority, self.store),
            bookmark_interval=self._bookmark_interval,
        )
        allocator = ClusterIPAllocator(self.service_cidr, seed=self.name)
        self._wire_kinds(ctx, allocator, ca_pem)
        self._bootstrap(allocator)

        self._runner = web.AppRunner(
            build_app(ctx), handler_cancellation=True, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT
        )
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.host,
            self._requested_port,
            ssl_context=tls.server_context(),
        )
        await site.start()
        self._port = int(self._runner.addresses[0][1])
        ctx.server_address = f"{self.host}:{self._port}"
        self._publish_endpoints()
        write_kubeconfig(
            self.kubeconfig_path, cluster=self.name, server=self.url, ca_pem=ca_pem, token=self.admin_token
        )
        self.store.compact()
        log.info("sandbox started", extra={"cluster": self.name, "url": self.url})

    def _wire_kinds(self, ctx: ApiContext, allocator: ClusterIPAllocator, ca_pem: str) -> None:
        registry = self.registry
        registry.register_behaviour(NAMESPACES, NamespaceBehaviour())
        registry.register_behaviour(("", "services"), ServiceBehaviour(allocator))
        registry.register_behaviour(("", "secrets"), SecretBehaviour())
        registry.register_behaviour(("", "nodes"), NodeBehaviour())
        registry.register_behaviour(CRDS, CRDBehaviour())
        for controller in (
            CRDController(registry, self.catalog),
            NamespaceController(registry, self.catalog, ca_pem),
            GarbageCollector(registry, self.catalog),
            TokenController(registry, ctx.authority, ca_pem),
        ):
            self.store.add_listener(controller.on_event)

    def _bootstrap(self, allocator: ClusterIPAllocator) -> None:
        namespaces = self.catalog.lookup("", "v1", "namespaces")
        services = self.catalog.lookup("", "v1", "services")
        assert namespaces is not None and services is not None
        for ns in INITIAL_NAMESPACES:
            self.registry.create(namespaces, "", {"metadata": {"name": ns}})
        self.registry.create(
            services,
            "default",
            {
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {
                    "clusterIP": allocator.first_host,
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                },
            },
        )

    def _publish_endpoints(self) -> None:
        endpoints = self.catalog.lookup("", "v1", "endpoints")
        assert endpoints is not None
        self.registry.create(
            endpoints,
            "default",
            {
                "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [
                    {
                        "addresses": [{"ip": self.host}],
                        "ports": [{"name": "https", "port": self._port, "protocol": "TCP"}],
                    }
                ],
            },
        )

    def compact(self) -> None:
        """Drop the watch event log, as etcd compaction does: older resourceVersions become 410 Gone."""
        self.store.compact()

    async def stop(self) -> None:
        self.store.close_watchers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        log.info("sandbox stopped", extra={"cluster": self.name})
