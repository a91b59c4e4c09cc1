"""HTTP endpoints for a controller's probes and Prometheus scrapes.

/healthz answers while the process serves requests (liveness). With a readiness callback,
/readyz answers 200 or 503 with the reason (readiness). With a registry, /metrics serves it
in the Prometheus text format.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Readiness = Callable[[], tuple[bool, str]]


def parse_address(address: str, what: str = "probe address") -> tuple[str, int]:
    """HOST:PORT (IPv6 in brackets; no host: every address) -> (host, port); ValueError naming ``what``."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{what} must be HOST:PORT, got {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


class ProbeServer:
    def __init__(
        self,
        address: str,
        *,
        readiness: Readiness | None = None,
        registry: CollectorRegistry | None = None,
        what: str = "probe address",
    ) -> None:
        """``address``: HOST:PORT (port 0: any free port, see ``port`` once started);
        ``what`` names the address in the ValueError a bad one raises."""
        self._host, self._port = parse_address(address, what)
        self._readiness = readiness
        self._registry = registry
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        if self._readiness is not None:
            app.router.add_get("/readyz", self._readyz)
        if self._registry is not None:
            app.router.add_get("/metrics", self._metrics)
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

    async def _readyz(self, _: web.Request) -> web.Response:
        assert self._readiness is not None
        ready, why = self._readiness()
        return web.Response(status=200 if ready else 503, text=why or ("ok" if ready else "not ready"))

    async def _metrics(self, _: web.Request) -> web.Response:
        assert self._registry is not None
        return web.Response(body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
