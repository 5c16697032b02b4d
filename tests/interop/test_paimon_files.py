"""pypaimon's own metadata readers accept stratalake's files, and the metadata tells the truth.

A table is written once by stratalake (partitioned, two buckets, upserts, deletes, an overwrite);
then pypaimon's ``SchemaManager``, ``SnapshotManager``, ``ManifestListManager`` and
``ManifestFileManager`` parse every schema, snapshot, manifest list and manifest file (stats
included), and each parsed value is checked against the Parquet files it describes. pypaimon's bucket
function (``FixedBucketRowKeyExtractor``) must put every stored row in the bucket it is filed under.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from .paimon_oracle import RETRACT_KINDS, paimon_snapshot, paimon_snapshot_ids, paimon_table
from .test_pypaimon_interop import (
    DAY1,
    DAY2,
    DAY3,
    OP,
    TYPED_COLUMNS,
    TYPED_SCHEMA,
    rows_for,
    sl_create,
    sl_overwrite,
    sl_write,
    typed_batch,
)

pytestmark = pytest.mark.interop

IDENT = "db.files"
BUCKETS = 2
EXPECTED_KINDS = ["APPEND", "APPEND", "APPEND", "OVERWRITE"]
EXPECTED_TYPES = {
    "id": "BIGINT NOT NULL",
    "dt": "STRING NOT NULL",
    "name": "STRING",
    "qty": "INT",
    "amount": "DOUBLE",
    "price": "DECIMAL(12, 2)",
    "big_price": "DECIMAL(24, 6)",
    "day": "DATE",
    "ts": "TIMESTAMP(6)",
    "ts_ms": "TIMESTAMP(3)",
    "flag": "BOOLEAN",
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stratalake table with four snapshots: three appends with retracts, one overwrite."""
    wh = tmp_path_factory.mktemp("files") / "warehouse"
    sl_create(wh, IDENT, TYPED_SCHEMA, ["id", "dt"], ["dt"], {"bucket": str(BUCKETS)})
    sl_write(wh, IDENT, typed_batch(rows_for(range(1, 30), DAY1, 1) + rows_for(range(1, 9), DAY2, 1)), OP)
    sl_write(
        wh,
        IDENT,
        typed_batch(rows_for(range(1, 30, 3), DAY1, 2, "+U") + rows_for([2, 5, 40], DAY1, 2, "-D")),
        OP,
    )
    sl_write(wh, IDENT, typed_batch(rows_for([1], DAY2, 3, "-U") + rows_for(range(1, 5), DAY3, 3)), OP)
    sl_overwrite(wh, IDENT, typed_batch(rows_for([7, 8, 9], DAY3, 4), with_op=False), {"dt": DAY3})
    return wh


@dataclass(frozen=True)
class LiveFile:
    entry: Any  # pypaimon ManifestEntry, stats parsed

    @property
    def partition(self) -> tuple[Any, ...]:
        return tuple(self.entry.partition.values)

    def path(self, warehouse: Path) -> Path:
        part = "/".join(f"dt={v}" for v in self.partition)
        return (
            warehouse
            / "db.db"
            / "files"
            / part
            / f"bucket-{self.entry.bucket}"
            / str(self.entry.file.file_name)
        )


def _entries(table: Any, manifest_names: list[str]) -> list[Any]:
    files = ManifestFileManager(table)
    return [e for name in manifest_names for e in files.read(name, drop_stats=False)]


def _live_files(table: Any, snapshot: Any) -> list[LiveFile]:
    """Fold ADD/DELETE entries of base + delta manifests by (partition, bucket, file name)."""
    metas = ManifestListManager(table).read_all(snapshot)
    live: dict[tuple[Any, ...], Any] = {}
    for e in _entries(table, [m.file_name for m in metas]):
        ident = (tuple(e.partition.values), e.bucket, e.file.file_name)
        if e.kind == 0:
            assert ident not in live, f"file added twice: {ident}"
            live[ident] = e
        else:
            assert e.kind == 1, f"unknown manifest entry kind {e.kind}"
            assert live.pop(ident, None) is not None, f"DELETE of a file that is not live: {ident}"
    return [LiveFile(e) for e in live.values()]


def _snapshots(warehouse: Path) -> Iterator[Any]:
    for snapshot_id in paimon_snapshot_ids(warehouse, IDENT):
        yield paimon_snapshot(warehouse, IDENT, snapshot_id)


def test_schema_parsed_by_pypaimon(warehouse: Path) -> None:
    schema = paimon_table(warehouse, IDENT).table_schema
    assert schema.id == 0
    assert {f.name: str(f.type) for f in schema.fields} == EXPECTED_TYPES
    assert [f.id for f in schema.fields] == list(range(len(TYPED_COLUMNS)))
    assert schema.highest_field_id == len(TYPED_COLUMNS) - 1
    assert schema.primary_keys == ["id", "dt"]
    assert schema.partition_keys == ["dt"]
    assert schema.options.get("bucket") == str(BUCKETS)


