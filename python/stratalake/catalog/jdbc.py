"""The JDBC catalog (``metastore = jdbc``): Paimon's ``JdbcCatalog`` tables in SQLite or PostgreSQL.

Databases and tables are what the catalog's SQL tables register, exactly as Paimon keeps them
(``paimon-core/.../jdbc/JdbcCatalog.java``, ``JdbcUtils.java``; pypaimon's
``catalog/jdbc_catalog.py``), so Paimon's Java and Python JDBC catalogs and this one share one
metastore:

* ``paimon_tables (catalog_key, database_name, table_name)``, primary key all three;
* ``paimon_database_properties (catalog_key, database_name, property_key, property_value)``: a
  database exists once it has a row here (``exists = true`` and ``location`` are written at
  create) or a table in ``paimon_tables``;
* ``paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds, lock_owner)`` when the
  commit lock is enabled (:class:`JdbcCatalogLock`).

Every row is scoped by the ``catalog-key`` option (``jdbc`` by default), so several catalogs share
one database. Table data stays where Paimon puts it, ``<warehouse>/<db>.db/<table>``. All SQL has
bound parameters: names never reach the SQL text.

URIs: ``jdbc:sqlite:<path>`` (Python's ``sqlite3``) and ``jdbc:postgresql://host:port/db``
(psycopg 3, the ``jdbc`` extra). ``jdbc.user``, ``jdbc.password`` and the other ``jdbc.*``
options are the driver properties Paimon passes to JDBC; the ones this module cannot hand to its
driver are refused by name.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from stratalake import identifiers
from stratalake.catalog import registry
from stratalake.catalog.filesystem import Catalog, SchemaLike, build_schema, parse_identifier
from stratalake.catalog.lock import LockedFileIO
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidOptionError,
    StrataLakeError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from stratalake.identifiers import DATABASE, TABLE, check_new_name
from stratalake.spec.schema import TableSchema
from stratalake.table.table import Table

__all__ = ["JdbcCatalog", "JdbcCatalogLock", "JdbcConnectionError", "parse_duration_ms"]

_LOG = logging.getLogger(__name__)

# Option keys, as Paimon names them (CatalogOptions, JdbcCatalogOptions).
URI = "uri"
CATALOG_KEY = "catalog-key"
DEFAULT_CATALOG_KEY = "jdbc"
LOCK_ENABLED = "lock.enabled"
LOCK_TYPE = "lock.type"
LOCK_ACQUIRE_TIMEOUT = "lock-acquire-timeout"
LOCK_CHECK_MAX_SLEEP = "lock-check-max-sleep"
LOCK_KEY_MAX_LENGTH = "lock-key-max-length"
JDBC_PREFIX = "jdbc."

DEFAULT_ACQUIRE_TIMEOUT_MS = 8 * 60 * 1000  # Paimon: Duration.ofMinutes(8)
DEFAULT_CHECK_MAX_SLEEP_MS = 8 * 1000  # Paimon: Duration.ofSeconds(8)
DEFAULT_LOCK_KEY_MAX_LENGTH = 255

EXISTS_PROPERTY = "exists"
LOCATION_PROPERTY = "location"

# Paimon's table definitions, column for column (JdbcUtils.CREATE_CATALOG_TABLE,
# CREATE_DATABASE_PROPERTIES_TABLE; the lock table of its SQLite and PostgreSQL dialects, with the
# lock_owner column newer Paimon releases add).
_CREATE_TABLES = (
    "CREATE TABLE IF NOT EXISTS paimon_tables(catalog_key VARCHAR(255) NOT NULL,"
    "database_name VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
    " PRIMARY KEY (catalog_key, database_name, table_name))",
    "CREATE TABLE IF NOT EXISTS paimon_database_properties(catalog_key VARCHAR(255) NOT NULL,"
    "database_name VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_key, database_name, property_key))",
)
_CREATE_LOCK_TABLE = (
    "CREATE TABLE IF NOT EXISTS paimon_distributed_locks(lock_id VARCHAR({length}) NOT NULL,"
    "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,"
    "expire_time_seconds BIGINT DEFAULT 0 NOT NULL,lock_owner VARCHAR(36),PRIMARY KEY (lock_id))"
)
# When a lock row has expired, per dialect: the database's own clock on both sides of the
# comparison, as Paimon's SqlLite/PostgresqlDistributedLockDialect, so client clocks never matter.
_EXPIRED = {
    "sqlite": "strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds",
    "postgresql": "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
}

# jdbc.* properties handed to each driver (PgJDBC's property name -> psycopg's connect argument).
_PG_PROPERTIES = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "connectTimeout": "connect_timeout",
    "ApplicationName": "application_name",
    "options": "options",
}
_SQLITE_PROPERTIES = ("busy_timeout",)

_DURATION = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_UNITS_MS = {
    "": 1,
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_duration_ms(key: str, value: str) -> int:
    """A Paimon duration (``30 s``, ``8 min``, ``500`` = milliseconds) in milliseconds."""
    m = _DURATION.match(str(value))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS_MS:
        raise InvalidOptionError(
            f"catalog option '{key}' = '{value}' is not a duration; use e.g. '30 s', '8 min' or '500 ms'"
        )
    return int(m.group(1)) * _UNITS_MS[unit]


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(f"catalog option '{key}' = '{value}' must be 'true' or 'false'")
    return text == "true"


class JdbcConnectionError(StrataLakeError, ConnectionError):
    """The catalog's database cannot be reached (wrong ``uri``, credentials, server down)."""


