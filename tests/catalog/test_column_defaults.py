"""Column DEFAULT values through the Python API: the schema field's ``defaultValue`` (Paimon 1.2+),
validation as Paimon casts the text, schema changes, writers filling written nulls, and pypaimon
reading what we wrote."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stratalake
from stratalake import SchemaChange
from stratalake.catalog.rest_protocol import change_from_json, change_to_json, columns_from_json
from stratalake.exceptions import InvalidDataError, SchemaError, UnsupportedError
from stratalake.spec.default_value import default_value
from stratalake.spec.schema import TableSchema
from stratalake.types import DataType
from tests.interop.paimon_oracle import paimon_write

COLUMNS = [
    ("id", "BIGINT"),
    ("name", "STRING", None, "'anon'"),
    ("n", "INT", "a count", "7"),
    ("price", "DECIMAL(6, 2)", None, "1.005"),
    ("day", "DATE", None, "'2024-01-31'"),
    ("ok", "BOOLEAN", None, "true"),
]


def _catalog(tmp_path: Path) -> stratalake.Catalog:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _schema_file(tmp_path: Path, table: str, schema_id: int) -> dict[str, object]:
    text = (tmp_path / "wh" / "db.db" / table / "schema" / f"schema-{schema_id}").read_text()
    return dict(json.loads(text))


def test_create_stores_defaults_as_paimon_writes_them(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=COLUMNS, primary_key=["id"])
    fields = _schema_file(tmp_path, "t", 0)["fields"]
    assert isinstance(fields, list)
    assert fields[1] == {"id": 1, "name": "name", "type": "STRING", "defaultValue": "'anon'"}
    assert fields[2] == {"id": 2, "name": "n", "type": "INT", "description": "a count", "defaultValue": "7"}
    assert "defaultValue" not in fields[0]
    assert [f.default_value for f in t.schema().fields] == [
        None,
        "'anon'",
        "7",
        "1.005",
        "'2024-01-31'",
        "true",
    ]
    # The schema file parses back to the same schema.
    text = (tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").read_text()
    assert TableSchema.from_json(text) == t.schema()


@pytest.mark.parametrize("primary_key", [["id"], None], ids=["primary-key", "append"])
def test_writes_fill_defaults_into_nulls(tmp_path: Path, primary_key: list[str] | None) -> None:
    """Paimon's writer (TableWriteImpl + DefaultValueRow) gives every written null the default,
    a NULL given explicitly included; columns without a default keep their nulls."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=[*COLUMNS, ("note", "STRING")], primary_key=primary_key)
    t.write(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "name": ["x", None],
                "n": pa.array([None, 3], pa.int32()),
                "price": pa.array([None, decimal.Decimal("2.50")], pa.decimal128(6, 2)),
                "day": pa.array([None, None], pa.date32()),
                "ok": [None, False],
                "note": [None, "kept"],
            }
        )
    )
    rows = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    day = datetime.date(2024, 1, 31)
    assert rows == [
        {
            "id": 1,
            "name": "x",
            "n": 7,
            "price": decimal.Decimal("1.01"),
            "day": day,
            "ok": True,
            "note": None,
        },
        {
            "id": 2,
            "name": "anon",
            "n": 3,
            "price": decimal.Decimal("2.50"),
            "day": day,
            "ok": False,
            "note": "kept",
        },
    ]


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            ("n", "INT", None, "'abc'"),
            r"column 'n' has DEFAULT 'abc', which is not a literal of its type INT",
        ),
        (("n", "TINYINT", None, "300"), r"column 'n' has DEFAULT 300.*TINYINT.*overflows"),
        (("d", "DATE", None, "current_date()"), r"column 'd' has DEFAULT current_date\(\).*not a date"),
        (("ts", "TIMESTAMP_LTZ(6)", None, "'2024-01-01'"), r"column 'ts'.*casts no default to TIMESTAMP"),
        (("a", "ARRAY<INT>", None, "array(1)"), r"column 'a'.*casts no default to ARRAY<INT>"),
        (("s", "STRING", None, "NULL"), r"column 's' has DEFAULT NULL.*drop the DEFAULT NULL"),
    ],
)
def test_create_refuses_a_default_that_does_not_cast(
    tmp_path: Path, column: tuple[str, str, None, str], message: str
) -> None:
    cat = _catalog(tmp_path)
    with pytest.raises(SchemaError, match=r"table db\.t: " + message):
        cat.create_table("db.t", schema=[("id", "BIGINT"), column])
    assert not cat.table_exists("db.t")


