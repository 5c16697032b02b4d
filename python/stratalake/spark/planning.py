"""Driver-side scan planning for the JVM scan (``org.stratalake.spark.scan.StrataLakeScan``).

The shim decides nothing about the format: it sends what Spark pushed down (required columns,
filters, runtime filters, a limit, a COUNT(*)) through the bridge, and these functions answer with
the splits to read and the facts Spark asks for: statistics, the bucket layout for
storage-partitioned joins, per-split sizes for the scan's metrics.

Filters arrive as JSON trees translated from Spark's V2 predicates::

    {"op": "and" | "or", "children": [...]}   {"op": "not", "children": [p]}
    {"op": "=" | "<=>" | "<" | "<=" | ">" | ">=" | "in" | "is_null" | "is_not_null",
     "column": "c", "type": "<Spark type name>", "values": [...]}    (Catalyst internal values)

Only predicates on partition and primary-key columns are used, to prune partitions, buckets and
files and to drop rows before the merge (every version of a key shares those values). Spark still
evaluates every filter after the scan, so a predicate that cannot be translated is simply skipped.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import pickle
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.expressions import Compare, In, IsNotNull, IsNull, Not, Or, Predicate, conjunction
from stratalake.lsm.data_file import bucket_dir
from stratalake.lsm.file_format import PARQUET, format_of_file
from stratalake.lsm.levels import KeyOf, key_decoder, overlapping_levels
from stratalake.maintenance.tags import tag_scan
from stratalake.read import fallback, incremental, scan_options
from stratalake.read.append_read import ROW_ID_COLUMNS
from stratalake.read.fallback import FallbackScan
from stratalake.read.incremental import IncrementalRange, IncrementalSplit
from stratalake.read.scan import Split, TableScan
from stratalake.read.value_stats import value_column_stats
from stratalake.spark import read_options
from stratalake.spark import source_options as keys
from stratalake.spark.plan_store import PlanEntries, SpilledSplits
from stratalake.spec.statistics import (
    Statistics,
    deserialize_value,
    has_min_max,
    paimon_default_size,
    timestamp_micros,
)
from stratalake.store.files import data_file_path
from stratalake.store.stats_file import snapshot_stats
from stratalake.table.row_delete import deletes_by_rewrite, position_splits
from stratalake.table.table import Table
from stratalake.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
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

T = TypeVar("T")

_COMPARISONS = ("=", "<", "<=", ">", ">=")
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_EPOCH = dt.date(1970, 1, 1)
SPARK_TIMESTAMP_PRECISION = 6


# ---- filters --------------------------------------------------------------------------------


def _value(raw: Any, type_name: str) -> Any:
    """A Catalyst literal (as the shim wrote it) as the Python value stratalake compares with."""
    if raw is None:
        return None
    if type_name in ("byte", "short", "integer", "long"):
        return int(raw)
    if type_name in ("string", "boolean") or type_name.startswith(("char", "varchar")):
        return raw
    if type_name == "date":  # days since the epoch
        return _EPOCH + dt.timedelta(days=int(raw))
    if type_name.startswith("decimal"):
        return Decimal(str(raw))
    # float/double (NaN ordering differs from Arrow's), timestamps, binary: not translated.
    raise _Untranslatable(type_name)


class _Untranslatable(Exception):
    pass


def predicate_from_json(node: Mapping[str, Any], allowed: set[str]) -> Predicate | None:
    """The predicate for one filter tree on ``allowed`` columns only.

    Returns None when it cannot be translated exactly. Inside AND a conjunct that cannot be
    translated is dropped (the result is weaker, which is safe for pruning); that never happens
    under NOT, where a weaker operand would make the negation stronger.
    """
    return _translate(node, allowed, negated=False, strict=False)


def _translate(node: Mapping[str, Any], allowed: set[str], negated: bool, strict: bool) -> Predicate | None:
    op = str(node.get("op", ""))
    children = node.get("children") or []
    if op == "and":
        parts = [_translate(c, allowed, negated, strict) for c in children]
        if (negated or strict) and any(p is None for p in parts):
            return None
        kept = [p for p in parts if p is not None]
        return conjunction(kept) if kept else None
    if op == "or":
        ors = [_translate(c, allowed, negated, strict) for c in children]
        complete = [p for p in ors if p is not None]
        if not complete or len(complete) != len(ors):
            return None
        return complete[0] if len(complete) == 1 else Or(tuple(complete))
    if op == "not":
        inner = _translate(children[0], allowed, not negated, strict) if len(children) == 1 else None
        return None if inner is None else Not(inner)
    column = node.get("column")
    if not isinstance(column, str) or column not in allowed:
        return None
    try:
        values = [_value(v, str(node.get("type", ""))) for v in node.get("values") or []]
    except (_Untranslatable, ValueError, TypeError):
        return None
    if op == "is_null":
        return IsNull(column)
    if op == "is_not_null":
        return IsNotNull(column)
    if op == "<=>" and len(values) == 1:
        return IsNull(column) if values[0] is None else Compare(column, "=", values[0])
    if op in _COMPARISONS and len(values) == 1 and values[0] is not None:
        flipped = bool(node.get("flipped"))
        return Compare(column, _FLIPPED[op] if flipped else op, values[0])
    if op == "in" and values:
        non_null = tuple(v for v in values if v is not None)
        # x IN (1, NULL) is never false for a non-matching row, only null: rows are dropped alike.
        return In(column, non_null) if non_null else None
    return None


def scan_predicate(table: Table, filters: Iterable[Mapping[str, Any]]) -> Predicate | None:
    """The conjunction of the translatable key/partition predicates among ``filters``."""
    schema = table.schema()
    allowed = set(schema.partition_keys) | set(schema.primary_keys)
    parts = [p for p in (predicate_from_json(f, allowed) for f in filters) if p is not None]
    return conjunction(parts) if parts else None


def exact_filters(table: Table, filters: Iterable[Mapping[str, Any]], native: bool = False) -> list[bool]:
    """For each filter tree, whether the scan applies it exactly (so Spark may drop it).

    True when the whole tree translates to key/partition predicates: the scan prunes with them
    and the reader drops non-matching rows before the merge, so every row it returns matches.
    With ``native`` (splits may be read by Spark's Parquet reader, which filters no rows) only
    partition predicates are exact: :func:`plan` reads a split natively only where they hold for
    the whole split, and Spark evaluates key predicates again after the scan.
    """
    schema = table.schema()
    allowed = set(schema.partition_keys) if native else set(schema.partition_keys) | set(schema.primary_keys)
    return [_translate(f, allowed, negated=False, strict=True) is not None for f in filters]


def filters_option(options: Mapping[str, str], key: str) -> list[dict[str, Any]]:
    """A JSON list of filter trees from the data source options (absent: empty)."""
    text = options.get(key)
    return list(json.loads(text)) if text else []


# ---- planning -------------------------------------------------------------------------------


def _width(t: pa.DataType) -> int:
    """Rough bytes per value, for scaling file sizes by the columns a scan reads."""
    try:
        return max(1, int(t.bit_width) // 8)
    except ValueError:
        return 20  # strings, binary, nested: Spark's own default size estimate for strings


def _read_fraction(table: Table, read_columns: Sequence[str] | None) -> float:
    full = table.arrow_schema()
    system = 8 + 1  # _SEQUENCE_NUMBER + _VALUE_KIND, stored in every file
    total = sum(_width(f.type) for f in full) + system
    if read_columns is None:
        return 1.0
    read = sum(_width(full.field(c).type) for c in read_columns) + system
    return min(1.0, read / total)


def _sorted_runs(split: Split) -> int:
    """Sorted runs a merge of the split reads: each level-0 file, and each non-empty level."""
    level0 = sum(1 for f in split.files if f.level == 0)
    return level0 + len({f.level for f in split.files if f.level > 0})


# ---- native reads ---------------------------------------------------------------------------
#
# A split that needs no merge is read by Spark's own vectorized Parquet reader in the JVM
# (``StrataLakeNativeReader``): the shim gets the files' absolute paths and reads the requested
# table columns by name. Python still decides which splits qualify; anything it cannot vouch for
# goes through the Python reader. See ARCHITECTURE.md, "Batch scans".

# Paimon types whose Parquet form (as stratalake, pypaimon and Paimon write it) Spark's vectorized
# reader decodes into the Spark type the scan reports. Not: TIME, timestamps beyond microseconds
# (INT96 or nanoseconds), nested types.
_NATIVE_TYPES = (
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    FloatType,
    DoubleType,
    DecimalType,
    CharType,
    VarCharType,
    BinaryType,
    VarBinaryType,
    DateType,
)


def _native_type(t: DataType) -> bool:
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        return t.precision <= SPARK_TIMESTAMP_PRECISION
    return isinstance(t, _NATIVE_TYPES)


def native_columns(table: Table, columns: Sequence[str] | None) -> list[dict[str, Any]] | None:
    """The columns a native read asks the files for (name in the file, Paimon field id, type), or
    None when some column's type cannot be read natively."""
    schema = table.schema()
    names = list(columns) if columns is not None else [f.name for f in schema.fields]
    out = []
    for name in names:
        f = schema.field(name)
        if not _native_type(f.type):
            return None
        out.append({"name": f.name, "field_id": f.id, "type": str(f.type)})
    return out


def local_uri(location: str) -> str | None:
    """``location`` as a ``file:`` URI for Hadoop's local filesystem, or None when not local."""
    head, sep, rest = location.partition(":")
    if sep and len(head) >= 2 and head.isalpha():
        if head.lower() != "file":
            return None  # s3://, gs://...: pyarrow's and Hadoop's schemes and credentials differ
        location = rest[2:] if rest.startswith("//") else rest
    if not location.startswith("/"):
        return None
    return "file:" + location


def readable_by_name(table: Table, schema_id: int, columns: Sequence[str] | None) -> bool:
    """Whether Spark's Parquet reader, asking for the table's ``columns`` by name, reads a file of
    schema ``schema_id`` as Python's mapping by field id does.

    True for the current schema. For an older one, each column must be in the file under the
    same field id, name and type (nullability aside), or absent from it under its id *and* its
    name and nullable (a column added later: the reader fills nulls). Renamed or widened columns,
    and names reused by another field, need Python.
    """
    current = table.schema()
    if schema_id == current.id:
        return True
    old = table.file_schema(schema_id)
    by_id = {f.id: f for f in old.fields}
    old_names = {f.name.lower() for f in old.fields}
    names = list(columns) if columns is not None else [f.name for f in current.fields]
    for name in names:
        field = current.field(name)
        was = by_id.get(field.id)
        if was is None:
            if field.name.lower() in old_names or not field.type.nullable:
                return False
        elif was.name != field.name or was.type.copy(nullable=True) != field.type.copy(nullable=True):
            return False
    return True


def native_files(
    table: Table,
    split: Split,
    partition_exact: Sequence[Predicate],
    key_of: KeyOf,
    schema_ok: Callable[[int], bool] = lambda schema_id: False,
    key_merge: Callable[[Split], bool] | None = None,
) -> tuple[list[dict[str, Any]], bool] | None:
    """The data files of ``split`` for a native read, in output order, and whether the read drops
    the rows of :meth:`TableRead.superseded_positions` (below); None when the split must go
    through the Python reader.

    Native when nothing is merged or dropped: the split is read file by file (deletion-vector and
    first-row tables) or holds one file, or all its files form one sorted run of a level >= 1
    (a fully compacted bucket: each key once, already merged); no file holds retractions; every
    file is Parquet and of the table's current schema or one ``schema_ok`` accepts (see
    :func:`readable_by_name`); and the partition predicates Spark dropped as exact hold for the
    whole split.
    A file's deletion vector goes along (``deletion``: index file URI, offset and length of the
    serialized vector); the shim drops those row positions.

    With ``key_merge``, a split that does need a merge may still be read natively when
    ``key_merge(split)`` holds (see :meth:`TableRead.picks_by_position`): its files are listed in
    ``split.files`` order, the shim first runs the Python reader in "superseded" mode (only the
    key, sequence and kind columns are merged, returning the positions the merge drops), then
    reads the files whole without those rows. Retractions are then allowed (the merge drops them).
    """
    files = list(split.files)
    if not files or any(f.external_path for f in files):
        return None
    merged = split.merge and len(files) > 1
    if merged:
        levels = {f.level for f in files}
        if len(levels) == 1 and 0 not in levels and not overlapping_levels(files, key_of):
            files.sort(key=lambda f: key_of(f.min_key))  # one sorted run: key order
            merged = False
        elif key_merge is None or not key_merge(split):
            return None
    if not merged and any(f.delete_row_count != 0 for f in files):
        return None
    schema_id = table.schema().id
    if any(format_of_file(f.file_name) != PARQUET for f in files):
        return None
    if any(f.schema_id != schema_id and not schema_ok(f.schema_id) for f in files):
        return None
    if partition_exact:
        values = table.partition_codec.to_dict(split.partition)
        if not all(p.eval_values(values) is True for p in partition_exact):
            return None
    base = local_uri(table.location)
    if base is None:
        return None
    directory = bucket_dir(base, table.partition_codec.path(split.partition_values), split.bucket)
    out = []
    for f in files:
        entry: dict[str, Any] = {
            "path": data_file_path(directory, f),
            "format": PARQUET,
            "size": f.file_size,
            "rows": f.row_count,
        }
        dv = split.deletion_file(f.file_name)
        if dv is not None:
            uri = local_uri(dv.path)
            if uri is None:
                return None
            entry["deletion"] = {"path": uri, "offset": dv.offset, "length": dv.length}
        out.append(entry)
    return out, merged


def _partition_exact(table: Table, filters: Iterable[Mapping[str, Any]]) -> list[Predicate]:
    """The filters Spark dropped as exact under a native read: whole partition predicates."""
    allowed = set(table.schema().partition_keys)
    out = []
    for f in filters:
        p = _translate(f, allowed, negated=False, strict=True)
        if p is not None:
            out.append(p)
    return out


def _live_estimate(split: Split) -> int:
    """Upper bound of the split's live rows: its records minus its retractions."""
    exact = _exact_live_rows(split)
    if exact is not None:
        return exact
    return max(0, sum(f.row_count - (f.delete_row_count or 0) for f in split.files))


class SplitPartition(InputPartition):
    """What one task reads (see :func:`encode_partition`), pickled and compressed: the driver
    holds every input partition of a scan until its tasks end, twice in the JVM (the plan's
    reply and Spark's partitions), so their size is the driver's memory per planned file. A
    manifest's metadata repeats itself (schema ids, levels, stats of the same layout, names of
    one writer): zlib at level 1 makes it 4-10x smaller for ~1 ms per 250 files."""

    def __init__(self, unit: Any) -> None:
        super().__init__(_compressed(unit))

    @classmethod
    def of_payload(cls, payload: bytes) -> SplitPartition:
        """The partition whose value is ``payload``, a unit :func:`_compressed` already."""
        partition = cls.__new__(cls)
        InputPartition.__init__(partition, payload)
        return partition


class _Packed:
    """Splits one task reads one after the other, each still compressed on its own (packing
    groups splits already planned and compressed, batch by batch); with ``offsets``, the
    key-merged splits of a native input partition, each with the index of its first file."""

    __slots__ = ("offsets", "payloads")

    def __init__(self, payloads: Sequence[bytes], offsets: Sequence[int] | None = None) -> None:
        self.payloads = tuple(payloads)
        self.offsets = tuple(offsets) if offsets is not None else None

    def __getstate__(self) -> tuple[tuple[bytes, ...], tuple[int, ...] | None]:
        return self.payloads, self.offsets

    def __setstate__(self, state: tuple[tuple[bytes, ...], tuple[int, ...] | None]) -> None:
        self.payloads, self.offsets = state


def _compressed(unit: Any) -> bytes:
    return zlib.compress(pickle.dumps(unit, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unit(split: Split) -> bytes:
    """A planned split as its compressed payload (see :class:`SplitPartition`)."""
    return _compressed(split)


def _decoded(payload: bytes) -> Any:
    unit = pickle.loads(zlib.decompress(payload))
    if isinstance(unit, _Packed):
        splits = [pickle.loads(zlib.decompress(p)) for p in unit.payloads]
        return splits if unit.offsets is None else list(zip(unit.offsets, splits, strict=True))
    return unit


def partition_unit(partition: InputPartition) -> Any:
    """What :class:`SplitPartition` holds, or None for Spark's placeholder of an empty scan."""
    if partition.value is None:
        return None
    return _decoded(partition.value)


def encode_partition(split: Split | IncrementalSplit | int | list[Split] | list[tuple[int, Split]]) -> str:
    """The pickled ``InputPartition`` Spark's Python reader receives, base64 for JSON. An int
    stands for rows already counted from metadata (a partially pushed COUNT(*)), a list for
    splits one task reads (or counts) one after the other; (file offset, split) pairs are the
    key-merged splits of a native input partition (``SCAN_SUPERSEDED``)."""
    return _encoded(SplitPartition(split))


def _encode_units(units: Sequence[bytes], offsets: Sequence[int] | None = None) -> str:
    """:func:`encode_partition` of splits already compressed by :func:`_unit`: one split as is,
    several as a :class:`_Packed` list (with ``offsets``, as (file offset, split) pairs)."""
    if len(units) == 1 and offsets is None:
        return _encoded(SplitPartition.of_payload(units[0]))
    return _encoded(SplitPartition(_Packed(units, offsets)))


def _encoded(partition: SplitPartition) -> str:
    return base64.b64encode(pickle.dumps(partition)).decode("ascii")


def _count_groups(splits: Sequence[T], weight: Callable[[T], int], parallelism: int) -> list[list[T]]:
    """``splits`` packed into at most ``parallelism`` groups of similar ``weight`` (largest first
    into the lightest group): each COUNT(*) task returns one number, so a task per split would
    only add Spark's per-task cost, while one group per core keeps every core busy."""
    groups: list[list[T]] = [[] for _ in range(max(1, min(parallelism, len(splits))))]
    weights = [0] * len(groups)
    for s in sorted(splits, key=lambda s: -weight(s)):
        i = weights.index(min(weights))
        groups[i].append(s)
        weights[i] += weight(s)
    return [g for g in groups if g]


def _count_plan(
    table: Table, snapshot_id: int | None, splits: Iterable[Split], parallelism: int | None = None
) -> dict[str, Any]:
    """The plan of a partially pushed COUNT(*) (no filter): splits whose live rows metadata
    knows exactly are summed here into one input partition; the others are packed into at most
    ``parallelism`` input partitions (Spark's default parallelism, sent by the shim; one per
    split without it), whose tasks count their splits' keys and return one count each. Spark
    sums the counts. Splits to count are kept compressed as they come (see :func:`plan`)."""
    out_splits: list[dict[str, Any]] = []
    known = 0
    from_metadata = 0
    merged: list[dict[str, Any]] = []
    for s in splits:
        live = _exact_live_rows(s)
        if live is not None:
            known += live
            from_metadata += 1
            continue
        merged.append(
            {
                "unit": _unit(s),
                "bucket": s.bucket,
                "files": len(s.files),
                "bytes": sum(f.file_size for f in s.files),
                "rows": s.row_count,
                "runs": _sorted_runs(s),
            }
        )
    for group in _count_groups(merged, lambda e: int(e["bytes"]), parallelism or len(merged)):
        out_splits.append(
            {
                "partition": _encode_units([e["unit"] for e in group]),
                "bucket": group[0]["bucket"] if len(group) == 1 else -1,
                "files": sum(e["files"] for e in group),
                "bytes": sum(e["bytes"] for e in group),
                "rows": sum(e["rows"] for e in group),
                "runs": max(e["runs"] for e in group),
            }
        )
    if from_metadata or not out_splits:
        out_splits.append(
            {
                "partition": encode_partition(known),
                "bucket": -1,
                "files": 0,
                "bytes": 0,
                "rows": known,
                "runs": 0,
            }
        )
    return {
        "snapshot_id": snapshot_id,
        "splits": out_splits,
        "rows": len(out_splits),
        "bytes": 8 * len(out_splits),
        "bucket_keys": [],
        "num_buckets": None,
        "ordering": [],
        "native_columns": None,
        "count_from_metadata": from_metadata,
        "count_merged": len(merged),
    }


def _snapshot_id(options: Mapping[str, str]) -> int | None:
    text = options.get(keys.SNAPSHOT_ID)
    return int(text) if text else None


def with_stored_scan_options(table: Table, options: Mapping[str, str]) -> Mapping[str, str]:
    """The read options of a batch scan, with Paimon's scan options the table stores under them.

    Paimon's scan options are table options too (``ALTER TABLE t SET TBLPROPERTIES
    ('scan.snapshot-id' = '3')`` pins Paimon's batch reads to snapshot 3), and a read's own options
    override them, as Paimon's dynamic options do. So a stored ``scan.*`` / ``incremental-*``
    option applies unless the read chooses its own version (a read option or ``VERSION AS OF``),
    which then replaces every stored version choice. A row-level command (UPDATE, DELETE, MERGE)
    reads the latest snapshot whatever the table stores, as Paimon's commands read it.
    """
    if options.get(keys.ROW_LEVEL_COMMAND):
        return options
    lowered = {k.lower() for k, v in options.items() if v}
    stored = {
        k: v for k, v in table.options().items() if k.lower() in read_options.BATCH_SCAN_OPTIONS and v.strip()
    }
    if not stored:
        return options
    if (
        options.get(keys.TAG)
        or options.get(keys.SNAPSHOT_ID)
        or lowered & set(read_options.BATCH_SCAN_OPTIONS)
    ):
        return options
    fallback.refuse_fallback(table, f"a read with the stored scan options {', '.join(sorted(stored))}")
    return {**stored, **options}


def read_table(table: Table, options: Mapping[str, str]) -> Table:
    """The handle a scan of the version the options name reads through: bound to the columns of
    that snapshot (or tag), as Spark's schema of a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` read
    is (``bridge_handlers.load_table``); the table itself for the latest snapshot."""
    if options.get(keys.TAG):
        return table.as_of(table.tag_manager.tag(options[keys.TAG]))
    snapshot_id = _snapshot_id(options)
    if snapshot_id is not None:
        return table.as_of(table.snapshot(snapshot_id))
    return table


def incremental_range(table: Table, options: Mapping[str, str]) -> IncrementalRange | None:
    """The incremental read (``incremental-between``...) the read options ask for, else None;
    refused together with VERSION AS OF / TIMESTAMP AS OF."""
    time_travel = bool(options.get(keys.TAG)) or _snapshot_id(options) is not None
    return read_options.incremental_range(table, options, time_travel=time_travel)


def incremental_plan(
    table: Table, rng: IncrementalRange, predicate: Predicate | None, request: Mapping[str, Any]
) -> dict[str, Any]:
    """The plan of an incremental read: one input partition per unit (a bucket's change files, or
    a partition's changed buckets for a diff), all read by Python; no ordering, no bucket layout.
    A partially pushed COUNT(*) counts each unit's rows in its task."""
    units = incremental.plan(table, rng, predicate)
    entries = [
        {
            "partition": encode_partition(u),
            "bucket": -1,
            "files": len(u.entries) + sum(len(s.files) for s in (*u.before, *u.after)),
            "bytes": u.file_size,
            "rows": u.row_count,
            "runs": 1,
        }
        for u in units
    ]
    if request.get("count") and not entries:
        entries = [
            {"partition": encode_partition(0), "bucket": -1, "files": 0, "bytes": 0, "rows": 0, "runs": 0}
        ]
    rows = sum(u.row_count for u in units)
    if request.get("limit") is not None and predicate is None:
        rows = min(rows, int(request["limit"]))
    return {
        "snapshot_id": rng.end_id if not rng.empty else None,
        "splits": entries,
        "rows": len(entries) if request.get("count") else rows,
        "bytes": sum(u.file_size for u in units),
        "bucket_keys": [],
        "num_buckets": None,
        "ordering": [],
        "native_columns": None,
    }


def new_scan(
    table: Table, options: Mapping[str, str], predicate: Predicate | None = None
) -> TableScan | FallbackScan:
    """The scan of the version the options name: a tag (its snapshot copy), a snapshot id, or the
    latest; from ``VERSION AS OF`` / ``TIMESTAMP AS OF`` (the catalog's options) or from Paimon's
    scan options given as read options (:mod:`stratalake.spark.read_options`, which refuses
    unknown read options by name).

    With ``scan.fallback-branch``, a time travel by time reads the fallback branch at that time
    too, and tags are refused (:mod:`stratalake.read.fallback`)."""
    snapshot, tag = read_options.scan_snapshot(table, options)
    if fallback.fallback_branch(table) is not None:
        if options.get(keys.TAG) and snapshot is None:  # VERSION AS OF '<tag>'
            return FallbackScan(table, predicate, tag=options[keys.TAG])
        if tag is not None and not options.get(keys.TAG) and _snapshot_id(options) is None:
            return FallbackScan(table, predicate, tag=tag)  # read option scan.tag-name
        if options.get(keys.TIMESTAMP_MS) and snapshot is None:  # TIMESTAMP AS OF
            return table.new_scan(filter=predicate, timestamp_ms=int(options[keys.TIMESTAMP_MS]))
        millis = None if _snapshot_id(options) is not None else _timestamp_option(options)
        if millis is not None:
            return table.new_scan(filter=predicate, timestamp_ms=millis)
    if options.get(keys.TAG) or _snapshot_id(options) is not None:
        if snapshot is not None:
            raise InvalidOptionError(
                f"table {table.identifier}: VERSION AS OF / TIMESTAMP AS OF and read option "
                f"{', '.join(k for k in options if k.lower() in read_options.BATCH_SCAN_OPTIONS)} both "
                "choose the snapshot to read; give one"
            )
        if options.get(keys.TAG):
            return tag_scan(table, options[keys.TAG], predicate)
        return table.new_scan(filter=predicate, snapshot_id=_snapshot_id(options))
    if tag is not None:
        return tag_scan(table, tag, predicate)
    return table.new_scan(filter=predicate, snapshot_id=snapshot.id if snapshot is not None else None)


def _timestamp_option(options: Mapping[str, str]) -> int | None:
    """The time a read option ``scan.timestamp-millis`` / ``scan.timestamp`` travels to."""
    millis = scan_options.option_text(options, scan_options.SCAN_TIMESTAMP_MILLIS)
    if millis is not None:
        return int(millis)
    text = scan_options.option_text(options, scan_options.SCAN_TIMESTAMP)
    return scan_options.parse_timestamp_ms(text) if text is not None else None


def plan(table: Table, options: Mapping[str, str], request: Mapping[str, Any]) -> dict[str, Any]:
    """Splits and facts for one scan; see the module docstring for the request's filters.

    ``request``: ``columns`` (the pruned read schema's names, or null for all), ``filters`` and
    ``runtime_filters`` (filter trees), ``limit`` (int or null).
    """
    filters = [*(request.get("filters") or []), *(request.get("runtime_filters") or [])]
    predicate = scan_predicate(table, filters)
    rng = incremental_range(table, options)
    if rng is not None:
        return incremental_plan(table, rng, predicate, request)
    # Spark keeps what the scan reported before its runtime filters: its key order (the rows must
    # still come in it) and its bucket layout (no bucket may get more input partitions than it
    # had). The plan before them decides the order here, and so whether splits are packed.
    before = (
        plan(table, options, {**request, "runtime_filters": []}) if request.get("runtime_filters") else None
    )
    if options.get(keys.ROW_LEVEL_COMMAND):
        # Paimon's commands would read the fallback branch's rows and write their changes to this one.
        fallback.refuse_fallback(table, str(options[keys.ROW_LEVEL_COMMAND]))
    requested = request.get("columns")
    if table.schema().primary_keys and requested is not None and set(requested) & set(ROW_ID_COLUMNS):
        return _position_plan(table, options, filters)
    scan = new_scan(table, options, predicate)
    snapshot = scan.snapshot()
    if request.get("count"):
        if predicate is not None or request.get("limit") is not None:
            raise ValueError("a partially pushed COUNT(*) takes no filter and no limit")
        parallelism = request.get("parallelism")
        return _count_plan(
            table,
            snapshot.id if snapshot is not None else None,
            (s for batch in scan.plan_batches() for s in batch),
            int(parallelism) if parallelism else None,
        )
    columns = request.get("columns")
    row_ids = False
    if columns is not None:
        # Row-level DML of an append table reads each row's id too: only the Python reader
        # produces those columns.
        kept = [c for c in columns if c not in ROW_ID_COLUMNS]
        row_ids = len(kept) != len(columns)
        columns = kept
    read = table.new_read(columns=columns, filter=predicate)  # append tables read without a merge
    fraction = _read_fraction(table, read.read_columns)

    # Native reads (request "native", the session's switch): only scans whose filters were
    # classified with ``exact_filters(..., native=True)``, so Spark re-evaluates key filters.
    native_cols = native_columns(table, columns) if request.get("native") and not row_ids else None
    partition_exact = _partition_exact(table, request.get("filters") or []) if native_cols is not None else []
    key_of = key_decoder(table.schema()) if native_cols is not None else None
    readable: dict[int, bool] = {}

    def schema_ok(schema_id: int) -> bool:
        if schema_id not in readable:
            readable[schema_id] = readable_by_name(table, schema_id, columns)
        return readable[schema_id]

    # A merged split whose engine only picks rows (deduplicate) may be read natively minus the
    # rows the merge of its key columns drops; that is undone below if the key order must stay.
    picks = getattr(read, "picks_by_position", None)  # (append tables never merge)
    key_merge = picks if request.get("native_merge", True) else None
    open_cost = _split_costs(table)[1]
    # Split row counts say nothing about how many rows match a filter: limit only unfiltered.
    limit = request.get("limit") if predicate is None else None
    # The splits come in batches of decoded manifest entries (``TableScan.plan_batches``); each
    # leaves only its plan entry, the split pickled and compressed, so the driver never holds
    # every file's decoded metadata at once.
    entries = PlanEntries()
    mixed = False
    totals: set[int] = set()
    all_sorted = True
    rows = size = certain = 0
    for batch in scan.plan_batches():
        for s in batch:
            if limit is not None:
                if certain >= int(limit):
                    break  # enough leading splits to certainly hold the limit's rows
                certain += _exact_live_rows(s) or 0  # (others could merge to nothing)
            unit = _unit(s)
            file_size = sum(f.file_size for f in s.files)
            entry: dict[str, Any] = {
                "units_": [unit],  # encoded as "partition" once packing has grouped them
                "bucket": s.bucket,
                "files": len(s.files),
                "bytes": int(file_size * fraction),
                "rows": s.row_count,
                "runs": _sorted_runs(s),
            }
            native_weight = None
            if key_of is not None and s.branch is None:
                native = native_files(table, s, partition_exact, key_of, schema_ok, key_merge)
                if native is not None:
                    entry["native_files"], superseded = native
                    native_weight = _native_weight(entry["native_files"], open_cost)
                    if superseded:
                        entry["superseded_"] = [(0, unit)]  # (index of its first file, split)
            entries.append(entry, sum(max(f.file_size, open_cost) for f in s.files), native_weight)
            # Another branch's splits (fallback partitions) have their own buckets, keys and
            # schemas: no bucket layout or ordering is reported for such a scan, and Python reads them.
            mixed = mixed or s.branch is not None
            totals.add(s.total_buckets)
            all_sorted = all_sorted and comes_sorted(s)
            rows += _live_estimate(s)
            size += file_size
        else:
            continue
        break
    bucket_keys = [] if mixed else spark_bucket_keys(table)
    configured = table.core_options.bucket
    num_buckets = configured if configured > 0 and totals <= {configured} else None
    # A split read natively minus the rows a key merge drops is not in key order, so such reads
    # are kept only where the scan's key order cannot spare Spark a sort. Order within
    # partitions helps only where Spark knows how rows are partitioned (the bucket layout
    # reported, or a single partition).
    ordering = [] if mixed else _output_ordering(table, all_sorted, columns)
    parallelism = int(request.get("parallelism") or 0)
    if before is not None:
        ordering = list(before["ordering"])  # the splits left are among those, sorted as they were
    elif (
        ordering
        and request.get("native")
        and _packs_well(table, entries, bool(bucket_keys and num_buckets), parallelism)
    ):
        # Many small splits (a compacted table of small buckets): a task each costs Spark's
        # per-task overhead for a key order that only a sort-merge join over the bucket layout
        # would use; packed, as Spark packs the small files of its own scans, they read faster.
        ordering = []
    if bool(ordering) and (bool(bucket_keys and num_buckets) or len(entries) <= 1):
        entries.drop_key_merged_reads()  # the key order matters
    if limit is not None:
        rows = min(rows, int(limit))
    if any(entries.key_merged):
        ordering = []
    groups = [(b, [i]) for i, b in enumerate(entries.buckets)]
    if not ordering:
        by_bucket = bool(bucket_keys and num_buckets)
        # After runtime filters, one input partition per bucket: never more than before them.
        groups = _packed_groups(
            table, entries.buckets, entries.native_weights, by_bucket, parallelism, by_bucket and before is not None
        )
    size = int(size * fraction)
    stats = snapshot_stats(table, snapshot)
    column_stats = None
    if stats is not None:
        size, column_stats = statistics_estimate(table, stats, columns, rows)
    return {
        "snapshot_id": snapshot.id if snapshot is not None else None,
        "splits": SpilledSplits(entries, groups, _finished_split),
        "rows": rows,
        "bytes": size,
        "column_stats": column_stats,
        "bucket_keys": bucket_keys,
        "num_buckets": num_buckets if bucket_keys else None,
        "ordering": ordering,
        "native_columns": native_cols,
    }


def _position_plan(
    table: Table, options: Mapping[str, str], filters: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The scan of a row-level DELETE that removes stored rows by position (``row_delete.py``):
    the candidate files of each bucket, read by Python without a merge, every row with its data
    file and position; no native read, no key order or bucket layout reported (files of several
    levels are read one after the other)."""
    command = options.get(keys.ROW_LEVEL_COMMAND)
    if command != "DELETE" or not deletes_by_rewrite(table):
        raise UnsupportedError(
            f"table {table.identifier}: columns {', '.join(ROW_ID_COLUMNS)} address the stored rows of a "
            "primary-key table only in a DELETE on a first-row, partial-update or aggregation table "
            "(without its remove-record-on-delete option); select the table's own columns instead"
        )
    names = {f.name for f in table.schema().fields}
    # Every column's translatable conditions prune candidate files by statistics (never rows).
    parts = [p for p in (predicate_from_json(f, names) for f in filters) if p is not None]
    snapshot_id, splits = position_splits(table, conjunction(parts) if parts else None)
    entries = [
        {
            "partition": encode_partition(s),
            "bucket": s.bucket,
            "files": len(s.files),
            "bytes": sum(f.file_size for f in s.files),
            "rows": s.row_count,
            "runs": 1,
        }
        for s in splits
    ]
    return {
        "snapshot_id": snapshot_id,
        "splits": entries,
        "rows": sum(s.row_count for s in splits),
        "bytes": sum(e["bytes"] for e in entries),
        "bucket_keys": [],
        "num_buckets": None,
        "ordering": [],
        "native_columns": None,
    }


def statistics_estimate(
    table: Table, stats: Statistics, columns: Sequence[str] | None, rows: int
) -> tuple[int, list[dict[str, Any]]]:
    """Size and column statistics a scan of ``columns`` (None: all) reports to Spark when the
    snapshot it reads carries ``stats``, as Paimon's ``PaimonStatistics``: size = rows x the sum of
    each read column's ``avgLen`` (else the type's default size), at least ``rows``; and each read
    column's statistics (min/max as Spark's internal values: numbers, booleans, decimals as
    strings, dates as epoch days, timestamps as epoch microseconds). A column's statistics count
    only while its field id is the one ANALYZE saw."""
    fields = table.schema().fields
    wanted = set(columns) if columns is not None else None
    row_size = 0
    out: list[dict[str, Any]] = []
    for f in fields:
        if wanted is not None and f.name not in wanted:
            continue
        cs = stats.col_stats.get(f.name)
        if cs is not None and cs.col_id != f.id:
            cs = None
        row_size += cs.avg_len if cs is not None and cs.avg_len is not None else paimon_default_size(f.type)
        if cs is None:
            continue
        entry: dict[str, Any] = {
            "name": f.name,
            "null_count": cs.null_count,
            "distinct_count": cs.distinct_count,
            "avg_len": cs.avg_len,
            "max_len": cs.max_len,
            "min": _spark_stat_value(f.type, cs.min),
            "max": _spark_stat_value(f.type, cs.max),
        }
        out.append(entry)
    return max(rows * row_size, rows), out


def _spark_stat_value(dt: DataType, text: str | None) -> Any:
    """A serialised min/max as the JSON of Spark's internal value; None when there is none (or
    it is not finite: JSON has no NaN)."""
    if text is None or not has_min_max(dt):
        return None
    if isinstance(dt, TimestampType | LocalZonedTimestampType):
        return timestamp_micros(text)
    if isinstance(dt, DateType):
        return int(text)
    if isinstance(dt, DecimalType):
        return text
    value = deserialize_value(dt, text)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def pack_native_splits(
    table: Table,
    entries: list[dict[str, Any]],
    by_bucket: bool,
    parallelism: int,
    whole_buckets: bool = False,
) -> list[dict[str, Any]]:
    """Plan entries (each with its ``units_``, not yet encoded) whose native splits
    (``native_files``) are packed into fewer input partitions, as Spark packs the
    files of its own Parquet scans: a task per small split costs Spark's per-task overhead, which
    for a table of many partitions and buckets outweighs the reading (32 tasks of 8 buckets x 4
    partitions ran 1.5x a Parquet scan of the same rows packed into 4).

    Splits are packed up to ``min(source.split.target-size, max(source.split.open-file-cost,
    bytes / parallelism))`` (Spark's ``maxSplitBytes`` rule with Paimon's split options), each
    file weighing at least the open cost, largest first. With ``by_bucket`` (the scan reports
    the bucket layout to Spark) only splits of the same bucket share a partition, whose key
    stays that bucket; with ``whole_buckets`` too, every bucket's native splits share one
    partition whatever their size. Callers pack only scans that report no ordering: the rows of a
    packed partition are no longer sorted by key. Merged splits stay one per partition.
    """
    open_cost = _split_costs(table)[1]
    weights = [
        _native_weight(e["native_files"], open_cost) if e.get("native_files") is not None else None
        for e in entries
    ]
    buckets = [int(e["bucket"]) for e in entries]
    groups = _packed_groups(table, buckets, weights, by_bucket, parallelism, whole_buckets)
    return [_merge_entries([entries[i] for i in group], key) for key, group in groups]


def _native_weight(files: Sequence[Mapping[str, Any]], open_cost: int) -> int:
    """What a native split weighs in packing: each file at least the open cost."""
    return sum(max(int(f["size"]), open_cost) for f in files)


def _split_costs(table: Table) -> tuple[int, int]:
    """Paimon's ``source.split.target-size`` and ``source.split.open-file-cost``."""
    opts = table.core_options
    target = opts.get_int("source.split.target-size") or 128 * 1024 * 1024
    return target, opts.get_int("source.split.open-file-cost") or 4 * 1024 * 1024


def _pack(
    items: Sequence[T],
    group_of: Callable[[T], int],
    weight: Callable[[T], int],
    table: Table,
    parallelism: int,
    unbounded: bool = False,
) -> list[tuple[int, list[T]]]:
    """``items`` packed into bins of at most ``min(target-size, max(open-file-cost, total /
    parallelism))`` weight (Spark's ``maxSplitBytes`` rule with Paimon's split options; with
    ``unbounded``, one bin per group), each bin holding items of one group only, largest first;
    as (group, items) in group order."""
    target, open_cost = _split_costs(table)
    total = sum(weight(i) for i in items)
    max_bytes = total if unbounded else min(target, max(open_cost, total // max(parallelism, 1)))
    groups: dict[int, list[T]] = {}
    for item in items:
        groups.setdefault(group_of(item), []).append(item)
    bins: list[tuple[int, list[T]]] = []
    for key in sorted(groups):
        current: list[T] = []
        size = 0
        for item in sorted(groups[key], key=weight, reverse=True):
            if current and size + weight(item) > max_bytes:
                bins.append((key, current))
                current, size = [], 0
            current.append(item)
            size += weight(item)
        if current:
            bins.append((key, current))
    return bins


def _packs_well(table: Table, entries: PlanEntries, by_bucket: bool, parallelism: int) -> bool:
    """Whether packing the plan's splits as :func:`pack_native_splits` would at least halve the
    scan's input partitions (its splits are small next to Spark's split size)."""
    if len(entries) < 2:
        return False
    bins = _pack(
        range(len(entries)),
        (lambda i: entries.buckets[i]) if by_bucket else (lambda i: 0),
        lambda i: entries.weights[i],
        table,
        parallelism,
    )
    return 2 * len(bins) <= len(entries)


def _packed_groups(
    table: Table,
    buckets: Sequence[int],
    native_weights: Sequence[int | None],
    by_bucket: bool,
    parallelism: int,
    whole_buckets: bool,
) -> list[tuple[int, list[int]]]:
    """The packing of :func:`pack_native_splits` from each plan entry's bucket and native weight
    (None: not read natively) alone: the (bucket, entry indices) of each input partition, the
    packed native ones first (bucket -1 unless ``by_bucket``), then the others one each."""
    native = [i for i, w in enumerate(native_weights) if w is not None]
    if len(native) < 2:
        return [(b, [i]) for i, b in enumerate(buckets)]
    bins = _pack(
        native,
        (lambda i: buckets[i]) if by_bucket else (lambda i: 0),
        lambda i: int(native_weights[i] or 0),
        table,
        parallelism,
        unbounded=whole_buckets,
    )
    groups = [(key if by_bucket else -1, group) for key, group in bins]
    return groups + [(b, [i]) for i, b in enumerate(buckets) if native_weights[i] is None]


def _finished_split(entries: list[dict[str, Any]], bucket: int) -> dict[str, Any]:
    """The reply's split of one input partition: ``entries`` merged (see :func:`_merge_entries`),
    their compressed splits encoded as its Python partition."""
    entry = _merge_entries(entries, bucket)
    entry["partition"] = _encode_units(entry.pop("units_"))
    superseded = entry.pop("superseded_", None)
    if superseded:
        # What the Python reader in "superseded" mode gets: the key-merged splits, each with
        # the index of its first file among the input partition's native files.
        entry["superseded"] = len(superseded)
        entry["superseded_partition"] = _encode_units([u for _, u in superseded], [i for i, _ in superseded])
    return entry


def _merge_entries(entries: list[dict[str, Any]], bucket: int) -> dict[str, Any]:
    """One input partition reading the native splits ``entries`` one after the other (its pickled
    Python partition lists their splits, for a reader that falls back to Python)."""
    if len(entries) == 1:
        return entries[0]
    superseded: list[tuple[int, bytes]] = []
    offset = 0
    for e in entries:
        superseded += [(offset + first, unit) for first, unit in e.get("superseded_", ())]
        offset += len(e["native_files"])
    merged = {
        "units_": [unit for e in entries for unit in e["units_"]],
        "bucket": bucket,
        "files": sum(e["files"] for e in entries),
        "bytes": sum(e["bytes"] for e in entries),
        "rows": sum(e["rows"] for e in entries),
        "runs": sum(e["runs"] for e in entries),  # the sorted runs of every split it reads
        "splits": sum(e.get("splits", 1) for e in entries),
        "native_files": [f for e in entries for f in e["native_files"]],
    }
    if superseded:
        merged["superseded_"] = superseded
    return merged


def _same_bucket_in_spark(t: DataType) -> bool:
    """Whether equal Spark values of type ``t`` always have equal Paimon bucket hashes.

    Spark tells bucketed layouts apart only by Spark types, which lose timestamp precision: a
    TIMESTAMP(3) key is hashed in Paimon's compact layout, a TIMESTAMP(6) one is not, and a
    TIMESTAMP(9) value may carry nanoseconds Spark truncates. Like Paimon's connector, only
    precision 6 (Spark's own) is reported.
    """
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        return t.precision == SPARK_TIMESTAMP_PRECISION
    if isinstance(t, (ArrayType, MultisetType)):
        return _same_bucket_in_spark(t.element)
    if isinstance(t, MapType):
        return _same_bucket_in_spark(t.key) and _same_bucket_in_spark(t.value)
    if isinstance(t, RowType):
        return all(_same_bucket_in_spark(f.type) for f in t.fields)
    return True


def spark_bucket_keys(table: Table) -> list[str]:
    """The bucket key to report to Spark as ``bucket(n, key)`` partitioning, or [] for none.

    Only primary-key tables with fixed buckets have a bucket layout Spark can rely on. Spark
    4.3's key-grouped partitioning only takes transforms of one column
    (``KeyedPartitioning.supportsExpressions``), so a bucket key of several columns is not
    reported: such joins shuffle (Paimon's Spark connector makes the same choice). A primary key
    of several columns with a one-column ``bucket-key`` is reported, and satisfies joins and
    aggregations on any set of columns that includes that one.
    """
    schema = table.schema()
    if not schema.primary_keys or table.core_options.bucket <= 0:
        return []
    keys = list(schema.bucket_keys)
    if len(keys) != 1 or not all(_same_bucket_in_spark(schema.field(k).type) for k in keys):
        return []
    return keys


# Key types whose order in a merge (numpy / Arrow sorts, Paimon's key comparators) is Spark's
# ascending order: not FLOAT/DOUBLE (NaN and -0.0 differ), not nested types.
_ORDERED_KEY_TYPES = (
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    DecimalType,
    CharType,
    VarCharType,
    BinaryType,
    VarBinaryType,
    DateType,
    TimestampType,
    LocalZonedTimestampType,
)


def comes_sorted(split: Split) -> bool:
    """Whether a split's rows come out in key order: it is merged, or it is one file."""
    return split.needs_merge or len(split.files) <= 1


def _output_ordering(table: Table, all_sorted: bool, columns: Sequence[str] | None) -> list[str]:
    """Key columns every split's rows come out sorted by (ascending), for Spark's
    ``SupportsReportOrdering``; [] unless ``all_sorted``: every split :func:`comes_sorted`.

    A merged split comes out in key order (the merge sorts by the trimmed primary key) and so
    does a split of one file (data files are sorted by key). Splits read file by file without a
    merge (deletion vectors) are not. Partition columns are constant within a split, so the
    trimmed key is the order; only its leading columns that the scan outputs can be reported.
    With it, a sort-merge join or a sorted aggregation over bucketed scans skips its sort.
    """
    schema = table.schema()
    if not schema.primary_keys or not all_sorted:
        return []
    output = set(columns) if columns is not None else {f.name for f in schema.fields}
    out = []
    for k in schema.trimmed_primary_keys:
        if k not in output or not isinstance(schema.field(k).type, _ORDERED_KEY_TYPES):
            break
        out.append(k)
    return out


def _exact_live_rows(split: Split) -> int | None:
    """Live rows of a raw-convertible split from metadata alone, or None if not known exactly.

    Each record of such a split is one live row, except those a deletion vector removes.
    """
    if not split.raw_convertible:
        return None
    deleted = 0
    for _, deletion_file in split.deletion_files:
        if deletion_file.cardinality is None:
            return None
        deleted += deletion_file.cardinality
    return split.row_count - deleted


def count_rows(table: Table, options: Mapping[str, str]) -> int | None:
    """COUNT(*) of the whole table from file metadata, or None when that needs a merge.

    Exact only when every split is raw-convertible (a fully compacted bucket, or deletion-vector
    files without level 0) and every deletion vector's cardinality is recorded.
    """
    if read_options.is_incremental(options):
        return None  # the changes are counted by reading them
    total = 0
    for batch in new_scan(table, options).plan_batches():
        for s in batch:
            live = _exact_live_rows(s)
            if live is None:
                return None
            total += live
    return total


# Partition column types whose values aggregate_partitions returns (as Catalyst values in JSON).
_AGG_TYPES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, CharType, VarCharType, DateType)
# Types whose file statistics hold exact minima and maxima (strings are truncated by default;
# floating point statistics skip NaN, which Spark's MAX returns).
_VALUE_AGG_TYPES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, DateType)


def _catalyst(value: Any) -> Any:
    if isinstance(value, dt.date):
        return (value - _EPOCH).days
    return value


def aggregate_partitions(
    table: Table, options: Mapping[str, str], group_by: Sequence[str], aggregates: Sequence[Mapping[str, Any]]
) -> list[list[Any]] | None:
    """``SELECT <group_by>, <aggregates> FROM table GROUP BY <group_by>`` from metadata, or None
    when that is not exact.

    ``group_by``: partition columns. ``aggregates``: ``{"fn": "count"}`` (COUNT(*)) or
    ``{"fn": "min" | "max", "column": <column>}``. Exact when every split's live row count is
    known (as for :func:`count_rows`): partitions without live rows then hold no group. MIN/MAX
    of a partition column come from the partition values; of another column (integer, boolean or
    date: types whose statistics are exact), from the files' value statistics, when no split has
    deleted rows (every row of every file is live) and every file knows the column's min and max.
    Rows hold the group values then the aggregates, as Catalyst values (dates as epoch days).
    """
    if read_options.is_incremental(options):
        return None  # aggregated by reading the changes
    schema = table.schema()
    partition_keys = set(schema.partition_keys)
    if any(c not in partition_keys or not isinstance(schema.field(c).type, _AGG_TYPES) for c in group_by):
        return None
    if any(a.get("fn") not in ("count", "min", "max") for a in aggregates):
        return None
    value_columns: set[str] = set()
    for a in aggregates:
        if a["fn"] == "count":
            continue
        c = str(a["column"])
        if c not in schema.field_names:
            return None
        t = schema.field(c).type
        if c in partition_keys:
            if not isinstance(t, _AGG_TYPES):
                return None
        elif isinstance(t, _VALUE_AGG_TYPES):
            value_columns.add(c)
        else:
            return None
    live: dict[bytes, int] = {}
    # partition -> column -> (min, max) over its files (None, None: only nulls so far)
    bounds: dict[bytes, dict[str, tuple[Any, Any]]] = {}
    for s in new_scan(table, options).plan():
        n = _exact_live_rows(s)
        if n is None or s.branch is not None:  # (another branch's files: its own schemas)
            return None
        live[s.partition] = live.get(s.partition, 0) + n
        if value_columns:
            if n != s.row_count:  # a deleted row may hold the minimum
                return None
            part = bounds.setdefault(s.partition, {c: (None, None) for c in value_columns})
            for f in s.files:
                stats = value_column_stats(table, f, value_columns)
                for c in value_columns:
                    st = stats.get(c)
                    if st is None:
                        return None
                    if st.min is None or st.max is None:
                        if st.null_count != st.row_count:
                            return None  # min/max not kept (stats mode 'counts' or 'none')
                        continue
                    lo, hi = part[c]
                    part[c] = (
                        st.min if lo is None else min(lo, st.min),
                        st.max if hi is None else max(hi, st.max),
                    )
    codec = table.partition_codec
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for partition, n in live.items():
        if n > 0:
            values = codec.to_dict(partition)
            extremes = {
                f"__{fn}__{c}": b[i]
                for c, b in bounds.get(partition, {}).items()
                for i, fn in enumerate(("min", "max"))
            }
            groups.setdefault(tuple(values[c] for c in group_by), []).append(
                {**values, **extremes, "__rows__": n}
            )
    if not group_by and not groups:
        groups[()] = []
    out = []
    for key, parts in groups.items():
        row = [_catalyst(v) for v in key]
        for a in aggregates:
            if a["fn"] == "count":
                row.append(sum(p["__rows__"] for p in parts))
                continue
            c = a["column"]
            present = [
                v for p in parts if (v := p[c] if c in partition_keys else p[f"__{a['fn']}__{c}"]) is not None
            ]
            best = (min if a["fn"] == "min" else max)(present) if present else None
            row.append(_catalyst(best))
        out.append(row)
    return out


__all__ = [
    "aggregate_partitions",
    "count_rows",
    "encode_partition",
    "filters_option",
    "partition_unit",
    "plan",
    "predicate_from_json",
    "scan_predicate",
    "spark_bucket_keys",
]
