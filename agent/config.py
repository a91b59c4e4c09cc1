"""The agent's multicluster configuration (antrea-agent.conf ``multicluster:`` section).

Antrea's keys keep their names and meaning (``enableGateway``,
``enablePodToPodConnectivity``, ``trafficEncryptionMode``, ``wireGuard.port``); the
``tunnel`` and ``health`` blocks and ``wireGuard.interface`` are mchub's own. The YAML
may be the whole antrea-agent.conf (the ``multicluster`` key is picked out) or the
section alone.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.errors import ConfigError
from agent.linux.ownership import REPLY_MARK, RETURN_MARK
from mcapi.names import GATEWAY_HEALTH_PORT

# Every link the agent creates starts with this prefix, so that cleanup and humans can
# tell ours from the primary CNI's. Linux allows at most 15 bytes in a link name.
LINK_PREFIX = "mc"
_LINK_NAME = re.compile(r"^mc[A-Za-z0-9_-]{1,13}$")

# Keys Antrea documents in the same section that this agent does not act on.
_ANTREA_KEYS_IGNORED = frozenset({"enable", "namespace"})


class TrafficEncryptionMode(enum.Enum):
    """How cross-cluster traffic between Gateways is carried."""

    NONE = "none"
    WIREGUARD = "wireGuard"


@dataclass(frozen=True)
class WireGuardConfig:
    """WireGuard between Gateways (only with trafficEncryptionMode wireGuard)."""

    port: int = 51821
    """UDP listen port of the Gateway's WireGuard device."""
    interface: str = "mc-wg0"
    """Device name; also names the wireguard-go UAPI socket, shared across netns."""


@dataclass(frozen=True)
class TunnelConfig:
    """The VXLAN tunnel between Gateways and from Nodes to their Gateway."""

    vni: int = 1702
    """VXLAN network identifier; every member of the ClusterSet must agree."""
    port: int = 4798
    """UDP port, kept away from 4789 (Antrea, Calico) and 8472 (flannel) so the
    agent can sit beside any primary CNI; every member must agree."""
    interface: str = "mc-tun0"
    """Device name."""
    mtu: int | None = None
    """Device MTU in bytes; None: the underlay MTU minus the 50-byte VXLAN overhead."""
    reply_mark: int = REPLY_MARK
    """The one bit of the packet and conntrack marks that routes replies back into the
    tunnel (see agent.linux.ownership.REPLY_MARK); Node-local, members need not agree."""
    return_mark: int = RETURN_MARK
    """The one bit that sends the replies of connections that arrived through this Node's
    tunnel straight back to their sender (agent.linux.ownership.RETURN_MARK); Node-local,
    another bit than ``reply_mark``."""
    retire_seconds: float = 20.0
    """How long a Node that stopped being a Gateway while it runs (a drain, a move) still takes
    what remote Gateways send it: they learn of the change through the hub a moment after this
    cluster's Nodes do, and a request sent to it meanwhile must not be lost."""


@dataclass(frozen=True)
class HealthConfig:
    """Probing of remote Gateways by the active Gateway, and of the active Gateway by the other candidates."""

    port: int = GATEWAY_HEALTH_PORT
    """UDP port of the probe echo responder (TCP: where kernel probes knock)."""
    interval_seconds: float = 0.3
    """Seconds between two probes of one Gateway."""
    miss_threshold: int = 3
    """Consecutive unanswered probes after which a Gateway is unreachable (0.9 s by default: a
    candidate's verdict on its own cluster's Gateway moves the Gateway)."""

    @property
    def rejoin_after_seconds(self) -> float:
        """How long a Gateway this Node set aside (agent.desired, ``unreachable``) must answer
        without a miss before flows go back to it: ten times the time to declare it unreachable
        (9 s by default), so a flapping link does not move flows at every flap. Every Node
        derives it from the same settings, so both ends of a pair take it back alike."""
        return 10 * self.interval_seconds * self.miss_threshold


@dataclass(frozen=True)
class AgentConfig:
    """The validated multicluster configuration of one agent."""

    enable_gateway: bool = False
    enable_pod_to_pod_connectivity: bool = False
    enable_stretched_network_policy: bool = False
    """Carry label identities between Gateways and enforce ClusterSet-scoped Antrea policy
    rules on the Gateway (agent.policy); every member must agree, as in Antrea."""
    traffic_encryption_mode: TrafficEncryptionMode = TrafficEncryptionMode.NONE
    wireguard: WireGuardConfig = field(default_factory=WireGuardConfig)
    tunnel: TunnelConfig = field(default_factory=TunnelConfig)
    health: HealthConfig = field(default_factory=HealthConfig)

    @property
    def wireguard_enabled(self) -> bool:
        return self.traffic_encryption_mode is TrafficEncryptionMode.WIREGUARD


def parse_agent_config(text: str) -> AgentConfig:
    """Parse YAML text; raises ConfigError naming the offending key."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"agent config is not valid YAML: {err}") from err
    if document is None:
        return AgentConfig()
    section = _mapping(document, "<root>")
    if "multicluster" in section:
        section = _mapping(section["multicluster"] or {}, "multicluster")
    return config_from_mapping(section, "multicluster")


def load_agent_config(path: str | Path) -> AgentConfig:
    """Read and parse a config file; raises ConfigError when unreadable or invalid."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read agent config {path}: {err}") from err
    return parse_agent_config(text)


