"""Manifest entries of append files described from their Parquet footers (what the commit of
Spark-written files uses) equal the entries the Python writer derives from the rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import stratalake
from stratalake.lsm.data_file import bucket_dir
from stratalake.store.append_file import meta_of_parquet_file

SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("b", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("d", pa.date32()),
        ("m", pa.decimal128(12, 2)),
        ("t", pa.int8()),
        ("ok", pa.bool_()),
        ("raw", pa.binary()),
    ]
)


def _rows(n: int, start: int) -> pa.Table:
    return pa.table(
        {
            "i": [None if k % 7 == 0 else k for k in range(start, start + n)],
            "b": [k * 1_000_003 for k in range(start, start + n)],
            # long strings: truncated statistics; one value over parquet-mr's 4 KiB limit
            "s": [("x" * 5000 if k == start + 3 else f"user-{k:08d}-" + "y" * 20) for k in range(start, start + n)],
            "f": [float("nan") if k == start + 5 else k / 3 for k in range(start, start + n)],
            "d": [dt.date(2020, 1, 1) + dt.timedelta(days=k % 400) for k in range(start, start + n)],
            "m": [Decimal(k) / 100 for k in range(start, start + n)],
            "t": [k % 100 - 50 for k in range(start, start + n)],
            "ok": [k % 3 == 0 for k in range(start, start + n)],
            "raw": [None] * n,
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("mode", ["truncate(16)", "full", "counts", "none"])
def test_footer_meta_matches_the_writers(tmp_path: Path, mode: str) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.e", schema=SCHEMA, options={"metadata.stats-mode": mode})
    t.write(_rows(30_000, 0))
    t.write(_rows(20_000, 50_000))
    entries = list(t.live_entries(t.latest_snapshot()))
    assert len(entries) == 2
    for e in entries:
        directory = bucket_dir(t.location, "", 0)
        # Several row groups, so the footer's per-group statistics must be folded.
        assert pq.ParquetFile(f"{directory}/{e.file.file_name}").metadata.num_row_groups >= 1
        meta = meta_of_parquet_file(
            t.file_io, directory, e.file.file_name, t.schema(), t.core_options, e.file.min_sequence_number
        )
        assert meta.row_count == e.file.row_count
        assert meta.file_size == e.file.file_size
        assert (meta.min_sequence_number, meta.max_sequence_number) == (
            e.file.min_sequence_number,
            e.file.max_sequence_number,
        )
        assert meta.value_stats == e.file.value_stats, mode
        assert meta.value_stats_cols == e.file.value_stats_cols


def test_footer_stats_fold_row_groups(tmp_path: Path) -> None:
    """A file of many row groups (as Spark's writer makes them): min/max across all groups."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.e", schema=SCHEMA)
    rows = _rows(10_000, 0)
    directory = bucket_dir(t.location, "", 0)
    Path(directory).mkdir(parents=True)
    pq.write_table(rows, f"{directory}/data-x-0.parquet", row_group_size=999)
    meta = meta_of_parquet_file(t.file_io, directory, "data-x-0.parquet", t.schema(), t.core_options, 7)
    assert pq.ParquetFile(f"{directory}/data-x-0.parquet").metadata.num_row_groups > 5
    t.write(rows)  # the Python writer's statistics of the same rows
    (written,) = list(t.live_entries(t.latest_snapshot()))
    assert meta.value_stats == written.file.value_stats
    assert (meta.min_sequence_number, meta.max_sequence_number) == (7, 7 + 9_999)
