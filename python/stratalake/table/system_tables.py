"""Paimon's system tables (``t$snapshots``, ``t$files``...) as Arrow tables, with Paimon's columns.

Each system table is a function of the table's metadata (and, for ``audit_log`` and ``ro``, its
data) at the latest snapshot. Column names and types follow Paimon's ``org.apache.paimon.table.
system`` classes; timestamps are local wall-clock times (``TIMESTAMP(3)``), as Paimon shows them.

Example::

    t.system_table("snapshots").column("commit_kind")
    t.system_table("files", snapshot_id=3)
"""

from __future__ import annotations

import datetime
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from stratalake.exceptions import StrataLakeError, TableNotFoundError
from stratalake.identifiers import redact_options
from stratalake.lsm.data_file import bucket_dir
from stratalake.lsm.deletion_vector import DELETION_VECTORS_INDEX
from stratalake.read import fallback
from stratalake.read.fallback import refuse_fallback
from stratalake.spec.binary_row import decode_row
from stratalake.spec.manifest import FileSource
from stratalake.spec.snapshot import Snapshot
from stratalake.store.files import data_file_path
from stratalake.store.index_manifest import live_index_entries
from stratalake.store.stats_file import snapshot_stats
from stratalake.table import lifecycle
from stratalake.types import DataType, to_arrow

_LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from stratalake.table.table import Table