def config_from_mapping(section: Mapping[str, Any], path: str = "multicluster") -> AgentConfig:
    """Validate an already-decoded ``multicluster`` section."""
    known = {
        "enableGateway",
        "enablePodToPodConnectivity",
        "enableStretchedNetworkPolicy",
        "trafficEncryptionMode",
        "wireGuard",
        "tunnel",
        "health",
    }
    _reject_unknown(section, known | _ANTREA_KEYS_IGNORED, path)
    mode_text = section.get("trafficEncryptionMode", "none")
    modes = {m.value.lower(): m for m in TrafficEncryptionMode}
    if not isinstance(mode_text, str) or mode_text.lower() not in modes:
        raise ConfigError(f"{path}.trafficEncryptionMode: must be one of none, wireGuard; got {mode_text!r}")
    return AgentConfig(
        enable_gateway=_bool(section, "enableGateway", False, path),
        enable_pod_to_pod_connectivity=_bool(section, "enablePodToPodConnectivity", False, path),
        enable_stretched_network_policy=_bool(section, "enableStretchedNetworkPolicy", False, path),
        traffic_encryption_mode=modes[mode_text.lower()],
        wireguard=_wireguard(_mapping(section.get("wireGuard") or {}, f"{path}.wireGuard"), f"{path}.wireGuard"),
        tunnel=_tunnel(_mapping(section.get("tunnel") or {}, f"{path}.tunnel"), f"{path}.tunnel"),
        health=_health(_mapping(section.get("health") or {}, f"{path}.health"), f"{path}.health"),
    )


def _wireguard(raw: Mapping[str, Any], path: str) -> WireGuardConfig:
    _reject_unknown(raw, {"port", "interface"}, path)
    default = WireGuardConfig()
    return WireGuardConfig(
        port=_int(raw, "port", default.port, path, low=1, high=65535),
        interface=_link_name(raw, "interface", default.interface, path),
    )


def _tunnel(raw: Mapping[str, Any], path: str) -> TunnelConfig:
    _reject_unknown(raw, {"vni", "port", "interface", "mtu", "replyMark", "returnMark", "retireSeconds"}, path)
    default = TunnelConfig()
    reply_mark = _single_bit(raw, "replyMark", default.reply_mark, path)
    return_mark = _single_bit(raw, "returnMark", default.return_mark, path)
    if return_mark == reply_mark:
        raise ConfigError(f"{path}.returnMark: must be another bit than replyMark ({reply_mark:#x})")
    return TunnelConfig(
        mtu=_mtu(raw, path),
        vni=_int(raw, "vni", default.vni, path, low=1, high=2**24 - 1),
        port=_int(raw, "port", default.port, path, low=1, high=65535),
        interface=_link_name(raw, "interface", default.interface, path),
        reply_mark=reply_mark,
        return_mark=return_mark,
        retire_seconds=_seconds(raw, "retireSeconds", default.retire_seconds, path),
    )


def _single_bit(raw: Mapping[str, Any], key: str, default: int, path: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**32 or value & (value - 1):
        raise ConfigError(f"{path}.{key}: must be a single bit of a 32-bit mark, e.g. 0x2000; got {value!r}")
    return value


def _health(raw: Mapping[str, Any], path: str) -> HealthConfig:
    _reject_unknown(raw, {"port", "intervalSeconds", "missThreshold"}, path)
    default = HealthConfig()
    return HealthConfig(
        port=_int(raw, "port", default.port, path, low=1, high=65535),
        interval_seconds=_seconds(raw, "intervalSeconds", default.interval_seconds, path),
        miss_threshold=_int(raw, "missThreshold", default.miss_threshold, path, low=1, high=1000),
    )


def _seconds(raw: Mapping[str, Any], key: str, default: float, path: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise ConfigError(f"{path}.{key}: must be a number in (0, 3600]; got {value!r}")
    return float(value)


def _mtu(raw: Mapping[str, Any], path: str) -> int | None:
    value = raw.get("mtu")
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 576 <= value <= 65535:
        raise ConfigError(f"{path}.mtu: must be 0 (auto) or an integer in 576..65535; got {value!r}")
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be a mapping; got {type(value).__name__}")
    return value


def _reject_unknown(raw: Mapping[str, Any], known: set[str] | frozenset[str], path: str) -> None:
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}")


def _bool(raw: Mapping[str, Any], key: str, default: bool, path: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}.{key}: must be true or false; got {value!r}")
    return value


def _int(raw: Mapping[str, Any], key: str, default: int, path: str, *, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{path}.{key}: must be an integer in {low}..{high}; got {value!r}")
    return value


def _link_name(raw: Mapping[str, Any], key: str, default: str, path: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not _LINK_NAME.match(value):
        raise ConfigError(
            f"{path}.{key}: must be a link name starting with {LINK_PREFIX!r}, at most 15 characters; got {value!r}"
        )
    return value
