"""Spark <-> Paimon type conversion (no Spark session needed)."""

from __future__ import annotations

import pytest

from stratalake.exceptions import UnsupportedError
from stratalake.spark.types import paimon_to_spark_field, spark_to_paimon


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
