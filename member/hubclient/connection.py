"""Where the hub is and how to reach it: one TLS channel, the member's bearer token on every call.

The token goes as call metadata (``call_metadata()``, given to each call), not as channel call
credentials: grpc runs a Python call-credentials plugin on a new thread for every call, which a
member reporting the status of thousands of imports pays thousands of times.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from mcapi.addresses import is_loopback_host
from mcapi.names import CLUSTER_ID_METADATA

# Default gRPC port for an https:// URL that names none.
_HTTPS_PORT = 443


class EndpointError(ValueError):
    """The endpoint is misconfigured (permanent: the operator must fix the ClusterSet or Secret)."""


def parse_target(server: str) -> str:
    """`host:port` for grpc from a ClusterSet `leaders[0].server` value.

    Accepts "host:port", "https://host:port", "https://host" (port 443), "[::1]:50051",
    with or without a trailing path, which is ignored: the hub serves gRPC at its root.
    """
    text = server.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    elif scheme.lower() not in ("https", "http", "grpc", "grpcs", "dns"):
        raise EndpointError(f"leader server {server!r} has an unknown scheme {scheme!r}")
    rest = rest.split("/", 1)[0]
    if not rest:
        raise EndpointError(f"leader server {server!r} names no host")
    if rest.startswith("["):
        host, bracket, tail = rest.partition("]")
        if not bracket:
            raise EndpointError(f"leader server {server!r} has an unclosed IPv6 bracket")
        host = host[1:]
        port = tail.removeprefix(":") if tail.startswith(":") else ""
        if tail and not tail.startswith(":"):
            raise EndpointError(f"leader server {server!r} is not HOST:PORT")
    elif rest.count(":") > 1:  # a bare IPv6 address without a port
        host, port = rest, ""
    else:
        host, _, port = rest.partition(":")
    if port and not port.isdigit():
        raise EndpointError(f"leader server {server!r} has a non-numeric port {port!r}")
    if not port:
        if scheme.lower() not in ("https", "grpcs"):
            raise EndpointError(f"leader server {server!r} needs a port")
        port = str(_HTTPS_PORT)
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}"


def _is_loopback(target: str) -> bool:
    return is_loopback_host(target.rpartition(":")[0])


CallMetadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class HubEndpoint:
    """How a member reaches its leader hub.

    `server` is the ClusterSet's `leaders[0].server`; `token` and `ca_cert` come from the
    member token Secret (`token`, `ca.crt`). `ca_cert=None` trusts the system roots.
    `insecure` talks plaintext and is only allowed to a loopback hub (as the hub allows
    `--insecure` only on loopback); the token still travels, over local credentials.
    `server_name_override` checks the hub certificate against another name than the host
    (when members reach the hub through an address missing from its certificate).
    """

    server: str
    token: str
    ca_cert: bytes | None = None
    insecure: bool = False
    server_name_override: str | None = None
    # Sent as `mchub-cluster-id` metadata on every call: a token shared by several
    # members (Antrea's default member token) speaks for the cluster named here.
    cluster_id: str = ""

    @property
    def target(self) -> str:
        return parse_target(self.server)

    def call_metadata(self) -> CallMetadata:
        """What every call carries: the bearer token (and the cluster ID a shared token speaks for)."""
        if not self.token.strip():
            raise EndpointError("the member token is empty")
        metadata: CallMetadata = (("authorization", f"Bearer {self.token.strip()}"),)
        if self.cluster_id:
            metadata += ((CLUSTER_ID_METADATA, self.cluster_id),)
        return metadata

    def credentials(self) -> grpc.ChannelCredentials:
        """The channel's transport: TLS, or local credentials to a loopback hub when insecure (the
        token is never sent over anything else)."""
        self.call_metadata()  # refuses an empty token before anything is opened
        if self.insecure:
            if not _is_loopback(self.target):
                raise EndpointError(f"an insecure hub connection is only allowed to loopback, not {self.target!r}")
            return grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
        return grpc.ssl_channel_credentials(root_certificates=self.ca_cert)

    def open_channel(
        self,
        *,
        reconnect_initial: float = 0.5,
        reconnect_max: float = 30.0,
        max_message_bytes: int = 4 * 1024 * 1024,
    ) -> grpc.aio.Channel:
        """A new channel; the caller closes it. Reconnect timing follows the session's backoff."""
        options: list[tuple[str, str | int]] = [
            # Matches the hub's server options (it accepts pings every 5 s, with or without calls).
            ("grpc.keepalive_time_ms", 20_000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            # Without these, grpc's own reconnect backoff (1 s growing to 120 s) would delay us
            # long after the hub is back, whatever the session's backoff says.
            ("grpc.initial_reconnect_backoff_ms", max(1, int(reconnect_initial * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(reconnect_max * 1000))),
            # grpc reads this one as the shortest time a connection attempt may take (TLS included).
            ("grpc.min_reconnect_backoff_ms", 10_000),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        if self.server_name_override:
            options.append(("grpc.ssl_target_name_override", self.server_name_override))
        return grpc.aio.secure_channel(self.target, self.credentials(), options=options)