class _Connection:
    """One DB-API connection to the catalog's database, reopened in a forked child.

    Statements run in autocommit; :meth:`transaction` groups several. Calls are serialised by a
    lock, since a connection is not to be shared by threads mid-statement.
    """

    def __init__(self, uri: str, options: Mapping[str, str]) -> None:
        self.uri = uri
        self.dialect, self._connect_args = _connect_args(uri, options)
        self._mutex = threading.RLock()
        self._conn: Any = None
        self._pid = -1

    @property
    def integrity_error(self) -> type[BaseException]:
        if self.dialect == "sqlite":
            return sqlite3.IntegrityError
        return self._psycopg().IntegrityError  # type: ignore[no-any-return]

    @staticmethod
    def _psycopg() -> Any:
        try:
            # Deferred: psycopg is the optional 'jdbc' extra, needed only for PostgreSQL URIs.
            import psycopg
        except ImportError as e:
            raise UnsupportedError(
                "catalog option 'uri' names PostgreSQL, whose driver is not installed; "
                "pip install 'stratalake[jdbc]' (psycopg 3)"
            ) from e
        return psycopg

    def _open(self) -> Any:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # A connection inherited from a parent process is never used: the child opens its own.
        try:
            conn = self._connect()
        except (sqlite3.Error, OSError) as e:
            raise JdbcConnectionError(self._failure(e)) from e
        except Exception as e:
            if self.dialect == "postgresql" and isinstance(e, self._psycopg().Error):
                raise JdbcConnectionError(self._failure(e)) from e
            raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _failure(self, error: BaseException) -> str:
        return (
            f"cannot connect to the JDBC catalog database of catalog option 'uri' = '{_redact_uri(self.uri)}' "
            f"({type(error).__name__}: {str(error).strip()}); check 'uri', and 'jdbc.user' / 'jdbc.password'"
        )

    def _connect(self) -> Any:
        if self.dialect == "sqlite":
            path, busy_ms = self._connect_args["database"], int(self._connect_args["busy_timeout"])
            return sqlite3.connect(
                path,
                timeout=busy_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
                uri=path.startswith("file:"),
            )
        return self._psycopg().connect(autocommit=True, **self._connect_args)

    def _sql(self, sql: str) -> str:
        return sql if self.dialect == "sqlite" else sql.replace("?", "%s")

    def _args(self, args: Sequence[object]) -> tuple[object, ...] | None:
        # psycopg parses '%' in a statement only when it has arguments: give none when there are none.
        return tuple(args) if args or self.dialect == "sqlite" else None

    def execute(self, sql: str, args: Sequence[object] = ()) -> int:
        with self._mutex:
            cur = self._open().cursor()
            try:
                cur.execute(self._sql(sql), self._args(args))
                return int(cur.rowcount)
            finally:
                cur.close()

    def fetch_all(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._mutex:
            cur = self._open().cursor()
            try:
                cur.execute(self._sql(sql), self._args(args))
                return [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._mutex:
            conn = self._open()
            if self.dialect == "sqlite":
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            else:
                with conn.transaction():
                    yield

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def _connect_args(uri: str, options: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``(dialect, driver arguments)`` of a JDBC URI and the ``jdbc.*`` options."""
    props = {k[len(JDBC_PREFIX) :]: str(v) for k, v in options.items() if k.startswith(JDBC_PREFIX)}
    if uri.startswith("jdbc:sqlite:"):
        path = uri[len("jdbc:sqlite:") :]
        if not path:
            raise InvalidOptionError("catalog option 'uri' = 'jdbc:sqlite:' names no database file")
        if "?" in path and not path.startswith("file:"):
            # sqlite-jdbc reads these as connection settings; sqlite3 would make them part of the name.
            raise InvalidOptionError(
                f"catalog option 'uri' = '{_redact_uri(uri)}': sqlite-jdbc URL parameters are not honoured; "
                "remove them (the database file is the part before '?')"
            )
        unknown = sorted(set(props) - set(_SQLITE_PROPERTIES))
        if unknown:
            raise InvalidOptionError(
                f"catalog options {[JDBC_PREFIX + k for k in unknown]} are not SQLite connection "
                f"properties stratalake honours; remove them (honoured: {[JDBC_PREFIX + k for k in _SQLITE_PROPERTIES]})"
            )
        busy = props.get("busy_timeout", "30000")
        if not busy.isdigit():
            raise InvalidOptionError(f"catalog option 'jdbc.busy_timeout' = '{busy}' must be milliseconds")
        return "sqlite", {"database": path, "busy_timeout": busy}
    if uri.startswith("jdbc:postgresql:"):
        parts = urlsplit(uri[len("jdbc:") :])
        if not parts.hostname and not parts.path.strip("/"):
            raise InvalidOptionError(
                f"catalog option 'uri' = '{uri}' is not a PostgreSQL JDBC URI; "
                "use jdbc:postgresql://host:port/database"
            )
        # As PgJDBC: parameters in the URL take precedence over the jdbc.* properties.
        props.update(dict(parse_qsl(parts.query, keep_blank_values=True)))
        unknown = sorted(set(props) - set(_PG_PROPERTIES))
        if unknown:
            raise InvalidOptionError(
                f"JDBC properties {unknown} (catalog options 'jdbc.<name>' or URI parameters) are not "
                f"PostgreSQL properties stratalake honours; remove them (honoured: {sorted(_PG_PROPERTIES)})"
            )
        args = {_PG_PROPERTIES[k]: v for k, v in props.items()}
        args["host"] = parts.hostname or "localhost"
        args["port"] = str(parts.port or 5432)
        args["dbname"] = unquote(parts.path.lstrip("/"))
        return "postgresql", args
    scheme = uri.split(":", 2)[1] if uri.startswith("jdbc:") and uri.count(":") >= 2 else uri
    raise InvalidOptionError(
        f"catalog option 'uri' = '{_redact_uri(uri)}' ({scheme}) is not a JDBC catalog database "
        "stratalake serves; use jdbc:sqlite:<path> or jdbc:postgresql://host:port/database"
    )


def _redact_uri(uri: str) -> str:
    return re.sub(r"(password=)[^&;]*", r"\1***", uri, flags=re.IGNORECASE)


class JdbcCatalogLock:
    """Paimon's JDBC distributed lock (``JdbcCatalogLock`` with its SQLite/PostgreSQL dialects).

    The lock of table ``db.t`` is the row ``lock_id = '<catalog-key>.db.t'`` of
    ``paimon_distributed_locks``: whoever inserts it holds the lock (the primary key refuses a
    second insert), deleting it releases it. Before each attempt a row older than its
    ``expire_time_seconds`` is deleted, judged by the database's clock; like Paimon, a holder
    writes ``lock-acquire-timeout`` (in whole seconds) as its expiry, so a killed holder's lock is
    taken over at most that long after it was acquired. Attempts back off from 100 ms, doubling up
    to ``lock-check-max-sleep``, until ``lock-acquire-timeout`` has passed.

    A holder that outlives its expiry (a process stalled for minutes inside a commit whose
    critical section is an existence check and one file write) can find a second writer inside
    the lock with it, as in Paimon. On a filesystem with atomic create-if-absent (local, S3 with
    conditional writes) the snapshot file itself still admits one of them; on one without, the
    later move into place can replace the earlier snapshot, which that commit's post-publish
    check (``SnapshotManager.try_commit`` re-reads its snapshot after ``publish_settle_ms``)
    reports unless the stall fell after it. Measured with two writers both inside the lock on such
    a store (``test_control_a_lock_that_excludes_no_one_loses_commits_on_the_racy_store``): 12
    commits leave fewer rows, i.e. commits are lost. What this class adds over Paimon 1.3's release: it
    deletes only its own row (``lock_owner``), so a late holder never releases its successor's
    lock.
    """

    def __init__(
        self,
        connection: _Connection,
        catalog_key: str,
        acquire_timeout_ms: int,
        check_max_sleep_ms: int,
        key_max_length: int,
    ) -> None:
        self.connection = connection
        self.catalog_key = catalog_key
        self.acquire_timeout_ms = acquire_timeout_ms
        self.check_max_sleep_ms = check_max_sleep_ms
        self.key_max_length = key_max_length
        self._expired = _EXPIRED[connection.dialect]

    def create_table(self) -> None:
        """The lock table, created if absent; a ``lock_owner`` column added to an older one."""
        conn = self.connection
        try:
            conn.execute(_CREATE_LOCK_TABLE.format(length=int(self.key_max_length)))
        except Exception:
            # Two catalogs creating it at once: the loser's error is fine if the table is there.
            conn.fetch_all("SELECT lock_id FROM paimon_distributed_locks WHERE 1 = 0")
        try:
            conn.fetch_all("SELECT lock_owner FROM paimon_distributed_locks WHERE 1 = 0")
        except Exception:
            try:
                conn.execute("ALTER TABLE paimon_distributed_locks ADD COLUMN lock_owner VARCHAR(36)")
            except Exception:
                conn.fetch_all("SELECT lock_owner FROM paimon_distributed_locks WHERE 1 = 0")

    def lock_id(self, database: str, table: str) -> str:
        """``<catalog-key>.<database>.<table>``, as Paimon's ``JdbcCatalogLock.runWithLock``."""
        lock_id = f"{self.catalog_key}.{database}.{table}"
        if len(lock_id) > self.key_max_length:
            raise InvalidOptionError(
                f"table {database}.{table}: its lock key '{lock_id}' has {len(lock_id)} characters, more "
                f"than catalog option '{LOCK_KEY_MAX_LENGTH}' = {self.key_max_length}; use shorter names"
            )
        return lock_id

    def try_acquire(self, lock_id: str, owner: str) -> bool:
        """One attempt: clear an expired row of ``lock_id``, then insert ours."""
        conn = self.connection
        conn.execute(
            f"DELETE FROM paimon_distributed_locks WHERE {self._expired} AND lock_id = ?", (lock_id,)
        )
        try:
            conn.execute(
                "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds, lock_owner) VALUES (?, ?, ?)",
                (lock_id, self.acquire_timeout_ms // 1000, owner),
            )
        except conn.integrity_error:
            return False
        return True

    def release(self, lock_id: str, owner: str) -> bool:
        """Delete our row of ``lock_id``; False when it had expired and was taken over."""
        n = self.connection.execute(
            "DELETE FROM paimon_distributed_locks WHERE lock_id = ? AND lock_owner = ?", (lock_id, owner)
        )
        return n > 0

    @contextmanager
    def hold(self, database: str, table: str) -> Iterator[None]:
        """Hold the lock of ``database.table``; :class:`CommitConflictError` past the timeout."""
        lock_id = self.lock_id(database, table)
        owner = str(uuid.uuid4())
        start = time.monotonic()
        sleep_ms = 50
        while not self.try_acquire(lock_id, owner):
            waited_ms = (time.monotonic() - start) * 1000
            if waited_ms > self.acquire_timeout_ms:
                raise CommitConflictError(
                    f"table {database}.{table}: could not acquire its JDBC catalog lock '{lock_id}' within "
                    f"'{LOCK_ACQUIRE_TIMEOUT}' = {self.acquire_timeout_ms} ms; another writer holds it "
                    "(it expires that long after it was taken if its holder died)"
                )
            sleep_ms = min(sleep_ms * 2, self.check_max_sleep_ms)
            time.sleep(sleep_ms / 1000)
        try:
            yield
        finally:
            if not self.release(lock_id, owner):
                _LOG.warning(
                    "table %s.%s: the JDBC catalog lock %r had expired before it was released "
                    "(held longer than %d ms)",
                    database,
                    table,
                    lock_id,
                    self.acquire_timeout_ms,
                )


class JdbcCatalog(Catalog):
    """A catalog whose databases and tables are registered in a JDBC database, as Paimon's.

    Example::

        cat = stratalake.Catalog("/data/wh", {"metastore": "jdbc",
                                              "uri": "jdbc:sqlite:/data/catalog.db",
                                              "lock.enabled": "true"})

    Options: ``uri`` (required), ``catalog-key`` (``jdbc``), ``jdbc.*`` driver properties
    (``jdbc.user``, ``jdbc.password``), ``lock.enabled`` (default: on for object stores, as
    Paimon), ``lock-acquire-timeout`` (8 min; also the lock's expiry), ``lock-check-max-sleep``
    (8 s), ``lock-key-max-length`` (255).
    """

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        super().__init__(warehouse, options)
        opts = self.options
        uri = str(opts.get(URI) or "").strip()
        if not uri:
            raise InvalidOptionError(
                "catalog option 'uri' is required with 'metastore' = 'jdbc'; "
                "e.g. jdbc:sqlite:/path/catalog.db or jdbc:postgresql://host:5432/database"
            )
        self.catalog_key = str(opts.get(CATALOG_KEY) or DEFAULT_CATALOG_KEY)
        lock_type = str(opts.get(LOCK_TYPE) or "jdbc").strip().lower()
        if lock_type != "jdbc":
            raise InvalidOptionError(
                f"catalog option '{LOCK_TYPE}' = '{lock_type}' is not a lock the JDBC catalog provides; "
                "remove it (the JDBC catalog's own lock is used)"
            )
        self.lock_enabled = _bool_option(opts, LOCK_ENABLED, _is_object_store(warehouse))
        acquire_ms = parse_duration_ms(
            LOCK_ACQUIRE_TIMEOUT, opts.get(LOCK_ACQUIRE_TIMEOUT, str(DEFAULT_ACQUIRE_TIMEOUT_MS))
        )
        sleep_ms = parse_duration_ms(
            LOCK_CHECK_MAX_SLEEP, opts.get(LOCK_CHECK_MAX_SLEEP, str(DEFAULT_CHECK_MAX_SLEEP_MS))
        )
        key_len_text = str(opts.get(LOCK_KEY_MAX_LENGTH, DEFAULT_LOCK_KEY_MAX_LENGTH))
        if not key_len_text.isdigit() or int(key_len_text) < 1:
            raise InvalidOptionError(
                f"catalog option '{LOCK_KEY_MAX_LENGTH}' = '{key_len_text}' must be a positive integer"
            )
        self.connection = _Connection(uri, opts)
        self._initialize()
        self.lock: JdbcCatalogLock | None = None
        if self.lock_enabled:
            self.lock = JdbcCatalogLock(
                self.connection, self.catalog_key, acquire_ms, max(1, sleep_ms), int(key_len_text)
            )
            self.lock.create_table()

    def _initialize(self) -> None:
        for sql in _CREATE_TABLES:
            try:
                self.connection.execute(sql)
            except Exception:
                # A concurrent creator won (PostgreSQL's IF NOT EXISTS is not race-free).
                table = sql.split("(", 1)[0].split()[-1]
                self.connection.fetch_all(f"SELECT catalog_key FROM {table} WHERE 1 = 0")

    def close(self) -> None:
        """Close the connection to the catalog database."""
        self.connection.close()

    def open_table(self, identifier: str, path: str, schema: TableSchema | None = None) -> Table:
        if self.lock is None:
            return Table(self.file_io, path, identifier, schema)
        db, name = parse_identifier(identifier)
        return Table(LockedFileIO(self.file_io, self.lock, db, name), path, identifier, schema)

    # -- databases ---------------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        rows = self.connection.fetch_all(
            "SELECT DISTINCT database_name FROM paimon_tables WHERE catalog_key = ?", (self.catalog_key,)
        )
        rows += self.connection.fetch_all(
            "SELECT DISTINCT database_name FROM paimon_database_properties WHERE catalog_key = ?",
            (self.catalog_key,),
        )
        return sorted({r[0] for r in rows})

    def database_exists(self, name: str) -> bool:
        identifiers.check_name(name, DATABASE)
        for table in ("paimon_tables", "paimon_database_properties"):
            rows = self.connection.fetch_all(
                f"SELECT database_name FROM {table} WHERE catalog_key = ? AND database_name = ? LIMIT 1",
                (self.catalog_key, name),
            )
            if rows:
                return True
        return False

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's properties (``location`` included, ``exists`` left out, as Paimon)."""
        if not self.database_exists(name):
            raise DatabaseNotFoundError(
                f"database '{name}' does not exist in JDBC catalog '{self.catalog_key}'"
            )
        props = dict(
            self.connection.fetch_all(
                "SELECT property_key, property_value FROM paimon_database_properties "
                "WHERE catalog_key = ? AND database_name = ?",
                (self.catalog_key, name),
            )
        )
        props.setdefault(LOCATION_PROPERTY, self.database_path(name))
        props.pop(EXISTS_PROPERTY, None)
        return {str(k): "" if v is None else str(v) for k, v in props.items()}

    def create_database(
        self, name: str, ignore_if_exists: bool = False, properties: Mapping[str, str] | None = None
    ) -> None:
        check_new_name(name, DATABASE)
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        default_location = self.database_path(name)
        location = props.get(LOCATION_PROPERTY)
        if location is not None and location.rstrip("/") != default_location:
            # Paimon's JDBC catalog stores it but keeps tables under the warehouse all the same.
            raise InvalidOptionError(
                f"database '{name}': property '{LOCATION_PROPERTY}' = '{location}' is not honoured by the "
                f"JDBC catalog, whose tables live in {default_location}; remove it"
            )
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists")
        rows = {EXISTS_PROPERTY: "true", **props, LOCATION_PROPERTY: default_location}
        try:
            with self.connection.transaction():
                for key, value in rows.items():
                    self.connection.execute(
                        "INSERT INTO paimon_database_properties "
                        "(catalog_key, database_name, property_key, property_value) VALUES (?, ?, ?, ?)",
                        (self.catalog_key, name, key, value),
                    )
        except self.connection.integrity_error as e:
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(
                f"database '{name}' already exists (created concurrently)"
            ) from e

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database '{name}' does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database '{name}' still holds tables {tables}; drop them first or use cascade"
            )
        for table in tables:
            self.drop_table(f"{name}.{table}", ignore_if_not_exists=True)
        # As Paimon: the rows go; the (now table-less) directory is left where it is.
        with self.connection.transaction():
            self.connection.execute(
                "DELETE FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
                (self.catalog_key, name),
            )
            self.connection.execute(
                "DELETE FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ?",
                (self.catalog_key, name),
            )
            if self._has_table_properties():
                self.connection.execute(
                    "DELETE FROM paimon_table_properties WHERE catalog_key = ? AND database_name = ?",
                    (self.catalog_key, name),
                )

    # -- tables -----------------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database '{database}' does not exist")
        rows = self.connection.fetch_all(
            "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
            (self.catalog_key, database),
        )
        return sorted(r[0] for r in rows)

    def _registered(self, db: str, name: str) -> bool:
        return bool(
            self.connection.fetch_all(
                "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                (self.catalog_key, db, name),
            )
        )

    def table_exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        return self._registered(db, name)

    def get_table(self, identifier: str) -> Table:
        branch = self.open_branch(identifier)
        if branch is not None:
            return branch
        db, name = parse_identifier(identifier)
        if not self._registered(db, name):
            raise TableNotFoundError(f"table {db}.{name} does not exist in JDBC catalog '{self.catalog_key}'")
        path = self.table_path(identifier)
        if not self.file_io.list_names(f"{path}/schema"):
            raise TableNotFoundError(
                f"table {db}.{name} is registered in JDBC catalog '{self.catalog_key}' but {path} holds no "
                "schema; drop it from the catalog or restore its files"
            )
        return self.open_table(f"{db}.{name}", path)

    def create_table(
        self,
        identifier: str,
        schema: SchemaLike,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Write the table's first schema, then register it (removing the files if that fails)."""
        db, name = parse_identifier(identifier)
        full = f"{db}.{name}"
        check_new_name(name, TABLE)
        if not self.database_exists(db):
            raise DatabaseNotFoundError(f"database '{db}' does not exist; create it before table {full}")
        if self._registered(db, name):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistsError(f"table {full} already exists")
        table_schema = build_schema(full, schema, primary_key, partition_keys, options, comment)
        path = self.table_path(full)
        if not self.open_table(full, path, table_schema).schema_manager.try_commit(table_schema):
            raise TableAlreadyExistsError(
                f"table {full}: {path} already holds a table's schema that JDBC catalog '{self.catalog_key}' "
                "does not register (left by another catalog or a failed drop); remove that directory first"
            )
        try:
            self.connection.execute(
                "INSERT INTO paimon_tables (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                (self.catalog_key, db, name),
            )
        except BaseException as e:
            # The schema above is ours (its create-if-absent succeeded): take it back.
            self.file_io.delete_dir(path)
            if isinstance(e, self.connection.integrity_error):
                if ignore_if_exists:
                    return self.get_table(full)
                raise TableAlreadyExistsError(f"table {full} already exists (created concurrently)") from e
            raise
        return self.open_table(full, path, table_schema)

    def _has_table_properties(self) -> bool:
        """Whether pypaimon's ``paimon_table_properties`` (its ``sync-all-properties``) is there."""
        if self.connection.dialect == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
        else:
            sql = "SELECT table_name FROM information_schema.tables WHERE table_name = ? AND table_schema = current_schema()"
        return bool(self.connection.fetch_all(sql, ("paimon_table_properties",)))

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        db, name = parse_identifier(identifier)
        where = "WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
        with self.connection.transaction():
            deleted = self.connection.execute(
                f"DELETE FROM paimon_tables {where}", (self.catalog_key, db, name)
            )
            if deleted and self._has_table_properties():  # as pypaimon's drop does
                self.connection.execute(
                    f"DELETE FROM paimon_table_properties {where}", (self.catalog_key, db, name)
                )
        if deleted == 0:
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {db}.{name} does not exist")
        self.file_io.delete_dir(self.table_path(identifier))

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Re-register the table under its new name and move its directory, as Paimon does."""
        db, name = parse_identifier(identifier)
        new_db, new_name = parse_identifier(new_identifier)
        check_new_name(new_name, TABLE)
        if not self._registered(db, name):
            raise TableNotFoundError(f"table {db}.{name} does not exist")
        if not self.database_exists(new_db):
            raise DatabaseNotFoundError(
                f"database '{new_db}' does not exist; create it before renaming into it"
            )
        if self._registered(new_db, new_name):
            raise TableAlreadyExistsError(f"table {new_db}.{new_name} already exists")
        src, dst = self.table_path(identifier), self.table_path(new_identifier)
        if self.file_io.exists(dst):
            raise TableAlreadyExistsError(
                f"cannot rename {db}.{name} to {new_db}.{new_name}: {dst} exists (files no catalog registers); "
                "remove it first"
            )
        args = (new_db, new_name, self.catalog_key, db, name)
        update = "SET database_name = ?, table_name = ? WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
        try:
            with self.connection.transaction():
                updated = self.connection.execute(f"UPDATE paimon_tables {update}", args)
                if updated and self._has_table_properties():  # as pypaimon's rename does
                    self.connection.execute(f"UPDATE paimon_table_properties {update}", args)
        except self.connection.integrity_error as e:
            raise TableAlreadyExistsError(f"table {new_db}.{new_name} already exists") from e
        if updated != 1:
            raise TableNotFoundError(f"table {db}.{name} does not exist (dropped concurrently)")
        # Paimon moves the files only when the source holds a schema; so do we.
        if self.file_io.list_names(f"{src}/schema") and not self._move(src, dst):
            back = (db, name, self.catalog_key, new_db, new_name)
            with self.connection.transaction():
                self.connection.execute(f"UPDATE paimon_tables {update}", back)
                if self._has_table_properties():
                    self.connection.execute(f"UPDATE paimon_table_properties {update}", back)
            raise TableAlreadyExistsError(f"cannot move {src} to {dst}; table {db}.{name} was left as it was")

    def _move(self, src: str, dst: str) -> bool:
        # The target database's directory may not exist yet: JDBC databases are rows, not directories.
        self.file_io.mkdirs(dst.rsplit("/", 1)[0])
        return self.file_io.rename(src, dst)


def _is_object_store(warehouse: str) -> bool:
    """Paimon turns the lock on by default where the warehouse is an object store."""
    scheme = warehouse.split("://", 1)[0].lower() if "://" in warehouse else ""
    return scheme in {"s3", "s3a", "s3n", "oss", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "cosn", "obs"}


registry.register("jdbc", JdbcCatalog)
