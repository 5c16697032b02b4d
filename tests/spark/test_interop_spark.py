"""pypaimon reads a table written through Spark SQL with the rows Spark reads."""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop.paimon_oracle import paimon_read

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def test_pypaimon_reads_a_table_written_by_spark_sql(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.orders"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, dt STRING, amount DOUBLE, note STRING, "
        "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket' = '3')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.0, 'x'), (2, 'a', 2.0, 'y'), (3, 'b', 3.0, NULL)")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'a', 20.0, 'Y'), (4, 'b', 4.0, 'z')")
    spark.sql(f"DELETE FROM {t} WHERE id = 1 AND dt = 'a'")
    expected = sorted(tuple(r) for r in spark.sql(f"SELECT id, dt, amount, note FROM {t}").collect())
    assert expected == [(2, "a", 20.0, "Y"), (3, "b", 3.0, None), (4, "b", 4.0, "z")]
    got = paimon_read(str(warehouse), t.removeprefix("lake."))
    assert sorted(tuple(r.values()) for r in got.select(["id", "dt", "amount", "note"]).to_pylist()) == expected