# The leading columns of $files, which $file_key_ranges shares (then its first_row_id).
_FILE_KEY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("partition", "STRING"),
    ("bucket", "INT NOT NULL"),
    ("file_path", "STRING NOT NULL"),
    ("file_format", "STRING NOT NULL"),
    ("schema_id", "BIGINT NOT NULL"),
    ("level", "INT NOT NULL"),
    ("record_count", "BIGINT NOT NULL"),
    ("file_size_in_bytes", "BIGINT NOT NULL"),
    ("min_key", "STRING"),
    ("max_key", "STRING"),
)
# (column, Paimon type) per system table, in Paimon's column order.
_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "snapshots": (
        ("snapshot_id", "BIGINT NOT NULL"),
        ("schema_id", "BIGINT NOT NULL"),
        ("commit_user", "STRING NOT NULL"),
        ("commit_identifier", "BIGINT NOT NULL"),
        ("commit_kind", "STRING NOT NULL"),
        ("commit_time", "TIMESTAMP(3) NOT NULL"),
        ("base_manifest_list", "STRING NOT NULL"),
        ("delta_manifest_list", "STRING NOT NULL"),
        ("changelog_manifest_list", "STRING"),
        ("total_record_count", "BIGINT"),
        ("delta_record_count", "BIGINT"),
        ("changelog_record_count", "BIGINT"),
        ("watermark", "BIGINT"),
        ("next_row_id", "BIGINT"),
        ("operation", "STRING"),
        ("writer_version", "STRING"),
    ),
    "schemas": (
        ("schema_id", "BIGINT NOT NULL"),
        ("fields", "STRING NOT NULL"),
        ("partition_keys", "STRING NOT NULL"),
        ("primary_keys", "STRING NOT NULL"),
        ("options", "STRING NOT NULL"),
        ("comment", "STRING"),
        ("update_time", "TIMESTAMP(3) NOT NULL"),
    ),
    "options": (("key", "STRING NOT NULL"), ("value", "STRING NOT NULL")),
    "files": (
        *_FILE_KEY_COLUMNS,
        ("null_value_counts", "STRING NOT NULL"),
        ("min_value_stats", "STRING NOT NULL"),
        ("max_value_stats", "STRING NOT NULL"),
        ("min_sequence_number", "BIGINT"),
        ("max_sequence_number", "BIGINT"),
        ("creation_time", "TIMESTAMP(3)"),
        ("deleteRowCount", "BIGINT"),
        ("file_source", "STRING"),
        ("first_row_id", "BIGINT"),
        ("write_cols", "ARRAY<STRING>"),
    ),
    "manifests": (
        ("file_name", "STRING NOT NULL"),
        ("file_size", "BIGINT NOT NULL"),
        ("num_added_files", "BIGINT NOT NULL"),
        ("num_deleted_files", "BIGINT NOT NULL"),
        ("schema_id", "BIGINT NOT NULL"),
        ("min_partition_stats", "STRING"),
        ("max_partition_stats", "STRING"),
        ("min_row_id", "BIGINT"),
        ("max_row_id", "BIGINT"),
    ),
    "partitions": (
        ("partition", "STRING"),
        ("record_count", "BIGINT NOT NULL"),
        ("file_size_in_bytes", "BIGINT NOT NULL"),
        ("file_count", "BIGINT NOT NULL"),
        ("last_update_time", "TIMESTAMP(3)"),
        ("created_at", "TIMESTAMP(3)"),
        ("created_by", "STRING"),
        ("updated_by", "STRING"),
        ("options", "STRING"),
        ("total_buckets", "INT NOT NULL"),
        ("done", "BOOLEAN NOT NULL"),
        ("deleted_record_count", "BIGINT"),
    ),
    "buckets": (
        ("partition", "STRING"),
        ("bucket", "INT NOT NULL"),
        ("record_count", "BIGINT NOT NULL"),
        ("file_size_in_bytes", "BIGINT NOT NULL"),
        ("file_count", "BIGINT NOT NULL"),
        ("last_update_time", "TIMESTAMP(3)"),
    ),
    "aggregation_fields": (
        ("field_name", "STRING NOT NULL"),
        ("field_type", "STRING NOT NULL"),
        ("function", "STRING"),
        ("function_options", "STRING"),
        ("comment", "STRING"),
    ),
    "table_indexes": (
        ("partition", "STRING"),
        ("bucket", "INT NOT NULL"),
        ("index_type", "STRING NOT NULL"),
        ("file_name", "STRING NOT NULL"),
        ("file_size", "BIGINT NOT NULL"),
        ("row_count", "BIGINT NOT NULL"),
        (
            "dv_ranges",
            "ARRAY<ROW<f0 STRING NOT NULL, f1 INT NOT NULL, f2 INT NOT NULL, _CARDINALITY BIGINT>>",
        ),
        ("row_range_start", "BIGINT"),
        ("row_range_end", "BIGINT"),
        ("index_field_id", "INT"),
        ("index_field_name", "STRING"),
    ),
    "file_key_ranges": (
        *_FILE_KEY_COLUMNS,
        ("first_row_id", "BIGINT"),
    ),
    "tags": (
        ("tag_name", "STRING NOT NULL"),
        ("snapshot_id", "BIGINT NOT NULL"),
        ("schema_id", "BIGINT NOT NULL"),
        ("commit_time", "TIMESTAMP(3) NOT NULL"),
        ("record_count", "BIGINT"),
        ("create_time", "TIMESTAMP(3)"),
        ("time_retained", "STRING"),
    ),
    "consumers": (
        ("consumer_id", "STRING NOT NULL"),
        ("next_snapshot_id", "BIGINT NOT NULL"),
    ),
    "statistics": (
        ("snapshot_id", "BIGINT NOT NULL"),
        ("schema_id", "BIGINT NOT NULL"),
        ("mergedRecordCount", "BIGINT"),
        ("mergedRecordSize", "BIGINT"),
        ("colstat", "STRING"),
    ),
    "branches": (
        ("branch_name", "STRING NOT NULL"),
        ("create_time", "TIMESTAMP(3) NOT NULL"),
    ),
}

AUDIT_LOG = "audit_log"
BINLOG = "binlog"
READ_OPTIMIZED = "ro"
ROWKIND = "rowkind"
NAMES: tuple[str, ...] = (*_COLUMNS, AUDIT_LOG, BINLOG, READ_OPTIMIZED)


def _local_time(millis: int | None) -> datetime.datetime | None:
    if millis is None:
        return None
    return datetime.datetime.fromtimestamp(millis / 1000)  # Paimon shows local wall-clock time


def _check(table: Table, name: str) -> str:
    lowered = name.lower()
    if lowered not in NAMES:
        raise TableNotFoundError(
            f"table {table.identifier} has no system table '{name}'; system tables are {list(NAMES)}"
        )
    return lowered


def paimon_columns(table: Table, name: str) -> list[tuple[str, str]]:
    """The (column, Paimon type) list of system table ``name`` of ``table``."""
    name = _check(table, name)
    schema = table.schema()
    if name == AUDIT_LOG:
        return [(ROWKIND, "STRING NOT NULL"), *((f.name, str(f.type)) for f in schema.fields)]
    if name == BINLOG:  # every column an array of its (nullable) values
        return [
            (ROWKIND, "STRING NOT NULL"),
            *((f.name, f"ARRAY<{f.type.copy(True)}>") for f in schema.fields),
        ]
    if name == READ_OPTIMIZED:
        return [(f.name, str(f.type)) for f in schema.fields]
    return list(_COLUMNS[name])


