"""Which DELETEs run without a row-level plan, and the table rules, without starting Spark."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from stratalake.spark import dml
from tests.lifecycle.helpers import batch, make_table, rows


def _eq(column: str, value: Any, type_name: str = "string") -> dict[str, Any]:
    return {"name": "=", "children": [{"ref": column}, {"literal": str(value), "type": type_name}]}


def test_parse_v2_predicates() -> None:
    assert dml.parse_predicates([{"name": "ALWAYS_TRUE", "children": []}]) == []
    parsed = dml.parse_predicates(
        [
            {"name": "AND", "children": [_eq("dt", "d1"), _eq("id", 3, "long")]},
            {"name": ">=", "children": [{"literal": "19000", "type": "date"}, {"ref": "day"}]},
        ]
    )
    assert parsed is not None and len(parsed) == 3
    assert parsed[2].eval_values({"day": datetime.date(2022, 1, 1)}) is True
    assert dml.parse_predicates([{"name": "UPPER", "children": [{"ref": "v"}]}]) is None


def test_delete_plans_and_execution(tmp_path: Path) -> None:
    t = make_table(tmp_path)  # primary key (id, dt), partitioned by dt
    t.write(batch([1, 2], "a", dt="d1"))
    t.write(batch([3], "b", dt="d2"))
    assert dml.delete_plan(t, []) == "truncate"
    assert dml.delete_plan(t, dml.parse_predicates([_eq("dt", "d1")])) == "partitions"
    keys = dml.parse_predicates(
        [
            _eq("dt", "d1"),
            {
                "name": "IN",
                "children": [{"ref": "id"}, *[{"literal": str(i), "type": "long"} for i in (1, 7)]],
            },
        ]
    )
    assert dml.delete_plan(t, keys) == "keys"
    assert dml.delete_plan(t, dml.parse_predicates([_eq("id", 1, "long")])) is None  # needs a scan
    assert keys is not None
    dml.delete_where(t, keys)
    assert sorted(rows(t.read())) == [(2, "a2", "d1"), (3, "b3", "d2")]
    before = {e.file.file_name for e in t.live_entries(t.latest_snapshot())}  # type: ignore[arg-type]
    dml.delete_where(t, dml.parse_predicates([_eq("dt", "d2")]) or [])
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    assert {e.file.file_name for e in t.live_entries(snap)} < before  # metadata only
    dml.delete_where(t, [])
    assert t.read().num_rows == 0


def test_rules_name_the_table_and_option(tmp_path: Path) -> None:
    assert dml.row_level_rules(make_table(tmp_path, "dedup")) == {
        "update_error": None,
        "delete_error": None,
        "delete_by_position": False,
        "delete_key_columns": ["id"],  # a key list need not name the partition column
    }
    seq = make_table(tmp_path, "seq", **{"sequence.field": "v"})
    assert dml.delete_error(seq) is None  # its -D records carry the stored row (test_dml_sequence)
    # Key lists checked by the table: not where a -D needs the stored row, nor with dynamic buckets.
    assert dml.delete_key_columns(seq) is None
    assert dml.delete_key_columns(make_table(tmp_path, "dyn", bucket="-1")) is None
    pu = make_table(tmp_path, "pu", **{"merge-engine": "partial-update"})
    assert dml.update_error(pu) is None
    # Without its remove options, a DELETE removes the stored rows (table/row_delete.py): by
    # predicates in Python, else in Spark's row-level plan with rows addressed by position.
    assert dml.row_level_rules(pu) == {
        "update_error": None,
        "delete_error": None,
        "delete_by_position": True,
        "delete_key_columns": None,
    }
    assert dml.delete_plan(pu, dml.parse_predicates([_eq("v", "x")])) == "rows"
    assert dml.delete_plan(pu, None) is None
    first = make_table(tmp_path, "first", **{"merge-engine": "first-row"})
    assert "db.first" in (dml.update_error(first) or "")
    assert dml.delete_plan(first, dml.parse_predicates([_eq("dt", "d1")])) == "partitions"
    assert dml.delete_plan(first, dml.parse_predicates([_eq("dt", "d1"), _eq("id", 1, "long")])) == "rows"
    removing = make_table(
        tmp_path, "rm", **{"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"}
    )
    assert dml.delete_error(removing) is None  # -D records, as before
    assert dml.row_level_rules(removing)["delete_by_position"] is False
    assert dml.row_level_rules(removing)["delete_key_columns"] == ["id"]
    assert dml.delete_plan(removing, dml.parse_predicates([_eq("dt", "d1"), _eq("id", 1, "long")])) == "keys"


def test_sequence_field_deletes_carry_the_stored_row(tmp_path: Path) -> None:
    t = make_table(tmp_path, "seq", **{"sequence.field": "v"})  # primary key (id, dt)
    t.write(batch([1, 2], "b", dt="d1"))
    t.write(batch([1], "b", dt="d2"))
    records = pa.table(
        {
            "_row_kind": ["+I", "-D", "-D", "-D"],
            "id": [5, 1, 1, 9],
            "v": ["x", None, None, None],
            "dt": ["d1", "d2", "d1", "d1"],
        }
    )
    filled = dml.fill_deletes(t, records, "_row_kind")
    # Each -D takes its own key's stored row; one without a live row stays as it was.
    assert filled.to_pylist() == [
        {"_row_kind": "+I", "id": 5, "v": "x", "dt": "d1"},
        {"_row_kind": "-D", "id": 1, "v": "b1", "dt": "d2"},
        {"_row_kind": "-D", "id": 1, "v": "b1", "dt": "d1"},
        {"_row_kind": "-D", "id": 9, "v": None, "dt": "d1"},
    ]
    assert (
        dml.delete_filler(t, None) is None and dml.delete_filler(make_table(tmp_path, "plain"), "k") is None
    )
    t.write(filled, row_kind="_row_kind")
    assert rows(t.read()) == [(2, "b2", "d1"), (5, "x", "d1")]
    # A point delete on the full key looks the stored row up and retracts it.
    keys = dml.parse_predicates([_eq("dt", "d1"), _eq("id", 2, "long")])
    assert keys is not None and dml.delete_plan(t, keys) == "keys"
    dml.delete_where(t, keys)
    assert rows(t.read()) == [(5, "x", "d1")]


def test_a_key_list_is_checked_chunk_by_chunk(tmp_path: Path) -> None:
    """A writer task's share of a key list is checked a chunk at a time (bounded memory); the -D
    records name the live keys of every chunk, in every partition the list leaves open."""
    from stratalake.spark.source import _listed_deletes

    t = make_table(tmp_path, "chunks")
    t.write(batch(range(10), "a", dt="d1"))
    t.write(batch(range(5, 15), "b", dt="d2"))
    listed = [pa.record_batch({"id": pa.array(ids, pa.int64())}) for ids in ([0, 7, 99], [12, 7], [3, None])]
    out = list(_listed_deletes(t, iter(listed), ["id"], "_row_kind", chunk_rows=2))
    assert len(out) == 3  # one table per chunk (every chunk here finds a live key)
    found = {(r["id"], r["dt"]) for o in out for r in o.to_pylist()}
    assert found == {(0, "d1"), (7, "d1"), (7, "d2"), (12, "d2"), (3, "d1")}
    assert {r["_row_kind"] for o in out for r in o.to_pylist()} == {"-D"}
    assert all(r["v"] is None for o in out for r in o.to_pylist())  # key-only records
