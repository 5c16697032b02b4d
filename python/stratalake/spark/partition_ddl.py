"""Partition values between Spark's partition DDL (``SHOW PARTITIONS``, ``ALTER TABLE ... DROP
PARTITION``, ``TRUNCATE TABLE ... PARTITION``; ``StrataLakeTable``'s partition management) and
:mod:`stratalake.table.partitions`.

On the bridge a partition is a list of JSON values in partition-key order, one form per type,
which ``catalog/PartitionValues.java`` reads and writes as Spark's internal values:

==========================================  =============================================
Paimon type                                 JSON
==========================================  =============================================
BOOLEAN, TINYINT .. BIGINT, FLOAT, DOUBLE   the number or boolean
CHAR, VARCHAR/STRING                        the string
DECIMAL                                     its plain decimal text (``"12.50"``)
DATE                                        ISO date text (``"2024-01-31"``)
TIMESTAMP, TIMESTAMP_LTZ                    microseconds since the epoch (Spark's internal value)
null                                        null
==========================================  =============================================
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.table.partitions import scanned_partitions as _listed

if TYPE_CHECKING:
    from stratalake.table.table import Table
    from stratalake.types import DataType

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICRO = datetime.timedelta(microseconds=1)
_NUMERIC = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE")
_TEXT = ("CHAR", "VARCHAR", "STRING")


def _root(dt: DataType) -> str:
    return str(dt).split("(")[0].split(" ")[0].upper()


def _check_type(table: Table, key: str, dt: DataType) -> str:
    root = _root(dt)
    if root == "TIMESTAMP" and "LOCAL TIME ZONE" in str(dt).upper():
        return "TIMESTAMP_LTZ"
    if root in (*_NUMERIC, *_TEXT, "DECIMAL", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return root
    raise UnsupportedError(
        f"table {table.identifier}: partition column {key} has type {dt}, which partition DDL "
        "(SHOW/DROP/TRUNCATE PARTITION) does not support yet; use DELETE ... WHERE instead"
    )


def value_to_json(table: Table, key: str, dt: DataType, value: Any) -> Any:
    """A typed partition value (as :class:`~stratalake.store.partition.PartitionCodec` decodes it)
    in its bridge form."""
    if value is None:
        return None
    root = _check_type(table, key, dt)
    if root == "DECIMAL":
        return format(decimal.Decimal(value), "f")
    if root == "DATE":
        return value.isoformat()
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
        return (value - epoch) // _MICRO
    return value


def value_from_json(table: Table, key: str, dt: DataType, value: Any) -> Any:
    """A bridge value as the Python value the partition codec and pyarrow take for ``dt``."""
    if value is None:
        return None
    root = _check_type(table, key, dt)
    if root == "DECIMAL":
        return decimal.Decimal(str(value))
    if root == "DATE":
        return datetime.date.fromisoformat(str(value))
    if root == "TIMESTAMP":
        return _EPOCH + int(value) * _MICRO
    if root == "TIMESTAMP_LTZ":
        return _EPOCH_UTC + int(value) * _MICRO
    return value


def partitions_to_json(table: Table, values: Sequence[Sequence[Any]]) -> list[list[Any]]:
    codec = table.partition_codec
    return [
        [value_to_json(table, k, dt, v) for k, dt, v in zip(codec.keys, codec.types, row, strict=True)]
        for row in values
    ]


def specs_from_json(table: Table, partitions: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    codec = table.partition_codec
    out = []
    for row in partitions:
        if len(row) != len(codec.keys):
            raise InvalidOptionError(
                f"table {table.identifier}: partition {list(row)} must give one value per partition "
                f"column {list(codec.keys)}"
            )
        out.append(
            {
                k: value_from_json(table, k, dt, v)
                for k, dt, v in zip(codec.keys, codec.types, row, strict=True)
            }
        )
    return out


def list_partitions(table: Table) -> list[list[Any]]:
    return partitions_to_json(table, _listed(table))


def drop_partitions(table: Table, partitions: Sequence[Sequence[Any]]) -> int | None:
    return table.drop_partitions(specs_from_json(table, partitions))
