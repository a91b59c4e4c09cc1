"""HubSession: the whole conversation of one member cluster with its leader hub.

The member says what it exports now (`set_export`, `remove_export`, `replace_all`) and
is told what to import (an async consumer of `ImportEvent`s). Behind that, four loops
share one channel and survive hub restarts and network failures on their own:

- announce: at start and every heartbeat interval; its outcome is `state.connected`;
- exports: one Export stream, a sync bracket on every (re)connect, then changes;
- imports: one WatchImports stream, resumed from the last applied position;
- import status reports: best effort, retried.

Streams wait for the first successful Announce (the hub wants members joined before they
export); a stream that loses the hub asks for an Announce at once, so `connected` comes back
as soon as the hub does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType

import grpc

from kube.backoff import Backoff, Retries
from kube.waiting import cancel_and_wait
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.announce import Announcer, AnnounceSettings
from member.hubclient.connection import HubEndpoint, parse_target
from member.hubclient.desired import DesiredExports, ExportRejection
from member.hubclient.events import ImportConsumer, WatchPosition
from member.hubclient.export_stream import ExportPump, ExportSettings, RejectionListener, VerdictListener
from member.hubclient.leave import leave as leave_clusterset
from member.hubclient.reports import ImportStatusReporter, ReportSettings
from member.hubclient.retry import RetryPacing
from member.hubclient.sink import AnswerListener
from member.hubclient.state import ConnectionState, StateListener, StateTracker
from member.hubclient.verdicts import VerdictBook
from member.hubclient.watch import ImportWatch, WatchSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HubSessionConfig:
    """Who the member is and how patiently it talks. Durations in seconds."""

    cluster_id: str
    cluster_set_id: str
    leader_cluster_id: str = ""
    # Reconnect backoff: capped exponential with +-20% jitter.
    initial_backoff: float = 0.5
    max_backoff: float = 30.0
    # Between attempts while the hub refuses who we are (token, ClusterSet ID): the operator may fix it.
    permanent_retry_delay: float = 30.0
    # Deadline of each unary call (Announce, ReportImportStatus).
    call_timeout: float = 10.0
    # Announce this often instead of what the hub says (tests); None: the hub's interval.
    heartbeat_interval: float | None = None
    # Unanswered export writes allowed on the stream at once.
    max_in_flight: int = 128
    # Largest message; a larger export is rejected locally (RESOURCE_EXHAUSTED), never sent.
    max_message_bytes: int = 4 * 1024 * 1024
    # stop() lets in-flight export writes finish for this long, then cancels.
    stop_timeout: float = 5.0
    # Where WatchImports goes, when not to the endpoint's server: any hub replica that serves
    # watches (the Service mchub-hub-watch), so the fan-out spreads over the replicas while
    # writes (announces, exports, reports) go to the leader. Same token, CA and name checks.
    watch_server: str = ""

    def validate(self) -> HubSessionConfig:
        if not self.cluster_id or not self.cluster_set_id:
            raise ValueError("a hub session needs a cluster ID and a ClusterSet ID")
        if not 0 < self.initial_backoff <= self.max_backoff:
            raise ValueError("backoff: 0 < initial_backoff <= max_backoff")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if self.watch_server:
            parse_target(self.watch_server)  # EndpointError (a ValueError) when malformed
        return self


class HubSession:
    """Start with `await start()` (or `async with`), stop with `await stop()`.

    Listeners (`on_verdict`, `on_rejected`, `on_state_change`, and those added with
    `watch_answers`) are plain callables called on the event loop; they must not block.
    `on_import_event` (or the consumer given to `consume_imports` before `start()`) is awaited,
    one event at a time, and returning acknowledges the event (see `member.hubclient.events`);
    without one the session does not watch imports. `watch_from` and `known_imports` are what a
    restarted member persisted (`import_position`, `known_imports`) so it resumes instead of
    resyncing. Exports set and reports made before `start()` are kept and sent once connected
    (the first sync bracket then already holds the member's whole desired set). A HubSession
    is an `ExportSink`.
    """

    def __init__(
        self,
        endpoint: HubEndpoint,
        config: HubSessionConfig,
        *,
        on_import_event: ImportConsumer | None = None,
        on_verdict: VerdictListener | None = None,
        on_rejected: RejectionListener | None = None,
        on_state_change: StateListener | None = None,
        watch_from: WatchPosition | None = None,
        known_imports: Iterable[str] | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._config = config.validate()
        self._on_rejected = on_rejected
        self._tracker = StateTracker(on_state_change)
        self._desired = DesiredExports(config.max_message_bytes - 1024)  # room for the request envelope
        self._verdicts = VerdictBook()
        self._channel: grpc.aio.Channel | None = None
        # The channel of the import watch when it goes elsewhere (HubSessionConfig.watch_server).
        self._watch_channel: grpc.aio.Channel | None = None
        self._stub: pb_grpc.CommonAreaServiceAsyncStub | None = None
        # After stop(leave=True): whether the hub heard the leave (None: never asked to leave).
        self.left: bool | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._export_task: asyncio.Task[None] | None = None
        self._announcer: Announcer | None = None
        self._exports: ExportPump | None = None
        self._watch: ImportWatch | None = None
        self._reports = ImportStatusReporter(
            config.cluster_id,
            ReportSettings(config.initial_backoff, config.max_backoff, config.call_timeout, endpoint.call_metadata()),
        )
        self._consumer = on_import_event
        self._on_verdict = on_verdict
        self._answer_listeners: list[AnswerListener] = []
        self._watch_from = watch_from
        self._known_imports = known_imports
        # What the announces say of the cluster (member.about.inventory), beside who it is.
        self._inventory = pb.AnnounceRequest()

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        if self._channel is not None:
            raise RuntimeError("the hub session is already started")
        cfg = self._config
        channel = self._endpoint.open_channel(
            reconnect_initial=cfg.initial_backoff,
            reconnect_max=cfg.max_backoff,
            max_message_bytes=cfg.max_message_bytes,
        )
        self._channel = channel
        stub = pb_grpc.CommonAreaServiceStub(channel)
        self._stub = stub
        pacing = RetryPacing(cfg.initial_backoff, cfg.max_backoff, cfg.permanent_retry_delay)
        self._announcer = Announcer(
            stub,
            self._announce_request,
            self._tracker,
            AnnounceSettings(
                pacing,
                cfg.call_timeout,
                cfg.heartbeat_interval,
                self._endpoint.call_metadata(),
            ),
            name=cfg.cluster_id,
        )
        self._exports = ExportPump(
            stub,
            self._desired,
            self._verdicts,
            self._tracker,
            ExportSettings(
                pacing,
                cfg.max_in_flight,
                self._endpoint.call_metadata(),
            ),
            on_verdict=self._heard_verdict,
            on_rejected=self._heard_rejection,
            on_not_joined=self._announcer.poke,
        )
        self._tasks = [
            asyncio.create_task(self._announcer.run(), name=f"hubclient-announce-{cfg.cluster_id}"),
            asyncio.create_task(self._reports.run(stub), name=f"hubclient-reports-{cfg.cluster_id}"),
        ]
        self._export_task = asyncio.create_task(self._exports.run(), name=f"hubclient-exports-{cfg.cluster_id}")
        if self._watch is not None:  # started again after a stop: carry on from where it was
            self._watch_from, self._known_imports = self._watch.position, self._watch.known_imports
        if self._consumer is not None:
            watch_stub = stub
            if cfg.watch_server:
                self._watch_channel = dataclasses.replace(self._endpoint, server=cfg.watch_server).open_channel(
                    reconnect_initial=cfg.initial_backoff,
                    reconnect_max=cfg.max_backoff,
                    max_message_bytes=cfg.max_message_bytes,
                )
                watch_stub = pb_grpc.CommonAreaServiceStub(self._watch_channel)
            self._watch = ImportWatch(
                watch_stub,
                cfg.cluster_id,
                self._consumer,
                self._tracker,
                WatchSettings(
                    pacing,
                    self._endpoint.call_metadata(),
                    max_message_bytes=cfg.max_message_bytes,
                ),
                position=self._watch_from,
                known_imports=self._known_imports,
                on_lost=self._announcer.poke,
            )
            self._tasks.append(asyncio.create_task(self._watch.run(), name=f"hubclient-imports-{cfg.cluster_id}"))
        log.info(
            "hub session started",
            extra={"clusterID": cfg.cluster_id, "hub": self._endpoint.target, "watchHub": cfg.watch_server},
        )

    async def stop(self, *, leave: bool = False) -> None:
        """Let in-flight export writes and reports finish (up to stop_timeout), then close everything.

        With `leave` the member leaves the ClusterSet: once the export stream has drained (so
        the withdrawals the caller asked for with `replace_all([])` were answered) and nothing
        announces any more, the hub is told (rpc Leave, retried for up to stop_timeout) and
        deletes this member's announce and whatever it still holds of it. Without, a stop is a
        restart or a crash: the hub keeps the member, Disconnected, until it comes back.
        """
        if self._channel is None:
            return
        timeout = self._config.stop_timeout
        if self._exports is not None and self._export_task is not None:
            await self._exports.close(self._export_task, timeout)
        if self._tracker.state.connected:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._reports.wait_idle()
        await cancel_and_wait(*self._tasks)
        self._tasks, self._export_task = [], None
        if leave and self._stub is not None:
            self.left = await leave_clusterset(
                self._stub,
                self._config.cluster_id,
                within=timeout,
                call_timeout=self._config.call_timeout,
                backoff=Retries(Backoff(self._config.initial_backoff, self._config.max_backoff)),
                metadata=self._endpoint.call_metadata(),
            )
        await self._channel.close()
        self._channel = None
        if self._watch_channel is not None:
            await self._watch_channel.close()
            self._watch_channel = None
        self._tracker.update(connected=False, last_error="stopped", exports_synced=False, imports_synced=False)
        log.info("hub session stopped", extra={"clusterID": self._config.cluster_id})

    async def __aenter__(self) -> HubSession:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # ---- announces -----------------------------------------------------------

    def set_inventory(self, inventory: pb.AnnounceRequest) -> None:
        """What the announces say of the cluster from now on (its UID, version, ClusterProperties,
        control plane health; the IDs are the session's): announced at once when it changed."""
        if inventory == self._inventory:
            return
        self._inventory = pb.AnnounceRequest()
        self._inventory.CopyFrom(inventory)
        if self._announcer is not None:
            self._announcer.poke()

    def _announce_request(self) -> pb.AnnounceRequest:
        cfg = self._config
        request = pb.AnnounceRequest()
        request.CopyFrom(self._inventory)
        request.cluster_id, request.cluster_set_id = cfg.cluster_id, cfg.cluster_set_id
        request.leader_cluster_id = cfg.leader_cluster_id
        return request

    # ---- exports -------------------------------------------------------------

    def set_export(self, export: pb.ResourceExport) -> None:
        """Export this (replacing any earlier value of the same export_name)."""
        rejection = self._desired.put(export)
        if rejection is not None:
            self._tell_rejected(export.export_name, rejection)

    def remove_export(self, export_name: str) -> None:
        self._desired.remove(export_name)

    def replace_all(self, exports: Iterable[pb.ResourceExport]) -> None:
        """Make the desired set exactly `exports`."""
        for name, rejection in self._desired.replace_all(exports):
            self._tell_rejected(name, rejection)

    def exports(self) -> frozenset[str]:
        """Names of the desired exports (rejected ones included)."""
        return self._desired.names()

    def verdict(self, export_name: str) -> pb.ExportStatus | None:
        """The hub's latest verdict on this export, None before its first answer."""
        return self._verdicts.get(export_name)

    def rejection(self, export_name: str) -> ExportRejection | None:
        """Why this export is not being sent, while it stays unchanged."""
        return self._desired.rejection(export_name)

    async def wait_exports_settled(self) -> None:
        """Until the hub has been sent and has answered every desired change (bound it with asyncio.timeout)."""
        if self._exports is None:
            raise RuntimeError("the hub session is not started")
        await self._exports.wait_idle()

    def watch_answers(self, listener: AnswerListener) -> None:
        """Also call ``listener(export_name)`` whenever the hub's answer on an export changes: a
        verdict, its deletion, or a refusal (the session's own, of an export too large, included)."""
        self._answer_listeners.append(listener)

    def _tell_rejected(self, name: str, rejection: ExportRejection) -> None:
        log.warning("export rejected", extra={"exportName": name, "code": rejection.code.name})
        self._heard_rejection(name, rejection)

    def _heard_verdict(self, name: str, status: pb.ExportStatus) -> None:
        if self._on_verdict is not None:
            _tell("verdict", self._on_verdict, name, status)
        self._answered(name)

    def _heard_rejection(self, name: str, rejection: ExportRejection) -> None:
        if self._on_rejected is not None:
            _tell("rejection", self._on_rejected, name, rejection)
        self._answered(name)

    def _answered(self, name: str) -> None:
        for listener in self._answer_listeners:
            _tell("answer", listener, name)

    # ---- imports -------------------------------------------------------------

    def consume_imports(self, consumer: ImportConsumer) -> None:
        """Deliver import events to ``consumer`` (as ``on_import_event`` does); call before start()."""
        if self._consumer is not None:
            raise RuntimeError("the hub session already has an import consumer")
        if self._channel is not None:
            raise RuntimeError("the import consumer is given before the hub session starts")
        self._consumer = consumer

    @property
    def import_position(self) -> WatchPosition:
        """Persist this with `known_imports` to resume after a member restart."""
        if self._watch is None:
            return self._watch_from or WatchPosition()
        return self._watch.position

    @property
    def known_imports(self) -> frozenset[str] | None:
        """Imports delivered and not deleted since; None when the session cannot know."""
        if self._watch is None:
            return frozenset(self._known_imports) if self._known_imports is not None else None
        return self._watch.known_imports

    async def wait_imports_applied(self, revision: int) -> None:
        """Until the member applied every import change up to this hub revision (bound it with asyncio.timeout)."""
        if self._watch is None:
            raise RuntimeError("the hub session does not watch imports")
        await self._watch.wait_applied(revision)

    def report_import_status(self, import_name: str, succeeded: bool, reason: str = "", message: str = "") -> None:
        """Tell the hub whether this import could be applied; sent in the background, retried."""
        self._reports.report(import_name, succeeded, reason, message)

    async def wait_reports_sent(self) -> None:
        """Until every import status report was delivered (or refused for good)."""
        await self._reports.wait_idle()

    # ---- state ---------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._tracker.state

    async def wait_for_state(self, predicate: Callable[[ConnectionState], bool]) -> ConnectionState:
        """Until `predicate(state)` holds (bound it with asyncio.timeout)."""
        await self._tracker.wait_until(predicate)
        return self._tracker.state

    @property
    def export_streams_opened(self) -> int:
        return self._exports.streams_opened if self._exports is not None else 0

    @property
    def watch_streams_opened(self) -> int:
        return self._watch.streams_opened if self._watch is not None else 0

    @property
    def watch_snapshots(self) -> int:
        """Snapshots the import watch took (0 while every stream resumed where the last one was)."""
        return self._watch.snapshots if self._watch is not None else 0

    @property
    def announce_attempts(self) -> int:
        return self._announcer.attempts if self._announcer is not None else 0


def _tell(what: str, listener: Callable[..., None], *args: object) -> None:
    """Call a listener; its failure is logged, not the session's."""
    try:
        listener(*args)
    except Exception:
        log.exception("listener failed", extra={"listener": what, "exportName": args[0] if args else ""})
