"""Answers the JVM catalog's requests with the Python catalog.

Each request is a JSON object ``{"op": ..., "protocol": ..., ...fields}`` decoded into its typed
request (:mod:`stratalake.spark.bridge_contract`, which lists every operation's request and
reply); the answer is ``{"result": ...}`` or ``{"error": {"type", "message", ...}}``.
The JVM maps error types onto Spark's own exceptions (``TableNotFoundError`` ->
``NoSuchTableException``...), so Spark keeps its IF [NOT] EXISTS semantics and messages.

Handlers run in Spark's reused planner worker: catalogs are kept per warehouse between calls, but
every table answer re-reads the table's latest schema and snapshot, so it is never stale.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import struct
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any

from stratalake import identifiers
from stratalake.append.compact import compaction_due as due
from stratalake.bucket.cross_partition import owner_consistent_slices
from stratalake.bucket.dynamic import (
    compacts_every_commit,
    is_cross_partition,
    owner_consistent_assigners,
)
from stratalake.catalog import Catalog, SchemaChange
from stratalake.catalog import system_tables as catalog_system_tables
from stratalake.catalog.schema_change import apply_changes
from stratalake.catalog.schema_merge import merge_changes
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    SchemaError,
    SnapshotNotFoundError,
    StrataLakeError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from stratalake.spark import bridge_contract as bc
from stratalake.spark import (
    delete_job,
    dml,
    driver_tables,
    native_changes,
    native_write,
    partition_ddl,
    planning,
    procedures,
    source_options,
)
from stratalake.spark import system_tables as spark_system_tables
from stratalake.spark.plan_store import SpilledSplits
from stratalake.spark.types import paimon_to_spark_field, spark_to_paimon
from stratalake.types import ATOMIC_TYPES, DataType, LocalZonedTimestampType, TimestampType, TimeType

Handler = Callable[[Any], Any]

DEFAULT_DATABASE = "default"
PROVIDER = "stratalake"
#: The Spark column metadata key of a column's DEFAULT text (ResolveDefaultColumns' CURRENT_DEFAULT).
CURRENT_DEFAULT = "CURRENT_DEFAULT"

# Properties Spark adds to CREATE TABLE on its own; they are not table options.
_SPARK_RESERVED = ("owner", "is_managed_location", "external")

_catalogs: dict[str, Catalog] = {}


def catalog(conf: bc.CatalogConf) -> Catalog:
    """The catalog for a request's ``catalog`` entry, created once per worker process."""
    key = json.dumps(bc.encode(conf), sort_keys=True)
    cat = _catalogs.get(key)
    if cat is None:
        cat = Catalog(conf.warehouse, options=dict(conf.options))
        # Spark's session starts in the catalog's default namespace, as Paimon's catalogs do.
        cat.create_database(DEFAULT_DATABASE, ignore_if_exists=True)
        _catalogs[key] = cat
    return cat


def _ident(req: Any) -> str:
    """``"db.table"`` of a request; both names checked (a readable InvalidIdentifierError in Spark)."""
    return identifiers.join_table_identifier(req.database, req.table)


# ---- databases -------------------------------------------------------------------------------


def list_databases(req: bc.ListDatabases) -> list[str]:
    return sorted(catalog(req.catalog).list_databases())


def database_exists(req: bc.DatabaseExists) -> bool:
    if req.database == identifiers.SYSTEM_DATABASE:  # Paimon's global system tables live there
        return True
    return bool(catalog(req.catalog).database_exists(req.database))


def load_database(req: bc.LoadDatabase) -> dict[str, str]:
    cat = catalog(req.catalog)
    if not cat.database_exists(req.database):
        raise DatabaseNotFoundError(f"database {req.database!r} does not exist")
    props = getattr(cat, "database_properties", None)
    return dict(props(req.database)) if callable(props) else {}


def create_database(req: bc.CreateDatabase) -> None:
    props = {k: v for k, v in req.properties.items() if k not in _SPARK_RESERVED}
    catalog(req.catalog).create_database(req.database, properties=props or None)


def drop_database(req: bc.DropDatabase) -> bool:
    cat = catalog(req.catalog)
    if not cat.database_exists(req.database):
        return False
    cat.drop_database(req.database, cascade=req.cascade)
    return True


# ---- tables ----------------------------------------------------------------------------------


def list_tables(req: bc.ListTables) -> list[str]:
    if req.database == identifiers.SYSTEM_DATABASE:
        return catalog_system_tables.names()
    cat = catalog(req.catalog)
    if not cat.database_exists(req.database):
        raise DatabaseNotFoundError(f"database {req.database!r} does not exist")
    return sorted(cat.list_tables(req.database))


def table_exists(req: bc.TableExists) -> bool:
    if req.database == identifiers.SYSTEM_DATABASE:
        return req.table.lower() in catalog_system_tables.names()
    return bool(catalog(req.catalog).table_exists(_ident(req)))