def arrow_schema(table: Table, name: str) -> pa.Schema:
    if _check(table, name) == READ_OPTIMIZED:
        return table.arrow_schema()
    fields = []
    for column, type_string in paimon_columns(table, name):
        dt = DataType.parse(type_string)
        fields.append(pa.field(column, to_arrow(dt), nullable=dt.nullable))
    return pa.schema(fields)


def _rows(table: Table, name: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=arrow_schema(table, name))


def _snapshot(table: Table, snapshot_id: int | None) -> Snapshot | None:
    return table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()


# -- metadata tables ------------------------------------------------------------------------------
def _snapshots(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    return [
        {
            "snapshot_id": s.id,
            "schema_id": s.schema_id,
            "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier,
            "commit_kind": s.commit_kind.value,
            "commit_time": _local_time(s.time_millis),
            "base_manifest_list": s.base_manifest_list,
            "delta_manifest_list": s.delta_manifest_list,
            "changelog_manifest_list": s.changelog_manifest_list,
            "total_record_count": s.total_record_count,
            "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count,
            "watermark": s.watermark,
            "next_row_id": s.next_row_id,
            "operation": s.operation,
            "writer_version": s.writer_version,
        }
        for s in table.snapshots()
    ]


def _flat_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _schemas(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    out = []
    for sid in table.schema_manager.list_ids():
        s = table.schema_manager.schema(sid)
        raw = json.loads(s.to_json())
        out.append(
            {
                "schema_id": s.id,
                "fields": _flat_json(raw.get("fields", [])),
                "partition_keys": _flat_json(list(s.partition_keys)),
                "primary_keys": _flat_json(list(s.primary_keys)),
                "options": _flat_json(redact_options(dict(s.options))),
                "comment": s.comment,
                "update_time": _local_time(raw.get("timeMillis")),
            }
        )
    return out


def _options(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    # Credentials are refused as options, but older tables or other tools may have stored some.
    return [{"key": k, "value": v} for k, v in sorted(redact_options(table.options()).items())]


def _row_string(values: Sequence[Any]) -> str:
    """Paimon's ROW-to-STRING cast: ``{v1, v2}``."""
    return "{" + ", ".join("null" if v is None else _value_string(v) for v in values) + "}"


def _value_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def _partition_string(table: Table, partition: bytes) -> str | None:
    codec = table.partition_codec
    return _row_string(codec.from_bytes(partition)) if codec.is_partitioned else None


def _partition_path_string(table: Table, partition: bytes) -> str | None:
    """``k1=v1/k2=v2`` as Paimon's ``$partitions`` shows partitions."""
    codec = table.partition_codec
    if not codec.is_partitioned:
        return None
    values = codec.from_bytes(partition)
    return "/".join(
        f"{k}={codec.default_name if v is None else _value_string(v)}"
        for k, v in zip(codec.keys, values, strict=True)
    )


def _stats_strings(table: Table, f: Any) -> tuple[str, str, str]:
    """``{col=value, ...}`` renderings of a file's value statistics (Paimon's FilesTable style)."""
    schema = table.file_schema(f.schema_id)
    names = list(f.value_stats_cols) if f.value_stats_cols is not None else [x.name for x in schema.fields]
    types = [schema.field(n).type for n in names]
    try:
        mins = decode_row(f.value_stats.min_values, types) if names else []
        maxs = decode_row(f.value_stats.max_values, types) if names else []
    except Exception:  # stats of an unusual layout: show nothing rather than fail the listing
        mins, maxs = [None] * len(names), [None] * len(names)
    nulls = list(f.value_stats.null_counts or [None] * len(names))

    def render(values: Sequence[Any]) -> str:
        return (
            "{"
            + ", ".join(
                f"{n}={'null' if v is None else _value_string(v)}"
                for n, v in zip(names, values, strict=False)
            )
            + "}"
        )

    return render(nulls), render(mins), render(maxs)


def _key_string(table: Table, f: Any, key: bytes) -> str | None:
    schema = table.file_schema(f.schema_id)
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]
    if not types:
        return None
    try:
        return (
            "[" + ", ".join("null" if v is None else _value_string(v) for v in decode_row(key, types)) + "]"
        )
    except Exception:
        return None


def _files(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    snap = _snapshot(table, snapshot_id)
    if snap is None:
        return []
    codec = table.partition_codec
    entries = sorted(
        table.live_entries(snap), key=lambda e: (e.partition, e.bucket, e.file.level, e.file.file_name)
    )
    out = []
    for e in entries:
        f = e.file
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(e.partition)), e.bucket)
        null_counts, mins, maxs = _stats_strings(table, f)
        out.append(
            {
                "partition": _partition_string(table, e.partition),
                "bucket": e.bucket,
                "file_path": data_file_path(directory, f),
                "file_format": f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else "parquet",
                "schema_id": f.schema_id,
                "level": f.level,
                "record_count": f.row_count,
                "file_size_in_bytes": f.file_size,
                "min_key": _key_string(table, f, f.min_key),
                "max_key": _key_string(table, f, f.max_key),
                "null_value_counts": null_counts,
                "min_value_stats": mins,
                "max_value_stats": maxs,
                "min_sequence_number": f.min_sequence_number,
                "max_sequence_number": f.max_sequence_number,
                "creation_time": _local_time(f.creation_time),
                "deleteRowCount": f.delete_row_count,
                "file_source": None if f.file_source is None else FileSource(f.file_source).name,
                "first_row_id": f.first_row_id,
                "write_cols": None if f.write_cols is None else list(f.write_cols),
            }
        )
    return out


def _manifests(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    snap = _snapshot(table, snapshot_id)
    if snap is None:
        return []
    mio = table.manifest_io
    codec = table.partition_codec
    types = list(codec.types)
    out = []
    for m in mio.read_list(snap.base_manifest_list) + mio.read_list(snap.delta_manifest_list):
        lo = hi = None
        if codec.is_partitioned:
            lo = _row_string(decode_row(m.partition_stats.min_values, types))
            hi = _row_string(decode_row(m.partition_stats.max_values, types))
        out.append(
            {
                "file_name": m.file_name,
                "file_size": m.file_size,
                "num_added_files": m.num_added_files,
                "num_deleted_files": m.num_deleted_files,
                "schema_id": m.schema_id,
                "min_partition_stats": lo,
                "max_partition_stats": hi,
                "min_row_id": m.min_row_id,
                "max_row_id": m.max_row_id,
            }
        )
    return out


def _grouped(
    table: Table, snapshot_id: int | None, by_bucket: bool
) -> dict[tuple[bytes, int], dict[str, Any]]:
    snap = _snapshot(table, snapshot_id)
    groups: dict[tuple[bytes, int], dict[str, Any]] = defaultdict(
        lambda: {
            "record_count": 0,
            "file_size_in_bytes": 0,
            "file_count": 0,
            "last": None,
            "total_buckets": 0,
        }
    )
    if snap is None:
        return groups
    for e in table.live_entries(snap):
        g = groups[(e.partition, e.bucket if by_bucket else 0)]
        # Paimon counts +I/+U rows minus -U/-D rows of each file.
        g["record_count"] += e.file.row_count - (e.file.delete_row_count or 0)
        g["file_size_in_bytes"] += e.file.file_size
        g["file_count"] += 1
        g["total_buckets"] = e.total_buckets
        created = e.file.creation_time
        if created is not None and (g["last"] is None or created > g["last"]):
            g["last"] = created
    return groups


def _deleted_counts(table: Table, snapshot_id: int | None) -> dict[bytes, int | None]:
    """Partition -> rows its deletion vectors delete (None if a vector's cardinality is unknown)."""
    if not table.core_options.deletion_vectors_enabled:
        return {}
    out: dict[bytes, int | None] = {}
    for e in live_index_entries(table, _snapshot(table, snapshot_id)):
        if e.index_type != DELETION_VECTORS_INDEX:
            continue
        for r in e.dv_ranges or ():
            count = out.get(e.partition, 0)
            out[e.partition] = None if count is None or r.cardinality is None else count + r.cardinality
    return out


def _partitions(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    rows = _partition_rows(table, snapshot_id)
    if fallback.fallback_branch(table) is not None:
        # Paimon lists a fallback table's partitions through its scan: this branch's, then those of
        # the fallback branch it lacks (FallbackReadScan.listPartitionEntries).
        scan = fallback.FallbackScan(table, None, snapshot_id)
        other = scan.fallback_snapshot(scan.snapshot())
        if other is not None:
            fallback.check_compatible(table, scan.other)
            mine = {r["partition"] for r in rows}
            branch = cast("Table", scan.other)  # (a handle of the same class as ``table``)
            rows += [r for r in _partition_rows(branch, other.id) if r["partition"] not in mine]
    return sorted(rows, key=lambda r: r["partition"] or "")


def _partition_rows(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    # created_at/created_by/updated_by/options come from a catalog's partition metadata, which a
    # filesystem table doesn't have (Paimon shows null there too); ``done`` is false without it.
    # deleted_record_count totals the partition's deletion-vector cardinalities (0 without them).
    deleted = _deleted_counts(table, snapshot_id)
    groups = _grouped(table, snapshot_id, by_bucket=False)
    done = _done_status(table, snapshot_id, [p for p, _ in groups])
    rows = [
        {
            "partition": _partition_path_string(table, p),
            "record_count": g["record_count"],
            "file_size_in_bytes": g["file_size_in_bytes"],
            "file_count": g["file_count"],
            "last_update_time": _local_time(g["last"]),
            "created_at": None,
            "created_by": None,
            "updated_by": None,
            "options": None,
            "total_buckets": g["total_buckets"],
            "done": done.get(p, False),
            "deleted_record_count": deleted.get(p, 0),
        }
        for (p, _), g in groups.items()
    ]
    return rows


def _done_status(table: Table, snapshot_id: int | None, partitions: Sequence[bytes]) -> dict[bytes, bool]:
    """Each partition's LOAD_DONE event in the metastore, as Paimon's ``HiveCatalog.listPartitions``
    reports it: only for the latest snapshot (time travel lists storage alone), with
    ``metastore.partitioned-table`` and a ``mark-event`` action; a metastore that fails the
    lookup leaves every partition not done (Paimon falls back to storage's partitions)."""
    metastore = table.metastore_partitions
    options = table.options()
    actions = {a.strip().lower() for a in options.get(lifecycle.MARK_DONE_ACTION, "").split(",")}
    if (
        metastore is None
        or snapshot_id is not None
        or options.get(lifecycle.PARTITIONED_TABLE, "").strip().lower() != "true"
        or lifecycle.MARK_EVENT_ACTION not in actions
    ):
        return {}
    codec = table.partition_codec
    try:
        marked = metastore.marked_done(table, [codec.strings(codec.from_bytes(p)) for p in partitions])
    except StrataLakeError as e:
        _LOG.warning("table %s: the metastore did not say which partitions are done (%s)", table.identifier, e)
        return {}
    return dict(zip(partitions, marked, strict=True))


def _buckets(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    rows = [
        {
            "partition": _partition_string(table, p),
            "bucket": b,
            "record_count": g["record_count"],
            "file_size_in_bytes": g["file_size_in_bytes"],
            "file_count": g["file_count"],
            "last_update_time": _local_time(g["last"]),
        }
        for (p, b), g in _grouped(table, snapshot_id, by_bucket=True).items()
    ]
    return sorted(rows, key=lambda r: (r["partition"] or "", r["bucket"]))


def _tags(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    out = []
    for name, s in sorted(table.tags().items()):
        create_time, time_retained = table.tag_manager.tag_times(name)
        out.append(
            {
                "tag_name": name,
                "snapshot_id": s.id,
                "schema_id": s.schema_id,
                "commit_time": _local_time(s.time_millis),
                "record_count": s.total_record_count,
                "create_time": create_time,
                "time_retained": time_retained,
            }
        )
    return out


def _consumers(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    return [{"consumer_id": c, "next_snapshot_id": n} for c, n in table.consumers().items()]


def _statistics(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    """Paimon's ``StatisticTable``: one row, the statistics the snapshot read carries (none: no row)."""
    snapshot = _snapshot(table, snapshot_id)
    stats = snapshot_stats(table, snapshot)
    if stats is None:
        return []
    return [
        {
            "snapshot_id": stats.snapshot_id,
            "schema_id": stats.schema_id,
            "mergedRecordCount": stats.merged_record_count,
            "mergedRecordSize": stats.merged_record_size,
            "colstat": stats.col_stats_json(),
        }
    ]


def _branches(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    # Paimon's BranchesTable: the branch directory's modification time, as local time.
    created = table.branch_manager.created()
    return [{"branch_name": b, "create_time": _local_time(created[b])} for b in sorted(created)]


def _java_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(values) + "]"  # as Java's List.toString() shows it


def _aggregation_fields(table: Table, _snapshot_id: int | None) -> list[dict[str, Any]]:
    # Per column, every ``fields.<column>.<option>`` of the table: the option values under
    # ``function`` and their keys under ``function_options``, as Paimon lists them.
    schema = table.schema()
    per_field: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            per_field[parts[1]].append((key, value))
    return [
        {
            "field_name": f.name,
            "field_type": str(f.type),
            "function": _java_list([v for _, v in per_field[f.name]]),
            "function_options": _java_list([k for k, _ in per_field[f.name]]),
            "comment": f.description,
        }
        for f in schema.fields
    ]


def _table_indexes(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    names = {f.id: f.name for f in table.schema().fields}
    out = []
    for e in live_index_entries(table, _snapshot(table, snapshot_id)):
        g = e.global_index
        field_name = None
        if g is not None:
            ids = g.extra_field_ids if g.extra_field_ids else (g.index_field_id,)
            field_name = ",".join(names.get(i, str(i)) for i in ids)
        out.append(
            {
                "partition": _partition_string(table, e.partition),
                "bucket": e.bucket,
                "index_type": e.index_type,
                "file_name": e.file_name,
                "file_size": e.file_size,
                "row_count": e.row_count,
                "dv_ranges": None
                if e.dv_ranges is None
                else [
                    {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                    for r in e.dv_ranges
                ],
                "row_range_start": None if g is None else g.row_range_start,
                "row_range_end": None if g is None else g.row_range_end,
                "index_field_id": None if g is None else g.index_field_id,
                "index_field_name": field_name,
            }
        )
    return out


def _file_key_ranges(table: Table, snapshot_id: int | None) -> list[dict[str, Any]]:
    columns = [c for c, _ in _COLUMNS["file_key_ranges"]]
    return [{c: row[c] for c in columns} for row in _files(table, snapshot_id)]


_BUILDERS: dict[str, Callable[[Table, int | None], list[dict[str, Any]]]] = {
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
    "files": _files,
    "manifests": _manifests,
    "partitions": _partitions,
    "buckets": _buckets,
    "tags": _tags,
    "consumers": _consumers,
    "branches": _branches,
    "aggregation_fields": _aggregation_fields,
    "table_indexes": _table_indexes,
    "file_key_ranges": _file_key_ranges,
    "statistics": _statistics,
}


# -- data tables ----------------------------------------------------------------------------------
def binlog(audit: pa.Table) -> pa.Table:
    """``$binlog`` of a batch read: each ``$audit_log`` row with every value column as a
    one-element array, as Paimon's batch read shows it (its streaming read packs a -U/+U pair
    into one +U row of two-element arrays; stratalake streams ``$audit_log`` only)."""
    offsets = pa.array(range(audit.num_rows + 1), pa.int32())
    columns = [audit.column(ROWKIND)]
    fields = [audit.schema.field(ROWKIND)]
    for f in audit.schema:
        if f.name == ROWKIND:
            continue
        values = audit.column(f.name).combine_chunks()
        columns.append(pa.ListArray.from_arrays(offsets, values))
        fields.append(pa.field(f.name, pa.list_(pa.field("element", f.type)), nullable=True))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def read_optimized_splits(table: Table, snapshot_id: int | None = None) -> list[Any]:
    """Bucket splits holding only top-level files: readable without merging older levels. Append
    tables never merge: every file (as Paimon's read-optimized table of an append table)."""
    refuse_fallback(table, "a read of $ro")
    splits = table.new_scan(snapshot_id=snapshot_id).plan()
    if not table.schema().primary_keys:
        return splits
    top = table.core_options.num_levels - 1
    out = []
    for split in splits:
        files = tuple(f for f in split.files if f.level == top)
        if files:
            out.append(replace(split, files=files))
    return out


def system_table(table: Table, name: str, snapshot_id: int | None = None) -> pa.Table:
    """System table ``name`` of ``table`` (at ``snapshot_id`` where that applies) as Arrow."""
    name = _check(table, name)
    if name == AUDIT_LOG:
        return table.audit_log(snapshot_id=snapshot_id)
    if name == BINLOG:
        return binlog(table.audit_log(snapshot_id=snapshot_id)).cast(arrow_schema(table, BINLOG))
    if name == READ_OPTIMIZED:
        splits = read_optimized_splits(table, snapshot_id)
        return table.new_read().read_splits(splits)
    return _rows(table, name, _BUILDERS[name](table, snapshot_id))
