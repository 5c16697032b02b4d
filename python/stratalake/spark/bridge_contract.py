"""The typed contract between the JVM shim and the Python catalog: every bridge operation's
request and reply.

A request travels as one JSON object, ``{"op": <name>, "protocol": PROTOCOL_VERSION, <fields>}``,
and carries every field of its request class (``null`` for an absent optional value); an answer
is ``{"result": <reply>}`` or ``{"error": {...}}`` (:mod:`stratalake.spark.bridge_handlers`).
Requests are decoded strictly: a missing or unknown key, a value of the wrong type or another
protocol version is refused with a message that names it.

The JVM side holds one Java record per message (``org.stratalake.spark.bridge.Messages``) and
the list of operations (``org.stratalake.spark.bridge.Operation``); ``describe()`` here and
``BridgeContract.describe()`` there render both in one vocabulary (``str``, ``int``, ``bool``,
``json``, ``list[T]``, ``dict[str, T]``, ``T | None``, message names), and a test holds them
equal field by field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from stratalake.exceptions import StrataLakeError

#: Raised by both sides on any change of a message or of the list of operations.
PROTOCOL_VERSION = 13

#: A JSON value passed through as is (Spark's JSON schema, filter trees, procedure arguments).
Json = Any


class BridgeContractError(StrataLakeError):
    """A request or reply that does not follow the bridge contract (a shim and package of
    different builds, or a bug on one side)."""


# ---- messages shared by several operations ---------------------------------------------------


@dataclass(frozen=True)
class CatalogConf:
    """The catalog a request is for: its warehouse and its Spark catalog options."""

    warehouse: str
    options: dict[str, str]


@dataclass(frozen=True)
class TableIdentity:
    """The table row-level operations act on (a table description's ``identity``)."""

    catalog: CatalogConf
    database: str
    table: str


@dataclass(frozen=True)
class WriteDistribution:
    """How Spark clusters rows before the writers (``bridge_handlers.write_distribution``)."""

    kind: str
    partition_keys: list[str] | None = None
    num_buckets: int | None = None
    bucket_keys: list[str] | None = None
    compact_mask: int | None = None
    num_assigners: int | None = None
    max_assigners: int | None = None
    owners_only: bool | None = None


@dataclass(frozen=True)
class NativeColumn:
    name: str
    nullable: bool


@dataclass(frozen=True)
class NativeAppendPlan:
    """The settings of a write by Spark's Parquet writer (``native_write.native_append_plan``)."""

    location: str
    schema_id: int
    columns: list[NativeColumn]
    partition_keys: list[str]
    default_partition: str
    compression: str
    zstd_level: int
    target_file_size: int
    row_group_size: int
    #: Bytes per data page (option ``parquet.page.size``); null: parquet-mr's default.
    page_size: int | None


@dataclass(frozen=True)
class RowLevelRules:
    """Why UPDATE/MERGE or DELETE is refused on a table (null: allowed), whether a DELETE
    addresses rows by data file and position, and which key columns a DELETE by a key list must
    name for the table to check the keys itself (null: never; ``dml.row_level_rules``)."""

    update_error: str | None
    delete_error: str | None
    delete_by_position: bool
    delete_key_columns: list[str] | None = None


@dataclass(frozen=True)
class TableDescription:
    """Everything the JVM table needs: Spark schema, keys, properties, data source options."""

    name: str
    schema: Json
    partition_keys: list[str]
    primary_keys: list[str]
    properties: dict[str, str]
    source_options: dict[str, str]
    write_cluster_columns: list[str]
    write_distribution: WriteDistribution
    native_append: NativeAppendPlan | None
    identity: TableIdentity
    row_level: RowLevelRules
    system_table: str | None = None


@dataclass(frozen=True)
class TableChange:
    """One ALTER TABLE change; the fields a kind does not use are null."""

    kind: str
    field_names: list[str] | None
    key: str | None
    value: str | None  # set_property's value; update_column_default_value's SQL text (null: drop)
    type: Json
    nullable: bool | None
    comment: str | None
    new_name: str | None
    if_exists: bool | None
    first: bool | None  # ADD COLUMN / ALTER COLUMN ... FIRST
    after: str | None  # ... AFTER <column>


@dataclass(frozen=True)
class StagedTable:
    """``truncate``: the existing table is kept and the write replaces its rows."""

    mode: str
    table: TableDescription


@dataclass(frozen=True)
class ProcedureParameter:
    name: str
    type: str
    required: bool


@dataclass(frozen=True)
class ProcedureSpec:
    description: str
    parameters: list[ProcedureParameter]


@dataclass(frozen=True)
class ProcedureJob:
    """Read options of the ``stratalake`` source that runs a procedure's distributed job."""

    options: dict[str, str]


@dataclass(frozen=True)
class ProcedureAnswer:
    """A procedure's result (``schema`` and ``rows``), or a job to run before calling again."""

    schema: Json = None
    rows: list[list[Json]] | None = None
    job: ProcedureJob | None = None
    state: Json = None


@dataclass(frozen=True)
class DeletionFile:
    path: str
    offset: int
    length: int


@dataclass(frozen=True)
class NativeFile:
    """A data file a native split reads with Spark's Parquet reader."""

    path: str
    format: str
    size: int
    rows: int
    deletion: DeletionFile | None = None


@dataclass(frozen=True)
class ScanSplit:
    """One input partition: ``partition`` is the pickled Python partition (base64)."""

    partition: str
    bucket: int
    files: int
    bytes: int
    rows: int
    runs: int
    splits: int | None = None
    native_files: list[NativeFile] | None = None
    superseded: int | None = None
    superseded_partition: str | None = None


@dataclass(frozen=True)
class ScanPlan:
    """Splits, statistics and bucket layout of a scan (``planning.plan``)."""

    snapshot_id: int | None
    splits: list[ScanSplit]
    rows: int
    bytes: int
    bucket_keys: list[str]
    num_buckets: int | None
    ordering: list[str]
    native_columns: list[Json] | None
    count_from_metadata: int | None = None
    count_merged: int | None = None
    # Column statistics from the snapshot's statistics file (planning.statistics_estimate).
    column_stats: list[Json] | None = None


# ---- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListDatabases:
    OP: ClassVar[str] = "list_databases"
    catalog: CatalogConf


@dataclass(frozen=True)
class DatabaseExists:
    OP: ClassVar[str] = "database_exists"
    catalog: CatalogConf
    database: str


@dataclass(frozen=True)
class LoadDatabase:
    OP: ClassVar[str] = "load_database"
    catalog: CatalogConf
    database: str


@dataclass(frozen=True)
class CreateDatabase:
    OP: ClassVar[str] = "create_database"
    catalog: CatalogConf
    database: str
    properties: dict[str, str]


@dataclass(frozen=True)
class DropDatabase:
    OP: ClassVar[str] = "drop_database"
    catalog: CatalogConf
    database: str
    cascade: bool


@dataclass(frozen=True)
class ListTables:
    OP: ClassVar[str] = "list_tables"
    catalog: CatalogConf
    database: str


@dataclass(frozen=True)
class TableExists:
    OP: ClassVar[str] = "table_exists"
    catalog: CatalogConf
    database: str
    table: str


@dataclass(frozen=True)
class LoadTable:
    """``version``: VERSION AS OF (snapshot id or tag); ``timestamp_micros``: TIMESTAMP AS OF."""

    OP: ClassVar[str] = "load_table"
    catalog: CatalogConf
    database: str
    table: str
    version: str | None
    timestamp_micros: int | None


@dataclass(frozen=True)
class CreateTable:
    """``schema``: Spark's JSON schema; ``properties``: TBLPROPERTIES and ``option.``-prefixed OPTIONS."""

    OP: ClassVar[str] = "create_table"
    catalog: CatalogConf
    database: str
    table: str
    schema: Json
    partition_keys: list[str]
    primary_keys: list[str]
    properties: dict[str, str]


@dataclass(frozen=True)
class StageTable:
    """A create request plus the write's options: CREATE/REPLACE TABLE AS SELECT, saveAsTable."""

    OP: ClassVar[str] = "stage_table"
    catalog: CatalogConf
    database: str
    table: str
    schema: Json
    partition_keys: list[str]
    primary_keys: list[str]
    properties: dict[str, str]
    write_options: dict[str, str]
    replace: bool
    allow_overwrite: bool


@dataclass(frozen=True)
class AlterTable:
    OP: ClassVar[str] = "alter_table"
    catalog: CatalogConf
    database: str
    table: str
    changes: list[TableChange]


@dataclass(frozen=True)
class DropTable:
    OP: ClassVar[str] = "drop_table"
    catalog: CatalogConf
    database: str
    table: str


@dataclass(frozen=True)
class RenameTable:
    OP: ClassVar[str] = "rename_table"
    catalog: CatalogConf
    database: str
    table: str
    new_database: str
    new_table: str


@dataclass(frozen=True)
class CanDeleteWhere:
    """``predicates``: Spark's V2 predicates as filter trees (``dml.parse_predicates``)."""

    OP: ClassVar[str] = "can_delete_where"
    catalog: CatalogConf
    database: str
    table: str
    predicates: list[Json]


@dataclass(frozen=True)
class DeleteWhere:
    """A DELETE Spark hands over whole; repeated with the answer's ``state`` and ``job_results``
    after the job it asks for, or with ``abort`` when that job failed (``spark/delete_job.py``)."""

    OP: ClassVar[str] = "delete_where"
    catalog: CatalogConf
    database: str
    table: str
    predicates: list[Json] | None
    job_results: list[str] | None
    state: str | None
    abort: bool


@dataclass(frozen=True)
class RowLevelCommit:
    """The commit of a row-level statement's write (``messages``: its tasks' pickled messages,
    base64); repeated with ``job_results`` after the job its answer asks for, or with ``abort``
    when that job failed (``spark/delete_job.py``)."""

    OP: ClassVar[str] = "row_level_commit"
    catalog: CatalogConf
    database: str
    table: str
    messages: list[str]
    job_results: list[str] | None
    state: str | None
    abort: bool


@dataclass(frozen=True)
class JobAnswer:
    """The new snapshot's id (null: nothing changed), or a distributed job to run first, and
    the ``state`` to send back with its results (or with ``abort`` if it failed)."""

    snapshot: int | None = None
    job: ProcedureJob | None = None
    state: str | None = None


@dataclass(frozen=True)
class ListProcedures:
    OP: ClassVar[str] = "list_procedures"
    catalog: CatalogConf


@dataclass(frozen=True)
class DescribeProcedure:
    OP: ClassVar[str] = "describe_procedure"
    catalog: CatalogConf
    namespace: list[str]
    procedure: str


@dataclass(frozen=True)
class CallProcedure:
    """A call; repeated with ``state`` and ``job_results`` after each job the answer asks for, or
    with ``abort`` when that job failed (the procedure cleans up; its answer is not used)."""

    OP: ClassVar[str] = "call_procedure"
    catalog: CatalogConf
    procedure: str
    current_database: str | None
    args: dict[str, Json]
    state: Json
    job_results: list[str] | None
    abort: bool


@dataclass(frozen=True)
class PlanScan:
    """``columns``: the pruned read schema (null for COUNT(*)); filters are filter trees."""

    OP: ClassVar[str] = "plan_scan"
    source_options: dict[str, str]
    columns: list[str] | None
    count: bool
    parallelism: int
    filters: list[Json]
    runtime_filters: list[Json]
    limit: int | None
    native: bool
    native_merge: bool


@dataclass(frozen=True)
class PlanChanges:
    """A native incremental read of ``$audit_log`` (``native_changes.plan``) of ``columns``."""

    OP: ClassVar[str] = "plan_changes"
    source_options: dict[str, str]
    columns: list[str]
    parallelism: int


@dataclass(frozen=True)
class ChangesPlan:
    """The input partitions of a native ``$audit_log`` read: each a list of change files."""

    partitions: list[list[NativeFile]]


@dataclass(frozen=True)
class KeepAlive:
    """Nothing to do: the JVM calls it after a pause so that Spark does not reap the bridge's
    pooled worker as idle (a new one starts Python and imports stratalake again, ~1 s). The reply
    is the worker's process id."""

    OP: ClassVar[str] = "keep_alive"


@dataclass(frozen=True)
class ReadSystemTable:
    """The rows of a metadata system table, read on the driver (``driver_tables.read``): a base64
    Arrow IPC stream in ``schema`` (Spark's JSON), or null when a Spark task reads them."""

    OP: ClassVar[str] = "read_system_table"
    source_options: dict[str, str]
    schema: Json


@dataclass(frozen=True)
class CountRows:
    OP: ClassVar[str] = "count_rows"
    source_options: dict[str, str]


@dataclass(frozen=True)
class ClassifyFilters:
    OP: ClassVar[str] = "classify_filters"
    source_options: dict[str, str]
    filters: list[Json]
    native: bool


@dataclass(frozen=True)
class PartitionAggregate:
    fn: str
    column: str | None


@dataclass(frozen=True)
class AggregatePartitions:
    OP: ClassVar[str] = "aggregate_partitions"
    source_options: dict[str, str]
    group_by: list[str]
    aggregates: list[PartitionAggregate]


@dataclass(frozen=True)
class DynamicAssigners:
    OP: ClassVar[str] = "dynamic_assigners"
    catalog: CatalogConf
    database: str
    table: str
    num_assigners: int


@dataclass(frozen=True)
class CompactionDue:
    OP: ClassVar[str] = "compaction_due"
    catalog: CatalogConf
    database: str
    table: str


@dataclass(frozen=True)
class ListPartitions:
    """Reply: each partition holding data, its values in partition-key order
    (``spark.partition_ddl`` names the JSON form of each type)."""

    OP: ClassVar[str] = "list_partitions"
    catalog: CatalogConf
    database: str
    table: str


@dataclass(frozen=True)
class DropPartitions:
    """``partitions``: full partition values in key order, dropped in one OVERWRITE commit."""

    OP: ClassVar[str] = "drop_partitions"
    catalog: CatalogConf
    database: str
    table: str
    partitions: list[list[Json]]


@dataclass(frozen=True)
class MergeSchema:
    """A write that evolves the table's schema (``write.merge-schema``): ``data_schema`` is the
    write's Spark schema. Reply: the table's Spark schema after the merge. With ``expected`` (the
    schema planning answered) the merge is committed, unless the table changed since planning."""

    OP: ClassVar[str] = "merge_schema"
    catalog: CatalogConf
    database: str
    table: str
    data_schema: Json
    type_widening: bool
    explicit_cast: bool
    case_sensitive: bool
    expected: Json | None


# ---- the operations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One bridge operation: its request class and the type of its reply."""

    name: str
    request: type[Any]
    reply: Any


def _ops(*pairs: tuple[type[Any], Any]) -> dict[str, Operation]:
    return {req.OP: Operation(req.OP, req, reply) for req, reply in pairs}


OPERATIONS: dict[str, Operation] = _ops(
    (ListDatabases, list[str]),
    (DatabaseExists, bool),
    (LoadDatabase, dict[str, str]),
    (CreateDatabase, None),
    (DropDatabase, bool),
    (ListTables, list[str]),
    (TableExists, bool),
    (LoadTable, TableDescription),
    (CreateTable, TableDescription),
    (StageTable, StagedTable),
    (AlterTable, TableDescription),
    (DropTable, bool),
    (RenameTable, None),
    (CanDeleteWhere, bool),
    (DeleteWhere, JobAnswer),
    (RowLevelCommit, JobAnswer),
    (ListProcedures, list[str]),
    (DescribeProcedure, ProcedureSpec),
    (CallProcedure, ProcedureAnswer),
    (PlanScan, ScanPlan),
    (CountRows, int | None),
    (ClassifyFilters, list[bool]),
    (AggregatePartitions, list[list[Json]] | None),
    (DynamicAssigners, int),
    (CompactionDue, bool),
    (ListPartitions, list[list[Json]]),
    (DropPartitions, int | None),
    (PlanChanges, ChangesPlan | None),
    (MergeSchema, Json),
    (ReadSystemTable, str | None),
    (KeepAlive, int),
)


# ---- decoding and encoding --------------------------------------------------------------------
#
# Each type gets one compiled codec (``_codec``), so a reply of thousands of splits costs a few
# microseconds per object; a path to the offending key is only built when a check fails.


def decode_request(message: Any) -> Any:
    """The typed request of one parsed JSON request, or BridgeContractError naming what is wrong."""
    if not isinstance(message, dict):
        raise BridgeContractError(f"a bridge request must be a JSON object, got {_json_type(message)}")
    op = message.get("op")
    operation = OPERATIONS.get(op) if isinstance(op, str) else None
    if operation is None:
        raise BridgeContractError(f"unknown stratalake bridge request {op!r}")
    version = message.get("protocol")
    if version != PROTOCOL_VERSION:
        raise BridgeContractError(
            f"bridge protocol mismatch in {op}: the JVM shim speaks version {version}, the stratalake "
            f"Python package version {PROTOCOL_VERSION}; the shim jar and the Python package come from "
            "different builds (rebuild the jar with `make jar`, or reinstall one stratalake)"
        )
    fields = {k: v for k, v in message.items() if k not in ("op", "protocol")}
    return decode(operation.request, fields, f"request {op}")


def reply_json(op: str, value: Any) -> Any:
    """A handler's reply (typed, or plain JSON values) checked against the operation's reply type,
    as JSON values with every field of every message (null for absent ones)."""
    return _checked(_codec(OPERATIONS[op].reply, typed=False), value, f"reply of {op}")


def message_json(kind: Any, value: Any, where: str) -> Any:
    """``value`` (plain JSON values) checked as ``kind``, as JSON values with every field of
    every message (null for absent ones), as :func:`reply_json` does for a whole reply."""
    return _checked(_codec(kind, typed=False), value, where)


def decode(kind: Any, value: Any, where: str) -> Any:
    """``value`` (parsed JSON, or already typed) as ``kind``; BridgeContractError when it is not."""
    return _checked(_codec(kind, typed=True), value, where)


def encode(value: Any) -> Any:
    """A typed message as JSON-ready values: every field, null for absent ones."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


class _Mismatch(Exception):
    """A check that failed at ``path`` (innermost key first), before the message names it."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []


def _checked(codec: Callable[[Any], Any], value: Any, where: str) -> Any:
    try:
        return codec(value)
    except _Mismatch as m:
        raise BridgeContractError(f"bridge {where}{''.join(reversed(m.path))}: {m.problem}") from None


def _json_type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


_CODECS: dict[tuple[Any, bool], Callable[[Any], Any]] = {}


def _codec(kind: Any, typed: bool) -> Callable[[Any], Any]:
    """Checks a value of ``kind``; ``typed``: returns dataclasses, else JSON values."""
    key = (kind, typed)
    codec = _CODECS.get(key)
    if codec is None:
        codec = _compile(kind, typed)
        _CODECS[key] = codec
    return codec


def _compile(kind: Any, typed: bool) -> Callable[[Any], Any]:
    if kind is None:

        def null(value: Any) -> Any:
            if value is not None:
                raise _Mismatch(f"expected null, got {_json_type(value)}")
            return None

        return null
    if kind is Any:
        return lambda value: value
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _compile_message(kind, typed)
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        (inner_kind,) = [a for a in typing.get_args(kind) if a is not type(None)]
        inner = _codec(inner_kind, typed)
        return lambda value: None if value is None else inner(value)
    if origin is list:
        item = _codec(typing.get_args(kind)[0], typed)

        def listed(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _Mismatch(f"expected a list, got {_json_type(value)}")
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(item(v))
                except _Mismatch as m:
                    m.path.append(f"[{i}]")
                    raise
            return out

        return listed
    if origin is dict:
        item = _codec(typing.get_args(kind)[1], typed)

        def mapped(value: Any) -> Any:
            if not isinstance(value, dict):
                raise _Mismatch(f"expected an object, got {_json_type(value)}")
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise _Mismatch(f"expected string keys, got {_json_type(k)}")
                try:
                    out[k] = item(v)
                except _Mismatch as m:
                    m.path.append(f".{k}")
                    raise
            return out

        return mapped
    scalar: type[Any] = kind

    def checked(value: Any) -> Any:
        if not isinstance(value, scalar) or (scalar is int and isinstance(value, bool)):
            raise _Mismatch(f"expected {scalar.__name__}, got {_json_type(value)}")
        return value

    return checked


def _scalar(kind: Any) -> tuple[type[Any] | None, bool]:
    """For a field of type str, int or bool (or T | None): (T, nullable); else (None, False)."""
    nullable = False
    if typing.get_origin(kind) in (Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        kind, nullable = inner[0], True
    return (kind, nullable) if kind in (str, int, bool) else (None, False)


def _compile_message(kind: type[Any], typed: bool) -> Callable[[Any], Any]:
    hints = typing.get_type_hints(kind)
    fields = [(f.name, f.default is dataclasses.MISSING) for f in dataclasses.fields(kind)]
    names = frozenset(name for name, _ in fields)
    # Per field: its exact scalar type when it has one (checked inline: the common case of a
    # large reply), and its codec.
    plan: list[tuple[str, bool, type[Any] | None, bool, Callable[[Any], Any]]] = []

    def message(value: Any) -> Any:
        if isinstance(value, kind):
            value = {name: getattr(value, name) for name, _ in fields}
        elif not isinstance(value, dict):
            raise _Mismatch(f"expected an object ({kind.__name__}), got {_json_type(value)}")
        if len(value) > len(names) or not names.issuperset(value):
            unknown = sorted(value.keys() - names)
            raise _Mismatch(f"unknown key {unknown[0]!r} in {kind.__name__}")
        if not plan:  # compiled on first use: messages may refer to each other
            for name, required in fields:
                scalar, nullable = _scalar(hints[name])
                plan.append((name, required, scalar, nullable, _codec(hints[name], typed)))
        out = {}
        for name, required, scalar, nullable, codec in plan:
            if name in value:
                v = value[name]
                if scalar is not None and (type(v) is scalar or (v is None and nullable)):
                    out[name] = v
                    continue
                try:
                    out[name] = codec(v)
                except _Mismatch as m:
                    m.path.append(f".{name}")
                    raise
            elif required:
                raise _Mismatch(f"missing key {name!r} in {kind.__name__}")
            elif not typed:
                out[name] = None
        return kind(**out) if typed else out

    return message


# ---- the contract as data (compared with the JVM's BridgeContract.describe()) -----------------


def type_name(kind: Any) -> str:
    """``kind`` in the vocabulary both sides describe their messages in."""
    if kind is None:
        return "None"
    if kind is Any:
        return "json"
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return kind.__name__
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return f"{type_name(inner[0])} | None"
    if origin is list:
        return f"list[{type_name(typing.get_args(kind)[0])}]"
    if origin is dict:
        return f"dict[str, {type_name(typing.get_args(kind)[1])}]"
    return {str: "str", int: "int", bool: "bool"}[kind]


def _hints(kind: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(kind)
    return {f.name: hints[f.name] for f in dataclasses.fields(kind)}


def _messages(kind: Any, out: dict[str, dict[str, str]]) -> None:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if kind.__name__ in out:
            return
        hints = _hints(kind)
        out[kind.__name__] = {f.name: type_name(hints[f.name]) for f in dataclasses.fields(kind)}
        for f in dataclasses.fields(kind):
            _messages(hints[f.name], out)
    for arg in typing.get_args(kind):
        _messages(arg, out)


def describe() -> dict[str, Any]:
    """The protocol version, each operation's request and reply type, and every message's fields."""
    messages: dict[str, dict[str, str]] = {}
    operations = {}
    for op in OPERATIONS.values():
        _messages(op.request, messages)
        _messages(op.reply, messages)
        operations[op.name] = {"request": op.request.__name__, "reply": type_name(op.reply)}
    return {"protocol": PROTOCOL_VERSION, "operations": operations, "messages": messages}