def load_table(req: bc.LoadTable) -> bc.TableDescription:
    if req.database == identifiers.SYSTEM_DATABASE:
        return describe_global_system_table(req)
    base, system = spark_system_tables.split_name(req.table)
    try:
        table = catalog(req.catalog).get_table(identifiers.join_table_identifier(req.database, base))
    except DatabaseNotFoundError as exc:  # Spark expects "no such table" from loadTable
        raise TableNotFoundError(str(exc)) from exc
    # Time travel shows the columns the snapshot was written with (Table.as_of), as Paimon does;
    # system tables too (t$files VERSION AS OF 1 lists snapshot 1's files).
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_ms: int | None = None
    if req.version is not None:
        version = req.version
        if version.isdigit():
            snapshot_id = int(version)
            table = table.as_of(table.snapshot(snapshot_id))  # SnapshotNotFoundError if missing
        else:
            # A tag name: scans plan from the tag's own snapshot copy, even once it expired.
            tag = version
            table = table.as_of(table.tag_manager.tag(tag))  # TagNotFoundError if missing
    elif req.timestamp_micros is not None:
        millis = req.timestamp_micros // 1000
        snap = table.snapshot_at(millis)
        if snap is None:
            raise SnapshotNotFoundError(
                f"table {_ident(req)} has no snapshot at or before timestamp {millis} ms"
            )
        snapshot_id = snap.id
        timestamp_ms = millis
        table = table.as_of(snap)
    if system is not None:
        return describe_system_table(req.catalog, table, system, snapshot_id, tag)
    return describe(req.catalog, table, snapshot_id, tag, timestamp_ms)


def describe(
    conf: bc.CatalogConf,
    table: Any,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp_ms: int | None = None,
) -> bc.TableDescription:
    """Everything the JVM table needs: Spark schema, keys, properties, data source options."""
    schema = table.schema()
    primary_keys = list(schema.primary_keys)
    partition_keys = list(schema.partition_keys)
    fields = spark_fields(schema)
    properties = {str(k): str(v) for k, v in dict(schema.options).items()}
    if primary_keys:
        properties["primary-key"] = ",".join(primary_keys)
    if schema.comment:
        properties["comment"] = schema.comment
    properties["provider"] = PROVIDER
    properties["location"] = str(table.location)
    # The location is the catalog's choice, not the user's: keeps SHOW CREATE TABLE replayable.
    properties["is_managed_location"] = "true"

    bucket_keys = list(getattr(schema, "bucket_keys", ()) or [])
    if not bucket_keys and primary_keys:
        bucket_keys = [k for k in primary_keys if k not in partition_keys]
    cluster = partition_keys + [k for k in bucket_keys if k not in partition_keys]

    options = {
        source_options.WAREHOUSE: conf.warehouse,
        source_options.CATALOG_OPTIONS: json.dumps(conf.options),
        source_options.TABLE: table.identifier,
        source_options.LOCATION: str(table.location),
        source_options.KEY_COLUMNS: json.dumps(partition_keys + primary_keys),
        source_options.PARTITION_KEYS: json.dumps(partition_keys),
    }
    if snapshot_id is not None:
        options[source_options.SNAPSHOT_ID] = str(snapshot_id)
        if timestamp_ms is not None:  # what a fallback branch is read at (read/fallback.py)
            options[source_options.TIMESTAMP_MS] = str(timestamp_ms)
    if tag is not None:
        options[source_options.TAG] = tag
    if snapshot_id is None and tag is None:
        # Spark loads the table when a streaming DataFrame is defined, seconds before its Python
        # stream reader asks where to start: the start is fixed here so that rows written after
        # start() arrive as changes, not in the initial full scan.
        options[source_options.STREAM_LATEST_SNAPSHOT] = str(table.snapshot_manager.latest_snapshot_id() or 0)
    database, name = table.identifier.split(".", 1)
    native_append = native_write.native_append_plan(table) if snapshot_id is None and tag is None else None
    return bc.TableDescription(
        name=table.identifier,
        schema={"type": "struct", "fields": fields},
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        properties=properties,
        source_options=options,
        write_cluster_columns=cluster if primary_keys else [],
        write_distribution=bc.decode(bc.WriteDistribution, write_distribution(table), "write_distribution"),
        # Bucket-unaware append tables: written by Spark's Parquet writer (native_write.py).
        native_append=bc.decode(bc.NativeAppendPlan | None, native_append, "native_append"),
        # Row-level DML: the table these requests name, and which statements it refuses.
        identity=bc.TableIdentity(catalog=conf, database=database, table=name),
        row_level=bc.decode(bc.RowLevelRules, dml.row_level_rules(table), "row_level"),
    )


def spark_fields(schema: Any) -> list[dict[str, Any]]:
    """A table schema's columns as Spark's JSON struct fields (comments, defaults as metadata)."""
    fields = []
    for f in schema.fields:
        spark_type, nullable = paimon_to_spark_field(str(f.type))
        metadata: dict[str, str] = {"comment": f.description} if getattr(f, "description", None) else {}
        if f.default_value is not None:
            # Spark's analyzer fills a column's CURRENT_DEFAULT into INSERTs and MERGE inserts.
            metadata[CURRENT_DEFAULT] = f.default_value
        fields.append(
            {
                "name": f.name,
                "type": spark_type,
                "nullable": nullable and f.name not in schema.primary_keys,
                "metadata": metadata,
            }
        )
    return fields


