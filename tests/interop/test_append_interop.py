"""Append tables (no primary key) shared with pypaimon 2.1, bucket-unaware and fixed-bucket.

Writers alternate (pypaimon, stratalake, pypaimon, stratalake...), with partition overwrites on
both sides; after each step both libraries must read exactly the list model's rows (duplicates
included), and both must read every snapshot as it was.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator

import pyarrow as pa
import pytest

import stratalake
from stratalake import field

from .paimon_oracle import paimon_create_table, paimon_read, paimon_write, rust_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
Row = tuple[int, str, str]


@pytest.fixture
def warehouse() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        yield d


def _table(rows: list[Row]) -> pa.Table:
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(SCHEMA.names)}, schema=SCHEMA)


def _rows(t: pa.Table) -> list[Row]:
    return sorted(zip(*(t.column(n).to_pylist() for n in SCHEMA.names), strict=True))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{}, {"bucket": "-1"}, {"bucket": "3", "bucket-key": "id"}, {"bucket": "2", "bucket-key": "v,id"}],
)
@pytest.mark.parametrize("creator", ["pypaimon", "stratalake"])
def test_alternating_writers_read_the_same_rows(
    warehouse: str, options: dict[str, str], creator: str
) -> None:
    ident = "db.events"
    if creator == "pypaimon":
        paimon_create_table(warehouse, ident, SCHEMA, [], ["dt"], options)
    else:
        cat = stratalake.Catalog(warehouse)
        cat.create_database("db", ignore_if_exists=True)
        cat.create_table(ident, schema=SCHEMA, partition_keys=["dt"], options=options)
    rng = random.Random(11)
    model: list[Row] = []
    snapshots: dict[int, list[Row]] = {}
    for step in range(8):
        batch = [
            (rng.randrange(50), rng.choice("abc"), rng.choice(["x", "y"]))
            for _ in range(rng.randrange(1, 40))
        ]
        overwrite = step % 4 == 3
        if overwrite:
            part = batch[0][2]
            batch = [r for r in batch if r[2] == part]
        if step % 2 == 0:
            sid = paimon_write(warehouse, ident, _table(batch), overwrite={"dt": part} if overwrite else None)
        else:
            t = stratalake.Catalog(warehouse).get_table(ident)
            sid = t.write(
                _table(batch), overwrite=overwrite, overwrite_partitions=[{"dt": part}] if overwrite else None
            )
            assert sid is not None
        if overwrite:
            model = [r for r in model if r[2] != part]
        model += batch
        snapshots[sid] = sorted(model)
        t = stratalake.Catalog(warehouse).get_table(ident)
        assert _rows(t.read()) == sorted(model)
        assert _rows(paimon_read(warehouse, ident)) == sorted(model)
        assert _rows(rust_read(warehouse, ident)) == sorted(model)
    t = stratalake.Catalog(warehouse).get_table(ident)
    for sid, rows in snapshots.items():
        assert _rows(t.read(snapshot_id=sid)) == rows
        assert _rows(paimon_read(warehouse, ident, snapshot_id=sid)) == rows
        assert _rows(rust_read(warehouse, ident, snapshot_id=sid)) == rows
    assert _rows(t.read(filter=(field("id") < 10) & (field("dt") == "x"))) == sorted(
        r for r in model if r[0] < 10 and r[2] == "x"
    )


def test_stratalake_compaction_is_read_by_pypaimon(warehouse: str) -> None:
    ident = "db.small"
    paimon_create_table(warehouse, ident, SCHEMA, [], [], {"bucket": "2", "bucket-key": "id"})
    model: list[Row] = []
    for step in range(6):
        batch = [(step * 10 + i, "v", "x") for i in range(10)]
        paimon_write(warehouse, ident, _table(batch))
        model += batch
    t = stratalake.Catalog(warehouse).get_table(ident)
    assert t.compact(full=True) is not None
    snap = t.latest_snapshot()
    assert snap is not None and {e.bucket for e in t.live_entries(snap)} == {0, 1}
    assert len(t.live_entries(snap)) == 2
    assert _rows(paimon_read(warehouse, ident)) == sorted(model)
    batch = [(99, "w", "x")]
    paimon_write(warehouse, ident, _table(batch))
    assert _rows(stratalake.Catalog(warehouse).get_table(ident).read()) == sorted(model + batch)


def test_stratalake_delete_is_read_by_pypaimon(warehouse: str) -> None:
    from stratalake.append.dml import delete_rows
    from stratalake.expressions import to_predicate

    ident = "db.del"
    paimon_create_table(warehouse, ident, SCHEMA, [], ["dt"], {})
    model = [(i, "abc"[i % 3], "xy"[i % 2]) for i in range(30)]
    paimon_write(warehouse, ident, _table(model[:15]))
    paimon_write(warehouse, ident, _table(model[15:]))
    t = stratalake.Catalog(warehouse).get_table(ident)
    predicate = to_predicate((field("v") == "a") | (field("id") > 25))
    assert predicate is not None and delete_rows(t, predicate) is not None
    model = [r for r in model if not (r[1] == "a" or r[0] > 25)]
    assert _rows(paimon_read(warehouse, ident)) == sorted(model)
    paimon_write(warehouse, ident, _table([(100, "a", "x")]))
    model.append((100, "a", "x"))
    assert _rows(stratalake.Catalog(warehouse).get_table(ident).read()) == sorted(model)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_formats_both_ways(warehouse: str, fmt: str) -> None:
    ident = f"db.f_{fmt}"
    cat = stratalake.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(ident, schema=SCHEMA, partition_keys=["dt"], options={"file.format": fmt})
    model = [(i, "abc"[i % 3], "xy"[i % 2]) for i in range(20)]
    t.write(_table(model[:10]))
    paimon_write(warehouse, ident, _table(model[10:]))
    assert _rows(paimon_read(warehouse, ident)) == sorted(model)
    assert _rows(cat.get_table(ident).read(filter=field("v") == "b")) == sorted(
        r for r in model if r[1] == "b"
    )
