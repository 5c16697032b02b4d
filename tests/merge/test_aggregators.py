"""Every aggregate function: values, nulls, retraction, and its type check."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from stratalake.exceptions import InvalidOptionError, MergeError
from stratalake.merge import prepare_input, validate_merge_options
from tests.merge.helpers import kv_table, make_ctx, merged, rows_of


def agg(
    function: str, sql_type: str, values: list[Any], kinds: list[str] | None = None, **field_opts: str
) -> Any:
    """Aggregate ``values`` of one key with ``function``; the merged value (None if no row)."""
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": function}
    options.update({f"fields.v.{k.replace('_', '-')}": v for k, v in field_opts.items()})
    ctx = make_ctx([("k", "INT NOT NULL"), ("v", sql_type)], ["k"], options)
    validate_merge_options(ctx)
    kv = prepare_input(kv_table(ctx, [{"k": 1, "v": v} for v in values], kinds), ctx)
    rows = rows_of(merged(ctx, kv))
    return rows[0]["v"] if rows else None


R = ["+I", "-U"]  # add then retract


@pytest.mark.parametrize(
    ("function", "sql_type", "values", "kinds", "expected"),
    [
        ("sum", "INT", [1, None, 2], None, 3),
        ("sum", "INT", [None, None], None, None),
        ("sum", "BIGINT", [10, 4], R, 6),
        ("sum", "INT", [4], ["-U"], -4),  # a retraction of nothing negates (Paimon)
        ("sum", "DOUBLE", [1.5, 2.25], None, 3.75),
        ("sum", "DECIMAL(5, 2)", [Decimal("1.10"), Decimal("2.05")], None, Decimal("3.15")),
        ("sum", "DECIMAL(5, 2)", [Decimal("1.10"), Decimal("0.10")], R, Decimal("1.00")),
        ("product", "BIGINT", [2, None, 3, 4], None, 24),
        ("product", "BIGINT", [6, 3], R, 2),
        ("product", "INT", [3, 2], ["-U", "+I"], 2),  # retraction before any value is ignored
        ("product", "DOUBLE", [0.5, 4.0], None, 2.0),
        ("count", "BIGINT", [5, None, 7], None, 2),
        ("count", "INT", [1, 1, 1], ["+I", "+I", "-U"], 1),
        ("min", "INT", [3, None, 1, 2], None, 1),
        ("max", "INT", [3, None, 1, 2], None, 3),
        ("max", "STRING", ["b", "c", None, "a"], None, "c"),
        ("min", "DATE", [20000, 10000], None, 10000),
        ("max", "TIMESTAMP(6)", [1, 5, 3], None, 5),
        ("max", "DECIMAL(10, 1)", [Decimal("1.5"), Decimal("-2.0")], None, Decimal("1.5")),
        ("max", "DOUBLE", [1.0, float("nan")], None, "nan"),
        ("min", "DOUBLE", [1.0, float("nan")], None, 1.0),
        ("min", "INT", [None], None, None),
        ("last_value", "INT", [1, 2, None], None, None),
        ("last_value", "INT", [1, 2], R, None),
        ("last_non_null_value", "INT", [1, 2, None], None, 2),
        ("last_non_null_value", "INT", [1, 2], R, None),
        ("last_non_null_value", "INT", [1, None], R, 1),  # retracting null changes nothing
        ("first_value", "INT", [None, 1, 2], None, None),
        ("first_non_null_value", "INT", [None, 1, 2], None, 1),
        ("first_not_null_value", "INT", [None, 5], None, 5),
        ("listagg", "STRING", ["a", None, " ", "b", "a"], None, "a,b,a"),
        ("listagg", "STRING", [None, None], None, None),
        ("bool_and", "BOOLEAN", [True, None, False], None, False),
        ("bool_and", "BOOLEAN", [True, None], None, True),
        ("bool_or", "BOOLEAN", [False, None, True], None, True),
        ("bool_or", "BOOLEAN", [None], None, None),
        ("collect", "ARRAY<INT>", [[1, 2], None, [2, 3]], None, [1, 2, 2, 3]),
        ("collect", "ARRAY<INT>", [[1, 2, 1], [1]], R, [2, 1]),
        ("collect", "ARRAY<INT>", [[1]], ["-U"], None),
        ("collect", "ARRAY<ARRAY<INT>>", [[[1]], [[2]]], None, [[1], [2]]),
        (
            "merge_map",
            "MAP<STRING, INT>",
            [[("a", 1)], None, [("a", 2), ("b", 3)]],
            None,
            [("a", 2), ("b", 3)],
        ),
        ("merge_map", "MAP<STRING, INT>", [[("a", 1), ("b", 2)], [("a", 0)]], R, [("b", 2)]),
    ],
)
def test_function(
    function: str, sql_type: str, values: list[Any], kinds: list[str] | None, expected: Any
) -> None:
    got = agg(function, sql_type, values, kinds)
    if expected == "nan":
        assert got != got
    elif sql_type.startswith("TIMESTAMP") and got is not None:
        assert got.microsecond == expected
    elif sql_type == "DATE" and got is not None:
        assert (got - __import__("datetime").date(1970, 1, 1)).days == expected
    elif function == "merge_map" and got is not None:
        assert sorted(got) == expected
    else:
        assert got == expected


def test_listagg_delimiter_and_distinct() -> None:
    assert agg("listagg", "STRING", ["a", "b"], list_agg_delimiter="|") == "a|b"
    assert (
        agg("listagg", "STRING", ["a;b", "b", " ", "c;a"], list_agg_delimiter=";", distinct="true") == "a;b;c"
    )


def test_collect_distinct() -> None:
    assert sorted(agg("collect", "ARRAY<STRING>", [["a", "b"], ["b", "c", "a"]], distinct="true")) == [
        "a",
        "b",
        "c",
    ]
    assert agg("collect", "ARRAY<INT>", [[1, 2], [2], [2]], ["+I", "-U", "+I"], distinct="true") == [1, 2]


@pytest.mark.parametrize(
    "function", ["min", "max", "first_value", "first_non_null_value", "listagg", "bool_and", "bool_or"]
)
def test_non_retractable_functions(function: str) -> None:
    sql_type = {"listagg": "STRING", "bool_and": "BOOLEAN", "bool_or": "BOOLEAN"}.get(function, "INT")
    value = {"STRING": "a", "BOOLEAN": True}.get(sql_type, 1)
    with pytest.raises(MergeError, match=rf"db\.t.*'{function}'.*'v'.*fields\.v\.ignore-retract"):
        agg(function, sql_type, [value, value], R)
    assert agg(function, sql_type, [value, value], R, ignore_retract="true") == value


def test_overflow_is_an_error() -> None:
    with pytest.raises(MergeError, match="overflows"):
        agg("sum", "TINYINT", [100, 100])
    with pytest.raises(MergeError, match="overflows"):
        agg("sum", "BIGINT", [2**62, 2**62])
    with pytest.raises(MergeError, match="exceeds"):
        agg("sum", "DECIMAL(3, 1)", [Decimal("99.0"), Decimal("1.0")])


@pytest.mark.parametrize(
    ("function", "sql_type"),
    [
        ("sum", "STRING"),
        ("product", "BOOLEAN"),
        ("product", "DECIMAL(10, 2)"),
        ("count", "DOUBLE"),
        ("min", "ARRAY<INT>"),
        ("max", "MAP<STRING, INT>"),
        ("listagg", "INT"),
        ("listagg", "VARCHAR(10)"),
        ("bool_and", "INT"),
        ("bool_or", "STRING"),
        ("collect", "STRING"),
        ("merge_map", "ARRAY<INT>"),
    ],
)
def test_type_errors(function: str, sql_type: str) -> None:
    ctx = make_ctx(
        [("k", "INT NOT NULL"), ("v", sql_type)],
        ["k"],
        {"merge-engine": "aggregation", "fields.v.aggregate-function": function},
    )
    with pytest.raises(InvalidOptionError, match=rf"db\.t.*'{function}'.*'v'.*fields\.v\.aggregate-function"):
        validate_merge_options(ctx)


def test_aggregation_seed_example() -> None:
    ctx = make_ctx(
        [("product_id", "BIGINT NOT NULL"), ("price", "DOUBLE"), ("sales", "BIGINT")],
        ["product_id"],
        {
            "merge-engine": "aggregation",
            "fields.price.aggregate-function": "max",
            "fields.sales.aggregate-function": "sum",
        },
    )
    kv = kv_table(
        ctx, [{"product_id": 1, "price": 23.0, "sales": 15}, {"product_id": 1, "price": 30.2, "sales": 20}]
    )
    assert rows_of(merged(ctx, kv)) == [{"product_id": 1, "price": 30.2, "sales": 35}]


def test_default_function_and_remove_record_on_delete() -> None:
    options = {
        "merge-engine": "aggregation",
        "fields.default-aggregate-function": "sum",
        "aggregation.remove-record-on-delete": "true",
    }
    ctx = make_ctx([("k", "INT NOT NULL"), ("a", "INT"), ("b", "INT")], ["k"], options)
    kv = kv_table(
        ctx,
        [
            {"k": 1, "a": 1, "b": 1},
            {"k": 1, "a": 2, "b": 2},
            {"k": 2, "a": 5, "b": 5},
            {"k": 2, "a": 5, "b": 5},
        ],
        ["+I", "+I", "+I", "-D"],
    )
    assert rows_of(merged(ctx, kv), with_kind=True) == [
        {"k": 1, "a": 3, "b": 3, "_kind": "+I"},
        {"k": 2, "a": 5, "b": 5, "_kind": "-D"},
    ]
    # A later add starts from the -D's values (Paimon re-initialises the row from the -D).
    kv = kv_table(ctx, [{"k": 2, "a": 5, "b": 5}, {"k": 2, "a": 1, "b": None}], ["-D", "+I"])
    assert rows_of(merged(ctx, kv), with_kind=True) == [{"k": 2, "a": 6, "b": 5, "_kind": "+I"}]
