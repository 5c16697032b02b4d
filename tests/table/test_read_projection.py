"""Reading a subset of columns merges exactly like reading all of them, for every engine."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stratalake import Catalog
from stratalake.read.merge_read import TableRead

SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("a", pa.int64()),
        ("b", pa.string()),
        ("g1", pa.int64()),
        ("x", pa.int64()),
        ("y", pa.int64()),
        ("g2", pa.int64()),
        ("z", pa.int64()),
    ]
)

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.a.aggregate-function": "sum",
        "fields.x.aggregate-function": "max",
        "fields.z.aggregate-function": "min",
    },
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update-groups": {
        "merge-engine": "partial-update",
        "fields.g1.sequence-group": "x,y",
        "fields.g2.sequence-group": "z",
        "fields.z.aggregate-function": "sum",
    },
    "partial-update-removing-group": {
        "merge-engine": "partial-update",
        "fields.g1.sequence-group": "x,y",
        "fields.g2.sequence-group": "z",
        "partial-update.remove-record-on-sequence-group": "g2",
    },
}


def _batch(rng: random.Random, n: int, deletes: bool) -> pa.Table:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.3 else v

    rows = {name: [] for name in SCHEMA.names}
    ops = []
    for _ in range(n):
        rows["k"].append(rng.randrange(20))
        rows["a"].append(maybe(rng.randrange(100)))
        rows["b"].append(maybe(rng.choice("pqrs")))
        rows["g1"].append(maybe(rng.randrange(5)))
        rows["x"].append(maybe(rng.randrange(100)))
        rows["y"].append(maybe(rng.randrange(100)))
        rows["g2"].append(maybe(rng.randrange(5)))
        rows["z"].append(maybe(rng.randrange(100)))
        ops.append("-D" if deletes and rng.random() < 0.15 else "+I")
    return pa.table({**rows, "op": ops}, schema=SCHEMA.append(pa.field("op", pa.string())))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_projected_reads_match_full_read(tmp_path: Path, engine: str) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    options = {"bucket": "2", **ENGINES[engine]}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    rng = random.Random(7)
    deletes = engine in ("deduplicate", "partial-update-groups", "partial-update-removing-group")
    for _ in range(4):  # several files per bucket: reads must merge
        t.write(_batch(rng, 40, deletes), row_kind="op")

    full = t.read().sort_by("k")
    names = SCHEMA.names
    for size in (1, 2):
        for cols in itertools.combinations(names[1:], size):
            got = t.read(columns=["k", *cols]).sort_by("k")
            assert got == full.select(["k", *cols]), (engine, cols)
    # Without the key the rows still come out merged (one per live key).
    assert t.read(columns=["b"]).num_rows == full.num_rows


def test_projection_reads_fewer_columns(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={"merge-engine": "partial-update", "fields.g1.sequence-group": "x,y"},
    )
    read = TableRead(t, columns=["x"])
    assert read._read_columns == ["k", "g1", "x"]
    assert TableRead(t, columns=["a"])._read_columns == ["k", "a", "g1"]
    agg = cat.create_table(
        "db.agg", schema=SCHEMA, primary_key=["k"], options={"merge-engine": "aggregation"}
    )
    assert TableRead(agg, columns=["z"], filter=[("b", "=", "p")])._read_columns == ["k", "b", "z"]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_partition_key_column_is_read_only_when_wanted(tmp_path: Path, engine: str) -> None:
    """A partition column of the primary key is constant within a bucket: reads that do not ask
    for it skip it, and still merge exactly like a full read."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = SCHEMA.append(pa.field("p", pa.string()))
    options = {"bucket": "2", **ENGINES[engine]}
    t = cat.create_table("db.t", schema=schema, primary_key=["k", "p"], partition_keys=["p"], options=options)
    rng = random.Random(11)
    deletes = engine in ("deduplicate", "partial-update-groups", "partial-update-removing-group")
    for _ in range(4):
        batch = _batch(rng, 60, deletes)
        parts = pa.array([rng.choice(["p1", "p2"]) for _ in range(batch.num_rows)])
        t.write(batch.append_column("p", parts), row_kind="op")

    full = t.read()
    read = TableRead(t, columns=["a"])
    assert read.read_columns is not None and "p" not in read.read_columns
    assert "p" in (TableRead(t, columns=["a", "p"]).read_columns or [])

    def rows(table: pa.Table, cols: list[str]) -> pa.Table:
        return table.select(cols).sort_by([(c, "ascending") for c in cols])

    for cols in (["k", "a"], ["k", "b", "z"], ["k", "x", "g2"], ["k", "a", "p"]):
        assert rows(t.read(columns=cols), cols) == rows(full, cols), (engine, cols)