def merge_schema(req: bc.MergeSchema) -> Any:
    """The Spark schema a table has once it takes a write's columns (``write.merge-schema``,
    :mod:`stratalake.catalog.schema_merge`); committed when ``expected`` (the planned schema) is
    given, as Paimon commits the evolved schema when the write starts, before any data."""
    ident = _ident(req)
    cat = catalog(req.catalog)
    table = cat.get_table(ident)
    if req.explicit_cast:
        raise UnsupportedError(
            f"table {table.identifier}: 'write.merge-schema.explicit-cast' is not supported: stratalake changes "
            "column types only by lossless widening; cast the data to the column's type instead"
        )
    data = []
    for f in req.data_schema["fields"]:
        try:
            dt = DataType.parse(spark_to_paimon(f["type"], bool(f.get("nullable", True))))
        except UnsupportedError as exc:
            raise UnsupportedError(
                f"table {table.identifier}: column '{f['name']}' of the data: {exc}"
            ) from None
        data.append((str(f["name"]), dt))
    changes = merge_changes(
        table.schema(),
        data,
        table.identifier,
        type_widening=req.type_widening,
        case_sensitive=req.case_sensitive,
    )
    merged = apply_changes(table.schema(), changes, table.identifier) if changes else table.schema()
    planned = {"type": "struct", "fields": spark_fields(merged)}
    if req.expected is None:
        return planned
    if planned != req.expected:
        raise CommitConflictError(
            f"table {table.identifier}: the schema changed while the write was planned (it would now "
            "evolve differently); nothing was written: run the write again"
        )
    if changes:
        cat.alter_table(ident, changes)
    return planned


def write_distribution(table: Any) -> dict[str, Any]:
    """How Spark must cluster rows before the Python writer, so each (partition, bucket) is
    written by exactly one task (a second writer of a bucket would compact it on its own and
    leave overlapping sorted runs).

    ``dynamic`` (dynamic-bucket tables, ``bucket = -1``): by the partition columns and
    ``stratalake_bucket(N, mask, trimmed primary key)``, i.e. by Paimon's assigner slice of the key
    hash, so each task assigns whole slices (dynamic_bucket.py); N is ``num_assigners`` or, when
    null, the session's shuffle partitions, capped by ``max_assigners`` (the shim decides and passes
    it to the writer). Cross-partition upserts cluster by the slice alone (no partition columns:
    a key's index entry may sit in any partition, cross_partition.py). Tables whose writers must
    compact every bucket they write at each commit (lookup, deletion vectors, first-row,
    full-compaction changelog) are ``owners_only``: a bucket may not take keys of a slice that
    does not own it, so the shim lowers N to what the table allows (``dynamic_assigners``: from
    the hash index, or the live keys of a cross-partition table); where that is 1, it keeps its N,
    lets non-owners add level-0 files and compacts them right after the commit.

    ``bucket``: by the partition columns and ``stratalake_bucket(n, mask, bucket keys)``, the
    shim's evaluation of Paimon's bucket function (bit i of ``mask``: key i is a TIMESTAMP(p<=3),
    whose layout Spark's type does not show). ``partition``: by the partition columns alone (one
    writer per partition), for layouts the shim cannot hash. ``none``: no requirement.
    """
    schema = table.schema()
    partition_keys = list(schema.partition_keys)
    num_buckets = table.core_options.bucket
    if not schema.primary_keys and num_buckets <= 0:
        # Bucket-unaware append tables: any number of writers per partition (Paimon's unaware mode).
        return {"kind": "none"}
    keys = list(schema.bucket_keys)
    types = [schema.field(k).type for k in keys]
    if num_buckets > 0 and keys and all(_jvm_hashable(t) for t in types):
        return {
            "kind": "bucket",
            "partition_keys": partition_keys,
            "num_buckets": num_buckets,
            "bucket_keys": keys,
            "compact_mask": _key_mask(types),
        }
    if num_buckets == -1 and is_cross_partition(table):
        # A key may move between partitions: every key must meet its index entry in one writer,
        # so the slice ignores the partition (cross_partition.py); else one writer in total.
        trimmed = list(schema.trimmed_primary_keys)
        trimmed_types = [schema.field(k).type for k in trimmed]
        if trimmed and all(_jvm_hashable(t) for t in trimmed_types):
            return _dynamic_distribution(table, [], trimmed, trimmed_types)
        return {"kind": "partition", "partition_keys": []}
    if num_buckets == -1 and keys and all(_jvm_hashable(t) for t in types):
        return _dynamic_distribution(table, partition_keys, keys, types)
    return {"kind": "partition", "partition_keys": partition_keys}


