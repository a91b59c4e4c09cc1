"""The sqlite store's schema: creation, version check, the meta row.

`meta` is a single row holding the schema version, the epoch (a random id
made with the database, so it lasts as long as the change log does), the
global revision and the revision the change log was compacted through.

Tables carry only the indexes a query of the hub uses (primary keys, the change log by
revision): the hub reads exports and imports whole, into its index, and every other index
would be written on each put, in the loop's time, for no reader. The columns beside the
bodies stay, for a person with the sqlite3 shell.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime

from hub.store.base import StoreError

SCHEMA_VERSION = 2

_CREATE_V1 = """
CREATE TABLE meta (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version    INTEGER NOT NULL,
    epoch             TEXT    NOT NULL,
    revision          INTEGER NOT NULL,
    compacted_through INTEGER NOT NULL,
    created_at        TEXT    NOT NULL
);
CREATE TABLE exports (
    export_name TEXT    PRIMARY KEY,
    cluster_id  TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    body        BLOB    NOT NULL
);
CREATE TABLE imports (
    import_name TEXT    PRIMARY KEY,
    kind        TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    body        BLOB    NOT NULL
);
CREATE TABLE members (
    cluster_id        TEXT    PRIMARY KEY,
    cluster_set_id    TEXT    NOT NULL,
    leader_cluster_id TEXT    NOT NULL,
    joined            TEXT    NOT NULL,
    last_heartbeat    TEXT    NOT NULL,
    revision          INTEGER NOT NULL,
    inventory         TEXT    NOT NULL DEFAULT '',
    global_cidr       TEXT    NOT NULL DEFAULT ''
);
-- One row per import put (body set) or delete (body NULL), seq keeping the
-- order of changes inside one revision. No semicolons in comments: the
-- script is split on them.
CREATE TABLE import_changes (
    seq         INTEGER PRIMARY KEY,
    revision    INTEGER NOT NULL,
    import_name TEXT    NOT NULL,
    body        BLOB
);
CREATE INDEX import_changes_by_revision ON import_changes (revision);
"""


class SchemaVersionTooNew(StoreError):
    """The database was written by a newer mchub; this one must not touch it."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has schema version {found}, this mchub supports up to {supported}; "
            "run a newer mchub or point --data-dir elsewhere"
        )
        self.path = path
        self.found = found
        self.supported = supported


class DatabaseUnreadable(StoreError):
    """The data file exists but is not a usable mchub database."""


@dataclass(frozen=True)
class Meta:
    schema_version: int
    epoch: str
    revision: int
    compacted_through: int


def new_epoch() -> str:
    return secrets.token_hex(8)


def ensure_schema(conn: sqlite3.Connection, path: str) -> Meta:
    """Create the schema in an empty database, or check an existing one's version.

    Runs in one immediate transaction so two processes racing to create the
    same file cannot both create it.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
            if has_meta is None:
                _create(conn)
            meta = read_meta(conn)
            if meta.schema_version > SCHEMA_VERSION:
                raise SchemaVersionTooNew(path, meta.schema_version, SCHEMA_VERSION)
            if meta.schema_version < SCHEMA_VERSION or not _ADDED_MEMBER_COLUMNS.keys() <= member_columns(conn):
                meta = _migrate(conn, meta)
            for index in _UNUSED_INDEXES:
                conn.execute(f"DROP INDEX IF EXISTS {index}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as err:
        raise DatabaseUnreadable(f"{path} is not a usable mchub database: {err}") from err
    return meta


# Indexes that databases made by earlier versions carry and no query reads (see the module doc); dropped
# when the writer opens one. An older hub reading the database does not need them either.
_UNUSED_INDEXES = ("exports_by_cluster", "exports_by_source", "imports_by_source")


# Columns of members added after version 1, each with its definition: a database made before
# one came gets it with its default when the writer opens it (hub.store.sqlite_reader reads a
# database its writer has not opened since without them).
_ADDED_MEMBER_COLUMNS = {
    # the members' inventory (their announces' cluster UID, version, properties, health)
    "inventory": "TEXT NOT NULL DEFAULT ''",
    # the member's block of the ClusterSet's global CIDR
    "global_cidr": "TEXT NOT NULL DEFAULT ''",
}


def _migrate(conn: sqlite3.Connection, meta: Meta) -> Meta:
    """Bring an older database to SCHEMA_VERSION, in the caller's transaction. Version 2 adds
    the members' inventory and global block."""
    present = member_columns(conn)
    for column, definition in _ADDED_MEMBER_COLUMNS.items():
        if column not in present:
            conn.execute(f"ALTER TABLE members ADD COLUMN {column} {definition}")
    conn.execute("UPDATE meta SET schema_version = ?", (SCHEMA_VERSION,))
    return Meta(SCHEMA_VERSION, meta.epoch, meta.revision, meta.compacted_through)


def _create(conn: sqlite3.Connection) -> None:
    for statement in _CREATE_V1.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(
        "INSERT INTO meta (id, schema_version, epoch, revision, compacted_through, created_at)"
        " VALUES (1, ?, ?, 0, 0, ?)",
        (SCHEMA_VERSION, new_epoch(), datetime.now(UTC).isoformat()),
    )


def member_columns(conn: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in conn.execute("PRAGMA table_info(members)")}


def read_meta(conn: sqlite3.Connection) -> Meta:
    row = conn.execute("SELECT schema_version, epoch, revision, compacted_through FROM meta").fetchone()
    if row is None:
        raise DatabaseUnreadable("the meta table is empty")
    return Meta(schema_version=row[0], epoch=row[1], revision=row[2], compacted_through=row[3])


_SYNCHRONOUS = {"FULL": "FULL", "NORMAL": "NORMAL"}


def connect(path: str, *, query_only: bool, synchronous: str = "FULL") -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL.

    `synchronous=FULL` in WAL mode fsyncs the WAL on every commit, so a commit that returned
    survives a process kill and a power loss. The store's writer commits with `NORMAL` (the WAL
    is written, not fsynced) and has its syncer fsync the WAL for many commits at once
    (sqlite_sync); checkpoints stay safe either way.
    """
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise DatabaseUnreadable(f"{path}: sqlite refused WAL journal mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[synchronous]}")
        if query_only:
            conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as err:
        conn.close()
        raise DatabaseUnreadable(f"{path} is not a usable mchub database: {err}") from err
    except BaseException:
        conn.close()
        raise
    return conn
