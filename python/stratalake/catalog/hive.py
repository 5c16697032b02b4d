"""Paimon's Hive catalog (``metastore = hive``): databases and tables registered in a Hive Metastore.

Data stays in Paimon's layout on storage (``<database location>/<table>`` with ``schema/``,
``snapshot/``, ...); the metastore holds the registry, exactly as Paimon's ``HiveCatalog``
registers it, so Paimon's engines (Java, pypaimon) and Hive's own tools see the same tables:

* a database is a metastore database whose location is ``<warehouse>/<db>.db``;
* a table is a ``MANAGED_TABLE`` with Paimon's input/output formats, serde and storage handler,
  parameter ``table_type = PAIMON``, the table's options as parameters (``sync-all-properties``),
  its columns in Hive types, and its location; with ``metastore.partitioned-table = true`` the
  partition columns are Hive partition keys and commits add the partitions they write.

Names are lower case (the metastore folds case; Paimon's Hive catalog refuses upper case).
The metastore is reached over Thrift (``uri = thrift://host:port``) with the bindings the
``pymetastore`` package ships (``pip install stratalake[hive]``).
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from stratalake import identifiers
from stratalake.catalog import registry
from stratalake.catalog.filesystem import DB_SUFFIX, Catalog, SchemaLike, build_schema, parse_identifier
from stratalake.catalog.lock import LockedFileIO
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    StrataLakeError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from stratalake.identifiers import DATABASE, TABLE, check_name, check_new_name
from stratalake.io import FileIO
from stratalake.spec.schema import TableSchema
from stratalake.store.partition import escape_path_name
from stratalake.store.table_store import TableStore
from stratalake.table.partitions import list_partitions
from stratalake.table.table import Table
from stratalake.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

_LOG = logging.getLogger(__name__)

METASTORE = "hive"

# Catalog options (Paimon's names and defaults: CatalogOptions, HiveCatalogOptions).
URI = "uri"
LOCK_ENABLED = "lock.enabled"
LOCK_ACQUIRE_TIMEOUT = "lock.acquire-timeout"
LOCK_CHECK_MAX_SLEEP = "lock.check-max-sleep"
SYNC_ALL_PROPERTIES = "sync-all-properties"
TABLE_TYPE_OPTION = "table.type"
CLIENT_TIMEOUT = "hive.client.socket-timeout"  # stratalake's own: seconds of one Thrift call
# Paimon options of its Hive catalog that stratalake does not honour: refused by name.
_REFUSED_OPTIONS = {
    "hive-conf-dir": "give the metastore with 'uri' = 'thrift://host:port' instead",
    "hadoop-conf-dir": "configure storage with stratalake's own file-system options",
    "location-in-properties": "table locations are kept in the storage descriptor only",
    "metastore.client.class": "stratalake talks Thrift to the metastore itself",
    "client-pool-cache.keys": "stratalake keeps one connection per catalog",
    "format-table.enabled": "format tables are not served by stratalake",
    "case-sensitive": "a Hive Metastore folds names to lower case, so the catalog is case-insensitive",
    "allow-upper-case": "a Hive Metastore folds names to lower case, so the catalog is case-insensitive",
}

# What Paimon's HiveCatalog writes into the metastore for a Paimon table.
TABLE_TYPE_PROP = "table_type"
PAIMON_TABLE_TYPE = "PAIMON"
INPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonInputFormat"
OUTPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonOutputFormat"
SERDE = "org.apache.paimon.hive.PaimonSerDe"
STORAGE_HANDLER = "org.apache.paimon.hive.PaimonStorageHandler"
META_TABLE_STORAGE = "storage_handler"  # hive_metastoreConstants.META_TABLE_STORAGE
MANAGED_TABLE = "MANAGED_TABLE"
HIVE_PREFIX = "hive."
COMMENT_PROP = "comment"
OWNER_PROP = "owner"
LOCATION_PROP = "location"
PARTITIONED_TABLE = "metastore.partitioned-table"
_SYNCED_WITHOUT_ALL = ("partition.expiration-time", "data-file.path-directory")
_BATCH_GET_TABLES = 300  # Paimon's DEFAULT_TABLE_BATCH_SIZE



def _load_thrift() -> tuple[Any, Any, Any, Any, Any]:
    """The Thrift modules; imported on first use because ``pymetastore`` is an optional extra
    (``stratalake[hive]``): registering the catalog must not need it."""
    try:
        from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes  # deferred: optional extra
        from thrift.protocol import TBinaryProtocol  # deferred: optional extra
        from thrift.transport import TSocket, TTransport  # deferred: optional extra
    except ImportError as e:
        raise InvalidOptionError(
            f"catalog option 'metastore' = '{METASTORE}' needs the Thrift bindings of the pymetastore "
            "package: pip install 'stratalake[hive]'"
        ) from e
    return ThriftHiveMetastore, ttypes, TBinaryProtocol, TSocket, TTransport


def parse_uris(value: str | None) -> list[tuple[str, int]]:
    """``thrift://host:port[,thrift://host:port...]`` as (host, port) pairs, tried in order."""
    if not value or not value.strip():
        raise InvalidOptionError(
            f"catalog option '{URI}' is required with 'metastore' = '{METASTORE}': the metastore's "
            "Thrift address, e.g. 'thrift://127.0.0.1:9083'"
        )
    out = []
    for part in value.split(","):
        part = part.strip()
        parsed = urlsplit(part)
        try:
            port = parsed.port
        except ValueError:
            port = None
        if parsed.scheme != "thrift" or not parsed.hostname or port is None or parsed.path not in ("", "/"):
            raise InvalidOptionError(
                f"catalog option '{URI}' = '{part}' is not a Hive Metastore address; "
                "use 'thrift://host:port' (several separated by commas)"
            )
        out.append((parsed.hostname, port))
    return out