def test_snapshots_parsed_by_pypaimon(warehouse: Path) -> None:
    table = paimon_table(warehouse, IDENT)
    manifest_dir = warehouse / "db.db" / "files" / "manifest"
    snapshots = list(_snapshots(warehouse))
    assert [s.id for s in snapshots] == list(range(1, len(EXPECTED_KINDS) + 1))
    assert [s.commit_kind for s in snapshots] == EXPECTED_KINDS
    assert (warehouse / "db.db" / "files" / "snapshot" / "LATEST").read_text().strip() == str(len(snapshots))
    for s in snapshots:
        assert s.version == 3 and s.schema_id == 0
        assert s.commit_identifier == 2**63 - 1, "batch commits use Long.MAX_VALUE"
        for name, size in [
            (s.base_manifest_list, s.base_manifest_list_size),
            (s.delta_manifest_list, s.delta_manifest_list_size),
        ]:
            if size is not None:
                assert os.path.getsize(manifest_dir / name) == size, f"snapshot {s.id}: size of {name}"
        live = _live_files(table, s)
        assert s.total_record_count == sum(f.entry.file.row_count for f in live), f"snapshot {s.id}"
        delta = _entries(table, [m.file_name for m in ManifestListManager(table).read_delta(s)])
        signed = sum(e.file.row_count * (1 if e.kind == 0 else -1) for e in delta)
        assert s.delta_record_count == signed, f"snapshot {s.id}: deltaRecordCount"


def test_manifest_lists_parsed_by_pypaimon(warehouse: Path) -> None:
    table = paimon_table(warehouse, IDENT)
    manifest_dir = warehouse / "db.db" / "files" / "manifest"
    for s in _snapshots(warehouse):
        for meta in ManifestListManager(table).read_all(s):
            assert os.path.getsize(manifest_dir / meta.file_name) == meta.file_size, meta.file_name
            entries = _entries(table, [meta.file_name])
            assert meta.num_added_files == sum(e.kind == 0 for e in entries), meta.file_name
            assert meta.num_deleted_files == sum(e.kind == 1 for e in entries), meta.file_name
            assert meta.schema_id == 0
            parts = [e.partition.values[0] for e in entries]
            stats = meta.partition_stats
            assert stats.min_values.get_field(0) == min(parts), f"{meta.file_name}: partition min"
            assert stats.max_values.get_field(0) == max(parts), f"{meta.file_name}: partition max"
            for attr, expected in [
                ("min_bucket", min(e.bucket for e in entries)),
                ("max_bucket", max(e.bucket for e in entries)),
                ("min_level", min(e.file.level for e in entries)),
                ("max_level", max(e.file.level for e in entries)),
            ]:
                value = getattr(meta, attr)
                assert value is None or value == expected, f"{meta.file_name}: {attr}"


def _check_stats(stats: Any, data: pa.Table, columns: list[str], what: str) -> None:
    """pypaimon-parsed SimpleStats must bound the column values (exact unless strings were cut)."""
    if stats.null_counts is not None:
        assert len(stats.null_counts) == len(columns), what
    for i, name in enumerate(columns):
        column = data.column(name)
        if stats.null_counts is not None and stats.null_counts[i] is not None:
            assert stats.null_counts[i] == column.null_count, f"{what}: null count of {name}"
        low, high = stats.min_values.get_field(i), stats.max_values.get_field(i)
        if column.null_count == len(column):
            assert low is None and high is None, f"{what}: stats of all-null {name}"
            continue
        if low is None and high is None:
            continue  # this column's stats were not collected
        bounds = pc.min_max(column).as_py()
        if pa.types.is_string(column.type):  # truncated stats: a prefix below, an increment above
            assert low <= bounds["min"] and high >= bounds["max"], f"{what}: {name} {low!r}..{high!r}"
        else:
            assert (low, high) == (bounds["min"], bounds["max"]), f"{what}: min/max of {name}"


