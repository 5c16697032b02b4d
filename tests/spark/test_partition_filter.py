"""compact's ``where``: a SQL condition over partition columns, parsed without Spark or eval()."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import InvalidOptionError
from stratalake.operation.compact import plan
from stratalake.spark.partition_filter import parse_partition_filter
from stratalake.table import Table


def _table(tmp_path: Path) -> Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hr", pa.int32()), ("d", pa.date32())])
    return cat.create_table(
        "db.t", schema=schema, primary_key=["id", "dt", "hr", "d"], partition_keys=["dt", "hr", "d"]
    )


ROW = {"dt": "2024-01-02", "hr": 1, "d": datetime.date(2024, 2, 1)}


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("dt > '2024-01-01'", ROW, True),
        ("dt > '2024-01-01' AND hr IN (0, 12)", ROW, False),
        ('(dt = "x" OR HR = 1) and not hr between 2 and 5', ROW, True),
        ("d >= DATE '2024-01-01'", ROW, True),
        ("d >= '2024-03-01'", ROW, False),  # the literal is cast to the column's type
        ("d IS NULL", {**ROW, "d": None}, True),
        ("d IS NOT NULL", ROW, True),
        ("'2024-01-03' > dt", ROW, True),  # literal first: the comparison flips
        ("hr NOT IN (1, 2)", ROW, False),
        ("hr = -1", {**ROW, "hr": -1}, True),
        ("hr <=> NULL", {**ROW, "hr": None}, True),
        ("`dt` = 'it''s'", {**ROW, "dt": "it's"}, True),
        ("hr = '1'", ROW, True),
    ],
)
def test_conditions(tmp_path: Path, condition: str, values: dict[str, Any], expected: bool) -> None:
    assert parse_partition_filter(condition, _table(tmp_path)).eval_values(values) is expected


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("id = 1", "only partition predicates are supported.*'id'"),
        ("dt = ", "expected a value"),
        ("dt = 'a' extra", "unexpected input"),
        ("hr = 'x'", "not a value of partition column 'hr'"),
        ("dt = NULL", "never true"),
        ("dt LIKE 'a%'", "expected a comparison"),
        ("1 = 1", "partition column with a literal"),
        ("__import__('os').system('x')", "cannot parse the condition"),
        ("   ", "empty"),
    ],
)
def test_rejected_conditions(tmp_path: Path, condition: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        parse_partition_filter(condition, _table(tmp_path))


def test_compact_plan_takes_the_partitions_the_filter_accepts(tmp_path: Path) -> None:
    t = _table(tmp_path)
    for dt in ("a", "b", "c"):
        t.write(pa.table({"id": [1], "dt": [dt], "hr": [1], "d": [datetime.date(2024, 1, 1)]}))
    tasks = plan(t, None, parse_partition_filter("dt >= 'b'", t))
    assert sorted(task.partition_values[0] for task in tasks) == ["b", "c"]
    assert plan(t, [{"dt": "a", "hr": "1", "d": "2024-01-01"}], parse_partition_filter("dt >= 'b'", t)) == []
