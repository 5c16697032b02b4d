"""The ``stratalake`` Python data source: merge-on-read scans and distributed writes.

Spark reaches it through the JVM catalog, which adds the table's coordinates to the options
(:mod:`stratalake.spark.source_options`). It can also be used directly::

    spark.read.format("stratalake").option("warehouse", "/wh").option("table", "db.t").load()

Reads: one Spark input partition per bucket split; each is merged in its own task and yields
Arrow batches cast to the exact Spark schema. Writes: each task writes its rows through a
``TableWrite`` and returns commit messages; the driver commits them all as one snapshot.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from stratalake.append.dml import RowDeletes, split_changes
from stratalake.catalog import Catalog
from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.expressions import Predicate, conjunction
from stratalake.expressions import field as col
from stratalake.read import incremental
from stratalake.read.append_read import FILE_COLUMN, AppendTableRead
from stratalake.read.append_read import ROW_ID_COLUMNS as _ROW_ID_COLUMNS
from stratalake.read.incremental import IncrementalSplit
from stratalake.read.merge_read import SUPERSEDED_FILE
from stratalake.spark import dml, native_write, planning
from stratalake.spark import source_options as keys
from stratalake.spark.native_write import NativeFiles
from stratalake.spark.planning import SplitPartition
from stratalake.spark.types import paimon_to_spark_field
from stratalake.spark.worker_gc import freeze_imports
from stratalake.spark.worker_memory import use_worker_allocator
from stratalake.spark.write_options import check_write_options
from stratalake.table.key_delete import live_listed_keys
from stratalake.table.row_delete import commit_positions, rows_with_positions

if TYPE_CHECKING:
    from stratalake.table.table import Table


# ---- locating the table ---------------------------------------------------------------------


def _option(options: Mapping[str, str], *names: str) -> str | None:
    lowered = {k.lower(): v for k, v in options.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


AUDIT_LOG_SUFFIX = "$audit_log"


def is_audit_log(options: Mapping[str, str]) -> bool:
    """Whether the options name a table's ``$audit_log`` system table."""
    ident = _option(options, keys.TABLE, "table") or ""
    return ident.endswith(AUDIT_LOG_SUFFIX) or _option(options, keys.SYSTEM_TABLE) == AUDIT_LOG_SUFFIX[1:]


def load_base_table(options: Mapping[str, str]) -> Table:
    """The data table behind the options (``db.t$audit_log`` -> ``db.t``)."""
    ident = _option(options, keys.TABLE, "table")
    if ident and ident.endswith(AUDIT_LOG_SUFFIX):
        base = ident[: -len(AUDIT_LOG_SUFFIX)]
        options = {k: v for k, v in options.items() if k.lower() not in (keys.TABLE, "table")}
        options[keys.TABLE] = base
    return load_table(options)


def load_table(options: Mapping[str, str]) -> Table:
    """The table named by the data source options (catalog-provided or user-given)."""
    warehouse = _option(options, keys.WAREHOUSE, "warehouse")
    ident = _option(options, keys.TABLE, "table")
    if not warehouse or not ident:
        raise InvalidOptionError(
            "the stratalake data source needs options 'warehouse' and 'table' (db.table); "
            "or query tables through the stratalake catalog, e.g. SELECT * FROM lake.db.t"
        )
    catalog_options = json.loads(_option(options, keys.CATALOG_OPTIONS) or "{}")
    table: Table = Catalog(warehouse, options=catalog_options).get_table(ident)
    return table


def infer_schema(options: Mapping[str, str]) -> StructType:
    """The Spark schema of the table named by ``options`` (for ``spark.read.format(...)``)."""
    audit = is_audit_log(options)
    table = load_base_table(options) if audit else load_table(options)
    schema = table.schema()
    fields: list[dict[str, Any]] = []
    if audit:  # Paimon's $audit_log: the row kind first
        fields.append({"name": "rowkind", "type": "string", "nullable": False, "metadata": {}})
    for f in schema.fields:
        spark_type, nullable = paimon_to_spark_field(str(f.type))
        fields.append(
            {
                "name": f.name,
                "type": spark_type,
                "nullable": nullable and f.name not in schema.primary_keys,
                "metadata": {},
            }
        )
    return StructType.fromJson({"type": "struct", "fields": fields})


