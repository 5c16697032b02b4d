"""Deduplicate, first-row, ordering and the shared validation."""

from __future__ import annotations

import pytest

from stratalake.exceptions import InvalidOptionError, MergeError
from stratalake.merge import validate_merge_options
from tests.merge.helpers import kv_table, make_ctx, merge_rows, merged, rows_of

COLS = [("k", "STRING NOT NULL"), ("v", "INT"), ("ts", "BIGINT")]


def test_sequence_field_orders_before_input_order() -> None:
    ctx = make_ctx(COLS, ["k"], {"sequence.field": "ts"})
    rows = [{"k": "a", "v": 1, "ts": 5}, {"k": "a", "v": 2, "ts": 3}, {"k": "a", "v": 3, "ts": None}]
    assert merge_rows(ctx, rows) == [{"k": "a", "v": 1, "ts": 5}]
    desc = make_ctx(COLS, ["k"], {"sequence.field": "ts", "sequence.field.sort-order": "descending"})
    assert merge_rows(desc, rows) == [{"k": "a", "v": 2, "ts": 3}]
    ties = [{"k": "a", "v": 1, "ts": 5}, {"k": "a", "v": 2, "ts": 5}]
    assert merge_rows(ctx, ties) == [{"k": "a", "v": 2, "ts": 5}]


def test_deduplicate_delete_and_ignore_delete() -> None:
    rows = [{"k": "a", "v": 1}, {"k": "a", "v": 1}, {"k": "b", "v": 2}]
    assert merge_rows(make_ctx(COLS, ["k"]), rows, ["+I", "-D", "+I"]) == [{"k": "b", "v": 2, "ts": None}]
    ignore = make_ctx(COLS, ["k"], {"ignore-delete": "true"})
    assert merge_rows(ignore, rows, ["+I", "-D", "+I"]) == [
        {"k": "a", "v": 1, "ts": None},
        {"k": "b", "v": 2, "ts": None},
    ]


def test_first_row() -> None:
    ctx = make_ctx(COLS, ["k"], {"merge-engine": "first-row"})
    rows = [{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 3}]
    out = merged(ctx, kv_table(ctx, rows))
    assert rows_of(out) == [{"k": "a", "v": 1, "ts": None}, {"k": "b", "v": 3, "ts": None}]
    assert out.column("_SEQUENCE_NUMBER").to_pylist() == [0, 2]  # the kept row's own sequence
    with pytest.raises(MergeError, match=r"db\.t.*first-row.*ignore-delete"):
        merge_rows(ctx, rows, ["+I", "-D", "+I"])
    ignore = make_ctx(COLS, ["k"], {"merge-engine": "first-row", "ignore-delete": "true"})
    assert merge_rows(ignore, rows, ["-D", "+I", "+I"]) == [
        {"k": "a", "v": 2, "ts": None},
        {"k": "b", "v": 3, "ts": None},
    ]
    legacy = make_ctx(COLS, ["k"], {"merge-engine": "first-row", "first-row.ignore-delete": "true"})
    assert merge_rows(legacy, rows, ["-D", "+I", "+I"]) == [
        {"k": "a", "v": 2, "ts": None},
        {"k": "b", "v": 3, "ts": None},
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"merge-engine": "first-row", "sequence.field": "ts"}, r"first-row.*sequence\.field"),
        ({"sequence.field": "nope"}, r"'sequence\.field' names column 'nope'"),
        (
            {"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"},
            r"'nope', which does not exist",
        ),
        ({"merge-engine": "aggregation", "fields.k.aggregate-function": "max"}, r"primary key"),
        (
            {"merge-engine": "aggregation", "fields.default-aggregate-function": "median"},
            r"'median' is not an aggregate function",
        ),
        (
            {"merge-engine": "aggregation", "fields.v.ignore-retract": "yes"},
            r"'fields\.v\.ignore-retract'='yes'",
        ),
        (
            {
                "merge-engine": "aggregation",
                "aggregation.remove-record-on-delete": "true",
                "fields.v.ignore-retract": "true",
            },
            r"conflict",
        ),
    ],
)
def test_validation(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=rf"table db\.t: .*{message}"):
        validate_merge_options(make_ctx(COLS, ["k"], options))
