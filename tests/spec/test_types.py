"""The Paimon type model (docs/format.md section 2): parsing, JSON form, Arrow mapping, widening."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

from stratalake.exceptions import SchemaError
from stratalake.types import (
    MAX_LENGTH,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    arrow_field,
    from_arrow,
    is_widening,
    to_arrow,
)

# --------------------------------------------------------------------------------------------
# strategies


def atomic_types() -> st.SearchStrategy[DataType]:
    lengths = st.integers(1, 1000) | st.just(MAX_LENGTH)
    precisions = st.integers(0, 9)
    plain = st.sampled_from(
        [
            BooleanType(),
            TinyIntType(),
            SmallIntType(),
            IntType(),
            BigIntType(),
            FloatType(),
            DoubleType(),
            DateType(),
        ]
    )
    decimals = st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))
    return st.one_of(
        plain,
        decimals,
        st.builds(CharType, st.integers(1, 1000)),
        st.builds(VarCharType, lengths),
        st.builds(BinaryType, st.integers(1, 1000)),
        st.builds(VarBinaryType, lengths),
        st.builds(TimeType, precisions),
        st.builds(TimestampType, precisions),
        st.builds(LocalZonedTimestampType, precisions),
    ).flatmap(lambda t: st.booleans().map(t.copy))


def _row(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    member = st.tuples(
        st.text(min_size=1, max_size=8),
        children,
        st.none() | st.text(min_size=1, max_size=8),
    )
    return st.lists(member, max_size=4).map(
        lambda ms: RowType(tuple(DataField(i, name, t, desc) for i, (name, t, desc) in enumerate(ms)))
    )


def data_types() -> st.SearchStrategy[DataType]:
    def extend(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        nested = st.one_of(
            children.map(ArrayType),
            children.map(MultisetType),
            st.builds(MapType, children, children),
            _row(children),
        )
        return nested.flatmap(lambda t: st.booleans().map(t.copy))

    return st.recursive(atomic_types(), extend, max_leaves=8)


# --------------------------------------------------------------------------------------------
# parsing and JSON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("BIGINT NOT NULL", BigIntType(nullable=False)),
        ("DECIMAL(10, 2)", DecimalType(10, 2)),
        ("DECIMAL", DecimalType(10, 0)),
        ("NUMERIC(5)", DecimalType(5, 0)),
        ("VARCHAR(20)", VarCharType(20)),
        ("STRING", VarCharType(MAX_LENGTH)),
        ("VARCHAR(2147483647)", VarCharType()),
        ("CHAR", CharType(1)),
        ("BYTES", VarBinaryType()),
        ("BINARY(16) NOT NULL", BinaryType(16, nullable=False)),
        ("TIMESTAMP(6)", TimestampType(6)),
        ("TIMESTAMP", TimestampType(6)),
        ("TIMESTAMP(9) WITHOUT TIME ZONE", TimestampType(9)),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", LocalZonedTimestampType(3)),
        ("TIMESTAMP_LTZ(3) NOT NULL", LocalZonedTimestampType(3, nullable=False)),
        ("TIME", TimeType(0)),
        ("integer", IntType()),
        ("DOUBLE PRECISION", DoubleType()),
        ("INT NULL", IntType()),
        ("ARRAY<INT>", ArrayType(IntType())),
        ("INT NOT NULL ARRAY NOT NULL", ArrayType(IntType(nullable=False), nullable=False)),
        (
            "MAP<STRING NOT NULL, ARRAY<BIGINT>>",
            MapType(VarCharType(nullable=False), ArrayType(BigIntType())),
        ),
        ("MULTISET<DATE>", MultisetType(DateType())),
        (
            "ROW<`a b` INT NOT NULL COMMENT 'it''s', c STRING>",
            RowType((DataField(0, "a b", IntType(nullable=False), "it's"), DataField(1, "c", VarCharType()))),
        ),
    ],
)
def test_parse_type_strings(text: str, expected: DataType) -> None:
    assert DataType.parse(text) == expected


@pytest.mark.parametrize(
    ("obj", "sql"),
    [
        ({"type": "ARRAY", "element": "INT"}, "ARRAY<INT>"),
        ({"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"}, "ARRAY<STRING NOT NULL> NOT NULL"),
        ({"type": "MULTISET", "element": "INT"}, "MULTISET<INT>"),
        (
            {"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY", "element": "DOUBLE"}},
            "MAP<STRING NOT NULL, ARRAY<DOUBLE>>",
        ),
        (
            {
                "type": "ROW NOT NULL",
                "fields": [
                    {"id": 7, "name": "x", "type": "BIGINT"},
                    {"id": 8, "name": "y", "type": "STRING", "description": "why", "defaultValue": "'a'"},
                ],
            },
            "ROW<`x` BIGINT, `y` STRING COMMENT 'why' DEFAULT 'a'> NOT NULL",
        ),
    ],
)
def test_nested_json_round_trips_exactly(obj: dict[str, Any], sql: str) -> None:
    dt = DataType.parse(obj)
    assert str(dt) == sql
    assert dt.to_json() == obj


def test_pypaimon_json_form_with_nullable_key_is_read() -> None:
    # pypaimon adds a "nullable" key that Java neither writes nor reads; to_json gives Java's form.
    obj = {"type": "MAP NOT NULL", "key": "STRING", "value": "INT", "nullable": False}
    dt = DataType.parse(obj)
    assert dt == MapType(VarCharType(), IntType(), nullable=False)
    assert dt.to_json() == {"type": "MAP NOT NULL", "key": "STRING", "value": "INT"}


@given(data_types())
def test_json_round_trip(dt: DataType) -> None:
    assert DataType.parse(dt.to_json()) == dt


@given(data_types())
def test_sql_string_round_trip(dt: DataType) -> None:
    # Strategy rows number their members 0..n-1, which is what parsing a string assigns.
    assert DataType.parse(str(dt)) == dt


@given(data_types())
def test_pypaimon_reads_our_json_and_we_read_theirs(dt: DataType) -> None:
    theirs = DataTypeParser.parse_data_type(dt.to_json())
    assert theirs.nullable == dt.nullable
    assert DataType.parse(theirs.to_dict()) == dt


@pytest.mark.parametrize(
    "bad",
    [
        "BIGINTX",
        "DECIMAL(40, 2)",
        "DECIMAL(5, 6)",
        "VARCHAR(",
        "VARCHAR(0)",
        "INT NOT",
        "ARRAY<INT",
        "TIMESTAMP(10)",
        "",
        "VARIANT",
        "MAP<INT>",
    ],
)
def test_bad_type_strings_raise_schema_error_naming_the_string(bad: str) -> None:
    with pytest.raises(SchemaError) as e:
        DataType.parse(bad)
    assert repr(bad) in str(e.value)


def test_bad_json_objects_raise_schema_error() -> None:
    with pytest.raises(SchemaError):
        DataType.parse({"type": "ARRAY"})
    with pytest.raises(SchemaError):
        DataType.parse({"element": "INT"})
    with pytest.raises(SchemaError):
        DataType.parse({"type": "ROW", "fields": [{"id": 1, "type": "INT"}]})


def test_copy_and_immutability() -> None:
    dt = DataType.parse("DECIMAL(12, 3)")
    nn = dt.copy(nullable=False)
    assert str(nn) == "DECIMAL(12, 3) NOT NULL" and dt.nullable and not nn.nullable
    assert hash(dt) == hash(DecimalType(12, 3))
    dec = DecimalType(12, 3)
    with pytest.raises(AttributeError):
        dec.precision = 3  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Arrow mapping

ARROW_MAPPING = [
    ("BOOLEAN", pa.bool_()),
    ("TINYINT", pa.int8()),
    ("SMALLINT", pa.int16()),
    ("INT", pa.int32()),
    ("BIGINT", pa.int64()),
    ("FLOAT", pa.float32()),
    ("DOUBLE", pa.float64()),
    ("DECIMAL(38, 10)", pa.decimal128(38, 10)),
    ("STRING", pa.string()),
    ("VARCHAR(3)", pa.string()),
    ("CHAR(3)", pa.string()),
    ("BYTES", pa.binary()),
    ("BINARY(4)", pa.binary()),
    ("DATE", pa.date32()),
    ("TIME(0)", pa.time32("ms")),
    ("TIME(6)", pa.time32("ms")),
    ("TIMESTAMP(0)", pa.timestamp("s")),
    ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(6)", pa.timestamp("us")),
    ("TIMESTAMP(9)", pa.timestamp("ns")),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ("ARRAY<INT NOT NULL>", pa.list_(pa.field("item", pa.int32(), nullable=False))),
    ("MAP<STRING, BIGINT>", pa.map_(pa.string(), pa.int64())),
    (
        "ROW<a INT NOT NULL, b STRING>",
        pa.struct([pa.field("a", pa.int32(), False), pa.field("b", pa.string())]),
    ),
]


@pytest.mark.parametrize(("text", "arrow"), ARROW_MAPPING)
def test_to_arrow_mapping(text: str, arrow: pa.DataType) -> None:
    assert to_arrow(DataType.parse(text)) == arrow


@pytest.mark.parametrize(("text", "arrow"), [m for m in ARROW_MAPPING if "TIME(" not in m[0]])
def test_to_arrow_agrees_with_pypaimon(text: str, arrow: pa.DataType) -> None:
    dt = DataType.parse(text)
    assert PyarrowFieldParser.from_paimon_type(DataTypeParser.parse_data_type(dt.to_json())) == to_arrow(dt)


@given(data_types())
def test_from_arrow_inverts_to_arrow_up_to_arrow_equivalence(dt: DataType) -> None:
    back = from_arrow(to_arrow(dt), dt.nullable)
    assert to_arrow(back) == to_arrow(dt)
    assert back.nullable == dt.nullable


@pytest.mark.parametrize(
    ("arrow", "text"),
    [
        (pa.large_string(), "STRING"),
        (pa.string_view(), "STRING"),
        (pa.large_binary(), "BYTES"),
        (pa.binary(16), "BINARY(16)"),
        (pa.timestamp("ns", tz="Europe/Paris"), "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
        (pa.time64("us"), "TIME(6)"),
        (pa.date64(), "DATE"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
        (pa.large_list(pa.int64()), "ARRAY<BIGINT>"),
        (pa.decimal256(20, 4), "DECIMAL(20, 4)"),
    ],
)
def test_from_arrow_extras(arrow: pa.DataType, text: str) -> None:
    assert from_arrow(arrow) == DataType.parse(text)


def test_from_arrow_rejects_unsigned_with_a_hint() -> None:
    with pytest.raises(SchemaError, match="uint64"):
        from_arrow(pa.uint64())


def test_arrow_field_carries_nullability() -> None:
    f = arrow_field("id", DataType.parse("BIGINT NOT NULL"))
    assert f == pa.field("id", pa.int64(), nullable=False)


# --------------------------------------------------------------------------------------------
# widening


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("INT", "BIGINT"),
        ("TINYINT", "INT"),
        ("SMALLINT", "FLOAT"),
        ("INT", "DOUBLE"),
        ("FLOAT", "DOUBLE"),
        ("INT", "DECIMAL(10, 0)"),
        ("DECIMAL(10, 2)", "DECIMAL(12, 2)"),
        ("DECIMAL(10, 2)", "DECIMAL(11, 3)"),
        ("VARCHAR(10)", "STRING"),
        ("CHAR(10)", "VARCHAR(10)"),
        ("BINARY(4)", "BYTES"),
        ("TIMESTAMP(3)", "TIMESTAMP(6)"),
        ("DATE", "TIMESTAMP(3)"),
        ("BIGINT NOT NULL", "BIGINT"),
        ("ARRAY<INT>", "ARRAY<BIGINT>"),
        ("MAP<STRING, INT>", "MAP<STRING, DOUBLE>"),
        ("ROW<a INT>", "ROW<a BIGINT>"),
    ],
)
def test_widening(old: str, new: str) -> None:
    assert is_widening(DataType.parse(old), DataType.parse(new))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("BIGINT", "INT"),
        ("BIGINT", "DOUBLE"),
        ("INT", "FLOAT"),
        ("DOUBLE", "FLOAT"),
        ("INT", "DECIMAL(9, 0)"),
        ("DECIMAL(10, 2)", "DECIMAL(10, 3)"),
        ("DECIMAL(10, 2)", "DECIMAL(12, 1)"),
        ("DECIMAL(10, 2)", "DOUBLE"),
        ("STRING", "VARCHAR(10)"),
        ("VARCHAR(10)", "CHAR(10)"),
        ("STRING", "BYTES"),
        ("TIMESTAMP(6)", "TIMESTAMP(3)"),
        ("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("BIGINT", "BIGINT NOT NULL"),
        ("INT", "STRING"),
        ("ROW<a INT>", "ROW<b BIGINT>"),
    ],
)
def test_not_widening(old: str, new: str) -> None:
    assert not is_widening(DataType.parse(old), DataType.parse(new))


@given(data_types())
def test_every_type_widens_to_itself(dt: DataType) -> None:
    assert is_widening(dt, dt)