def _key_mask(types: list[Any]) -> int:
    """Bit i: key i is a TIMESTAMP(p <= 3), hashed as Paimon's compact timestamp."""
    mask = 0
    for i, t in enumerate(types):
        if isinstance(t, TimestampType | LocalZonedTimestampType) and t.is_compact:
            mask |= 1 << i
    return mask


def _dynamic_distribution(
    table: Any, partition_keys: list[str], keys: list[str], types: list[Any]
) -> dict[str, Any]:
    """Clustering by assigner slice for a dynamic-bucket table: a writer that is not a bucket's
    owner only adds level-0 files to it, unless ``owners_only`` (then the shim picks N so that
    there is none)."""
    options = table.core_options
    owners_only = compacts_every_commit(options)
    # As Paimon's Spark writer: dynamic-bucket.assigner-parallelism, else Spark's parallelism;
    # initial-buckets caps the number of assigners, and so does max-buckets (an assigner owns
    # at least one bucket).
    parallelism = options.get_int("dynamic-bucket.assigner-parallelism")
    cap = 32767
    initial = options.get_int("dynamic-bucket.initial-buckets")
    if initial is not None:
        cap = min(cap, initial)
    max_buckets = options.get_int("dynamic-bucket.max-buckets")
    if max_buckets is not None and max_buckets > 0:
        cap = min(cap, max_buckets)
    return {
        "kind": "dynamic",
        "partition_keys": partition_keys,
        "bucket_keys": keys,
        "compact_mask": _key_mask(types),
        "num_assigners": None if parallelism is None else min(parallelism, cap),
        "max_assigners": cap,
        # The shim asks `dynamic_assigners` for an N under which every bucket has one writer.
        "owners_only": owners_only,
    }


# Every atomic type Spark has (stratalake.types.ATOMIC_TYPES but TIME): the shim's bucket hash
# (BucketHash.supports) encodes their Spark values as Paimon's binary row does, which
# tests/spark/test_types.py holds to this list.
_JVM_HASHABLE = tuple(type(t) for t in ATOMIC_TYPES if not isinstance(t, TimeType))


def _jvm_hashable(t: Any) -> bool:
    """Key types whose Spark values the shim's bucket hash encodes like Paimon's binary row."""
    return isinstance(t, _JVM_HASHABLE)


def describe_system_table(
    conf: bc.CatalogConf, table: Any, name: str, snapshot_id: int | None = None, tag: str | None = None
) -> bc.TableDescription:
    """A read-only ``t$<name>`` table; the data source reads it with the base table's options
    (and the version it was loaded at: the tables that show one snapshot show that one)."""
    meta = describe(conf, table, snapshot_id, tag)
    options = dict(meta.source_options)
    options[spark_system_tables.SYSTEM_TABLE] = name
    return dataclasses.replace(
        meta,
        name=f"{table.identifier}${name}",
        schema={"type": "struct", "fields": spark_system_tables.spark_fields(table, name)},
        partition_keys=[],
        primary_keys=[],
        properties={"provider": PROVIDER},
        source_options=options,
        write_cluster_columns=[],
        write_distribution=bc.WriteDistribution(kind="none"),
        system_table=name,
    )


def describe_global_system_table(req: bc.LoadTable) -> bc.TableDescription:
    """``sys.tables``, ``sys.all_table_options``, ``sys.catalog_options``: read-only, of no version."""
    name = catalog_system_tables.canonical(req.table)  # TableNotFoundError for other names
    if req.version is not None or req.timestamp_micros is not None:
        raise UnsupportedError(
            f"table {identifiers.SYSTEM_DATABASE}.{req.table} describes the catalog now; it has no versions "
            "(VERSION AS OF / TIMESTAMP AS OF)"
        )
    fields = []
    for column, type_string in catalog_system_tables.columns(name):
        spark_type, nullable = paimon_to_spark_field(type_string)
        fields.append({"name": column, "type": spark_type, "nullable": nullable, "metadata": {}})
    conf = req.catalog
    return bc.TableDescription(
        name=f"{identifiers.SYSTEM_DATABASE}.{name}",
        schema={"type": "struct", "fields": fields},
        partition_keys=[],
        primary_keys=[],
        properties={"provider": PROVIDER},
        source_options={
            source_options.WAREHOUSE: conf.warehouse,
            source_options.CATALOG_OPTIONS: json.dumps(conf.options),
            source_options.GLOBAL_SYSTEM_TABLE: name,
        },
        write_cluster_columns=[],
        write_distribution=bc.WriteDistribution(kind="none"),
        native_append=None,
        identity=bc.TableIdentity(catalog=conf, database=identifiers.SYSTEM_DATABASE, table=name),
        row_level=bc.RowLevelRules(
            update_error=f"{identifiers.SYSTEM_DATABASE}.{name} is a read-only system table",
            delete_error=f"{identifiers.SYSTEM_DATABASE}.{name} is a read-only system table",
            delete_by_position=False,
        ),
        system_table=name,
    )


# ---- row-level DML and procedures --------------------------------------------------------------


