"""stratalake tables beside Spark's own in the session catalog (``spark_catalog``).

A new SparkSession of the shared one (same JVM, own catalog manager) names
``org.stratalake.spark.StrataLakeSessionCatalog`` as its session catalog, as a user's
``spark.sql.catalog.spark_catalog`` setting would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stratalake


@pytest.fixture
def session(spark: Any, tmp_path: Path) -> Iterator[Any]:
    s = spark.newSession()
    s.conf.set("spark.sql.catalog.spark_catalog", "org.stratalake.spark.StrataLakeSessionCatalog")
    s.conf.set("spark.sql.catalog.spark_catalog.warehouse", str(tmp_path / "lake"))
    yield s
    # Spark's own tables live under the shared session's warehouse directory: leave none behind.
    for (name,) in s.sql("SHOW DATABASES LIKE 'sess_*'").collect():
        s.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def _db(session: Any) -> str:
    name = f"sess_{uuid.uuid4().hex[:10]}"
    session.sql(f"CREATE DATABASE {name}")
    return name


def test_lake_and_parquet_tables_side_by_side(session: Any, tmp_path: Path) -> None:
    db = _db(session)
    session.sql(
        f"CREATE TABLE {db}.orders (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) USING stratalake "
        "TBLPROPERTIES ('bucket' = '2')"
    )
    session.sql(f"CREATE TABLE {db}.plain (id BIGINT, w STRING) USING parquet")
    session.sql(f"INSERT INTO {db}.orders VALUES (1, 'a'), (2, 'b')")
    session.sql(f"INSERT INTO {db}.orders VALUES (1, 'a2')")
    session.sql(f"INSERT INTO {db}.plain VALUES (1, 'x'), (3, 'z')")

    rows = session.sql(f"SELECT * FROM {db}.orders ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "a2"), (2, "b")]
    joined = session.sql(
        f"SELECT o.id, o.v, p.w FROM {db}.orders o JOIN {db}.plain p ON o.id = p.id"
    ).collect()
    assert [tuple(r) for r in joined] == [(1, "a2", "x")]
    tables = {r.tableName for r in session.sql(f"SHOW TABLES IN {db}").collect()}
    assert tables == {"orders", "plain"}

    # The stratalake table is a Paimon table in the warehouse; the parquet one is Spark's.
    lake = stratalake.Catalog(str(tmp_path / "lake"))
    assert lake.list_tables(db) == ["orders"]
    assert lake.get_table(f"{db}.orders").read().num_rows == 2
    provider = {
        r.col_name: r.data_type for r in session.sql(f"DESCRIBE TABLE EXTENDED {db}.plain").collect()
    }.get("Provider")
    assert provider == "parquet"

    # Row-level DML and procedures reach the stratalake table through spark_catalog.
    session.sql(f"DELETE FROM {db}.orders WHERE id = 2")
    assert [tuple(r) for r in session.sql(f"SELECT id FROM {db}.orders").collect()] == [(1,)]
    session.sql(f"CALL sys.create_tag(table => '{db}.orders', tag => 'v1')")
    assert "v1" in lake.get_table(f"{db}.orders").tags()


def test_one_name_one_table_and_drop_database(session: Any, tmp_path: Path) -> None:
    db = _db(session)
    session.sql(f"CREATE TABLE {db}.t (id BIGINT) USING parquet")
    with pytest.raises(Exception, match="already exists"):
        session.sql(f"CREATE TABLE {db}.t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) USING stratalake")
    session.sql(f"CREATE TABLE {db}.k (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) USING stratalake")
    with pytest.raises(Exception, match="already exists"):
        session.sql(f"CREATE TABLE {db}.k (id BIGINT) USING parquet")
    session.sql(f"CREATE TABLE IF NOT EXISTS {db}.k (id BIGINT) USING parquet")  # nothing happens
    assert session.sql(f"SHOW CREATE TABLE {db}.k").collect()[0][0].count("stratalake") >= 1
    # A database holding a stratalake table is not empty.
    with pytest.raises(Exception, match=r"(?i)not empty|non.?empty|SCHEMA_NOT_EMPTY"):
        session.sql(f"DROP DATABASE {db}")
    session.sql(f"DROP DATABASE {db} CASCADE")
    assert not (tmp_path / "lake" / f"{db}.db").exists()
    assert db not in {r[0] for r in session.sql("SHOW DATABASES").collect()}


def test_ctas_rename_and_drop(session: Any, tmp_path: Path) -> None:
    db = _db(session)
    session.sql(
        f"CREATE TABLE {db}.c USING stratalake TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1') "
        "AS SELECT id, CAST(id * 10 AS INT) AS v FROM range(5)"
    )
    assert session.sql(f"SELECT sum(v) FROM {db}.c").collect()[0][0] == 100
    session.sql(f"ALTER TABLE {db}.c RENAME TO {db}.c2")
    assert stratalake.Catalog(str(tmp_path / "lake")).list_tables(db) == ["c2"]
    session.sql(f"DROP TABLE {db}.c2")
    assert stratalake.Catalog(str(tmp_path / "lake")).list_tables(db) == []
    # CTAS of Spark's own providers is still Spark's own (not staged by stratalake).
    session.sql(f"CREATE TABLE {db}.p USING parquet AS SELECT 1 AS x")
    assert session.sql(f"SELECT x FROM {db}.p").collect()[0][0] == 1
