"""Partial-update: the seed example, deletes, sequence groups and their validation."""

from __future__ import annotations

import pytest

from stratalake.exceptions import InvalidOptionError, MergeError
from stratalake.merge import validate_merge_options
from tests.merge.helpers import kv_table, make_ctx, merge_rows, merged, rows_of

COLS = [("k", "INT NOT NULL"), ("price", "DOUBLE"), ("n", "INT"), ("title", "STRING")]
PU = {"merge-engine": "partial-update"}


def test_seed_example() -> None:
    ctx = make_ctx(COLS, ["k"], PU)
    rows = [
        {"k": 1, "price": 23.0, "n": 10, "title": None},
        {"k": 1, "price": None, "n": None, "title": "This is a book"},
        {"k": 1, "price": 25.2, "n": None, "title": None},
    ]
    assert merge_rows(ctx, rows) == [{"k": 1, "price": 25.2, "n": 10, "title": "This is a book"}]


def test_delete_rejected_unless_configured() -> None:
    rows = [{"k": 1, "price": 1.0}, {"k": 1}]
    with pytest.raises(
        MergeError, match=r"table db\.t.*ignore-delete.*remove-record-on-delete.*sequence-group"
    ):
        merge_rows(make_ctx(COLS, ["k"], PU), rows, ["+I", "-D"])
    assert merge_rows(make_ctx(COLS, ["k"], {**PU, "ignore-delete": "true"}), rows, ["+I", "-D"]) == [
        {"k": 1, "price": 1.0, "n": None, "title": None}
    ]
    remove = make_ctx(COLS, ["k"], {**PU, "partial-update.remove-record-on-delete": "true"})
    assert merge_rows(remove, rows, ["+I", "-D"]) == []
    assert merge_rows(remove, rows, ["+I", "-U"]) == [{"k": 1, "price": 1.0, "n": None, "title": None}]


GROUP_COLS = [
    ("k", "INT NOT NULL"),
    ("a", "STRING"),
    ("b", "STRING"),
    ("g1", "INT"),
    ("c", "INT"),
    ("g2", "INT"),
    ("free", "INT"),
]
GROUPS = {**PU, "fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "c"}


def test_sequence_group_updates_only_from_newer_sequence() -> None:
    ctx = make_ctx(GROUP_COLS, ["k"], GROUPS)
    rows = [
        {"k": 1, "a": "a1", "b": "b1", "g1": 2, "c": 1, "g2": 5, "free": 1},
        {"k": 1, "a": "old", "b": None, "g1": 1, "c": 2, "g2": 6},  # g1 older: a, b untouched
        {"k": 1, "a": None, "b": "b3", "g1": 3},  # g1 newer: the whole group, nulls included
        {"k": 1, "c": 9, "free": None},  # empty g2: c untouched
    ]
    assert merge_rows(ctx, rows) == [{"k": 1, "a": None, "b": "b3", "g1": 3, "c": 2, "g2": 6, "free": 1}]


def test_sequence_group_retract_and_remove_on_sequence_group() -> None:
    ctx = make_ctx(GROUP_COLS, ["k"], GROUPS)
    rows = [
        {"k": 1, "a": "a", "b": "b", "g1": 2, "c": 1, "g2": 1},
        {"k": 1, "a": "x", "g1": 3},
        {"k": 1, "c": 1, "g2": 0},
    ]
    # A newer -U nulls its group; an older one does nothing.
    assert merge_rows(ctx, rows, ["+I", "-U", "-U"]) == [
        {"k": 1, "a": None, "b": None, "g1": 3, "c": 1, "g2": 1, "free": None}
    ]
    removing = make_ctx(GROUP_COLS, ["k"], {**GROUPS, "partial-update.remove-record-on-sequence-group": "g1"})
    assert merge_rows(removing, rows[:2], ["+I", "-D"]) == []
    assert merge_rows(removing, rows[:2], ["+I", "-U"]) != []


def test_sequence_group_aggregation_in_sequence_order() -> None:
    ctx = make_ctx(
        [("k", "INT NOT NULL"), ("total", "INT"), ("latest", "STRING"), ("ts", "INT")],
        ["k"],
        {
            **PU,
            "fields.ts.sequence-group": "total,latest",
            "fields.total.aggregate-function": "sum",
            "fields.latest.aggregate-function": "last_non_null_value",
        },
    )
    rows = [
        {"k": 1, "total": 1, "latest": "b", "ts": 2},
        {"k": 1, "total": 2, "latest": "a", "ts": 1},
        {"k": 1, "total": 4, "latest": None, "ts": 3},
    ]
    assert merge_rows(ctx, rows) == [{"k": 1, "total": 7, "latest": "b", "ts": 3}]


def test_retract_only_key_folds_to_minus_u() -> None:
    ctx = make_ctx(GROUP_COLS, ["k"], GROUPS)
    out = rows_of(merged(ctx, kv_table(ctx, [{"k": 1, "a": "x", "g1": 3}], ["-U"])), with_kind=True)
    assert out == [
        {"k": 1, "a": None, "b": None, "g1": 3, "c": None, "g2": None, "free": None, "_kind": "-U"}
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fields.g1.sequence-group": "nope"}, r"'nope'.*does not exist"),
        ({"fields.g1.sequence-group": "k"}, r"primary-key column 'k'"),
        (
            {"fields.g1.sequence-group": "a", "fields.g2.sequence-group": "a"},
            r"'a' is in two sequence groups",
        ),
        ({"fields.c.aggregate-function": "sum"}, r"'sum'.*'c'.*sequence group"),
        ({"fields.default-aggregate-function": "max"}, r"'max'.*sequence group"),
        (
            {"fields.g1.sequence-group": "a", "fields.a.aggregate-function": "sum"},
            r"'sum' cannot aggregate column 'a'",
        ),
        (
            {"fields.g1.sequence-group": "a", "fields.a.aggregate-function": "nope"},
            r"unknown aggregate function 'nope'",
        ),
        ({"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"}, r"conflict"),
        (
            {"fields.g1.sequence-group": "a", "partial-update.remove-record-on-delete": "true"},
            r"sequence groups",
        ),
        (
            {"fields.g1.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "c"},
            r"'c'.*not a sequence column",
        ),
    ],
)
def test_validation(options: dict[str, str], message: str) -> None:
    ctx = make_ctx(GROUP_COLS, ["k"], {**PU, **options})
    with pytest.raises(InvalidOptionError, match=rf"table db\.t: .*{message}"):
        validate_merge_options(ctx)


def test_valid_options_pass() -> None:
    validate_merge_options(
        make_ctx(
            GROUP_COLS,
            ["k"],
            {
                **GROUPS,
                "fields.c.aggregate-function": "sum",
                "partial-update.remove-record-on-sequence-group": "g1",
            },
        )
    )
    validate_merge_options(
        make_ctx(GROUP_COLS, ["k"], {**PU, "fields.c.aggregate-function": "last_non_null_value"})
    )