def can_delete_where(req: bc.CanDeleteWhere) -> bool:
    table = catalog(req.catalog).get_table(_ident(req))
    return dml.delete_plan(table, dml.parse_predicates(req.predicates)) is not None


def delete_where(req: bc.DeleteWhere) -> bc.JobAnswer:
    """A DELETE Spark hands over whole. One that reads and rewrites rows may answer with a
    distributed job (``spark/delete_job.py``), whose results come back to be committed."""
    table = catalog(req.catalog).get_table(_ident(req))
    if req.state is None:
        conjuncts = dml.parse_predicates(req.predicates or [])
        if conjuncts is None:
            raise UnsupportedError(f"table {_ident(req)}: this DELETE condition cannot be evaluated")
        if dml.delete_plan(table, conjuncts) not in ("rewrite", "rows"):
            return bc.JobAnswer(snapshot=dml.delete_where(table, conjuncts))
    snapshot, job, state = delete_job.delete_where(
        table, req.predicates or [], req.job_results, req.state, req.abort, describe(req.catalog, table).source_options
    )
    return bc.JobAnswer(snapshot=snapshot, job=None if job is None else bc.ProcedureJob(job), state=state)


def row_level_commit(req: bc.RowLevelCommit) -> bc.JobAnswer:
    """Commit a row-level statement; copy-on-write rewrites run as a job first."""
    table = catalog(req.catalog).get_table(_ident(req))
    snapshot, job, state = delete_job.row_level_commit(
        table, req.messages, req.job_results, req.state, req.abort, describe(req.catalog, table).source_options
    )
    return bc.JobAnswer(snapshot=snapshot, job=None if job is None else bc.ProcedureJob(job), state=state)


def list_procedures(req: bc.ListProcedures) -> list[str]:
    return sorted(procedures.PROCEDURES)


def describe_procedure(req: bc.DescribeProcedure) -> Any:
    return procedures.lookup(req.namespace, req.procedure).describe()


def call_procedure(req: bc.CallProcedure) -> Any:
    state = dict(req.state or {})
    if req.job_results is not None:
        state["job_results"] = req.job_results
    if req.abort:
        state["job_aborted"] = True
    state["source_options_of"] = lambda table: dict(describe(req.catalog, table).source_options)
    current = req.current_database or DEFAULT_DATABASE
    return procedures.call(catalog(req.catalog), req.procedure, req.args, state, current)


def _procedure_table(req: bc.CallProcedure) -> tuple[str, str] | None:
    """The table a procedure call names, for the TableNotFoundError Spark reports
    (TABLE_OR_VIEW_NOT_FOUND); None when its arguments name none (or not a valid one)."""
    table = req.args.get("table")
    if table is None:
        return None
    try:
        database, name = procedures.table_identifier(table, req.current_database or DEFAULT_DATABASE)
    except StrataLakeError:
        return None
    return database, name


def _split_keys(value: str) -> list[str]:
    return [k.strip() for k in value.split(",") if k.strip()]


def _table_spec(
    req: bc.CreateTable | bc.StageTable, extra_options: Mapping[str, str] | None = None, inherit: Any = None
) -> dict[str, Any]:
    """``Catalog.create_table`` arguments from a Spark create request.

    ``extra_options`` (DataFrameWriter options) are merged into the table options; ``inherit``
    (a table being replaced) supplies keys and options the request does not give.
    """
    ident = _ident(req)
    props: dict[str, str] = dict(req.properties)
    comment = props.pop("comment", None)
    # Every table of a stratalake catalog is a stratalake table. DataFrameWriter.saveAsTable
    # always sends a provider (spark.sql.sources.default, "parquet"), so USING is ignored.
    props.pop("provider", None)
    if "location" in props:
        raise UnsupportedError(f"table {ident}: LOCATION is chosen by the catalog and cannot be set")
    for key in _SPARK_RESERVED:
        props.pop(key, None)
    # OPTIONS (...) arrive prefixed with "option.".
    options = {key.removeprefix("option."): value for key, value in props.items()}
    for key, value in (extra_options or {}).items():
        if not key.startswith("stratalake."):
            options.setdefault(key, value)

    primary_keys: list[str] = list(req.primary_keys)
    pk_option = options.pop("primary-key", None)
    if pk_option is not None:
        from_option = _split_keys(pk_option)
        if primary_keys and from_option != primary_keys:
            raise SchemaError(
                f"table {ident}: PRIMARY KEY ({', '.join(primary_keys)}) and "
                f"'primary-key'='{pk_option}' disagree; give the key once"
            )
        primary_keys = from_option
    partition_keys: list[str] = list(req.partition_keys)
    partition_option = options.pop("partition", None)
    if partition_option is not None and not partition_keys:
        partition_keys = _split_keys(partition_option)

    names = [f["name"] for f in req.schema["fields"]]
    if inherit is not None:
        old = inherit.schema()
        if not primary_keys and all(k in names for k in old.primary_keys):
            primary_keys = list(old.primary_keys)
        if not partition_keys and all(k in names for k in old.partition_keys):
            partition_keys = list(old.partition_keys)
        for key, value in dict(old.options).items():
            options.setdefault(str(key), str(value))
        if comment is None:
            comment = old.comment

    columns: list[tuple[str, str, str | None, str | None]] = []
    for f in req.schema["fields"]:
        nullable = bool(f.get("nullable", True)) and f["name"] not in primary_keys
        metadata = f.get("metadata") or {}
        description = metadata.get("comment")
        default = metadata.get(CURRENT_DEFAULT)
        paimon_type = spark_to_paimon(f["type"], nullable)
        columns.append((f["name"], paimon_type, description, None if default is None else str(default)))
    return {
        "schema": columns,
        "primary_key": primary_keys or None,
        "partition_keys": partition_keys or None,
        "options": options,
        "comment": comment,
    }


