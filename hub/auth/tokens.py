"""Hub-issued bearer tokens, stored hashed in the data dir.

A token is shown once, when it is created; the hub keeps only its SHA-256, so
a copy of the data dir does not leak working credentials. Tokens are long
random strings, so a plain hash (no salt, no stretching) is enough: there is
nothing to guess.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hub.auth.identity import ADMIN, Identity
from hub.errors import quote
from mcapi import names

TOKEN_PREFIX = "mch_"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    cluster_id TEXT NOT NULL,
    admin INTEGER NOT NULL,
    created TEXT NOT NULL
);
"""


class TokenError(Exception):
    """A token operation was refused (bad cluster ID, duplicate name, ...)."""


@dataclass(frozen=True)
class TokenInfo:
    name: str
    cluster_id: str
    admin: bool
    created: datetime


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """Issues, lists, revokes and checks tokens; safe to share across tasks."""

    def __init__(self, path: Path) -> None:
        self._path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def create(self, name: str, *, cluster_id: str = "", admin: bool = False) -> str:
        """Issue a token and return it in clear (the only time it is visible)."""
        if not names.is_dns1123_subdomain(name):
            raise TokenError(f"token name {quote(name)} must be a DNS-1123 subdomain")
        if admin == bool(cluster_id):
            raise TokenError("a token names exactly one of: a member cluster ID, or admin")
        if cluster_id and not names.is_valid_cluster_id(cluster_id):
            raise TokenError(f"cluster ID {quote(cluster_id)} must be a DNS-1123 label")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        created = datetime.now(UTC).isoformat()
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO tokens(name, digest, cluster_id, admin, created) VALUES (?,?,?,?,?)",
                    (name, _digest(token), cluster_id, int(admin), created),
                )
            except sqlite3.IntegrityError as exc:
                raise TokenError(f"a token named {quote(name)} exists already") from exc
        return token

    def delete(self, name: str) -> bool:
        with self._lock:
            cur = self._db.execute("DELETE FROM tokens WHERE name = ?", (name,))
        return cur.rowcount > 0

    def list(self) -> list[TokenInfo]:
        with self._lock:
            rows = self._db.execute("SELECT name, cluster_id, admin, created FROM tokens ORDER BY name").fetchall()
        return [TokenInfo(r[0], r[1], bool(r[2]), datetime.fromisoformat(r[3])) for r in rows]

    def lookup(self, token: str) -> Identity | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        digest = _digest(token)
        with self._lock:
            row = self._db.execute(
                "SELECT digest, cluster_id, admin FROM tokens WHERE digest = ?", (digest,)
            ).fetchone()
        if row is None or not hmac.compare_digest(row[0], digest):
            return None
        return ADMIN if row[2] else Identity(cluster_id=row[1])

    async def authenticate(self, token: str) -> Identity | None:
        # A primary-key lookup in a local file: cheap enough to run inline.
        return self.lookup(token)


def ensure_admin_token(store: TokenStore, token_file: Path) -> str:
    """Create the admin token on first start and keep it in a 0600 file."""
    if token_file.exists():
        token = token_file.read_text().strip()
        if store.lookup(token) == ADMIN:
            return token
    store.delete("admin")
    token = store.create("admin", admin=True)
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.touch(mode=0o600)
    token_file.chmod(0o600)
    token_file.write_text(token + "\n")
    return token
