"""The hub's gRPC server: CommonAreaService, health and reflection, over TLS (or plaintext on loopback)."""

from __future__ import annotations

from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from hub.auth.identity import Authenticator
from hub.grpc.reflection import ReflectionNeedsToken, enable_reflection
from hub.grpc.service import SERVICE_NAME, CommonAreaService, handlers
from hub.metrics import HubMetrics


def options(max_message_bytes: int) -> list[tuple[str, int]]:
    """Message limits both ways; keepalive pings that find a member gone within half a minute."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 20_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]


async def start_server(
    service: CommonAreaService,
    health_servicer: health.aio.HealthServicer,
    authenticator: Authenticator,
    metrics: HubMetrics,
    *,
    address: str,
    tls: tuple[Path, Path] | None,
    max_message_bytes: int,
) -> tuple[grpc.aio.Server, int]:
    """The started server and the port it listens on; `tls`: the certificate and key it serves."""
    server = grpc.aio.server(
        interceptors=[ReflectionNeedsToken(authenticator, metrics)], options=options(max_message_bytes)
    )
    server.add_generic_rpc_handlers((handlers(service),))
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection(server, (SERVICE_NAME, health.SERVICE_NAME))
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        cert, key = tls[0].read_bytes(), tls[1].read_bytes()
        port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
    await server.start()
    return server, port