def create_table(req: bc.CreateTable) -> bc.TableDescription:
    table = catalog(req.catalog).create_table(_ident(req), **_table_spec(req))
    return describe(req.catalog, table)


def _same_columns(table: Any, spark_schema: Mapping[str, Any]) -> bool:
    """Whether a query's columns are the table's (names and types; nullability aside)."""
    fields = list(table.schema().fields)
    new = list(spark_schema["fields"])
    if [f.name for f in fields] != [f["name"] for f in new]:
        return False
    return all(
        spark_to_paimon(paimon_to_spark_field(str(f.type))[0]) == spark_to_paimon(n["type"])
        for f, n in zip(fields, new, strict=True)
    )


def stage_table(req: bc.StageTable) -> bc.StagedTable:
    """CREATE/REPLACE TABLE AS SELECT and saveAsTable, when Spark starts writing (or commits).

    Answers ``{"mode": "append" | "truncate", "table": <describe>}``: "truncate" means the
    existing table is kept (same columns) and the write replaces its rows in one snapshot.
    """
    ident = _ident(req)
    cat = catalog(req.catalog)
    write_options = dict(req.write_options)
    existing = cat.get_table(ident) if req.replace and cat.table_exists(ident) else None
    if existing is not None:
        explicit_key = (
            req.primary_keys
            or "primary-key" in write_options
            or any(k.removeprefix("option.") == "primary-key" for k in req.properties)
        )
        if req.allow_overwrite and not explicit_key and _same_columns(existing, req.schema):
            return bc.StagedTable(mode="truncate", table=describe(req.catalog, existing))
        spec = _table_spec(req, write_options, inherit=existing)
        cat.drop_table(ident)
    else:
        spec = _table_spec(req, write_options)
    return bc.StagedTable(mode="append", table=describe(req.catalog, cat.create_table(ident, **spec)))


def _field_name(change: bc.TableChange) -> str:
    names = list(change.field_names or [])
    if len(names) != 1:
        raise UnsupportedError(f"nested column {'.'.join(names)} cannot be altered")
    return str(names[0])


def _given(value: str | None, change: bc.TableChange, field: str) -> str:
    """A field the change's kind needs (the JVM always sends it for that kind)."""
    if value is None:
        raise bc.BridgeContractError(f"bridge request alter_table: a {change.kind} change without {field!r}")
    return value


def _schema_change(table: Any, change: bc.TableChange) -> Any:
    kind = change.kind
    if kind == "set_property":
        if change.key == "comment":
            return SchemaChange.update_comment(change.value)
        return SchemaChange.set_option(
            _given(change.key, change, "key"), _given(change.value, change, "value")
        )
    if kind == "remove_property":
        if change.key == "comment":
            return SchemaChange.update_comment(None)
        return SchemaChange.remove_option(_given(change.key, change, "key"))
    name = _field_name(change)
    if kind == "add_column":
        paimon_type = spark_to_paimon(change.type, change.nullable is not False)
        return SchemaChange.add_column(
            name, paimon_type, comment=change.comment, first=bool(change.first), after=change.after
        )
    if kind == "update_column_default_value":
        # 'value' carries the new default's SQL text; null drops the default.
        return SchemaChange.update_column_default_value(name, change.value)
    if kind == "update_column_position":
        return SchemaChange.update_column_position(name, first=bool(change.first), after=change.after)
    if kind == "rename_column":
        return SchemaChange.rename_column(name, _given(change.new_name, change, "new_name"))
    if kind == "drop_column":
        return SchemaChange.drop_column(name)
    if kind == "update_column_type":
        current = next((f for f in table.schema().fields if f.name == name), None)
        nullable = True if current is None else bool(current.type.nullable)
        return SchemaChange.update_column_type(name, spark_to_paimon(change.type, nullable))
    factory = getattr(SchemaChange, kind, None)
    if kind == "update_column_comment" and factory is not None:
        return factory(name, change.comment)
    if kind == "update_column_nullability" and factory is not None:
        return factory(name, bool(change.nullable))
    raise UnsupportedError(f"table {table.identifier}: ALTER TABLE {kind.replace('_', ' ')} is not supported")


