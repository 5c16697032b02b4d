"""Spark SQL on tables pypaimon created with Paimon's defaults (dynamic buckets, ``bucket`` absent).

Several tasks per statement (3 shuffle partitions, AQE on): writes keep one writer per partition
(whose assigner owns the partition's hash index), or one for the table with cross-partition
upserts; afterwards stratalake, Spark and pypaimon read the model's rows with no key twice, and
pypaimon can write again (the Python API for cross-partition tables, which pypaimon cannot write).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from tests.interop.paimon_oracle import paimon_create_table, paimon_read, paimon_write

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


@pytest.fixture
def multi_task(spark: Any) -> Any:
    settings = {
        "spark.sql.shuffle.partitions": "3",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "16k",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
    }
    saved = {k: spark.conf.get(k) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in saved.items():
        spark.conf.set(k, v)


def _model_of(rows: pa.Table, key: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    out: dict[tuple[Any, ...], str] = {}
    for r in rows.to_pylist():
        k = tuple(r[c] for c in key)
        assert k not in out, f"duplicate primary key {k}"
        out[k] = r["v"]
    return out


def _batch(ids: range, v: str, p: Any) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int64()), "v": [v] * len(ids), "p": [p(i) for i in ids]}, schema=SCHEMA
    )


@pytest.mark.parametrize("cross_partition", [False, True], ids=["per-partition", "cross-partition"])
def test_spark_writes_into_pypaimon_dynamic_bucket_tables(
    multi_task: Any, warehouse: Path, cross_partition: bool
) -> None:
    spark = multi_task
    db = "dyn_cross" if cross_partition else "dyn"
    ident = f"{db}.t"
    key = ("id",) if cross_partition else ("id", "p")
    paimon_create_table(
        str(warehouse), ident, SCHEMA, primary_keys=list(key), partition_keys=["p"],
        options={"dynamic-bucket.target-row-num": "2000"},
    )  # fmt: skip
    model: dict[tuple[Any, ...], str] = {}

    def apply(batch: pa.Table) -> None:
        for r in batch.to_pylist():
            if cross_partition:
                model[(r["id"],)] = r["v"]
            else:
                model[(r["id"], r["p"])] = r["v"]

    # pypaimon 2.1 cannot write cross-partition tables (no global key index): the Python API does.
    def write(batch: pa.Table) -> None:
        if cross_partition:
            stratalake.Catalog(str(warehouse)).get_table(ident).write(batch)
        else:
            paimon_write(str(warehouse), ident, batch)
        apply(batch)

    write(_batch(range(0, 20_000), "p", lambda i: f"p{i % 3}"))

    # Spark: upserts of existing keys (moving partitions when cross-partition) and new keys.
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 's', concat('p', cast((id + 1) % 3 AS string)) "
        "FROM range(10000, 40000)"
    )
    apply(_batch(range(10_000, 40_000), "s", lambda i: f"p{(i + 1) % 3}"))

    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _model_of(got, key) == model
    assert _model_of(stratalake.Catalog(str(warehouse)).get_table(ident).read(), key) == model
    assert _model_of(paimon_read(str(warehouse), ident), key) == model

    # pypaimon writes again, existing and new keys: still one row per key everywhere.
    write(_batch(range(35_000, 45_000), "q", lambda i: f"p{(i + 2) % 3}"))
    assert _model_of(paimon_read(str(warehouse), ident), key) == model
    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _model_of(got, key) == model
