"""Telling the hub this member leaves the ClusterSet (rpc Leave), once, at the end of a session.

Called after the export stream drained (the withdrawals were answered) and the announcer
stopped, so no heartbeat re-admits the member after it left. Retried while the hub is
unreachable, up to a deadline: a member that cannot say goodbye stays in the ClusterSet as
Disconnected until the operator removes it (`mcctl delete member`).
"""

from __future__ import annotations

import asyncio
import logging

from kube.backoff import Retries
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import PermanentHubError, classify

log = logging.getLogger(__name__)


async def leave(
    stub: pb_grpc.CommonAreaServiceAsyncStub,
    cluster_id: str,
    *,
    within: float,
    call_timeout: float,
    backoff: Retries,
    metadata: CallMetadata = (),
) -> bool:
    """Whether the hub heard it (it then holds nothing of this member)."""
    request = pb.LeaveRequest(cluster_id=cluster_id)
    try:
        async with asyncio.timeout(within):
            while True:
                try:
                    answer = await stub.Leave(request, timeout=call_timeout, metadata=metadata)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    error = classify(exc)
                    if isinstance(error, PermanentHubError):
                        log.warning(
                            "the hub refused the leave", extra={"code": error.code.name, "details": error.details}
                        )
                        return False
                    await asyncio.sleep(backoff.next_delay())
                    continue
                log.info(
                    "left the clusterset",
                    extra={
                        "clusterID": cluster_id,
                        "wasMember": answer.was_member,
                        "deleted": len(answer.deleted_exports),
                    },
                )
                return True
    except TimeoutError:
        log.warning(
            "the hub did not hear this member leave; it stays in the ClusterSet, Disconnected, until removed",
            extra={"clusterID": cluster_id, "timeoutSeconds": within},
        )
        return False