def alter_table(req: bc.AlterTable) -> bc.TableDescription:
    ident = _ident(req)
    cat = catalog(req.catalog)
    table = cat.get_table(ident)
    changes = [_schema_change(table, c) for c in req.changes]
    if changes:
        cat.alter_table(ident, changes)
    return describe(req.catalog, cat.get_table(ident))


def drop_table(req: bc.DropTable) -> bool:
    cat = catalog(req.catalog)
    if not cat.table_exists(_ident(req)):
        return False
    cat.drop_table(_ident(req))
    return True


def rename_table(req: bc.RenameTable) -> None:
    new_ident = identifiers.join_table_identifier(req.new_database, req.new_table)
    catalog(req.catalog).rename_table(_ident(req), new_ident)


def dynamic_assigners(req: bc.DynamicAssigners) -> int:
    """For a write into a dynamic-bucket table whose writers compact every bucket they write: the
    number of assigner slices to use, at most ``num_assigners``, under which every bucket's keys
    belong to its owner slice (one writer per bucket; 1 falls back to one writer per partition)."""
    table = catalog(req.catalog).get_table(_ident(req))
    if is_cross_partition(table):
        return owner_consistent_slices(table, req.num_assigners)
    return owner_consistent_assigners(table, req.num_assigners)


def compaction_due(req: bc.CompactionDue) -> bool:
    """After a native append write: whether the table's small-file compaction has files to merge."""
    table = catalog(req.catalog).get_table(_ident(req))
    return not table.schema().primary_keys and due(table)


# ---- scans (org.stratalake.spark.scan.StrataLakeScan) ----------------------------------------


def list_partitions(req: bc.ListPartitions) -> list[list[Any]]:
    return partition_ddl.list_partitions(catalog(req.catalog).get_table(_ident(req)))


def drop_partitions(req: bc.DropPartitions) -> int | None:
    return partition_ddl.drop_partitions(catalog(req.catalog).get_table(_ident(req)), req.partitions)


def _scan_table(options: Mapping[str, str]) -> tuple[Any, Mapping[str, str]]:
    """The table a scan's data source options name, through this worker's cached catalog, and
    the scan's options with the scan options the table stores (``planning.with_stored_scan_options``)."""
    conf = bc.CatalogConf(
        warehouse=options[source_options.WAREHOUSE],
        options=json.loads(options.get(source_options.CATALOG_OPTIONS) or "{}"),
    )
    table = catalog(conf).get_table(options[source_options.TABLE])
    options = planning.with_stored_scan_options(table, options)
    # A time-travel scan reads in the columns of its snapshot (the schema Spark was given).
    return planning.read_table(table, options), options


def plan_scan(req: bc.PlanScan) -> Any:
    """Splits, statistics and bucket layout of a scan; see :func:`stratalake.spark.planning.plan`."""
    table, options = _scan_table(req.source_options)
    return planning.plan(table, options, bc.encode(req))


def plan_changes(req: bc.PlanChanges) -> Any:
    """The change files of a native ``$audit_log`` read, or null; see
    :func:`stratalake.spark.native_changes.plan`."""
    return native_changes.plan(req.source_options, req.columns, req.parallelism)


def keep_alive(req: bc.KeepAlive) -> int:
    return os.getpid()


def read_system_table(req: bc.ReadSystemTable) -> str | None:
    """A metadata system table's rows for a local scan on the driver, or null; see
    :func:`stratalake.spark.driver_tables.read`."""
    return driver_tables.read(req.source_options, req.schema)


def classify_filters(req: bc.ClassifyFilters) -> list[bool]:
    """Which pushed filters the scan applies exactly (Spark drops those from its plan)."""
    table, _options = _scan_table(req.source_options)
    return planning.exact_filters(table, req.filters, native=req.native)


def count_rows(req: bc.CountRows) -> int | None:
    """COUNT(*) from file metadata when that is exact, else null (Spark then scans)."""
    table, options = _scan_table(req.source_options)
    return planning.count_rows(table, options)


def aggregate_partitions(req: bc.AggregatePartitions) -> list[list[Any]] | None:
    """Aggregates over partition columns from file metadata when exact, else null (Spark scans)."""
    table, options = _scan_table(req.source_options)
    return planning.aggregate_partitions(table, options, req.group_by, [bc.encode(a) for a in req.aggregates])


HANDLERS: dict[str, Handler] = {
    "list_databases": list_databases,
    "database_exists": database_exists,
    "load_database": load_database,
    "create_database": create_database,
    "drop_database": drop_database,
    "list_tables": list_tables,
    "table_exists": table_exists,
    "load_table": load_table,
    "create_table": create_table,
    "stage_table": stage_table,
    "alter_table": alter_table,
    "drop_table": drop_table,
    "rename_table": rename_table,
    "can_delete_where": can_delete_where,
    "delete_where": delete_where,
    "row_level_commit": row_level_commit,
    "list_procedures": list_procedures,
    "describe_procedure": describe_procedure,
    "call_procedure": call_procedure,
    "plan_scan": plan_scan,
    "plan_changes": plan_changes,
    "read_system_table": read_system_table,
    "keep_alive": keep_alive,
    "count_rows": count_rows,
    "classify_filters": classify_filters,
    "aggregate_partitions": aggregate_partitions,
    "dynamic_assigners": dynamic_assigners,
    "compaction_due": compaction_due,
    "list_partitions": list_partitions,
    "drop_partitions": drop_partitions,
    "merge_schema": merge_schema,
}


