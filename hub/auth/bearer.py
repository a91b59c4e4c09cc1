"""Who calls, from the bearer token a call carries: one reading for gRPC, reflection and REST.

Every call but health (and the dashboard's public page) carries `authorization: Bearer
<token>`. Its token is read here and handed to the hub's Authenticator; the caller is refused
with Unauthenticated when there is no token or none that an authenticator knows (the failure
counted), and with Unavailable when an authenticator cannot tell now (not a verdict on the
token: the caller retries).
"""

from __future__ import annotations

from prometheus_client import Counter

from hub.auth.identity import INVALID_TOKEN, Authenticator, Identity
from hub.errors import Unauthenticated


def bearer_token(header: str) -> str:
    """The token of an authorization header `Bearer <token>`; "" when it holds none."""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def identify(
    authenticator: Authenticator, token: str, failures: Counter, *, header: str = "authorization"
) -> Identity:
    """The identity `token` grants; `failures` counts the tokens refused, `header` names the
    header a refusal asks for."""
    if not token:
        raise Unauthenticated(f"missing '{header}: Bearer <token>'")
    identity = await authenticator.authenticate(token)
    if identity is None:
        failures.inc()
        raise Unauthenticated(INVALID_TOKEN)
    return identity
