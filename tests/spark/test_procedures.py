"""CALL lake.sys.<procedure>(...) with named and positional arguments, checked with the Python API."""

from __future__ import annotations

import time
from typing import Any

import pytest

from stratalake.catalog import Catalog

pytestmark = pytest.mark.spark


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def _table(spark: Any, db: str, name: str, warehouse: Any) -> tuple[str, Any]:
    t = f"{db}.{name}"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2', 'num-sorted-run.compaction-trigger' = '100')"
    )
    return t.removeprefix("lake."), Catalog(str(warehouse)).get_table(t.removeprefix("lake."))


def test_compact_runs_per_bucket_and_commits_once(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "c", warehouse)
    for i in range(3):
        spark.sql(f"INSERT INTO lake.{ident} VALUES ({i}, 'v{i}', 'd1'), ({i + 10}, 'w', 'd2')")
    assert rows(spark, f"CALL lake.sys.compact(table => '{ident}', partitions => 'dt=d1')") == [(True,)]
    snap = table.latest_snapshot()
    assert snap.id == 4 and snap.commit_kind.value == "COMPACT"
    levels = {(e.partition, e.file.level) for e in table.live_entries(snap)}
    d1 = table.partition_codec.to_bytes(("d1",))
    assert {lvl for p, lvl in levels if p == d1} == {table.core_options.num_levels - 1}
    assert 0 in {lvl for p, lvl in levels if p != d1}  # d2 untouched
    assert rows(spark, f"CALL lake.sys.compact('{ident}')") == [(True,)]  # positional, full
    assert table.latest_snapshot().id == 5
    assert sorted(r[0] for r in rows(spark, f"SELECT id FROM lake.{ident}")) == [0, 1, 2, 10, 11, 12]
    with pytest.raises(Exception, match="compact_strategy"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', compact_strategy => 'nope')")


def test_tags_rollback_expire_orphans(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "life", warehouse)
    for i in range(4):
        spark.sql(f"INSERT INTO lake.{ident} VALUES ({i}, 'v', 'd1')")
    assert rows(spark, f"CALL lake.sys.create_tag(table => '{ident}', tag => 'two', snapshot => 2)") == [
        (True,)
    ]
    assert rows(spark, f"CALL lake.sys.create_tag('{ident}', 'latest')") == [(True,)]
    assert set(table.tags()) == {"two", "latest"}
    assert rows(spark, f"CALL lake.sys.delete_tag(table => '{ident}', tag => 'latest')") == [(True,)]
    assert set(table.tags()) == {"two"}
    assert rows(spark, f"CALL lake.sys.rollback(table => '{ident}', version => '3')") == [(4, 3)]
    assert [s.id for s in table.snapshots()] == [1, 2, 3]
    assert rows(spark, f"CALL lake.sys.rollback('{ident}', 'two')") == [(3, 2)]
    assert sorted(table.read().column("id").to_pylist()) == [0, 1]
    spark.sql(f"INSERT INTO lake.{ident} VALUES (9, 'v', 'd1')")
    # Rollback reuses snapshot ids: a handle that cached the old snapshot 3 must be reloaded.
    table = Catalog(str(warehouse)).get_table(ident)
    assert rows(spark, f"CALL lake.sys.expire_snapshots(table => '{ident}', retain_max => 1)") == [(2,)]
    assert [s.id for s in table.snapshots()] == [3]
    stray = f"{table.location}/dt=d1/bucket-0/data-stray.parquet"
    table.file_io.write_bytes(stray, b"x")
    future = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() + 60))
    dry = rows(
        spark,
        f"CALL lake.sys.remove_orphan_files(table => '{ident}', older_than => '{future}', dry_run => true)",
    )
    assert dry[0][0] == 1 and table.file_io.exists(stray)
    assert rows(spark, f"CALL lake.sys.remove_orphan_files('{ident}', '{future}')")[0][0] == 1
    assert not table.file_io.exists(stray)
    assert sorted(table.read().column("id").to_pylist()) == [0, 1, 9]


def test_expire_partitions_and_errors(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "parts", warehouse)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a', '20200101'), (2, 'b', '29991231')")
    out = rows(
        spark,
        f"CALL lake.sys.expire_partitions(table => '{ident}', expiration_time => '1 d', "
        "timestamp_formatter => 'yyyyMMdd')",
    )
    assert out == [("dt=20200101",)]
    assert table.read().column("id").to_pylist() == [2]
    with pytest.raises(Exception, match=r"sys`?\.`?nope"):
        spark.sql("CALL lake.sys.nope('x')")
    with pytest.raises(Exception, match="table"):
        spark.sql("CALL lake.sys.create_tag(tag => 'x')")  # missing required table
