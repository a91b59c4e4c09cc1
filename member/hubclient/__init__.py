"""The member's connection to its leader hub, independent of Kubernetes.

Reconcilers say "this is what I export now" (`HubSession.set_export`, `remove_export`,
`replace_all`; `ExportSink` is what they see of it) and are told what to import (an async
`ImportConsumer` of `Upsert`, `Delete`, `Synced`, `Resumed`); the session owns announces,
streams, resumption and retries.
"""

from member.hubclient.connection import EndpointError, HubEndpoint, parse_target
from member.hubclient.desired import ExportRejection
from member.hubclient.errors import (
    HubCallError,
    NotJoinedHubError,
    PermanentHubError,
    ResumeHubError,
    TemporaryHubError,
)
from member.hubclient.events import Delete, ImportConsumer, ImportEvent, Resumed, Synced, Upsert, WatchPosition
from member.hubclient.session import HubSession, HubSessionConfig
from member.hubclient.sink import AnswerListener, ExportSink
from member.hubclient.state import ConnectionState

__all__ = [
    "AnswerListener",
    "ConnectionState",
    "Delete",
    "EndpointError",
    "ExportRejection",
    "ExportSink",
    "HubCallError",
    "HubEndpoint",
    "HubSession",
    "HubSessionConfig",
    "ImportConsumer",
    "ImportEvent",
    "NotJoinedHubError",
    "PermanentHubError",
    "ResumeHubError",
    "Resumed",
    "Synced",
    "TemporaryHubError",
    "Upsert",
    "WatchPosition",
    "parse_target",
]
