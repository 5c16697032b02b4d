"""Spark <-> Paimon type conversion (no Spark session needed), and the shim's bucket-key types held
to Python's list of supported types (with Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from stratalake.exceptions import UnsupportedError
from stratalake.spark.bridge_handlers import _jvm_hashable
from stratalake.spark.types import paimon_to_spark_field, spark_to_paimon
from stratalake.types import (
    ATOMIC_TYPES,
    BinaryType,
    CharType,
    DataType,
    TimeType,
    VarBinaryType,
    VarCharType,
)


@pytest.mark.parametrize(
    ("paimon", "spark", "nullable"),
    [
        ("INT NOT NULL", "integer", False),
        ("BIGINT", "long", True),
        ("DECIMAL(10, 2)", "decimal(10,2)", True),
        ("STRING", "string", True),
        ("BYTES", "binary", True),
        ("DATE", "date", True),
        ("TIMESTAMP(6)", "timestamp_ntz", True),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "timestamp", True),
        ("ARRAY<INT NOT NULL>", {"type": "array", "elementType": "integer", "containsNull": False}, True),
        (
            "MAP<STRING NOT NULL, DOUBLE>",
            {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
            True,
        ),
    ],
)
def test_round_trip(paimon: str, spark: object, nullable: bool) -> None:
    assert paimon_to_spark_field(paimon) == (spark, nullable)
    assert spark_to_paimon(spark, nullable) == paimon


def test_row_with_comment_and_quoted_names() -> None:
    paimon = "ROW<`a b` INT NOT NULL 'it''s', `c` STRING>"
    spark, nullable = paimon_to_spark_field(paimon)
    assert nullable
    assert spark["fields"][0] == {
        "name": "a b",
        "type": "integer",
        "nullable": False,
        "metadata": {"comment": "it's"},
    }
    assert spark_to_paimon(spark) == paimon


def test_char_types_read_as_string_and_collation() -> None:
    assert paimon_to_spark_field("VARCHAR(10)") == ("string", True)
    assert spark_to_paimon("varchar(10)") == "VARCHAR(10)"
    assert spark_to_paimon("string collate UTF8_BINARY") == "STRING"
    with pytest.raises(UnsupportedError, match="collation"):
        spark_to_paimon("string collate UNICODE_CI")


# ---- one list of supported types (stratalake.types.ATOMIC_TYPES) --------------------------------


@pytest.mark.parametrize("paimon", ATOMIC_TYPES, ids=str)
def test_every_atomic_type_has_its_spark_type(paimon: DataType) -> None:
    """Each supported atomic type reads as a Spark type, and a Spark write of that type creates a
    column of the same kind; TIME alone has no Spark type."""
    if isinstance(paimon, TimeType):
        with pytest.raises(UnsupportedError, match="cannot be read by Spark"):
            paimon_to_spark_field(str(paimon))
        return
    spark, nullable = paimon_to_spark_field(str(paimon.copy(nullable=False)))
    assert not nullable
    back = DataType.parse(spark_to_paimon(spark))
    assert type(back) is type(paimon) or (type(back), type(paimon)) in {
        (VarCharType, CharType),
        (VarBinaryType, BinaryType),
    }


@pytest.mark.spark
@pytest.mark.parametrize("paimon", [*ATOMIC_TYPES, DataType.parse("ARRAY<INT>")], ids=str)
def test_jvm_bucket_key_types_are_pythons(spark: Any, paimon: DataType) -> None:
    """The shim's bucket function takes a key column of a type (``BucketHash.supports``) exactly
    when Python plans Spark writes with it (``bridge_handlers._jvm_hashable``), for every
    supported type Spark has."""
    from pyspark.sql.types import StructType

    if isinstance(paimon, TimeType):
        pytest.skip("Spark has no TIME type")
    spark_json = paimon_to_spark_field(str(paimon))[0]
    field = {"name": "k", "type": spark_json, "nullable": True, "metadata": {}}
    sql_type = StructType.fromJson({"type": "struct", "fields": [field]}).fields[0].dataType.simpleString()
    query = f"SELECT lake.sys.stratalake_bucket(4, 0, CAST(NULL AS {sql_type}))"
    if _jvm_hashable(paimon):
        assert spark.sql(query).collect()[0][0] in range(4)
    else:
        with pytest.raises(Exception, match="key columns of bucket-key types"):
            spark.sql(query).collect()
