"""Merged reads of deduplicate tables pick each key's row from the key, sequence and row-kind
columns and take only the wanted columns (``TableRead._picked_chunks``); when the runs' sequence
number ranges ascend and are disjoint, no sequence numbers are read at all. Checked against a
plain model of the engine and against the generic merge path (``merge_kv`` on every column)."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.lsm.merge_reader import runs_in_sequence_order, sorted_runs
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import Split
from stratalake.table.table import Table
from tests.merge.models import Record, dedup_model, merge_order

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64()), ("w", pa.string()), ("p", pa.string())])
KEYS = {"int": ["k"], "composite": ["k", "s"], "string": ["s"]}


class GenericRead(TableRead):
    """The generic merge path: every engine's ``merge_kv`` over all read columns."""

    def _picked_chunks(self, split: Split) -> Iterator[pa.Table] | None:
        return None


class CountingRead(TableRead):
    picked = 0

    def _picked_chunks(self, split: Split) -> Iterator[pa.Table] | None:
        out = super()._picked_chunks(split)
        if out is not None:
            self.picked += 1
        return out


def _table(d: str, key: str, partitioned: bool, options: dict[str, str]) -> Table:
    cat = stratalake.Catalog(d)
    cat.create_database("db")
    pk = KEYS[key] + (["p"] if partitioned else [])
    return cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=pk,
        partition_keys=["p"] if partitioned else [],
        options={"bucket": "2", "write-only": "true", **options},
    )


def _rows(ops: list[tuple[str, int, str, int | None, str | None, str]]) -> pa.Table:
    kinds, k, s, v, w, p = (list(c) for c in zip(*ops, strict=True))
    return pa.table({"k": k, "s": s, "v": v, "w": w, "p": p, "op": kinds})


def _read(read: TableRead, t: Table, batch_rows: int) -> pa.Table:
    read.batch_rows = batch_rows
    batches = [b for split in t.new_scan().plan() for b in read.read_split(split)]
    return pa.Table.from_batches(batches, schema=read.output_schema())


def _sorted(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(r.values()) for r in table.to_pylist()),
        key=lambda r: tuple((v is None, v if v is not None else 0) for v in r),
    )