def test_data_file_metadata_matches_the_files(warehouse: Path) -> None:
    table = paimon_table(warehouse, IDENT)
    latest = paimon_snapshot(warehouse, IDENT, max(paimon_snapshot_ids(warehouse, IDENT)))
    live = _live_files(table, latest)
    assert live
    extractor = table.create_row_key_extractor()
    value_fields = [f.name for f in table.table_schema.fields]
    for f in live:
        meta, path = f.entry.file, f.path(warehouse)
        what = f"{f.partition}/bucket-{f.entry.bucket}/{meta.file_name}"
        assert path.is_file(), f"{what}: not at {path}"
        assert f.entry.total_buckets == BUCKETS
        assert os.path.getsize(path) == meta.file_size, f"{what}: _FILE_SIZE"
        data = pq.ParquetFile(path).read()
        assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", *TYPED_COLUMNS], what
        assert data.num_rows == meta.row_count, f"{what}: _ROW_COUNT"
        kinds = data.column("_VALUE_KIND")
        retracts = int(pc.sum(pc.is_in(kinds, pa.array(RETRACT_KINDS, pa.int8()))).as_py() or 0)
        assert meta.delete_row_count == retracts, f"{what}: _DELETE_ROW_COUNT counts -U/-D rows"
        seq = pc.min_max(data.column("_SEQUENCE_NUMBER")).as_py()
        assert (meta.min_sequence_number, meta.max_sequence_number) == (seq["min"], seq["max"]), what
        keys = data.column("_KEY_id").to_pylist()
        assert keys == sorted(keys) and len(set(keys)) == len(keys), f"{what}: sorted, one row per key"
        assert (meta.min_key.values, meta.max_key.values) == ([keys[0]], [keys[-1]]), f"{what}: min/max key"
        assert data.column("id").to_pylist() == keys, what
        _check_stats(meta.key_stats, data, ["_KEY_id"], f"{what} key stats")
        stats_cols = meta.value_stats_cols if meta.value_stats_cols is not None else value_fields
        _check_stats(meta.value_stats, data, list(stats_cols), f"{what} value stats")
        partitions, buckets = extractor.extract_partition_bucket_batch(
            data.select(value_fields).combine_chunks().to_batches()[0]
        )
        assert set(partitions) == {f.partition}, f"{what}: rows of another partition"
        assert set(buckets) == {f.entry.bucket}, f"{what}: pypaimon puts these rows in buckets {set(buckets)}"


def test_sequence_numbers_increase_across_commits(warehouse: Path) -> None:
    table = paimon_table(warehouse, IDENT)
    latest = paimon_snapshot(warehouse, IDENT, max(paimon_snapshot_ids(warehouse, IDENT)))
    by_bucket: dict[tuple[Any, ...], list[Any]] = {}
    for f in _live_files(table, latest):
        by_bucket.setdefault((f.partition, f.entry.bucket), []).append(f.entry.file)
    for where, files in by_bucket.items():
        ranges = sorted((m.min_sequence_number, m.max_sequence_number) for m in files)
        for (_, high), (low, _) in itertools.pairwise(ranges):
            assert low > high, f"{where}: overlapping sequence ranges {ranges}"


KIND_CODES = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


def test_input_changelog_parsed_by_pypaimon(tmp_path: Path) -> None:
    """``changelog-producer=input``: pypaimon parses the changelog manifests, which name files that
    hold every input record of the commit with its kind (Java keeps them all; pypaimon's own writer
    folds them, docs/format.md section 11)."""
    wh, ident = tmp_path / "warehouse", "db.cdc"
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.string())])
    sl_create(wh, ident, schema, ["k"], (), {"bucket": "2", "changelog-producer": "input"})
    input_schema = schema.append(pa.field(OP, pa.string()))
    commits = [
        [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I"), (1, "a2", "+U")],
        [(1, "a2", "-U"), (1, "a3", "+U"), (2, "b", "-D"), (4, "d", "+I"), (4, "d2", "+U")],
    ]
    table_dir = wh / "db.db" / "cdc"
    for rows in commits:
        batch = pa.Table.from_pylist([{"k": k, "v": v, OP: op} for k, v, op in rows], schema=input_schema)
        snapshot_id = sl_write(wh, ident, batch, OP)
        table = paimon_table(wh, ident)
        snapshot = paimon_snapshot(wh, ident, snapshot_id)
        metas = ManifestListManager(table).read_changelog(snapshot)
        assert metas, f"snapshot {snapshot_id} names no changelog manifest list"
        entries = _entries(table, [m.file_name for m in metas])
        assert entries and all(e.kind == 0 for e in entries)
        got: list[tuple[Any, ...]] = []
        for e in entries:
            path = table_dir / f"bucket-{e.bucket}" / e.file.file_name
            assert e.file.file_name.startswith("changelog-"), e.file.file_name
            data = pq.ParquetFile(path).read()
            assert data.num_rows == e.file.row_count
            got += zip(
                data.column("k").to_pylist(),
                data.column("v").to_pylist(),
                data.column("_VALUE_KIND").to_pylist(),
                strict=True,
            )
        expected = [(k, v, KIND_CODES[op]) for k, v, op in rows]
        assert sorted(got) == sorted(expected), f"snapshot {snapshot_id}: changelog records"
        assert snapshot.changelog_record_count == len(expected)
