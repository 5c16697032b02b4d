"""``TableRead.superseded_positions``: the rows of a merged split's files that its read does not
return. Reading every file whole and dropping those positions must give exactly the merged read's
rows (the contract the JVM's native read of merged splits relies on)."""

from __future__ import annotations

import itertools
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.merge import VALUE_KIND, RowKind
from stratalake.read.merge_read import SUPERSEDED_FILE, SUPERSEDED_POS, TableRead, superseded_schema
from stratalake.read.scan import Split
from stratalake.table.table import Table
from tests.table.test_picked_merge_read import _rows, _sorted, _table, op


def _whole_files_minus_superseded(read: TableRead, split: Split, columns: list[str]) -> pa.Table:
    dropped: dict[int, set[int]] = {}
    for b in read.superseded_positions(split):
        assert b.schema == superseded_schema()
        for f, p in zip(b.column(SUPERSEDED_FILE).to_pylist(), b.column(SUPERSEDED_POS).to_pylist(), strict=True):
            assert p not in dropped.setdefault(f, set()), "a position listed twice"
            dropped[f].add(p)
    parts = []
    for i, f in enumerate(split.files):
        whole = pa.concat_tables(list(read._file_batches(split, f, None, levels=False, filtered=False)))
        assert whole.num_rows == f.row_count
        keep = np.ones(whole.num_rows, dtype=bool)
        keep[list(dropped.get(i, ()))] = False
        kept = whole.filter(pa.array(keep))
        kinds = kept.column(VALUE_KIND).to_numpy()
        assert np.isin(kinds, [RowKind.INSERT, RowKind.UPDATE_AFTER]).all(), "a retraction is kept"
        parts.append(kept.select(columns))
    return pa.concat_tables(parts)


def _check(t: Table, batch_rows: int) -> int:
    checked = 0
    read = t.new_read()
    read.batch_rows = batch_rows
    for split in t.new_scan().plan():
        if not read.picks_by_position(split):
            assert not split.needs_merge
            continue
        expected = read.read_split_table(split)
        got = _whole_files_minus_superseded(read, split, read.columns)
        assert _sorted(got) == _sorted(expected.cast(got.schema))
        checked += 1
    return checked


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(op, min_size=1, max_size=50),
    cuts=st.lists(st.integers(1, 50), max_size=5),
    key=st.sampled_from(["int", "composite", "string"]),
    partitioned=st.booleans(),
    ignore_delete=st.booleans(),
    sequence_field=st.booleans(),
    compact_after=st.one_of(st.none(), st.integers(0, 5)),
    batch_rows=st.integers(1, 9),
)
def test_whole_files_minus_superseded_rows_are_the_merged_read(
    history: list[tuple[str, int, str, int | None, str | None, str]],
    cuts: list[int],
    key: str,
    partitioned: bool,
    ignore_delete: bool,
    sequence_field: bool,
    compact_after: int | None,
    batch_rows: int,
) -> None:
    options = {"ignore-delete": str(ignore_delete).lower()}
    if sequence_field:
        options["sequence.field"] = "v"
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, key, partitioned, options)
        bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
        for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            t.write(_rows(history[lo:hi]), row_kind="op")
            if compact_after == i:
                t.compact(full=True)
        _check(t, batch_rows)


@pytest.mark.parametrize("deletes", [True, False])
def test_at_size_two_runs_lists_the_replaced_rows(tmp_path: Any, deletes: bool) -> None:
    """200k keys and an upsert of a quarter of them (plus deletes): exactly the replaced rows of
    the older run and the deleted keys' records are listed; nothing of the newer run's upserts.
    Without retractions the positions come from a binary search of the newer runs' keys."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("p", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    n = 200_000
    ids = np.arange(n, dtype=np.int64)
    t.write(pa.table({"id": ids, "a": ids, "p": ["p0"] * n}))
    t.compact(full=True)
    upd = ids[::4]
    t.write(pa.table({"id": upd, "a": -upd, "p": ["p0"] * len(upd)}))
    gone = ids[1::10] if deletes else ids[:0]
    if deletes:
        t.write(pa.table({"id": gone, "a": gone, "p": ["p0"] * len(gone), "op": ["-D"] * len(gone)}), row_kind="op")
    else:  # a third run: a small upsert over both
        t.write(pa.table({"id": ids[::1000], "a": ids[::1000], "p": ["p0"] * len(ids[::1000])}))
        upd = np.union1d(upd, ids[::1000])
    (split,) = t.new_scan().plan()
    read = t.new_read(columns=["a"])
    assert read.picks_by_position(split)
    names = [f.file_name for f in split.files]
    by_file: dict[str, list[int]] = {}
    for b in read.superseded_positions(split):
        for f, p in zip(b.column(SUPERSEDED_FILE).to_pylist(), b.column(SUPERSEDED_POS).to_pylist(), strict=True):
            by_file.setdefault(names[f], []).append(p)
    levels = {f.file_name: f.level for f in split.files}
    old = [name for name in names if levels[name] > 0]
    assert len(old) == 1
    replaced = np.union1d(upd, gone)  # file position = id in the compacted file
    assert sorted(by_file[old[0]]) == replaced.tolist()
    # In level 0 only the deletes' records (the newest record of a deleted key) are listed, or
    # the first upsert's records the third run replaced.
    level0 = [p for name, ps in by_file.items() if levels[name] == 0 for p in ps]
    assert len(level0) == (len(gone) if deletes else len(ids[::1000]))
    assert _check(t, 65_536) == 1


def test_splits_that_cannot_be_described_by_positions(tmp_path: Any) -> None:
    """Engines that fold rows (aggregation) and splits with deletion vectors are refused."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64())])
    agg = cat.create_table(
        "db.agg", schema=schema, primary_key=["id"], options={"bucket": "1", "merge-engine": "aggregation"}
    )
    for _ in range(2):
        agg.write(pa.table({"id": [1, 2], "a": [1, 1]}))
    (split,) = agg.new_scan().plan()
    read = agg.new_read()
    assert split.needs_merge and not read.picks_by_position(split)
    with pytest.raises(ValueError, match=r"db\.agg"):
        list(read.superseded_positions(split))
