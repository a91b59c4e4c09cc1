"""What a Node says about the Multi-cluster Gateway, read by the member (election) and the agent.

* ``multicluster.antrea.io/gateway``: the Node is a Gateway candidate (any value but ``false``:
  Antrea tests only for the key; an explicit ``false`` reading as "yes" would surprise an operator).
* ``mchub.antrea.io/unreachable-gateway=<Node>[,<Node>...]``: written by the agent of a candidate
  when its probes of another active Gateway's internalIP went unanswered (``health.missThreshold``
  in a row), removed when they are answered again. In single-active mode it names at most one Node;
  in active-active mode every unanswering Gateway, sorted and comma-separated. The member takes the
  Gateway away from that Node at once instead of waiting for it to turn NotReady (about 40 s).
* ``mchub.antrea.io/handing-over: "true"`` on a Gateway CR: written by the member when an operator
  cordoned the Gateway's Node, a second before it moves the Gateway away
  (member.gateway.controller.HANDOVER_SECONDS). The Node's
  agent then masquerades every connection arriving from a remote Gateway, so the replies of what
  it received come back to it whichever Node answers once the Gateway has moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcapi.names import ANNOTATION_GATEWAY

ANNOTATION_UNREACHABLE_GATEWAY = "mchub.antrea.io/unreachable-gateway"
ANNOTATION_HANDING_OVER = "mchub.antrea.io/handing-over"


def _annotations(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return (node.get("metadata") or {}).get("annotations") or {}


def is_candidate(node: Mapping[str, Any]) -> bool:
    value = _annotations(node).get(ANNOTATION_GATEWAY)
    return value is not None and str(value).strip().lower() != "false"


def unreachable_gateways(node: Mapping[str, Any]) -> tuple[str, ...]:
    """The Gateway Nodes this Node's agent cannot reach (sorted; () for none)."""
    value = str(_annotations(node).get(ANNOTATION_UNREACHABLE_GATEWAY) or "")
    return tuple(sorted({name.strip() for name in value.split(",") if name.strip()}))


def unreachable_annotation(names: tuple[str, ...]) -> str | None:
    """The annotation's value naming ``names`` (None: remove it)."""
    return ",".join(sorted(set(names))) or None


def is_handing_over(gateway: Mapping[str, Any]) -> bool:
    """A Gateway CR whose Node hands over (``ANNOTATION_HANDING_OVER``)."""
    return str(_annotations(gateway).get(ANNOTATION_HANDING_OVER) or "").lower() == "true"
