"""Typed errors of the datapath agent.

``temporary`` tells the runner whether retrying the same inputs can succeed (a
netlink race, a daemon still starting) or not (bad config, invalid local inputs).
"""

from __future__ import annotations


class AgentError(Exception):
    """Base of every error the agent raises on purpose."""

    temporary: bool = False


class ConfigError(AgentError):
    """The multicluster agent configuration is invalid."""


class InvalidInputsError(AgentError):
    """The local inputs (node, gateway) cannot be turned into a datapath."""


class DatapathError(AgentError):
    """Programming the kernel failed; usually worth a retry."""

    temporary = True

    def __init__(self, message: str, *, temporary: bool = True) -> None:
        super().__init__(message)
        self.temporary = temporary


class NetlinkError(DatapathError):
    """A netlink (pyroute2) request failed."""


class NftablesError(DatapathError):
    """``nft`` refused or failed to apply our table."""


class SysctlError(DatapathError):
    """A sysctl under /proc/sys could not be set."""


class WireGuardError(DatapathError):
    """wireguard-go or ``wg`` failed."""


class ToolMissingError(DatapathError):
    """A required executable (nft, wg, wireguard-go, ip) is not installed."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"required tool {tool!r} is not installed", temporary=False)
        self.tool = tool