def conform(batch: pa.RecordBatch | pa.Table, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s columns, types and nullability (missing columns: null)."""
    arrays = []
    for f in target:
        if f.name in batch.schema.names:
            column = batch.column(f.name)
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
            arrays.append(column if column.type == f.type else column.cast(f.type))
        else:  # a column added after the snapshot being read
            arrays.append(pa.nulls(batch.num_rows, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


# ---- filters --------------------------------------------------------------------------------


def to_predicate(f: Filter, allowed: set[str]) -> Predicate | None:
    """The stratalake predicate for a Spark filter on one of ``allowed`` columns, else None."""
    if isinstance(f, Not):
        inner = to_predicate(f.child, allowed)
        return None if inner is None else ~inner
    attribute = getattr(f, "attribute", None)
    if attribute is None or len(attribute) != 1 or attribute[0] not in allowed:
        return None
    c = col(attribute[0])
    value: object = getattr(f, "value", None)
    if isinstance(f, EqualTo):
        return c == value
    if isinstance(f, EqualNullSafe):
        return c.is_null() if value is None else c == value
    if isinstance(f, GreaterThan):
        return c > value
    if isinstance(f, GreaterThanOrEqual):
        return c >= value
    if isinstance(f, LessThan):
        return c < value
    if isinstance(f, LessThanOrEqual):
        return c <= value
    if isinstance(f, In):
        return c.isin(list(f.value))
    if isinstance(f, IsNull):
        return c.is_null()
    if isinstance(f, IsNotNull):
        return c.is_not_null()
    return None


# ---- reads ----------------------------------------------------------------------------------


def _live_rows(table: Table, split: Any) -> int:
    """A partially pushed COUNT(*)'s answer for one input partition: rows the planner counted
    from metadata (an int), or the live rows of its split(s), reading only the key columns where
    that is exact (see ``TableRead.count_split``)."""
    if isinstance(split, int):
        return split
    if isinstance(split, IncrementalSplit):
        rows: int = incremental.added_rows(table, incremental.read_split_kv(table, split)).num_rows
        return rows
    splits = split if isinstance(split, list) else [split]
    schema = table.schema()
    column = (list(schema.primary_keys) or [schema.fields[0].name])[:1]
    read = table.new_read(columns=column)
    if isinstance(read, AppendTableRead):
        return sum(batch.num_rows for s in splits for batch in read.read_split(s))
    return sum(read.count_split(s) for s in splits)


class StrataLakeReader(DataSourceReader):
    """Plans bucket splits on the driver and merges each one in its own task."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = dict(options)
        self.schema_json = schema.json()
        self.predicates: list[Predicate] = []

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        # Only partition and primary-key filters are safe before the merge (every version of a
        # key shares them); the core applies them exactly, so Spark need not re-check them.
        allowed = set(json.loads(self.options.get(keys.KEY_COLUMNS, "[]")))
        for f in filters:
            predicate = to_predicate(f, allowed)
            if predicate is None:
                yield f
            else:
                self.predicates.append(predicate)

    def _filter(self, table: Table) -> Predicate | None:
        predicates = list(self.predicates)
        # Filters the shim's scan pushed (it bypasses pushFilters): key/partition ones drop rows
        # of other keys before the merge, exactly as in planning.
        scan_filters = planning.filters_option(self.options, keys.SCAN_FILTERS)
        if scan_filters:
            pushed = planning.scan_predicate(table, scan_filters)
            if pushed is not None:
                predicates.append(pushed)
        return conjunction(predicates) if predicates else None

    def partitions(self) -> list[InputPartition]:
        if self.options.get(keys.SCAN_PLANNED) == "true":
            return []  # the shim planned the splits through the bridge and supplies them itself
        stored = load_table(self.options)
        options = planning.with_stored_scan_options(stored, self.options)
        table = planning.read_table(stored, options)
        rng = planning.incremental_range(table, options)
        if rng is not None:
            units = incremental.plan(table, rng, self._filter(table))
            return [SplitPartition(u) for u in units]
        splits = planning.new_scan(table, options, self._filter(table)).plan()
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = planning.partition_unit(partition)
        if split is None:  # Spark's placeholder when there is nothing to read
            return
        use_worker_allocator()
        table = planning.read_table(load_table(self.options), self.options)
        freeze_imports()  # keeps the daemon's gc.collect() after this task short
        schema = StructType.fromJson(json.loads(self.schema_json))
        target = to_arrow_schema(schema, timezone="UTC")
        if self.options.get(keys.SCAN_COUNT) == "true":
            yield pa.RecordBatch.from_arrays(
                [pa.array([_live_rows(table, split)], pa.int64())], schema=target
            )
            return
        if self.options.get(keys.SCAN_SUPERSEDED) == "true":
            # (first file index, split) pairs: the key-merged splits of a native input partition.
            read = table.new_read()
            for first, key_merged in split:
                for batch in read.superseded_positions(key_merged):
                    if first:
                        files = pc.add(batch.column(SUPERSEDED_FILE), pa.scalar(first, pa.int32()))
                        batch = batch.set_column(0, SUPERSEDED_FILE, files)
                    yield conform(batch, target)
            return
        names = {f.name for f in table.schema().fields}
        # The schema is the one Spark pruned to (the shim passes it): read only those columns.
        columns = [f.name for f in schema.fields if f.name in names]
        limit_text = self.options.get(keys.SCAN_LIMIT)
        remaining = int(limit_text) if limit_text else None
        if isinstance(split, IncrementalSplit):  # the changes between two versions
            kv = incremental.read_split_kv(table, split, self._filter(table))
            rows = incremental.added_rows(table, kv, columns)
            if remaining is not None:
                rows = rows.slice(0, remaining)
            for batch in rows.to_batches():
                yield conform(batch, target)
            return
        read = table.new_read(columns=columns, filter=self._filter(table))
        # Row-level DML of an append table asks for each row's id (its file and position), and
        # so does a DELETE that removes a key table's stored rows (planning._position_plan).
        row_ids = [f.name for f in schema.fields if f.name in _ROW_ID_COLUMNS]
        # A list: native splits the planner packed into one partition, read here one after the other.
        splits = split if isinstance(split, list) else [split]
        batches: Iterable[Any]
        if row_ids and isinstance(read, AppendTableRead):
            batches = (b for s in splits for b in read.read_split_with_row_ids(s))
        elif row_ids:
            where = self._filter(table)
            batches = (b for s in splits for b in rows_with_positions(table, s, columns, where))
        else:
            batches = (b for s in splits for b in read.read_split(s))
        for batch in batches:
            if remaining is not None:
                if remaining <= 0:
                    return
                batch = batch.slice(0, remaining)
                remaining -= batch.num_rows
            yield conform(batch, target)


# ---- writes ---------------------------------------------------------------------------------


@dataclass
class StrataLakeCommitMessage(WriterCommitMessage):
    """One task's commit messages (pickled by Spark between the task and the driver)."""

    messages: list[Any] = field(default_factory=list)
    # Row-level DML of an append table: the rows it deletes, by data file and position.
    deletes: Any = None


def _deleted_positions(table: Table, iterator: Iterator[pa.RecordBatch], row_kind: str) -> RowDeletes:
    """A task's share of a DELETE removing a key table's stored rows: the (file, position) of
    each deleted row, kept for the commit (``row_delete.delete_positions``)."""
    deletes = RowDeletes()
    for batch in iterator:
        for _ in split_changes(batch, row_kind, deletes):
            raise UnsupportedError(
                f"table {table.identifier}: a DELETE by data file and position writes no rows, but "
                "Spark's plan sent some; nothing was committed"
            )
    return deletes.compact()


LISTED_CHUNK_ROWS = 4 << 20
"""Listed keys a writer task checks at once (32 MiB of a BIGINT key): a longer share of a key list
is checked chunk by chunk, each chunk reading its buckets' keys again."""


def _listed_deletes(
    table: Table,
    batches: Iterator[pa.RecordBatch],
    columns: list[str],
    row_kind: str,
    chunk_rows: int = LISTED_CHUNK_ROWS,
) -> Iterator[pa.Table]:
    """The ``-D`` records of a task's share of a DELETE by a key list: of the listed keys Spark
    sent (the shim's rewrite, clustered by bucket), those live in the latest snapshot
    (``table/key_delete.py``). Holds up to ``chunk_rows`` listed keys, their key columns only."""
    chunk: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        chunk.append(batch.select(columns))
        rows += batch.num_rows
        if rows >= chunk_rows:
            yield from _live_deletes(table, chunk, row_kind)
            chunk, rows = [], 0
    if chunk:
        yield from _live_deletes(table, chunk, row_kind)


def _live_deletes(table: Table, listed: list[pa.RecordBatch], row_kind: str) -> Iterator[pa.Table]:
    found = live_listed_keys(table, pa.Table.from_batches(listed))
    if found.num_rows:
        yield dml.key_only_deletes(table, found, row_kind)


def _static_partition(spec_json: str) -> dict[str, Any]:
    """The JVM's {column: {"value", "type"}} spec as Python values (Catalyst internal forms)."""
    out: dict[str, Any] = {}
    for name, v in json.loads(spec_json).items():
        value, type_name = v.get("value"), v.get("type", "string")
        if value is None:
            out[name] = None
        elif type_name in ("byte", "short", "integer", "long"):
            out[name] = int(value)
        elif type_name == "boolean":
            out[name] = value == "true"
        elif type_name == "date":  # days since the epoch
            out[name] = dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
        elif type_name.startswith("decimal"):
            out[name] = Decimal(value)
        elif type_name in ("float", "double"):
            out[name] = float(value)
        else:
            out[name] = value
    return out


def _expand(table: Table, spec: dict[str, Any], msgs: list[Any]) -> list[dict[str, Any]]:
    """Full partition specs covered by a (possibly partial) static spec.

    ``INSERT OVERWRITE t PARTITION (dt='x')`` on a table partitioned by (dt, hr) replaces every
    existing ``dt='x'`` partition, plus the ones this write creates.
    """
    codec = table.partition_codec
    if set(spec) == set(codec.keys):
        return [spec]
    wanted = codec.spec_to_values({k: spec.get(k) for k in codec.keys}, table.identifier)
    positions = [i for i, k in enumerate(codec.keys) if k in spec]
    found: dict[bytes, dict[str, Any]] = {}
    snapshot = table.latest_snapshot()
    for entry in table.live_entries(snapshot) if snapshot is not None else []:
        values = codec.from_bytes(entry.partition)
        if all(values[i] == wanted[i] for i in positions):
            found[entry.partition] = codec.to_dict(entry.partition)
    for m in msgs:
        found[m.partition] = codec.to_dict(m.partition)
    return list(found.values())


def set_dynamic_assigners(writer: Any, options: Mapping[str, str]) -> None:
    """Dynamic buckets: Spark clustered the rows by assigner slice (the shim's
    ``stratalake.write.dynamic-assigners``), so this task's writer assigns only its slices."""
    assigners = options.get(keys.DYNAMIC_ASSIGNERS)
    if assigners and hasattr(writer, "dynamic_assigners"):
        writer.dynamic_assigners = int(assigners)
        writer.dynamic_foreign_level0 = options.get(keys.DYNAMIC_FOREIGN_LEVEL0, "").lower() == "true"



# The task property the shim sets when it ends Arrow batches early with rows of nulls instead of
# Spark's per-row byte check (jvm-shim write/ArrowBatchBound.java): it names the column, never
# null in real rows (the shim refuses those), whose nulls mark those rows.
PADDING_PROPERTY = "stratalake.write.padding"


def without_padding(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` without the shim's padding rows, when this task's writer was sent any."""
    context = TaskContext.get()
    marker = context.getLocalProperty(PADDING_PROPERTY) if context is not None else None
    if marker is None:
        return batches
    return _drop_nulls_of(batches, marker)


def _drop_nulls_of(batches: Iterator[pa.RecordBatch], column: str) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        marks = batch.column(column)
        if marks.null_count:  # O(1) for the batches the shim did not end early
            batch = batch.filter(marks.is_valid())
            if not batch.num_rows:
                continue
        yield batch

class StrataLakeWriter(DataSourceArrowWriter):
    """Writes each task's rows through a ``TableWrite``; commits once, on the driver."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.options = dict(options)
        self.overwrite = overwrite
        self.mode = self.options.get(keys.WRITE_MODE, "truncate" if overwrite else "append")
        # Created on the driver (before any task) and pickled into every task and into the commit.
        check_write_options(load_table(self.options), self.options)
        self.commit_user = str(uuid.uuid4())  # one user per job
        # Change records addressing rows by data file and position (the shim's rewrite adds
        # those columns: append tables, and DELETEs removing a key table's stored rows).
        self.by_position = self.options.get(keys.ROW_KIND_COLUMN) is not None and FILE_COLUMN in schema.names

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StrataLakeCommitMessage:
        use_worker_allocator()
        table = load_table(self.options)
        iterator = without_padding(iterator)
        freeze_imports()  # keeps the daemon's gc.collect() after this task short
        row_kind = self.options.get(keys.ROW_KIND_COLUMN)
        if row_kind is not None and self.by_position and table.schema().primary_keys:
            return StrataLakeCommitMessage([], _deleted_positions(table, iterator, row_kind))
        writer = table.new_write(self.commit_user)
        # An overwrite replaces the partitions it writes: their previous files must not seed
        # sequence numbers or compactions (or, with deletion vectors, hide the new rows).
        writer.ignore_previous_files = self.mode != "append"
        set_dynamic_assigners(writer, self.options)
        try:
            # Row-level DML sends change records: the row kind travels in a column.
            if row_kind is not None and not table.schema().primary_keys:
                return self._write_append_changes(table, writer, iterator, row_kind)
            listed = self.options.get(keys.DELETE_KEYS)
            if row_kind is not None and listed is not None:
                # A DELETE by a key list: the listed keys, of which the live ones get -D records.
                iterator = _listed_deletes(table, iterator, json.loads(listed), row_kind)
            fill = dml.delete_filler(table, row_kind)  # -D records taking the stored row's values
            for batch in iterator:
                writer.write(batch if fill is None else fill(batch), row_kind=row_kind)
            return StrataLakeCommitMessage(writer.prepare_commit())
        except BaseException:
            writer.abort()
            raise

    @staticmethod
    def _write_append_changes(
        table: Table, writer: Any, iterator: Iterator[pa.RecordBatch], row_kind: str
    ) -> StrataLakeCommitMessage:
        """Change records of an append table: deletes are (file, position) pairs kept for the
        commit, the other records are new rows (append/dml.py)."""
        deletes = RowDeletes()
        # No writer compaction: the statement's files and deletes commit as one snapshot.
        writer.compact = False
        for batch in iterator:
            for rows in split_changes(batch, row_kind, deletes):
                writer.write(rows)
        return StrataLakeCommitMessage(writer.prepare_commit(), deletes.compact())

    def _messages(self, messages: list[WriterCommitMessage | None]) -> list[Any]:
        out: list[Any] = []
        for m in messages:
            if isinstance(m, StrataLakeCommitMessage):
                out.extend(m.messages)
        return out

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = load_table(self.options)
        native = [m for m in messages if isinstance(m, NativeFiles)]
        if native:
            # Files Spark's Parquet writer made (native_write.py): described from their footers.
            try:
                msgs = native_write.commit_messages(table, native)
            except BaseException:
                native_write.delete_files(table, native)
                raise
            self._commit(table, msgs)
            return
        self._commit(table, self._messages(messages), messages)

    def _commit(
        self, table: Table, msgs: list[Any], messages: list[WriterCommitMessage | None] | None = None
    ) -> None:
        commit = table.new_commit(self.commit_user)
        if messages is not None and self.by_position:
            deletes = RowDeletes()
            for m in messages:
                if isinstance(m, StrataLakeCommitMessage) and m.deletes is not None:
                    deletes.merge(m.deletes)
            # (The shim commits these through the bridge instead, rewriting files in Spark
            # tasks: spark/delete_job.py; this is the same commit done here.)
            commit_positions(table, deletes, msgs, self.commit_user)  # removes its files on failure
            return
        # commit.abort deletes the files only when the commit is known not to have happened (the
        # shim does not send Spark's abort to Python once a commit began: see StrataLakeWriteBuilder).
        try:
            if self.mode == "append":
                commit.commit(msgs)
            elif self.mode == "truncate":
                commit.commit(msgs, overwrite=True)
            elif self.mode == "static":
                spec = _static_partition(self.options[keys.STATIC_PARTITION])
                specs = _expand(table, spec, msgs)
                if specs:  # (an empty list would mean the whole table to the core)
                    commit.commit(msgs, overwrite=True, overwrite_partitions=specs)
            elif self.mode == "dynamic":
                # Replace exactly the partitions this job wrote; nothing written, nothing replaced.
                codec = table.partition_codec
                written = {m.partition: codec.to_dict(m.partition) for m in msgs}
                if written:
                    commit.commit(msgs, overwrite=True, overwrite_partitions=list(written.values()))
            else:
                raise InvalidOptionError(f"unknown stratalake write mode {self.mode!r}")
        except BaseException:
            commit.abort(msgs)
            raise

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Spark aborts a job whose tasks failed (no commit began: the files are known not
        committed). The shim does not call this once ``commit`` began: the commit decides then."""
        table = load_table(self.options)
        native_write.delete_files(table, [m for m in messages if isinstance(m, NativeFiles)])
        table.delete_uncommitted(self._messages(messages))
