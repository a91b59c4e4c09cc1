"""ReportImportStatus, best effort: the latest report per import is sent, retried until it lands."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.backoff import Backoff
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import PermanentHubError, classify
from member.hubclient.pulse import Pulse

log = logging.getLogger(__name__)

# More distinct imports than this waiting means the hub has been gone long; drop the oldest.
_MAX_PENDING = 10_000


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
        self._pending: dict[str, pb.ReportImportStatusRequest] = {}
        self._activity = Pulse()
        self._sending = False

    def report(self, import_name: str, succeeded: bool, reason: str = "", message: str = "") -> None:
        self._pending.pop(import_name, None)
        if len(self._pending) >= _MAX_PENDING:
            dropped = next(iter(self._pending))
            del self._pending[dropped]
            log.warning("import status report dropped", extra={"import": dropped})
        self._pending[import_name] = pb.ReportImportStatusRequest(
            cluster_id=self._cluster_id, import_name=import_name, succeeded=succeeded, reason=reason, message=message
        )
        self._activity.fire()

    def idle(self) -> bool:
        return not self._pending and not self._sending

    async def wait_idle(self) -> None:
        await self._activity.wait_until(self.idle)

    async def run(self, stub: pb_grpc.CommonAreaServiceAsyncStub) -> None:
        """Send reports (including those made before the session started) until cancelled."""
        backoff = Backoff(self._settings.initial_backoff, self._settings.max_backoff)
        while True:
            if not self._pending:
                await self._activity.wait()
                continue
            name, request = next(iter(self._pending.items()))
            del self._pending[name]
            self._sending = True
            try:
                await stub.ReportImportStatus(
                    request, timeout=self._settings.call_timeout, metadata=self._settings.metadata
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify(exc)
                if isinstance(error, PermanentHubError):
                    log.warning("import status report refused", extra={"import": name, "code": error.code.name})
                    continue
                # Put it back unless a newer report for the same import came meanwhile.
                self._pending.setdefault(name, request)
                delay = backoff.next_delay()
                log.info("import status report failed", extra={"import": name, "retryInSeconds": round(delay, 3)})
                await asyncio.sleep(delay)
                continue
            finally:
                self._sending = False
                self._activity.fire()
            backoff.reset()
