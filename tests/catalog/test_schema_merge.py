"""Write-time schema evolution's merge (stratalake.catalog.schema_merge), against a small model of
Paimon's SchemaMergingUtils on top-level columns, plus the cases the model leaves out."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratalake.catalog.schema_change import SchemaChange, apply_changes
from stratalake.catalog.schema_merge import merge_changes
from stratalake.exceptions import SchemaError, UnsupportedError
from stratalake.spec.schema import TableSchema
from stratalake.types import DataField, DataType

TYPES = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "DATE"]
INTEGERS = ["TINYINT", "SMALLINT", "INT", "BIGINT"]


def _widens(old: str, new: str) -> bool:
    """The model's lossless widenings among TYPES."""
    if old == new:
        return True
    if old in INTEGERS and new in INTEGERS:
        return INTEGERS.index(old) < INTEGERS.index(new)
    if new == "FLOAT":
        return old in ("TINYINT", "SMALLINT")
    if new == "DOUBLE":
        return old in ("TINYINT", "SMALLINT", "INT", "FLOAT")
    return False


def _schema(columns: list[tuple[str, str, bool]], primary_keys: tuple[str, ...] = ()) -> TableSchema:
    fields = tuple(
        DataField(i, name, DataType.parse(t if nullable else f"{t} NOT NULL"))
        for i, (name, t, nullable) in enumerate(columns)
    )
    return TableSchema(0, fields, len(fields) - 1, primary_keys=primary_keys, options={"bucket": "1"})


def _merged(schema: TableSchema, data: list[tuple[str, str]], **flags: bool) -> TableSchema:
    changes = merge_changes(schema, [(n, DataType.parse(t)) for n, t in data], "db.t", **flags)
    return apply_changes(schema, changes, "db.t") if changes else schema


_names = st.sampled_from(["a", "b", "c", "d", "x", "y"])


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[tuple[str, str, bool]], bool, list[tuple[str, str]], bool]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
    columns = [(n, draw(st.sampled_from(TYPES)), draw(st.booleans())) for n in names]
    keyed = draw(st.booleans()) and not columns[0][2]  # a NOT NULL first column may be the key
    data_names = draw(st.lists(_names, max_size=6, unique=True))
    # Data columns may be NOT NULL (Spark's literals are): the table's nullability stays.
    data = [
        (
            draw(st.sampled_from([n, n.upper()])),
            draw(st.sampled_from(TYPES)) + draw(st.sampled_from(["", " NOT NULL"])),
        )
        for n in data_names
    ]
    return columns, keyed, data, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_merge_matches_the_model(
    case: tuple[list[tuple[str, str, bool]], bool, list[tuple[str, str]], bool],
) -> None:
    columns, keyed, data, widening = case
    keys = (columns[0][0],) if keyed else ()
    schema = _schema(columns, keys)
    incoming = {n.lower(): t.removesuffix(" NOT NULL") for n, t in data}
    # The model: existing columns in place (widened when asked and allowed), new ones appended in
    # the data's order, nullable, numbered on from the highest id; errors where Paimon refuses
    # or stratalake cannot widen.
    error = False
    expected: list[tuple[int, str, str]] = []
    for i, (name, t, nullable) in enumerate(columns):
        suffix = "" if nullable else " NOT NULL"
        u = incoming.get(name)
        if u is None:
            error |= not nullable or name in keys
            expected.append((i, name, t + suffix))
        elif u == t or not widening:
            expected.append((i, name, t + suffix))
        elif _widens(t, u) and name not in keys:
            expected.append((i, name, u + suffix))
        else:
            error = True
    next_id = len(columns)
    for n, t in data:
        if n.lower() not in {c[0] for c in columns}:
            expected.append((next_id, n, t.removesuffix(" NOT NULL")))  # new columns are nullable
            next_id += 1
    if error:
        with pytest.raises(SchemaError):
            _merged(schema, data, type_widening=widening)
        return
    merged = _merged(schema, data, type_widening=widening)
    assert [(f.id, f.name, str(f.type)) for f in merged.fields] == expected
    assert merged.highest_field_id == next_id - 1
    assert merged.id == (0 if merged is schema else 1)
    assert (merged is schema) == (
        expected == [(i, n, t + ("" if nb else " NOT NULL")) for i, (n, t, nb) in enumerate(columns)]
    )
    # Merging the same data again changes nothing: the evolved table takes it as it is.
    assert (
        merge_changes(merged, [(n, DataType.parse(t)) for n, t in data], "db.t", type_widening=widening) == []
    )


