"""Nodes: created with their status (kubelets register that way), which is then a subresource."""

from __future__ import annotations

from sandbox.kinds.base import KindBehaviour


class NodeBehaviour(KindBehaviour):
    keeps_status_on_create = True
