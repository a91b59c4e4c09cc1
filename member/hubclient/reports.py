"""Import status reports, best effort: the latest report per import is sent, retried until it lands.

Reports go in batches (ReportImportStatuses): whatever is pending when a call can go, up to
a count and a size, so a burst of imports costs the hub a few calls instead of one per
import. A hub that does not know the batched call (an older hub, during an upgrade) gets
them one at a time (ReportImportStatus).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import grpc

from kube.backoff import Backoff, Retries
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import PermanentHubError, classify
from member.hubclient.pulse import Pulse

log = logging.getLogger(__name__)

# More distinct imports than this waiting means the hub has been gone long; drop the oldest.
_MAX_PENDING = 10_000
# One call holds at most this many reports (the hub takes 1000) and about this many bytes (a
# failure's message may be long; the hub takes 4 MiB messages by default).
MAX_BATCH = 500
MAX_BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ReportSettings:
    initial_backoff: float
    max_backoff: float
    call_timeout: float
    metadata: CallMetadata = ()  # the token, on every call


class ImportStatusReporter:
    def __init__(self, cluster_id: str, settings: ReportSettings) -> None:
        self._cluster_id = cluster_id
        self._settings = settings
        # By import name: a newer report replaces one not yet sent.
        self._pending: dict[str, pb.ImportStatus] = {}
        self._activity = Pulse()
        self._sending = False
        # Until the hub says it has no ReportImportStatuses; then one at a time until a restart.
        self._batched = True

    def report(self, import_name: str, succeeded: bool, reason: str = "", message: str = "") -> None:
        self._pending.pop(import_name, None)
        if len(self._pending) >= _MAX_PENDING:
            dropped = next(iter(self._pending))
            del self._pending[dropped]
            log.warning("import status report dropped", extra={"import": dropped})
        self._pending[import_name] = pb.ImportStatus(
            import_name=import_name, succeeded=succeeded, reason=reason, message=message
        )
        self._activity.fire()

    def idle(self) -> bool:
        return not self._pending and not self._sending

    async def wait_idle(self) -> None:
        await self._activity.wait_until(self.idle)

    async def run(self, stub: pb_grpc.CommonAreaServiceAsyncStub) -> None:
        """Send reports (including those made before the session started) until cancelled."""
        backoff = Retries(Backoff(self._settings.initial_backoff, self._settings.max_backoff))
        while True:
            if not self._pending:
                await self._activity.wait()
                continue
            batch = self._take()
            self._sending = True
            try:
                await self._send(stub, batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify(exc)
                if error.code == grpc.StatusCode.UNIMPLEMENTED and self._batched:
                    log.info("the hub takes import status reports one at a time")
                    self._batched = False
                    self._put_back(batch)
                    continue
                if isinstance(error, PermanentHubError):
                    log.warning(
                        "import status reports refused",
                        extra={"imports": len(batch), "first": batch[0][0], "code": error.code.name},
                    )
                    continue
                self._put_back(batch)
                delay = backoff.next_delay()
                log.info(
                    "import status reports failed",
                    extra={"imports": len(batch), "first": batch[0][0], "retryInSeconds": round(delay, 3)},
                )
                await asyncio.sleep(delay)
                continue
            finally:
                self._sending = False
                self._activity.fire()
            backoff.reset()

    def _take(self) -> list[tuple[str, pb.ImportStatus]]:
        """The oldest pending reports, as many as one call may carry (at least one)."""
        batch: list[tuple[str, pb.ImportStatus]] = []
        size = 0
        limit = MAX_BATCH if self._batched else 1
        for name, status in self._pending.items():
            size += status.ByteSize()
            if batch and (len(batch) >= limit or size > MAX_BATCH_BYTES):
                break
            batch.append((name, status))
        for name, _ in batch:
            del self._pending[name]
        return batch

    def _put_back(self, batch: list[tuple[str, pb.ImportStatus]]) -> None:
        """Unsent reports wait again, unless a newer one about the same import came meanwhile."""
        for name, status in batch:
            self._pending.setdefault(name, status)

    async def _send(self, stub: pb_grpc.CommonAreaServiceAsyncStub, batch: list[tuple[str, pb.ImportStatus]]) -> None:
        timeout, metadata = self._settings.call_timeout, self._settings.metadata
        if self._batched:
            request = pb.ReportImportStatusesRequest(cluster_id=self._cluster_id, statuses=[s for _, s in batch])
            await stub.ReportImportStatuses(request, timeout=timeout, metadata=metadata)
            return
        for name, status in batch:  # one, unless batched
            single = pb.ReportImportStatusRequest(
                cluster_id=self._cluster_id,
                import_name=name,
                succeeded=status.succeeded,
                reason=status.reason,
                message=status.message,
            )
            await stub.ReportImportStatus(single, timeout=timeout, metadata=metadata)
