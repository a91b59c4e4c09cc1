"""The agent's /metrics (Prometheus text format) and /healthz, for scraping and probes.

The agent's metrics (ClusterSet policy verdicts and skips) are only useful when something
can read them; the member has its own health server, which the agent may not import.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class MetricsServer:
    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        host, _, port = address.rpartition(":")
        if not port.isdigit():
            raise ValueError(f"metrics address must be HOST:PORT, got {address!r}")
        self._host = host.strip("[]") or "0.0.0.0"
        self._port = int(port)
        self._registry = registry
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self._port
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
