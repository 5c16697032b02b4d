"""The parser extension's WITH (...) -> TBLPROPERTIES (...) rewrite."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def rewrite(spark: Any, sql: str) -> str:
    result: str = spark._jvm.org.stratalake.spark.sql.WithClauseRewriter.rewrite(sql)
    return result


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket'='2')",
            "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED) TBLPROPERTIES ('bucket'='2')",
        ),
        (
            "create table if not exists d.t (a int) partitioned by (a) with ( 'k' = 'v' )",
            "create table if not exists d.t (a int) partitioned by (a) TBLPROPERTIES ( 'k' = 'v' )",
        ),
        (
            "CREATE TABLE t /* WITH ('a'='b') */ WITH ('x'='y') AS SELECT 1",
            "CREATE TABLE t /* WITH ('a'='b') */ TBLPROPERTIES ('x'='y') AS SELECT 1",
        ),
        (
            "CREATE TABLE `with` (a INT) -- WITH ('q'='r')\nWITH ('s'='t')",
            "CREATE TABLE `with` (a INT) -- WITH ('q'='r')\nTBLPROPERTIES ('s'='t')",
        ),
        (
            "CREATE TABLE t (a STRING COMMENT 'it''s WITH (') WITH ('a'='\\'')",
            "CREATE TABLE t (a STRING COMMENT 'it''s WITH (') TBLPROPERTIES ('a'='\\'')",
        ),
        (
            "CREATE OR REPLACE TABLE t (a INT) WITH ('k'='v')",
            "CREATE OR REPLACE TABLE t (a INT) TBLPROPERTIES ('k'='v')",
        ),
    ],
)
def test_rewrites_table_options(spark: Any, sql: str, expected: str) -> None:
    assert rewrite(spark, sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t AS WITH c AS (SELECT 1) SELECT * FROM c",
        "WITH c AS (SELECT 1 AS a) SELECT * FROM c",
        "CREATE VIEW v AS WITH c AS (SELECT 1) SELECT * FROM c",
        "SELECT 'CREATE TABLE t (a INT) WITH (''k''=''v'')'",
        "INSERT INTO t WITH c AS (SELECT 1) SELECT * FROM c",
        "CREATE TABLE t (a INT) TBLPROPERTIES ('k'='v')",
    ],
)
def test_leaves_everything_else_alone(spark: Any, sql: str) -> None:
    assert rewrite(spark, sql) == sql


def test_parser_is_installed(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.w (
              id BIGINT, v STRING,
              PRIMARY KEY (id) NOT ENFORCED
            ) WITH ('bucket' = '3', 'merge-engine' = 'first-row')"""
    )
    props = dict(spark.sql(f"SHOW TBLPROPERTIES {db}.w").collect())
    assert props["bucket"] == "3"
    assert props["merge-engine"] == "first-row"
    # CTE queries still parse and run
    assert spark.sql("WITH c AS (SELECT 1 AS a) SELECT a FROM c").collect()[0].a == 1