def test_case_sensitive_names_are_new_columns() -> None:
    schema = _schema([("a", "INT", True)])
    assert merge_changes(schema, [("A", DataType.parse("INT"))], "db.t") == []
    assert merge_changes(schema, [("A", DataType.parse("INT"))], "db.t", case_sensitive=True) == [
        SchemaChange.add_column("A", "INT")
    ]
    with pytest.raises(
        SchemaError, match=re.escape("table db.t: the data has two columns named 'a' and 'A'")
    ):
        merge_changes(schema, [("a", DataType.parse("INT")), ("A", DataType.parse("INT"))], "db.t")


def test_decimals_widen_to_the_larger_precision_of_one_scale() -> None:
    schema = _schema([("d", "DECIMAL(10, 2)", True)])
    widened = _merged(schema, [("d", "DECIMAL(12, 2)")], type_widening=True)
    assert str(widened.fields[0].type) == "DECIMAL(12, 2)"
    assert _merged(schema, [("d", "DECIMAL(8, 2)")], type_widening=True) is schema  # already wider
    with pytest.raises(
        SchemaError, match="column 'd' of type DECIMAL\\(10, 2\\) with the data's DECIMAL\\(12, 3\\)"
    ):
        _merged(schema, [("d", "DECIMAL(12, 3)")], type_widening=True)


def test_row_columns_keep_their_fields() -> None:
    schema = TableSchema(
        0,
        (
            DataField(0, "k", DataType.parse("INT NOT NULL")),
            DataField(1, "s", DataType.parse("ROW<a INT, b STRING>")),
        ),
        3,
        primary_keys=("k",),
    )
    # Missing nested fields and another case are fine; the table's ROW stays as it is.
    assert (
        merge_changes(schema, [("k", DataType.parse("INT")), ("s", DataType.parse("ROW<A INT>"))], "db.t")
        == []
    )
    with pytest.raises(
        UnsupportedError, match=re.escape("column 's' of the data has fields its ROW type lacks (s.c)")
    ):
        merge_changes(
            schema, [("k", DataType.parse("INT")), ("s", DataType.parse("ROW<a INT, c INT>"))], "db.t"
        )
    with pytest.raises(UnsupportedError, match=re.escape("cannot widen field 's.a' from INT to BIGINT")):
        merge_changes(
            schema,
            [("k", DataType.parse("INT")), ("s", DataType.parse("ROW<a BIGINT>"))],
            "db.t",
            type_widening=True,
        )


def test_new_row_column_fields_are_numbered_as_paimon_numbers_them() -> None:
    """A new ROW column takes the next id, its fields the ids after it, each after the fields
    inside it (Paimon's SchemaManager: the column's id, then ReassignFieldId over its type)."""
    schema = _schema([("k", "INT", False), ("v", "STRING", True)])
    merged = _merged(schema, [("k", "INT"), ("n", "ROW<x INT, y ROW<z INT NOT NULL>> NOT NULL")])
    n = merged.fields[2]
    assert (n.id, str(n.type)) == (2, "ROW<`x` INT, `y` ROW<`z` INT NOT NULL>>")  # nullable at the top
    assert n.type.to_json() == {
        "type": "ROW",
        "fields": [
            {"id": 3, "name": "x", "type": "INT"},
            {
                "id": 5,
                "name": "y",
                "type": {"type": "ROW", "fields": [{"id": 4, "name": "z", "type": "INT NOT NULL"}]},
            },
        ],
    }
    assert merged.highest_field_id == 5
