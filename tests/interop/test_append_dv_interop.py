"""Append tables with deletion vectors shared with pypaimon 2.1 (bucket-unaware and fixed bucket).

stratalake deletes and updates rows by position (``append/dml.py``): pypaimon must read
exactly the list model's rows after each statement, and stratalake must read pypaimon's later
appends. pypaimon 2.1 itself writes deletion vectors only for data-evolution tables with row
tracking (``TableDeleteByRowId``), which stratalake does not support; so vectors here are always
written by stratalake, over files written by both.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator

import pyarrow as pa
import pytest

import stratalake
from stratalake import field
from stratalake.append.dml import apply_changes, matching_positions
from stratalake.expressions import to_predicate
from stratalake.store.index_manifest import live_index_entries

from .paimon_oracle import paimon_create_table, paimon_read, paimon_write

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
    [
        {"deletion-vectors.enabled": "true"},
        {"deletion-vectors.enabled": "true", "bucket": "3", "bucket-key": "id"},
    ],
)
@pytest.mark.parametrize("creator", ["pypaimon", "stratalake"])
def test_pypaimon_reads_our_deletion_vectors(warehouse: str, options: dict[str, str], creator: str) -> None:
    ident = "db.dv"
    if creator == "pypaimon":
        paimon_create_table(warehouse, ident, SCHEMA, [], ["dt"], options)
    else:
        cat = stratalake.Catalog(warehouse)
        cat.create_database("db", ignore_if_exists=True)
        cat.create_table(ident, schema=SCHEMA, partition_keys=["dt"], options=options)
    rng = random.Random(23)
    model: list[Row] = []
    next_id = 0
    for step in range(8):
        t = stratalake.Catalog(warehouse).get_table(ident)
        if step % 2 == 0:  # appends alternate between the libraries
            batch = [
                (next_id + i, rng.choice("abcd"), rng.choice("xy")) for i in range(rng.randrange(20, 200))
            ]
            next_id += len(batch)
            if step % 4 == 0:
                paimon_write(warehouse, ident, _table(batch))
            else:
                t.write(_table(batch))
            model += batch
        else:
            letter = rng.choice("abcd")
            predicate = to_predicate((field("v") == letter) & (field("dt") == "x"))
            assert predicate is not None
            hit = [r for r in model if r[1] == letter and r[2] == "x"]
            if step % 3 == 0:  # DELETE
                apply_changes(t, matching_positions(t, predicate))
                model = [r for r in model if r not in hit]
            else:  # UPDATE SET v = 'u': positions deleted, new rows appended in the same snapshot
                new = [(r[0], "u", r[2]) for r in hit]
                writer = t.new_write()
                writer.compact = False  # type: ignore[attr-defined]
                if new:
                    writer.write(_table(new))
                apply_changes(t, matching_positions(t, predicate), writer.prepare_commit())
                model = [r for r in model if r not in hit] + new
        assert _rows(paimon_read(warehouse, ident)) == sorted(model), f"step {step}"
        assert _rows(stratalake.Catalog(warehouse).get_table(ident).read()) == sorted(model)
    t = stratalake.Catalog(warehouse).get_table(ident)
    snap = t.latest_snapshot()
    assert snap is not None and live_index_entries(t, snap)  # the vectors pypaimon applied are there
    # Compaction applies and drops them; pypaimon still reads the same rows.
    t.compact(full=True)
    assert _rows(paimon_read(warehouse, ident)) == sorted(model)
    paimon_write(warehouse, ident, _table([(10_000, "z", "y")]))
    assert _rows(stratalake.Catalog(warehouse).get_table(ident).read()) == sorted(
        [*model, (10_000, "z", "y")]
    )
