"""Bearer-token authentication: the admin token, bound ServiceAccount tokens, Secret tokens.

Tokens are JWTs shaped like the apiserver's (bound tokens carry the
`kubernetes.io` claim; Secret tokens the legacy `kubernetes.io/serviceaccount/*`
claims) but signed with HS256 and a per-sandbox key instead of RS256. A bound
token is valid while its ServiceAccount (same uid) exists and it has not expired;
a Secret token while the Secret still holds it. Authorization is not enforced:
every authenticated user may do everything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.store import ObjectStore

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER = "sandbox-admin"
ANNOTATION_SA_UID = "kubernetes.io/service-account.uid"


@dataclass(frozen=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.username, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = self.extra
        return out


@dataclass(frozen=True)
class Authenticated:
    user: UserInfo
    audiences: tuple[str, ...]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def service_account_user(namespace: str, name: str, uid: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid,
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


class TokenAuthority:
    def __init__(self, issuer: str, admin_token: str) -> None:
        self.issuer = issuer
        self.admin_token = admin_token
        self._key = secrets.token_bytes(32)

    def _sign(self, claims: dict[str, Any]) -> str:
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signature = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"

    def issue_bound(
        self, namespace: str, name: str, sa_uid: str, audiences: list[str], expiration_seconds: int
    ) -> tuple[str, int]:
        now = int(time.time())
        expires = now + expiration_seconds
        claims = {
            "aud": audiences or [API_AUDIENCE],
            "exp": expires,
            "iat": now,
            "nbf": now,
            "iss": self.issuer,
            "jti": secrets.token_hex(8),
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": sa_uid}},
        }
        return self._sign(claims), expires

    def issue_for_secret(self, namespace: str, sa_name: str, sa_uid: str, secret_name: str) -> str:
        return self._sign(
            {
                "iss": "kubernetes/serviceaccount",
                "kubernetes.io/serviceaccount/namespace": namespace,
                "kubernetes.io/serviceaccount/secret.name": secret_name,
                "kubernetes.io/serviceaccount/service-account.name": sa_name,
                "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
                "sub": f"system:serviceaccount:{namespace}:{sa_name}",
            }
        )

    def decode(self, token: str) -> dict[str, Any] | None:
        """Claims of a token this authority signed, or None."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(expected, _unb64(parts[2])):
                return None
            claims: dict[str, Any] = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        return claims


class Authenticator:
    def __init__(self, authority: TokenAuthority, store: ObjectStore) -> None:
        self.authority = authority
        self.store = store

    def authenticate(self, token: str) -> Authenticated | None:
        if token and hmac.compare_digest(token, self.authority.admin_token):
            user = UserInfo(ADMIN_USER, "", ("system:masters", "system:authenticated"))
            return Authenticated(user, (API_AUDIENCE,))
        claims = self.authority.decode(token)
        if claims is None:
            return None
        if "kubernetes.io" in claims:
            return self._bound(claims)
        return self._from_secret(claims, token)

    def _bound(self, claims: dict[str, Any]) -> Authenticated | None:
        if claims.get("exp", 0) < time.time():
            return None
        info = claims["kubernetes.io"]
        namespace, sa = info.get("namespace", ""), info.get("serviceaccount", {})
        live = self.store.get(("", "serviceaccounts"), namespace, sa.get("name", ""))
        if live is None or live["metadata"].get("uid") != sa.get("uid"):
            return None
        return Authenticated(service_account_user(namespace, sa["name"], sa["uid"]), tuple(claims.get("aud", [])))

    def _from_secret(self, claims: dict[str, Any], token: str) -> Authenticated | None:
        prefix = "kubernetes.io/serviceaccount/"
        namespace = claims.get(prefix + "namespace", "")
        secret = self.store.get(("", "secrets"), namespace, claims.get(prefix + "secret.name", ""))
        if secret is None:
            return None
        stored = (secret.get("data") or {}).get("token", "")
        if base64.b64decode(stored or "").decode(errors="replace") != token:
            return None
        name, uid = claims.get(prefix + "service-account.name", ""), claims.get(prefix + "service-account.uid", "")
        live = self.store.get(("", "serviceaccounts"), namespace, name)
        if live is None or live["metadata"].get("uid") != uid:
            return None
        return Authenticated(service_account_user(namespace, name, uid), (API_AUDIENCE,))


def token_review_status(result: Authenticated | None, wanted_audiences: list[str]) -> dict[str, Any]:
    """status of a TokenReview: authenticated only if the audiences intersect."""
    if result is None:
        return {"authenticated": False, "user": {}, "error": "invalid bearer token"}
    wanted = wanted_audiences or [API_AUDIENCE]
    common = [a for a in wanted if a in result.audiences]
    if not common:
        return {
            "authenticated": False,
            "user": {},
            "error": "[invalid bearer token, token audiences "
            f"{json.dumps(list(result.audiences))} is invalid for the target audiences {json.dumps(wanted)}]",
        }
    status: dict[str, Any] = {"authenticated": True, "user": result.user.to_dict()}
    status["audiences"] = common
    return status
