"""Merge engines through the Table API: several commits, merge-on-read, full compaction, pypaimon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import InvalidOptionError, MergeError
from stratalake.table import Table


def _table(tmp_path: Path, schema: pa.Schema, options: dict[str, str], name: str = "db.t") -> Table:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(name, schema=schema, primary_key=["k"], options=options)


def _rows(t: Table) -> list[dict[str, Any]]:
    return sorted(t.read().to_pylist(), key=lambda r: r["k"])


def _write(t: Table, rows: list[dict[str, Any]], schema: pa.Schema, kinds: list[str] | None = None) -> None:
    data = pa.Table.from_pylist(rows, schema=schema)
    if kinds is None:
        t.write(data)
    else:
        t.write(data.append_column("_kind", pa.array(kinds)), row_kind="_kind")


PU_SCHEMA = pa.schema([("k", pa.int64()), ("price", pa.float64()), ("n", pa.int32()), ("title", pa.string())])


def test_partial_update_seed_example_across_commits(tmp_path: Path) -> None:
    t = _table(tmp_path, PU_SCHEMA, {"merge-engine": "partial-update"})
    _write(t, [{"k": 1, "price": 23.0, "n": 10, "title": None}], PU_SCHEMA)
    _write(t, [{"k": 1, "price": None, "n": None, "title": "This is a book"}], PU_SCHEMA)
    _write(
        t,
        [{"k": 1, "price": 25.2, "n": None, "title": None}, {"k": 2, "price": 1.0, "n": None, "title": None}],
        PU_SCHEMA,
    )
    expected = [
        {"k": 1, "price": 25.2, "n": 10, "title": "This is a book"},
        {"k": 2, "price": 1.0, "n": None, "title": None},
    ]
    assert _rows(t) == expected
    t.compact(full=True)
    assert _rows(t) == expected


def test_partial_update_rejects_deletes_with_table_name(tmp_path: Path) -> None:
    t = _table(tmp_path, PU_SCHEMA, {"merge-engine": "partial-update"})
    with pytest.raises(MergeError, match=r"db\.t.*ignore-delete"):
        _write(t, [{"k": 1, "price": 1.0, "n": 1, "title": "a"}], PU_SCHEMA, kinds=["-D"])


def test_partial_update_remove_record_on_delete(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        PU_SCHEMA,
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    )
    _write(
        t,
        [{"k": 1, "price": 1.0, "n": 1, "title": "a"}, {"k": 2, "price": 2.0, "n": 2, "title": "b"}],
        PU_SCHEMA,
    )
    _write(t, [{"k": 1, "price": None, "n": None, "title": None}], PU_SCHEMA, kinds=["-D"])
    _write(t, [{"k": 2, "price": None, "n": 5, "title": None}], PU_SCHEMA)
    assert _rows(t) == [{"k": 2, "price": 2.0, "n": 5, "title": "b"}]


SG_SCHEMA = pa.schema(
    [("k", pa.int64()), ("a", pa.string()), ("g1", pa.int32()), ("b", pa.int64()), ("g2", pa.int32())]
)


def test_sequence_groups_across_commits(tmp_path: Path) -> None:
    options = {
        "merge-engine": "partial-update",
        "fields.g1.sequence-group": "a",
        "fields.g2.sequence-group": "b",
        "fields.b.aggregate-function": "sum",
    }
    t = _table(tmp_path, SG_SCHEMA, options)
    _write(t, [{"k": 1, "a": "new", "g1": 5, "b": 10, "g2": 1}], SG_SCHEMA)
    _write(t, [{"k": 1, "a": "old", "g1": 3, "b": 7, "g2": 2}], SG_SCHEMA)  # g1 older: a stays
    _write(t, [{"k": 1, "a": "x", "g1": 9, "b": 7, "g2": 3}], SG_SCHEMA, kinds=["-U"])  # retract a; b - 7
    assert _rows(t) == [{"k": 1, "a": None, "g1": 9, "b": 10, "g2": 3}]
    t.compact(full=True)
    assert _rows(t) == [{"k": 1, "a": None, "g1": 9, "b": 10, "g2": 3}]


AGG_SCHEMA = pa.schema(
    [("k", pa.int64()), ("price", pa.float64()), ("sales", pa.int64()), ("tags", pa.string())]
)
AGG_OPTIONS = {
    "merge-engine": "aggregation",
    "fields.price.aggregate-function": "max",
    "fields.sales.aggregate-function": "sum",
    "fields.tags.aggregate-function": "listagg",
    "fields.tags.distinct": "true",
}


def test_aggregation_seed_example_across_commits(tmp_path: Path) -> None:
    t = _table(tmp_path, AGG_SCHEMA, AGG_OPTIONS)
    _write(t, [{"k": 1, "price": 23.0, "sales": 15, "tags": "a"}], AGG_SCHEMA)
    _write(
        t,
        [
            {"k": 1, "price": 30.2, "sales": 20, "tags": "b,a"},
            {"k": 2, "price": 1.0, "sales": 1, "tags": None},
        ],
        AGG_SCHEMA,
    )
    _write(t, [{"k": 1, "price": 10.0, "sales": 5, "tags": "c"}], AGG_SCHEMA)
    expected = [
        {"k": 1, "price": 30.2, "sales": 40, "tags": "a,b,c"},
        {"k": 2, "price": 1.0, "sales": 1, "tags": None},
    ]
    assert _rows(t) == expected
    t.compact(full=True)
    assert _rows(t) == expected


def test_aggregation_retract_sum_and_reject_max(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int64()), ("sales", pa.int64())])
    t = _table(tmp_path, schema, {"merge-engine": "aggregation", "fields.sales.aggregate-function": "sum"})
    _write(t, [{"k": 1, "sales": 10}], schema)
    _write(t, [{"k": 1, "sales": 4}], schema, kinds=["-U"])
    assert _rows(t) == [{"k": 1, "sales": 6}]
    m = _table(
        tmp_path, schema, {"merge-engine": "aggregation", "fields.sales.aggregate-function": "max"}, "db.m"
    )
    with pytest.raises(MergeError, match=r"db\.m.*'max'.*sales.*ignore-retract"):
        _write(m, [{"k": 1, "sales": 4}], schema, kinds=["-U"])


def test_aggregation_type_error_at_create(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int64()), ("name", pa.string())])
    with pytest.raises(InvalidOptionError, match=r"'sum'.*'name'.*STRING"):
        _table(tmp_path, schema, {"merge-engine": "aggregation", "fields.name.aggregate-function": "sum"})


def test_first_row_across_commits(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = _table(tmp_path, schema, {"merge-engine": "first-row"})
    _write(t, [{"k": 1, "v": "first"}], schema)
    _write(t, [{"k": 1, "v": "second"}, {"k": 2, "v": "x"}, {"k": 2, "v": "y"}], schema)
    assert _rows(t) == [{"k": 1, "v": "first"}, {"k": 2, "v": "x"}]
    t.compact(full=True)
    _write(t, [{"k": 1, "v": "third"}], schema)
    assert _rows(t) == [{"k": 1, "v": "first"}, {"k": 2, "v": "x"}]


def test_first_row_rejects_sequence_field(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    with pytest.raises(InvalidOptionError, match=r"first-row.*sequence\.field"):
        _table(tmp_path, schema, {"merge-engine": "first-row", "sequence.field": "v"})


@pytest.mark.interop
def test_pypaimon_reads_partial_update_and_first_row(tmp_path: Path) -> None:
    from tests.interop.paimon_oracle import paimon_read

    t = _table(tmp_path, PU_SCHEMA, {"merge-engine": "partial-update"})
    _write(
        t,
        [{"k": 1, "price": 23.0, "n": 10, "title": None}, {"k": 2, "price": None, "n": 3, "title": "z"}],
        PU_SCHEMA,
    )
    _write(t, [{"k": 1, "price": None, "n": None, "title": "This is a book"}], PU_SCHEMA)
    _write(t, [{"k": 1, "price": 25.2, "n": None, "title": None}], PU_SCHEMA)
    ours = _rows(t)
    theirs = sorted(paimon_read(str(tmp_path), "db.t").to_pylist(), key=lambda r: r["k"])
    assert theirs == ours

    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    f = _table(tmp_path, schema, {"merge-engine": "first-row"}, "db.f")
    _write(f, [{"k": 1, "v": "first"}], schema)
    _write(f, [{"k": 1, "v": "second"}, {"k": 2, "v": "x"}], schema)
    theirs = sorted(paimon_read(str(tmp_path), "db.f").to_pylist(), key=lambda r: r["k"])
    assert theirs == _rows(f)