def _duration_ms(options: Mapping[str, str], key: str, default_ms: int) -> int:
    """A Paimon duration option ('8 min', '30 s', '500 ms', or plain milliseconds)."""
    raw = options.get(key)
    if raw is None or not str(raw).strip():
        return default_ms
    text = str(raw).strip().lower().replace(" ", "")
    units = (("ms", 1), ("min", 60_000), ("s", 1000), ("m", 60_000), ("h", 3_600_000))
    for suffix, factor in units:
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * factor
    if text.isdigit():
        return int(text)
    raise InvalidOptionError(f"catalog option '{key}' = '{raw}' is not a duration; use e.g. '30 s' or '8 min'")


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None or not str(raw).strip():
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(f"catalog option '{key}' = '{raw}' must be 'true' or 'false'")
    return text == "true"


def local_path(location: str) -> str:
    """A metastore location as a path our FileIO opens: ``file:/x`` and ``file:///x`` are ``/x``."""
    if location.startswith("file:"):
        rest = location[len("file:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):  # file://host/x: only the local host is served
                raise StrataLakeError(f"metastore location {location!r} names a remote host")
        return "/" + rest.lstrip("/")
    return location


def hive_type(dt: DataType) -> str:
    """The Hive type name Paimon's ``HiveTypeUtils`` gives a Paimon type."""
    if isinstance(dt, BooleanType):
        return "boolean"
    if isinstance(dt, TinyIntType):
        return "tinyint"
    if isinstance(dt, SmallIntType):
        return "smallint"
    if isinstance(dt, IntType):
        return "int"
    if isinstance(dt, BigIntType):
        return "bigint"
    if isinstance(dt, FloatType):
        return "float"
    if isinstance(dt, DoubleType):
        return "double"
    if isinstance(dt, DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    if isinstance(dt, CharType):
        return f"char({dt.length})" if dt.length <= 255 else "string"
    if isinstance(dt, VarCharType):
        return f"varchar({dt.length})" if dt.length <= 65535 else "string"
    if isinstance(dt, (BinaryType, VarBinaryType)):
        return "binary"
    if isinstance(dt, DateType):
        return "date"
    if isinstance(dt, (TimestampType, LocalZonedTimestampType)):
        return "timestamp"
    if isinstance(dt, ArrayType):
        return f"array<{hive_type(dt.element)}>"
    if isinstance(dt, MultisetType):
        return f"map<{hive_type(dt.element)},int>"
    if isinstance(dt, MapType):
        return f"map<{hive_type(dt.key)},{hive_type(dt.value)}>"
    if isinstance(dt, RowType):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.type)}" for f in dt.fields) + ">"
    return "string"  # TIME and anything else Hive has no type for, as Paimon maps them


class MetastoreClient:
    """One Thrift connection to a Hive Metastore, shared by a catalog's threads (calls are
    serialised: a Thrift client is not thread-safe). A broken connection is reopened on the next
    call; a call is never retried, so a create is never sent twice."""

    def __init__(self, uris: Sequence[tuple[str, int]], timeout_s: float) -> None:
        self.uris = list(uris)
        self.timeout_s = timeout_s
        self._mutex = threading.Lock()
        self._transport: Any = None
        self._client: Any = None
        self.api, self.types, self._protocol, self._socket, self._transport_mod = _load_thrift()

    def _connect(self) -> Any:
        errors = []
        for host, port in self.uris:
            sock = self._socket.TSocket(host, port)
            sock.setTimeout(self.timeout_s * 1000)
            transport = self._transport_mod.TBufferedTransport(sock)
            try:
                transport.open()
            except Exception as e:  # TTransportException: try the next address
                errors.append(f"thrift://{host}:{port}: {e}")
                continue
            self._transport = transport
            self._client = self.api.Client(self._protocol.TBinaryProtocol(transport))
            return self._client
        raise StrataLakeError(f"cannot reach the Hive Metastore ({'; '.join(errors)})")

    def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the metastore; its exceptions (NoSuchObjectException, ...) propagate."""
        t = self.types
        with self._mutex:
            client = self._client or self._connect()
            try:
                return getattr(client, method)(*args)
            except (t.NoSuchObjectException, t.AlreadyExistsException):
                raise  # the catalog maps these to its own errors where it knows the object
            except t.InvalidObjectException as e:
                # The metastore's own name rules (Hive 3 accepts letters, digits and '_').
                raise InvalidIdentifierError(f"the Hive Metastore refused {method}: {e.message}") from e
            except (t.MetaException, t.InvalidOperationException) as e:
                raise StrataLakeError(f"the Hive Metastore refused {method}: {e.message}") from e
            except (self._transport_mod.TTransportException, OSError, EOFError) as e:
                self.close_unlocked()
                where = ", ".join(f"thrift://{h}:{p}" for h, p in self.uris)
                raise StrataLakeError(
                    f"lost the connection to the Hive Metastore at {where} during {method} ({e}); "
                    "the next call reconnects"
                ) from e

    def close_unlocked(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
        self._transport = None
        self._client = None

    def close(self) -> None:
        with self._mutex:
            self.close_unlocked()


class HiveMetastoreLock:
    """Paimon's ``HiveCatalogLock``: an EXCLUSIVE table-level metastore lock per commit.

    ``lock`` queues the request; while it waits, ``check_lock`` is polled with a sleep that doubles
    from 50 ms up to ``lock.check-max-sleep``; past ``lock.acquire-timeout`` the request is
    withdrawn and :class:`CommitConflictError` raised. A lock whose holder died is expired by the
    metastore once it misses its heartbeats (``metastore.txn.timeout``, 300 s by default).
    """

    def __init__(self, client: MetastoreClient, check_max_sleep_ms: int, acquire_timeout_ms: int) -> None:
        self.client = client
        self.check_max_sleep_ms = check_max_sleep_ms
        self.acquire_timeout_ms = acquire_timeout_ms

    @contextlib.contextmanager
    def hold(self, database: str, table: str) -> Iterator[None]:
        t = self.client.types
        component = t.LockComponent(
            type=t.LockType.EXCLUSIVE, level=t.LockLevel.TABLE, dbname=database, tablename=table
        )
        request = t.LockRequest(component=[component], user=getpass.getuser(), hostname=socket.gethostname())
        response = self.client.call("lock", request)
        started = time.monotonic()
        sleep_ms = 50
        while response.state == t.LockState.WAITING:
            sleep_ms = min(sleep_ms * 2, self.check_max_sleep_ms)
            time.sleep(sleep_ms / 1000)
            response = self.client.call("check_lock", t.CheckLockRequest(lockid=response.lockid))
            if (time.monotonic() - started) * 1000 > self.acquire_timeout_ms:
                break
        if response.state != t.LockState.ACQUIRED:
            if response.state == t.LockState.WAITING:
                with contextlib.suppress(Exception):
                    self.client.call("unlock", t.UnlockRequest(lockid=response.lockid))
            raise CommitConflictError(
                f"table {database}.{table}: could not take its Hive Metastore lock within "
                f"{self.acquire_timeout_ms} ms ('{LOCK_ACQUIRE_TIMEOUT}'); another writer holds it"
            )
        try:
            yield
        finally:
            self.client.call("unlock", t.UnlockRequest(lockid=response.lockid))


class _HivePartitions:
    """Adds a table's partitions to the metastore when commits write them and drops them with
    DROP PARTITION: Paimon's ``AddPartitionCommitCallback`` and ``HiveCatalog.dropPartitions``."""

    def __init__(self, catalog: HiveCatalog, database: str, table: str) -> None:
        self.catalog = catalog
        self.database = database
        self.table = table

    def partitions_created(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
        client = self.catalog.client
        try:
            hms_table = client.call("get_table", self.database, self.table)
        except client.types.NoSuchObjectException as e:
            raise self._lost() from e
        sd = hms_table.sd
        now = int(time.time())
        parts = []
        for spec in partitions:
            part_sd = client.types.StorageDescriptor(**vars(sd))
            path = "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())
            part_sd.location = f"{sd.location.rstrip('/')}/{path}"
            parts.append(
                client.types.Partition(
                    values=list(spec.values()),
                    dbName=self.database,
                    tableName=self.table,
                    createTime=now,
                    lastAccessTime=now,
                    sd=part_sd,
                )
            )
        request = client.types.AddPartitionsRequest(
            dbName=self.database, tblName=self.table, parts=parts, ifNotExists=True, needResult=False
        )
        client.call("add_partitions_req", request)

    def partitions_dropped(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
        client = self.catalog.client
        for spec in partitions:
            # A partition the metastore does not list (written before partition sync was on) is fine.
            with contextlib.suppress(client.types.NoSuchObjectException):
                client.call("drop_partition", self.database, self.table, list(spec.values()), False)

    def marked_done(self, table: TableStore, partitions: list[dict[str, str]]) -> list[bool]:
        """Paimon's ``HiveCatalog.withDoneStatus``: ``isPartitionMarkedForEvent`` per partition."""
        client = self.catalog.client
        t = client.types
        try:
            return [
                bool(client.call("isPartitionMarkedForEvent", self.database, self.table, spec, t.PartitionEventType.LOAD_DONE))
                for spec in partitions
            ]
        except (t.UnknownTableException, t.NoSuchObjectException) as e:
            raise self._lost() from e
        except (t.UnknownPartitionException, t.InvalidPartitionException, t.UnknownDBException) as e:
            raise StrataLakeError(f"table {self.database}.{self.table}: {e.message}") from e

    def check_registered(self, table: TableStore) -> None:
        """Before a mark-done action: the metastore must still hold the table."""
        if self.catalog._hms_table(self.database, self.table) is None:
            raise self._lost()

    def _lost(self) -> TableNotFoundError:
        full = f"{self.database}.{self.table}"
        return TableNotFoundError(
            f"table {full} is not in the Hive Metastore (its data is on storage); "
            f"CALL sys.repair('{full}') registers it again"
        )

    def mark_done_events(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
        """The metastore's LOAD_DONE event for each partition (Paimon's
        ``HiveCatalog.markDonePartitions``: ``markPartitionForEvent``)."""
        client = self.catalog.client
        t = client.types
        full = f"{self.database}.{self.table}"
        for spec in partitions:
            try:
                # The metastore records the event for a partition it does not list too, as for Paimon.
                client.call("markPartitionForEvent", self.database, self.table, spec, t.PartitionEventType.LOAD_DONE)
            except t.NoSuchObjectException:
                pass  # as Paimon: nothing to mark
            except t.UnknownTableException as e:
                raise self._lost() from e
            except (t.UnknownPartitionException, t.InvalidPartitionException, t.UnknownDBException) as e:
                raise StrataLakeError(
                    f"table {full}: the Hive Metastore refused to mark partition {spec} done: {e.message}"
                ) from e


def _check_lower(kind: str, names: Sequence[str]) -> None:
    upper = [n for n in names if n != n.lower()]
    if upper:
        raise InvalidIdentifierError(
            f"{kind} name {upper} cannot contain upper case in the Hive catalog (the metastore folds "
            "names to lower case, as Paimon's Hive catalog requires); use lower case"
        )


class HiveCatalog(Catalog):
    """Databases and tables registered in a Hive Metastore, data in Paimon's layout on storage.

    Example::

        cat = stratalake.Catalog("/data/warehouse", {"metastore": "hive", "uri": "thrift://hms:9083"})
        cat.create_database("db")
        cat.create_table("db.orders", schema, primary_key=["id"])

    Options: ``uri`` (required), ``lock.enabled`` (commits under a metastore table lock),
    ``lock.acquire-timeout`` (8 min), ``lock.check-max-sleep`` (8 s), ``sync-all-properties``
    (true: every table option is a metastore table parameter; false: only ``hive.``-prefixed
    options, without the prefix), ``table.type`` (``managed`` only).
    """

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        super().__init__(warehouse, options)
        opts = self.options
        for key, why in _REFUSED_OPTIONS.items():
            if key in opts:
                raise InvalidOptionError(f"catalog option '{key}' is not supported by stratalake's Hive catalog: {why}")
        table_type = str(opts.get(TABLE_TYPE_OPTION, "managed")).strip().lower()
        if table_type != "managed":
            raise InvalidOptionError(
                f"catalog option '{TABLE_TYPE_OPTION}' = '{opts[TABLE_TYPE_OPTION]}' is not supported: "
                "stratalake's Hive catalog registers managed tables only"
            )
        self.uris = parse_uris(opts.get(URI))
        self.lock_enabled = _bool_option(opts, LOCK_ENABLED, False)
        self.sync_all_properties = _bool_option(opts, SYNC_ALL_PROPERTIES, True)
        timeout_s = _duration_ms(opts, CLIENT_TIMEOUT, 60_000) / 1000
        self.client = MetastoreClient(self.uris, timeout_s)
        self.lock = HiveMetastoreLock(
            self.client,
            _duration_ms(opts, LOCK_CHECK_MAX_SLEEP, 8_000),
            _duration_ms(opts, LOCK_ACQUIRE_TIMEOUT, 8 * 60_000),
        )
        self._io_by_root: dict[str, FileIO] = {}

    # -- plumbing ---------------------------------------------------------------------------------
    def _io(self, location: str) -> FileIO:
        """The FileIO of a location: the warehouse's when the schemes agree, else its own."""
        scheme = urlsplit(location).scheme if "://" in location else ""
        if scheme == (urlsplit(self.warehouse).scheme if "://" in self.warehouse else ""):
            return self.file_io
        root = location.split("://", 1)[0]
        io = self._io_by_root.get(root)
        if io is None:
            io = self._io_by_root[root] = FileIO.get(location, self.options)
        return io

    def _missing(self) -> type[Exception]:
        return self.client.types.NoSuchObjectException  # type: ignore[no-any-return]

    def _hms_database(self, name: str) -> Any:
        try:
            return self.client.call("get_database", name)
        except self._missing():
            return None

    def _hms_table(self, database: str, name: str) -> Any:
        try:
            return self.client.call("get_table", database, name)
        except self._missing():
            return None

    @staticmethod
    def is_paimon_table(hms_table: Any) -> bool:
        """A metastore table is Paimon's when it has Paimon's input and output formats (Paimon's test)."""
        sd = hms_table.sd
        return sd is not None and sd.inputFormat == INPUT_FORMAT and sd.outputFormat == OUTPUT_FORMAT

    def open_table(self, identifier: str, path: str, schema: TableSchema | None = None) -> Table:
        """The table at ``path``; under ``lock.enabled`` its commits take the metastore lock, and
        with ``metastore.partitioned-table`` its commits add their partitions to the metastore."""
        db, name = parse_identifier(identifier)
        io = self._io(path)
        if self.lock_enabled:
            io = LockedFileIO(io, self.lock, db, name)
        table = Table(io, path, identifier, schema)
        partitions = _HivePartitions(self, db, name)
        table.metastore_partitions = partitions  # mark-done actions reach the metastore through it
        if table.partition_codec.is_partitioned and table.options().get(PARTITIONED_TABLE, "").lower() == "true":
            table.partition_handler = partitions
        return table

    # -- databases ----------------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        """The database's location in the metastore (``<warehouse>/<name>.db`` for ours)."""
        check_name(name, DATABASE)
        db = self._hms_database(name.lower())
        if db is None or not db.locationUri:
            return super().database_path(name)
        return local_path(db.locationUri).rstrip("/")

    def list_databases(self) -> list[str]:
        return sorted(self.client.call("get_all_databases"))

    def database_exists(self, name: str) -> bool:
        check_name(name, DATABASE)
        return self._hms_database(name.lower()) is not None

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's metastore parameters, with ``comment``, ``owner`` and ``location``."""
        check_name(name, DATABASE)
        db = self._hms_database(name.lower())
        if db is None:
            raise DatabaseNotFoundError(f"database '{name}' does not exist in the Hive Metastore")
        props = dict(db.parameters or {})
        if db.description is not None:
            props[COMMENT_PROP] = db.description
        if db.ownerName is not None:
            props[OWNER_PROP] = db.ownerName
        if db.locationUri is not None:
            props[LOCATION_PROP] = db.locationUri
        return props

    def create_database(
        self, name: str, ignore_if_exists: bool = False, properties: Mapping[str, str] | None = None
    ) -> None:
        check_new_name(name, DATABASE)
        _check_lower("Database", [name])
        props = dict(properties or {})
        if LOCATION_PROP in props:
            raise InvalidOptionError(
                f"database '{name}': property '{LOCATION_PROP}' is not supported; databases of "
                f"stratalake's Hive catalog live at <warehouse>/{name}.db"
            )
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists in the Hive Metastore")
        location = identifiers.database_dir(self.warehouse, name)
        t = self.client.types
        database = t.Database(
            name=name,
            description=props.pop(COMMENT_PROP, None),
            locationUri=location,
            parameters=props,
            ownerName=props.pop(OWNER_PROP, None),
        )
        io = self._io(location)
        existed = io.exists(location)
        io.mkdirs(location)
        try:
            self.client.call("create_database", database)
        except BaseException as e:
            created_elsewhere = isinstance(e, t.AlreadyExistsException)
            if not existed and not created_elsewhere:  # leave storage as it was
                with contextlib.suppress(Exception):
                    io.delete_dir(location)
            if created_elsewhere:
                if ignore_if_exists:
                    return
                raise DatabaseAlreadyExistsError(f"database '{name}' already exists in the Hive Metastore") from e
            raise

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        check_name(name, DATABASE)
        name = name.lower()
        db = self._hms_database(name)
        if db is None:
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database '{name}' does not exist in the Hive Metastore")
        tables = self.client.call("get_all_tables", name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database '{name}' still holds tables {sorted(tables)}; drop them first or use cascade"
            )
        for table in self.list_tables(name):
            self.drop_table(f"{name}.{table}", ignore_if_not_exists=True)
        # deleteData=False: the catalog deletes the directory with its own FileIO (the metastore
        # may not reach the storage); cascade=True drops what is left (non-Paimon tables).
        self.client.call("drop_database", name, False, True)
        if db.locationUri:
            location = local_path(db.locationUri)
            io = self._io(location)
            if io.exists(location):
                io.delete_dir(location)

    # -- tables -------------------------------------------------------------------------------------
    def _split(self, identifier: str) -> tuple[str, str]:
        db, name = parse_identifier(identifier)
        return db.lower(), name.lower()

    def table_path(self, identifier: str) -> str:
        """The table's location: the metastore's for a registered table, else
        ``<database location>/<table>`` (where Paimon's HiveCatalog puts a new table)."""
        db, name = self._split(identifier)
        hms_table = self._hms_table(db, name)
        if hms_table is not None and hms_table.sd is not None and hms_table.sd.location:
            return local_path(hms_table.sd.location).rstrip("/")
        return f"{self.database_path(db)}/{name}"

    def list_tables(self, database: str) -> list[str]:
        check_name(database, DATABASE)
        database = database.lower()
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database '{database}' does not exist in the Hive Metastore")
        names = self.client.call("get_all_tables", database)
        out = []
        for start in range(0, len(names), _BATCH_GET_TABLES):
            batch = names[start : start + _BATCH_GET_TABLES]
            for t in self.client.call("get_table_objects_by_name", database, batch):
                if self.is_paimon_table(t):
                    out.append(t.tableName)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        db, name = self._split(identifier)
        hms_table = self._hms_table(db, name)
        return hms_table is not None and self.is_paimon_table(hms_table)

    def get_table(self, identifier: str) -> Table:
        """Open a table registered in the metastore; :class:`TableNotFoundError` if it is not (or is
        not a Paimon table, or its schema is missing on storage); ``db.t$branch_b`` opens a branch."""
        branch = self.open_branch(identifier)
        if branch is not None:
            return branch
        db, name = self._split(identifier)
        hms_table = self._hms_table(db, name)
        if hms_table is None:
            raise TableNotFoundError(f"table {db}.{name} does not exist in the Hive Metastore")
        if not self.is_paimon_table(hms_table):
            raise TableNotFoundError(f"table {db}.{name} in the Hive Metastore is not a Paimon table")
        path = local_path(hms_table.sd.location).rstrip("/")
        io = self._io(path)
        if not io.exists(f"{path}/schema") or not io.list_status(f"{path}/schema"):
            raise TableNotFoundError(
                f"table {db}.{name} is registered in the Hive Metastore, but has no schema at {path}"
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
        """Create a table: its schema on storage, then its metastore entry (as Paimon's
        HiveCatalog; if the metastore refuses, the directory is removed again)."""
        db, name = parse_identifier(identifier)
        check_new_name(name, TABLE)
        _check_lower("Database", [db])
        _check_lower("Table", [name])
        full = f"{db}.{name}"
        opts = dict(options or {})
        if "path" in opts:
            raise InvalidOptionError(
                f"table {full}: option 'path' is not supported by stratalake's Hive catalog; tables "
                "live at <database location>/<table>"
            )
        if not self.database_exists(db):
            raise DatabaseNotFoundError(f"database '{db}' does not exist; create it before table {full}")
        hms_table = self._hms_table(db, name)
        if hms_table is not None:
            if not self.is_paimon_table(hms_table):
                raise TableAlreadyExistsError(f"table {full} already exists in the Hive Metastore, and is not a Paimon table")
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistsError(f"table {full} already exists")
        table_schema = build_schema(full, schema, primary_key, partition_keys, opts, comment)
        _check_lower("Field", list(table_schema.field_names))
        path = f"{self.database_path(db)}/{name}"
        io = self._io(path)
        if io.exists(f"{path}/schema") and io.list_status(f"{path}/schema"):
            raise TableAlreadyExistsError(
                f"table {full}: {path} already holds a table's schema that the Hive Metastore does not "
                "list; remove the directory (or register it) before creating the table"
            )
        if not self.open_table(full, path, table_schema).schema_manager.try_commit(table_schema):
            raise TableAlreadyExistsError(f"table {full} already exists (created concurrently)")
        try:
            self.client.call("create_table", self._new_hms_table(db, name, table_schema, path))
        except BaseException as e:
            with contextlib.suppress(Exception):
                io.delete_dir(path)
            if isinstance(e, self.client.types.AlreadyExistsException):
                raise TableAlreadyExistsError(f"table {full} already exists (created concurrently)") from e
            raise
        return self.open_table(full, path, table_schema)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        db, name = self._split(identifier)
        hms_table = self._hms_table(db, name)
        if hms_table is None or not self.is_paimon_table(hms_table):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {db}.{name} does not exist in the Hive Metastore")
        path = local_path(hms_table.sd.location).rstrip("/")
        # deleteData=False: the catalog deletes the directory itself (the metastore may not reach it).
        self.client.call("drop_table", db, name, False)
        io = self._io(path)
        if io.exists(path):
            io.delete_dir(path)

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename in the metastore, then move the directory to ``<database location>/<new name>``
        unless the metastore moved it already (it does for managed tables it can reach)."""
        db, name = self._split(identifier)
        new_db, new_name = parse_identifier(new_identifier)
        check_new_name(new_name, TABLE)
        _check_lower("Table", [new_name])
        _check_lower("Database", [new_db])
        hms_table = self._hms_table(db, name)
        if hms_table is None or not self.is_paimon_table(hms_table):
            raise TableNotFoundError(f"table {db}.{name} does not exist in the Hive Metastore")
        if not self.database_exists(new_db):
            raise DatabaseNotFoundError(f"database '{new_db}' does not exist")
        if self._hms_table(new_db, new_name) is not None:
            raise TableAlreadyExistsError(f"table {new_db}.{new_name} already exists")
        from_path = local_path(hms_table.sd.location).rstrip("/")
        to_path = f"{self.database_path(new_db)}/{new_name}"
        hms_table.dbName = new_db
        hms_table.tableName = new_name
        self.client.call("alter_table", db, name, hms_table)
        io = self._io(from_path)
        if (
            from_path != to_path
            and io.exists(f"{from_path}/schema")
            and (io.exists(to_path) or not io.rename(from_path, to_path))
        ):
                raise TableAlreadyExistsError(
                    f"table {db}.{name} was renamed to {new_db}.{new_name} in the Hive Metastore, but its "
                    f"directory could not be moved to {to_path} (it exists); move it by hand"
                )
        moved = self.client.call("get_table", new_db, new_name)
        if local_path(moved.sd.location).rstrip("/") != to_path:
            moved.sd.location = to_path
            self.client.call("alter_table", new_db, new_name, moved)

    def alter_table(self, identifier: str, changes: Sequence[SchemaChange]) -> Table:
        """The schema change on storage, then the metastore entry follows it (columns, parameters);
        if the metastore refuses, the new schema file is removed again (as Paimon does)."""
        db, name = self._split(identifier)
        new_names = [ch.new_name for ch in changes if ch.action == "rename_column" and ch.new_name]
        new_names += [ch.name for ch in changes if ch.action == "add_column" and ch.name]
        _check_lower("Field", new_names)
        hms_table = self._hms_table(db, name)
        if hms_table is None or not self.is_paimon_table(hms_table):
            raise TableNotFoundError(f"table {db}.{name} does not exist in the Hive Metastore")
        table = super().alter_table(f"{db}.{name}", changes)
        new_schema = table.schema()
        removed = {ch.name for ch in changes if ch.action == "remove_option" and ch.name}
        try:
            # Paimon's updateHmsTablePars: options set, removed ones dropped, then the columns.
            hms_table.parameters.update(self._parameters(new_schema))
            for key in removed:
                hms_table.parameters.pop(key, None)
            self._update_hms_table(hms_table, new_schema)
            self.client.call("alter_table", db, name, hms_table)
        except BaseException:
            with contextlib.suppress(Exception):
                table.file_io.delete_quietly(f"{table.location}/schema/schema-{new_schema.id}")
            raise
        return table

    # -- repair -------------------------------------------------------------------------------------
    def repair_catalog(self) -> None:
        """Paimon's ``HiveCatalog.repairCatalog``: every ``<name>.db`` directory of the warehouse."""
        for status in self.file_io.list_status(self.warehouse):
            if status.is_dir and status.name.endswith(DB_SUFFIX):
                self.repair_database(status.name[: -len(DB_SUFFIX)])

    def repair_database(self, name: str) -> None:
        """Paimon's ``HiveCatalog.repairDatabase``: the database is created in the metastore when
        missing, then every directory under its location that holds a table schema is repaired."""
        check_new_name(name, DATABASE)  # refuses the system database, as Paimon
        _check_lower("Database", [name])
        if not self.database_exists(name):
            self.create_database(name, ignore_if_exists=True)
        location = self.database_path(name)
        io = self._io(location)
        for status in io.list_status(location):
            if status.is_dir and io.list_status(f"{location}/{status.name}/schema"):
                with contextlib.suppress(TableNotFoundError):  # dropped meanwhile, as Paimon
                    self.repair_table(f"{name}.{status.name}")

    def repair_table(self, identifier: str) -> None:
        """Paimon's ``HiveCatalog.repairTable``: the metastore entry is created from the latest
        schema on storage when missing, or updated when its columns or parameters differ; with
        ``metastore.partitioned-table`` the partitions of the latest snapshot are added."""
        db, name = parse_identifier(identifier)
        _check_lower("Database", [db])
        _check_lower("Table", [name])
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise DatabaseNotFoundError(
                f"repair of table {full}: database '{db}' is not in the Hive Metastore; repair the "
                f"database instead (CALL sys.repair('{db}')), which registers it and its tables"
            )
        hms_table = self._hms_table(db, name)
        if hms_table is not None and hms_table.sd is not None and hms_table.sd.location:
            path = local_path(hms_table.sd.location).rstrip("/")
        else:
            path = f"{self.database_path(db)}/{name}"
        io = self._io(path)
        if not io.exists(f"{path}/schema") or not io.list_status(f"{path}/schema"):
            raise TableNotFoundError(f"repair of table {full}: there is no table schema at {path}")
        table = Table(io, path, full)
        schema = table.schema()
        fresh = self._new_hms_table(db, name, schema, path)
        if hms_table is None:
            self.client.call("create_table", fresh)
        else:
            if not self.is_paimon_table(hms_table):
                raise TableAlreadyExistsError(
                    f"repair of table {full}: the Hive Metastore holds a table of that name that is not "
                    "a Paimon table; drop it from the metastore first"
                )
            if fresh.sd.cols != hms_table.sd.cols or fresh.parameters != hms_table.parameters:
                hms_table.parameters.update(self._parameters(schema))  # Paimon's alterTableToHms
                self._update_hms_table(hms_table, schema)
                self.client.call("alter_table", db, name, hms_table)
        if schema.partition_keys and fresh.partitionKeys:
            codec = table.partition_codec
            specs = [codec.strings(values) for values in list_partitions(table)]
            if specs:
                _HivePartitions(self, db, name).partitions_created(table, specs)

    # -- the metastore's table entry ------------------------------------------------------------------
    def _parameters(self, schema: TableSchema) -> dict[str, str]:
        """The table parameters Paimon's HiveCatalog syncs: every option (plus primary-key,
        partition and the effective bucket-key) with ``sync-all-properties``; else only ``hive.``-prefixed options
        without their prefix, and the partition-expiration and data-file directory options."""
        options = dict(schema.options)
        if self.sync_all_properties:
            params = dict(options)
            if schema.primary_keys:
                params["primary-key"] = ",".join(schema.primary_keys)
            if schema.partition_keys:
                params["partition"] = ",".join(schema.partition_keys)
            if schema.bucket_keys:  # the option, else the primary key without partition columns
                params["bucket-key"] = ",".join(schema.bucket_keys)
            return params
        params = {k[len(HIVE_PREFIX) :]: v for k, v in options.items() if k.startswith(HIVE_PREFIX)}
        for key in _SYNCED_WITHOUT_ALL:
            if key in options:
                params[key] = options[key]
        return params

    def _new_hms_table(self, db: str, name: str, schema: TableSchema, location: str) -> Any:
        now = int(time.time())
        t = self.client.types
        table = t.Table(
            tableName=name,
            dbName=db,
            owner=getpass.getuser(),
            createTime=now,
            lastAccessTime=now,
            retention=2**31 - 1,
            sd=t.StorageDescriptor(),
            partitionKeys=[],
            parameters=self._parameters(schema),
            tableType=MANAGED_TABLE,
        )
        table.parameters[TABLE_TYPE_PROP] = PAIMON_TABLE_TYPE
        table.parameters[META_TABLE_STORAGE] = STORAGE_HANDLER
        self._update_hms_table(table, schema, location)
        return table

    def _update_hms_table(self, table: Any, schema: TableSchema, location: str | None = None) -> None:
        """Formats, serde, columns, partition keys, comment and location from ``schema``
        (Paimon's ``updateHmsTable``)."""
        t = self.client.types
        sd = table.sd or t.StorageDescriptor()
        sd.inputFormat = INPUT_FORMAT
        sd.outputFormat = OUTPUT_FORMAT
        serde = sd.serdeInfo or t.SerDeInfo()
        serde.parameters = {}
        serde.serializationLib = SERDE
        sd.serdeInfo = serde

        def column(f: DataField) -> Any:
            return t.FieldSchema(name=f.name, type=hive_type(f.type), comment=f.description)

        partitioned = bool(schema.partition_keys) and schema.options.get(PARTITIONED_TABLE, "").lower() == "true"
        if partitioned:
            keys = set(schema.partition_keys)
            table.partitionKeys = [column(schema.field(k)) for k in schema.partition_keys]
            sd.cols = [column(f) for f in schema.fields if f.name not in keys]
        else:
            table.partitionKeys = []
            sd.cols = [column(f) for f in schema.fields]
        table.sd = sd
        if schema.comment is not None:
            table.parameters[COMMENT_PROP] = schema.comment
        if location is not None:
            sd.location = location

    def close(self) -> None:
        """Close the metastore connection (it reopens on the next call)."""
        self.client.close()


registry.register(METASTORE, HiveCatalog)
