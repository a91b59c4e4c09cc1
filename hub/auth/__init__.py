"""Who is calling: bearer tokens mapped to a member cluster ID or the admin."""

from hub.auth.identity import ADMIN, Authenticator, Identity
from hub.auth.tokens import TokenStore

__all__ = ["ADMIN", "Authenticator", "Identity", "TokenStore"]
