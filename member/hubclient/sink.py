"""ExportSink: the hub session as the member's controllers see it, the one thing they hand their
results to (HubSession is one; the tests' recording sinks are others).

Every call returns at once: the session sends in the background. What is exported before the
session starts is held for its first sync bracket, so a controller may hand over its whole
desired set while the session is still being built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient.desired import ExportRejection

# Called with an export's name whenever the hub's answer on it changed (a verdict, its
# deletion, a refusal): the controller that made it looks at it again.
AnswerListener = Callable[[str], None]


class ExportSink(Protocol):
    def set_export(self, export: pb.ResourceExport) -> None:
        """Export this (replacing any earlier value of the same export_name)."""

    def remove_export(self, export_name: str) -> None:
        """Withdraw this export."""

    def verdict(self, export_name: str) -> pb.ExportStatus | None:
        """The hub's latest verdict on this export, None before its first answer."""

    def rejection(self, export_name: str) -> ExportRejection | None:
        """Why this export is not being sent, while it stays unchanged."""

    def watch_answers(self, listener: AnswerListener) -> None:
        """Call ``listener(export_name)`` from now on whenever the hub's answer on an export changed."""

    def report_import_status(self, import_name: str, succeeded: bool, reason: str = "", message: str = "") -> None:
        """Tell the hub whether this import could be applied (or how a remote Gateway answers)."""