def test_set_and_drop_default(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=[("id", "BIGINT"), ("v", "STRING")], primary_key=["id"])
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([None], pa.string())}))
    t = cat.alter_table("db.t", [SchemaChange.update_column_default_value("v", "'later'")])
    assert _schema_file(tmp_path, "t", 1)["fields"][1]["defaultValue"] == "'later'"  # type: ignore[index]
    t.write(pa.table({"id": pa.array([2], pa.int64()), "v": pa.array([None], pa.string())}))
    t = cat.alter_table("db.t", [SchemaChange.update_column_default_value("v", None)])
    assert "defaultValue" not in _schema_file(tmp_path, "t", 2)["fields"][1]  # type: ignore[operator]
    t.write(pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([None], pa.string())}))
    # Rows written before the default keep their nulls: Paimon applies defaults on write only.
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": None},
        {"id": 2, "v": "later"},
        {"id": 3, "v": None},
    ]


def test_bad_changes_leave_the_table_unchanged(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    cat.create_table(
        "db.t", schema=[("id", "BIGINT"), ("n", "INT", None, "7"), ("s", "STRING", None, "'abc'")]
    )
    with pytest.raises(SchemaError, match=r"table db\.t: column 'n' has DEFAULT x1"):
        cat.alter_table("db.t", [SchemaChange.update_column_default_value("n", "x1")])
    with pytest.raises(SchemaError, match=r"column 'nope' does not exist"):
        cat.alter_table("db.t", [SchemaChange.update_column_default_value("nope", "1")])
    # A type change keeps the default (which must still cast, as Paimon's SchemaManager checks).
    cat.alter_table("db.t", [SchemaChange.update_column_type("n", "BIGINT")])
    with pytest.raises(SchemaError, match=r"column 'n' has DEFAULT 1e3"):  # all or nothing
        cat.alter_table(
            "db.t",
            [SchemaChange.rename_column("s", "s2"), SchemaChange.update_column_default_value("n", "1e3")],
        )
    t = cat.get_table("db.t")
    assert t.schema().id == 1
    assert [(f.name, str(f.type), f.default_value) for f in t.schema().fields] == [
        ("id", "BIGINT", None),
        ("n", "BIGINT", "7"),
        ("s", "STRING", "'abc'"),
    ]
    t = cat.alter_table("db.t", [SchemaChange.rename_column("s", "s2")])
    assert t.schema().field("s2").default_value == "'abc'"  # a rename keeps the default


def test_default_on_a_primary_key_column(tmp_path: Path) -> None:
    """Paimon 1.3+ validates only the cast (the old option form refused key columns); a NOT NULL
    key column still refuses a written null before any default, as Paimon's writer checks
    nullability first."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=[("id", "BIGINT", None, "0"), ("v", "STRING")], primary_key=["id"])
    assert t.schema().field("id").default_value == "0"
    with pytest.raises(InvalidDataError, match="primary-key column 'id'"):
        t.write(pa.table({"id": pa.array([None], pa.int64()), "v": ["x"]}))


def test_rest_protocol_carries_defaults() -> None:
    change = SchemaChange.update_column_default_value("v", "'x'")
    raw = change_to_json(change)
    assert raw == {"action": "updateColumnDefaultValue", "fieldNames": ["v"], "newDefaultValue": "'x'"}
    assert change_from_json(raw, "db.t") == change
    columns = columns_from_json(
        {"fields": [{"id": 0, "name": "v", "type": "INT", "defaultValue": "1"}]}, "db.t"
    )
    assert columns == [("v", DataType.parse("INT"), None, "1")]


def test_pypaimon_reads_a_table_with_defaults(tmp_path: Path) -> None:
    from pypaimon import CatalogFactory

    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=[("id", "BIGINT"), ("v", "STRING", None, "'d'")], primary_key=["id"])
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", None]}))
    pc = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    table = pc.get_table("db.t")
    assert [f.default_value for f in table.table_schema.fields] == [None, "'d'"]
    rb = table.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "d"}]
    # pypaimon 2.1's writer does not fill defaults (Paimon Java's does): its null stays null.
    paimon_write(
        tmp_path / "wh",
        "db.t",
        pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([None], pa.string())}),
    )
    assert cat.get_table("db.t").read().sort_by("id").column("v").to_pylist() == ["a", "d", None]


@given(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from(["TINYINT", "SMALLINT", "INT", "BIGINT"]),
)
def test_integer_defaults_follow_the_type_range(value: int, type_name: str) -> None:
    bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[type_name]
    dt = DataType.parse(type_name)
    if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        assert default_value(dt, str(value)) == value
        assert default_value(dt, f"{value}.99") == value  # Paimon truncates a fraction
    else:
        with pytest.raises(ValueError, match="overflows"):
            default_value(dt, str(value))


def test_the_pre_13_option_form_is_refused_by_name(tmp_path: Path) -> None:
    """``fields.<c>.default-value`` (Paimon up to 1.2, applied on read; ignored since 1.3) is not
    honoured: refused on create, and a table carrying it is refused for reads until it is turned
    into a column DEFAULT, which one schema change does."""
    cat = _catalog(tmp_path)
    with pytest.raises(UnsupportedError, match=r"table db\.t sets 'fields\.v\.default-value'.*column 'v'"):
        cat.create_table(
            "db.t", schema=[("id", "BIGINT"), ("v", "STRING")], options={"fields.v.default-value": "x"}
        )
    assert not cat.table_exists("db.t")
    t = cat.create_table("db.t", schema=[("id", "BIGINT"), ("v", "STRING")])
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([None], pa.string())}))
    old = t.schema()  # as an older Paimon would have written it
    legacy = dataclasses.replace(old, id=1, options={**old.options, "fields.v.default-value": "x"})
    assert t.schema_manager.try_commit(legacy)
    with pytest.raises(UnsupportedError, match=r"'fields\.v\.default-value'.*cannot read it"):
        cat.get_table("db.t").read()
    t = cat.alter_table(
        "db.t",
        [
            SchemaChange.update_column_default_value("v", "x"),
            SchemaChange.remove_option("fields.v.default-value"),
        ],
    )
    t.write(pa.table({"id": pa.array([2], pa.int64()), "v": pa.array([None], pa.string())}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": None}, {"id": 2, "v": "x"}]


def test_a_default_stratalake_cannot_cast_refuses_writes_not_reads(tmp_path: Path) -> None:
    """Paimon 1.3 casts defaults of nested types (``map()``...); stratalake does not: such a table
    (made by Paimon) reads, and its writes fail naming the column instead of writing nulls."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", schema=[("id", "BIGINT"), ("m", "MAP<INT, STRING>")])
    nulls = pa.array([None], pa.map_(pa.int32(), pa.string()))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "m": nulls}))
    old = t.schema()
    fields = (old.fields[0], dataclasses.replace(old.fields[1], default_value="map()"))
    assert t.schema_manager.try_commit(dataclasses.replace(old, id=1, fields=fields))
    t = cat.get_table("db.t")
    assert t.read().column("m").to_pylist() == [None]
    with pytest.raises(SchemaError, match=r"table db\.t: column 'm' has DEFAULT map\(\).*MAP<INT, STRING>"):
        t.write(pa.table({"id": pa.array([2], pa.int64()), "m": nulls}))
    assert t.read().num_rows == 1