def _error(exc: BaseException, req: Any, with_traceback: bool) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    # Which object is missing or already there, for Spark's own exception messages.
    database: str = getattr(req, "database", "")
    table: str = getattr(req, "table", "")
    if isinstance(req, bc.CallProcedure):
        database, table = _procedure_table(req) or ("", "")
    if isinstance(exc, (TableNotFoundError, TableAlreadyExistsError)):
        error["database"], error["table"] = database, table
        if isinstance(exc, TableAlreadyExistsError) and isinstance(req, bc.RenameTable):
            error["database"], error["table"] = req.new_database, req.new_table
    elif isinstance(exc, (DatabaseNotFoundError, DatabaseAlreadyExistsError)) or type(exc).__name__ in (
        "DatabaseNotEmptyError",
    ):
        error["database"] = database
    if with_traceback:
        error["traceback"] = traceback.format_exc()
    return error


def handle(request: str) -> str:
    """Answers one JSON request; never raises.

    Set ``STRATALAKE_BRIDGE_LOG=<file>`` to append every request and its duration to a file.
    """
    sink = io.BytesIO()
    _logged(request, sink)
    return sink.getvalue().decode("utf-8")


def handle_to(request: str, out: IO[bytes]) -> None:
    """:func:`handle`, its answer written to ``out`` as Spark's ``writeUTF`` frames it (a
    big-endian length, then UTF-8). The answer is made in a spooled temporary file first, so a
    scan plan's splits are written one at a time (:class:`SpilledSplits`), never all held."""
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as sink:
        _logged(request, sink)
        length = sink.tell()
        out.write(struct.pack("!i", length))
        sink.seek(0)
        shutil.copyfileobj(sink, out)


# Answers larger than this (a scan plan of ~100,000 files) go through a local file.
_SPOOL_BYTES = 16 * 1024 * 1024


def _logged(request: str, sink: IO[bytes]) -> None:
    log = os.environ.get("STRATALAKE_BRIDGE_LOG")
    if not log:
        _answer(request, sink)
        return
    began, start = time.time(), time.perf_counter()
    _answer(request, sink)
    # Requests carry the catalog's options, credentials included: the log shows them redacted.
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(
            f"{began:.3f} {(time.perf_counter() - start) * 1000:.1f}ms {redact_request(request)}\n"
        )


def redact_request(request: str) -> str:
    """A bridge request (JSON) with the value of every credential key redacted, at any depth and
    inside the catalog options a scan's source options carry as a JSON string."""
    try:
        parsed = json.loads(request)
    except ValueError:
        return f"<a request that is not JSON, {len(request)} characters, not shown>"
    return json.dumps(_redact(parsed))


def _redact(value: Any) -> Any:
    if isinstance(value, list):
        return [_redact(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in identifiers.redact_options(value).items():
        if key == source_options.CATALOG_OPTIONS and isinstance(v, str):
            try:
                v = json.dumps(_redact(json.loads(v)))
            except ValueError:
                v = identifiers.REDACTED
        out[key] = _redact(v)
    return out


def _answer(request: str, sink: IO[bytes]) -> None:
    """The JSON answer to ``request`` written to ``sink`` (empty): the result, or the error."""
    req: Any = None
    try:
        req = bc.decode_request(json.loads(request))
        result = HANDLERS[req.OP](req)
        splits = result.get("splits") if isinstance(result, dict) else None
        if isinstance(splits, SpilledSplits):
            _write_plan(req.OP, result, splits, sink)
            return
        text = json.dumps({"result": bc.reply_json(req.OP, result)})
    except StrataLakeError as exc:
        text = json.dumps({"error": _error(exc, req, with_traceback=False)})
    except Exception as exc:  # a bug, not a user error: keep the traceback for the report
        text = json.dumps({"error": _error(exc, req, with_traceback=True)})
    sink.seek(0)
    sink.truncate()
    sink.write(text.encode("utf-8"))


def _write_plan(op: str, result: dict[str, Any], splits: SpilledSplits, sink: IO[bytes]) -> None:
    """A scan plan's answer, its splits checked and written one at a time."""
    rest = bc.reply_json(op, {**result, "splits": []})
    del rest["splits"]
    sink.write(b'{"result": {"splits": [')
    for i, split in enumerate(splits):
        if i:
            sink.write(b", ")
        checked = bc.message_json(bc.ScanSplit, split, f"reply of {op}.splits[{i}]")
        sink.write(json.dumps(checked).encode("utf-8"))
    sink.write(b"]" + (b", " + json.dumps(rest)[1:].encode("utf-8") if rest else b"}") + b"}")