op = st.tuples(
    st.sampled_from(["+I", "+I", "+U", "-D", "-U"]),
    st.integers(0, 12),
    st.sampled_from(["a", "b", "c"]),
    st.one_of(st.none(), st.integers(0, 60)),
    st.one_of(st.none(), st.sampled_from(["x", "y", "zz"])),
    st.sampled_from(["p1", "p2"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(op, min_size=1, max_size=50),
    cuts=st.lists(st.integers(1, 50), max_size=5),
    key=st.sampled_from(sorted(KEYS)),
    partitioned=st.booleans(),
    ignore_delete=st.booleans(),
    sequence_field=st.booleans(),
    compact_after=st.one_of(st.none(), st.integers(0, 5)),
    columns=st.sampled_from([None, ["w"], ["v", "k"], ["s", "w", "p"]]),
    filtered=st.booleans(),
    batch_rows=st.integers(1, 9),
)
def test_picked_read_matches_model_and_generic_merge(
    history: list[tuple[str, int, str, int | None, str | None, str]],
    cuts: list[int],
    key: str,
    partitioned: bool,
    ignore_delete: bool,
    sequence_field: bool,
    compact_after: int | None,
    columns: list[str] | None,
    filtered: bool,
    batch_rows: int,
) -> None:
    options = {"ignore-delete": str(ignore_delete).lower()}
    if sequence_field:
        options["sequence.field"] = "v"
    if not partitioned:  # one partition: the model's key needs no partition
        history = [(*h[:5], "p1") for h in history]
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, key, partitioned, options)
        bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
        for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            t.write(_rows(history[lo:hi]), row_kind="op")
            if compact_after == i:
                t.compact(full=True)
        key_columns = KEYS[key] + (["p"] if partitioned else [])
        records = [
            Record(pos, kind, {"k": k, "s": s, "v": v, "w": w, "p": p, "_key": tuple({"k": k, "s": s, "p": p}[c] for c in key_columns)})
            for pos, (kind, k, s, v, w, p) in enumerate(history)
        ]
        groups = merge_order(records, "_key", ["v"] if sequence_field else [])
        state = dedup_model(groups, ignore_delete)
        wanted = columns or SCHEMA.names
        where = [("w", "!=", "y")] if filtered else None
        expected = [
            {c: row[c] for c in wanted} for row in state.values() if not filtered or row["w"] not in (None, "y")
        ]
        fast = CountingRead(t, columns=columns, filter=where)
        got = _read(fast, t, batch_rows)
        assert _sorted(got) == _sorted(pa.Table.from_pylist(expected, schema=got.schema))
        assert _sorted(got) == _sorted(_read(GenericRead(t, columns=columns, filter=where), t, batch_rows))
        if any(s.needs_merge for s in t.new_scan().plan()):
            assert fast.picked > 0


def _write(w: Any, ks: list[int], vs: list[int]) -> None:
    n = len(ks)
    w.write(pa.table({"k": pa.array(ks, pa.int64()), "s": ["a"] * n, "v": vs, "w": ["x"] * n, "p": ["p1"] * n}))


def test_overlapping_sequence_ranges_read_sequence_numbers(tmp_path: Any) -> None:
    """Two writers that started from the same snapshot number their rows from the same point (the
    commit refuses them only if they share a key): runs whose sequence ranges overlap are merged
    by the records' sequence numbers, which are then read."""
    t = _table(str(tmp_path), "int", False, {"bucket": "1"})
    t.write(pa.table({"k": [1, 3], "s": ["a"] * 2, "v": [0, 0], "w": ["x"] * 2, "p": ["p1"] * 2}))
    w1, w2 = t.new_write(), t.new_write()
    _write(w1, [1, 5], [10, 50])
    _write(w2, [3, 4], [30, 40])
    w1.commit()
    w2.commit()
    (split,) = t.new_scan().plan()
    assert not runs_in_sequence_order(sorted_runs(split.files, TableRead(t)._key_of()))
    read = CountingRead(t, columns=["k", "v"])
    got = {r["k"]: r["v"] for r in _read(read, t, 2).to_pylist()}
    assert got == {1: 10, 3: 30, 4: 40, 5: 50}
    assert read.picked == 1


def test_picked_rows_order_by_sequence_number_unless_told_otherwise() -> None:
    """Rows of the newer run that carry older sequence numbers lose, unless the caller vouches
    that arrival order is merge order."""
    from stratalake.merge import MergeContext, create_merge_function, picked_rows
    from stratalake.spec.schema import DataField, TableSchema
    from stratalake.types import DataType

    fields = (DataField(0, "k", DataType.parse("BIGINT NOT NULL")), DataField(1, "v", DataType.parse("BIGINT")))
    ctx = MergeContext.of(TableSchema(0, fields, 1, primary_keys=("k",)))
    mf = create_merge_function(ctx)
    kv = pa.table(
        {
            "k": pa.array([1, 2, 1, 2], pa.int64()),
            "v": [10, 20, 11, 21],
            "_SEQUENCE_NUMBER": pa.array([7, 3, 5, 9], pa.int64()),
            "_VALUE_KIND": pa.array([0, 0, 0, 0], pa.int8()),
        }
    )
    rows = picked_rows(kv, ctx, mf)
    assert rows is not None and rows.tolist() == [0, 3]
    ordered = picked_rows(kv.drop_columns(["_SEQUENCE_NUMBER"]), ctx, mf, arrival_ordered=True)
    assert ordered is not None and ordered.tolist() == [2, 3]


@pytest.mark.parametrize("overlap", [1.0, 0.25])
def test_picked_read_at_size_takes_winners_once(tmp_path: Any, overlap: float) -> None:
    """A bucket of 200k keys with an upsert of all or a quarter of them (the shape of issue 17's
    benchmark): the projected read returns exactly the newest values, in key order, without
    reading sequence numbers (the runs' ranges are disjoint)."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string()), ("p", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    n = 200_000
    ids = np.arange(n, dtype=np.int64) * 3
    t.write(pa.table({"id": ids, "a": ids, "b": pa.array([f"v{i}" for i in range(n)]), "p": ["p0"] * n}))
    t.compact(full=True)
    upd = ids[:: int(1 / overlap)]
    t.write(pa.table({"id": upd, "a": -upd, "b": ["u"] * len(upd), "p": ["p0"] * len(upd)}))
    (split,) = t.new_scan().plan()
    assert split.needs_merge and runs_in_sequence_order(sorted_runs(split.files, TableRead(t)._key_of()))
    read = t.new_read(columns=["b", "a"])
    assert read.read_columns == ["id", "a", "b"]  # neither p nor sequence numbers
    got = pa.Table.from_batches(list(read.read_split(split)))
    a = got.column("a").to_numpy()
    updated = np.zeros(n, dtype=bool)
    updated[:: int(1 / overlap)] = True
    assert np.array_equal(a, np.where(updated, -ids, ids))
    b = got.column("b").to_pylist()
    assert all(b[i] == ("u" if updated[i] else f"v{i}") for i in range(0, n, 997))
    assert b.count("u") == int(updated.sum())


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_picked_read_of_other_formats(tmp_path: Any, fmt: str) -> None:
    """ORC and Avro files are read without sequence numbers (or partition columns) alike."""
    t = _table(str(tmp_path), "composite", True, {"file.format": fmt, "bucket": "1"})
    t.write(_rows([("+I", k, "a", k, "x", "p1") for k in range(40)]), row_kind="op")
    t.write(_rows([("+U", k, "a", -k, None, "p1") for k in range(0, 40, 3)] + [("-D", 1, "a", None, None, "p1")]), row_kind="op")
    (split,) = t.new_scan().plan()
    assert split.needs_merge and runs_in_sequence_order(sorted_runs(split.files, TableRead(t)._key_of()))
    read = CountingRead(t, columns=["v", "w"])
    got = _read(read, t, 7)
    assert read.picked == 1
    want = [(-k if k % 3 == 0 else k, None if k % 3 == 0 else "x") for k in range(40) if k != 1]
    assert list(zip(got.column("v").to_pylist(), got.column("w").to_pylist(), strict=True)) == want