@pytest.mark.parametrize(
    ("type_name", "text", "value"),
    [
        ("DATE", "2024-01-31", 19753),
        ("DATE", "2024-1-5 10:00", 19727),  # Paimon's parseDate keeps what precedes a blank
        ("DATE", "2024", 2024),  # a number is days since the epoch
        ("TIMESTAMP(6)", "2024-01-31 10:11:12.123456789", 1706695872123456),  # floored
        ("TIMESTAMP(3)", "2024-01-31T10:11", 1706695860000),
        ("TIMESTAMP(3)", "1700000000000", 1700000000000),  # millis at precision 3
        ("DOUBLE", "1.5D", 1.5),  # Java's Double.parseDouble takes the suffix
        ("BOOLEAN", "'Y'", True),
        ("VARCHAR(3)", "'abcdef'", "abc"),  # cut to the length, as Paimon's string cast
        ("DECIMAL(5, 2)", "3.14159", decimal.Decimal("3.14")),
    ],
)
def test_default_texts_cast_as_paimon_casts_them(type_name: str, text: str, value: object) -> None:
    assert default_value(DataType.parse(type_name), text) == value


@pytest.mark.parametrize(
    ("type_name", "text"),
    [
        ("DATE", "2024-02-30"),
        ("TIMESTAMP(3)", "2024-01-31 10:11"),  # with a blank, seconds are required
        ("INT", " 1"),  # Paimon's integer parse takes no blanks
        ("BIGINT", "10L"),
        ("BOOLEAN", "maybe"),
        ("DECIMAL(3, 0)", "1234"),  # Paimon would make the default null
    ],
)
def test_default_texts_that_do_not_cast(type_name: str, text: str) -> None:
    with pytest.raises(ValueError):
        default_value(DataType.parse(type_name), text)
