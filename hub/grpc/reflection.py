"""gRPC server reflection, so grpcurl and its kind can `list` and `describe` the hub.

Reflection answers only callers with a valid bearer token (a member's or the
admin's), like every call on the hub but health: the service list is harmless,
yet the hub's wire stays closed to callers without a credential, and whoever
calls the hub with grpcurl holds a token anyway. Health stays open for probes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
from grpc_reflection.v1alpha import reflection

from hub.auth.bearer import bearer_token, identify
from hub.auth.identity import Authenticator
from hub.errors import HubError
from hub.grpc.codes import abort
from hub.metrics import HubMetrics

# Every version of the reflection service (grpcurl asks v1 first, then v1alpha).
_REFLECTION_METHODS = "/grpc.reflection."

if TYPE_CHECKING:
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]


def enable_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection of `service_names` (and of reflection itself) on `server`."""
    reflection.enable_server_reflection((*service_names, reflection.SERVICE_NAME), server)


def _refusal(error: HubError) -> Handler:
    async def refuse(_: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await abort(context, error)

    return grpc.stream_stream_rpc_method_handler(refuse)


class ReflectionNeedsToken(grpc.aio.ServerInterceptor):
    """Lets a reflection call through only with a valid `authorization: Bearer <token>`."""

    def __init__(self, authenticator: Authenticator, metrics: HubMetrics) -> None:
        self._auth = authenticator
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        if not handler_call_details.method.startswith(_REFLECTION_METHODS):
            return await continuation(handler_call_details)
        refusal = await self._check(handler_call_details.invocation_metadata or ())
        return refusal if refusal is not None else await continuation(handler_call_details)

    async def _check(self, metadata: Sequence[tuple[str, str | bytes]]) -> Handler | None:
        header = next((str(value) for key, value in metadata if key == "authorization"), "")
        try:
            await identify(self._auth, bearer_token(header), self._metrics.auth_failures)
        except HubError as exc:  # no valid token, or the authenticator cannot tell now
            return _refusal(exc)
        return None
