"""CALL lake.sys.<procedure>(...) with named and positional arguments, checked with the Python API."""

from __future__ import annotations

import time
from typing import Any

import pytest

from stratalake.catalog import Catalog
from stratalake.spark.procedures import idle_partitions

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


def test_compact_where_selects_partitions(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "cw", warehouse)
    for i in range(2):
        spark.sql(f"INSERT INTO lake.{ident} VALUES ({i}, 'a', 'd1'), ({i}, 'b', 'd2'), ({i}, 'c', 'd3')")
    top = table.core_options.num_levels - 1

    def levels() -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for e in table.live_entries(table.latest_snapshot()):
            out.setdefault(table.partition_codec.to_dict(e.partition)["dt"], set()).add(e.file.level)
        return out

    assert rows(
        spark, f"""CALL lake.sys.compact(table => '{ident}', where => "dt > 'd1' AND dt <> 'd3'")"""
    ) == [(True,)]
    snap = table.latest_snapshot()
    assert snap.id == 3 and snap.commit_kind.value == "COMPACT"
    assert levels() == {"d1": {0}, "d2": {top}, "d3": {0}}
    assert rows(spark, f"CALL lake.sys.compact(table => '{ident}', where => 'dt IN (\"d1\", \"d3\")')") == [
        (True,)
    ]
    assert levels() == {"d1": {top}, "d2": {top}, "d3": {top}}
    # A condition no partition meets compacts nothing.
    assert rows(spark, f"CALL lake.sys.compact(table => '{ident}', where => \"dt = 'zz'\")") == [(True,)]
    assert table.latest_snapshot().id == 4
    assert sorted(rows(spark, f"SELECT id, v FROM lake.{ident}")) == [
        (0, "a"),
        (0, "b"),
        (0, "c"),
        (1, "a"),
        (1, "b"),
        (1, "c"),
    ]
    with pytest.raises(Exception, match=r"only partition predicates are supported.*'v'"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', where => \"v = 'a'\")")
    with pytest.raises(Exception, match="cannot be used together"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', partitions => 'dt=d1', where => \"dt = 'd1'\")")
    with pytest.raises(Exception, match="cannot parse the condition"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', where => 'dt = ')")
    assert table.latest_snapshot().id == 4


def test_compact_order_strategy_is_refused_for_primary_key_tables(
    spark: Any, db: str, warehouse: Any
) -> None:
    ident, table = _table(spark, db, "co", warehouse)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a', 'd1')")
    with pytest.raises(
        Exception, match=r"only supported for append tables with 'bucket' = '-1'.*primary-key"
    ):
        spark.sql(
            f"CALL lake.sys.compact(table => '{ident}', order_strategy => 'zorder', order_by => 'id,v')"
        )
    with pytest.raises(Exception, match="'none' cannot work with order_by"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', order_strategy => 'none', order_by => 'v')")
    with pytest.raises(Exception, match="should not contain partition columns"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', order_strategy => 'order', order_by => 'dt')")
    with pytest.raises(Exception, match="unknown order_strategy"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', order_strategy => 'random', order_by => 'v')")
    assert table.latest_snapshot().id == 1  # nothing ran


def test_create_tag_time_retained(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "ttl", warehouse)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a', 'd1')")
    assert rows(
        spark, f"CALL lake.sys.create_tag(table => '{ident}', tag => 'day', time_retained => '1 d')"
    ) == [(True,)]
    assert rows(spark, f"CALL lake.sys.create_tag('{ident}', 'brief', 1, '1 ms')") == [(True,)]
    assert sorted(
        rows(spark, f"SELECT tag_name, time_retained FROM lake.{ident.replace('.', '.`')}$tags`")
    ) == [
        ("brief", "PT0.001S"),
        ("day", "PT24H"),
    ]
    with pytest.raises(Exception, match="time_retained"):
        spark.sql(f"CALL lake.sys.create_tag(table => '{ident}', tag => 'x', time_retained => 'often')")
    time.sleep(0.01)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (2, 'b', 'd1')")  # the commit expires 'brief'
    assert set(table.tags()) == {"day"}
    spark.sql(f"CALL lake.sys.create_tag('{ident}', 'kept')")
    assert rows(spark, f"CALL lake.sys.expire_tags('{ident}')") == [("No expired tags.",)]
    future = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() + 60))
    out = rows(spark, f"CALL lake.sys.expire_tags(table => '{ident}', older_than => '{future}')")
    assert sorted(out) == [("day",), ("kept",)]
    assert table.tags() == {}


def test_version_as_of_tag_after_its_snapshot_expired(spark: Any, db: str, warehouse: Any) -> None:
    ident, table = _table(spark, db, "oldtag", warehouse)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a2', 'd1')")
    spark.sql(f"CALL lake.sys.create_tag(table => '{ident}', tag => 'first', snapshot => 1)")
    spark.sql(f"INSERT INTO lake.{ident} VALUES (3, 'c', 'd1')")
    assert rows(spark, f"CALL lake.sys.expire_snapshots(table => '{ident}', retain_max => 1)") == [(2,)]
    assert not table.file_io.exists(table.snapshot_manager.snapshot_path(1))
    t = f"lake.{ident}"
    assert sorted(rows(spark, f"SELECT * FROM {t} VERSION AS OF 'first'")) == [(1, "a", "d1"), (2, "b", "d2")]
    assert rows(spark, f"SELECT v FROM {t} VERSION AS OF 'first' WHERE id = 1 AND dt = 'd1'") == [("a",)]
    assert rows(spark, f"SELECT count(*) FROM {t} VERSION AS OF 'first'") == [(2,)]
    assert sorted(rows(spark, f"SELECT id, v FROM {t}")) == [(1, "a2"), (2, "b"), (3, "c")]
    with pytest.raises(Exception, match=r"TagNotFoundError|does not exist"):
        spark.sql(f"SELECT * FROM {t} VERSION AS OF 'nope'").collect()


def test_bare_table_names_resolve_against_the_current_database(spark: Any, db: str, warehouse: Any) -> None:
    """After USE lake.db, CALL lake.sys.<p>(table => 'T') means lake.db.T (Paimon resolves the
    argument against the current database); a missing table is named in the error."""
    ident, table = _table(spark, db, "T", warehouse)
    spark.sql(f"INSERT INTO lake.{ident} VALUES (1, 'a', 'd1')")
    spark.sql(f"INSERT INTO lake.{ident} VALUES (2, 'b', 'd1')")
    current = spark.catalog.currentCatalog(), spark.catalog.currentDatabase()
    try:
        spark.sql(f"USE {db}")
        assert rows(spark, "CALL lake.sys.compact(table => 'T')") == [(True,)]
        assert table.latest_snapshot().commit_kind.value == "COMPACT"
        assert rows(spark, "CALL lake.sys.create_tag(table => 'T', tag => 'v1')") == [(True,)]
        assert set(table.tags()) == {"v1"}
        with pytest.raises(Exception, match=rf"TABLE_OR_VIEW_NOT_FOUND.*`{db.removeprefix('lake.')}`\.`missing`"):
            spark.sql("CALL lake.sys.compact(table => 'missing')")
    finally:
        spark.sql(f"USE {current[0]}.`{current[1]}`")


def test_compact_partitions_quoted_or_bare_and_missing(spark: Any, db: str, warehouse: Any) -> None:
    """partitions => 'dt="d1"' compacts d1 as 'dt=d1' does (Paimon accepts both); a spec that
    matches no partition is an error naming it, not a silent success."""
    ident, table = _table(spark, db, "q", warehouse)
    for i in range(2):
        spark.sql(f"INSERT INTO lake.{ident} VALUES ({i}, 'v', 'd1'), ({i + 10}, 'w', 'd2')")
    top = table.core_options.num_levels - 1
    d1, d2 = (table.partition_codec.to_bytes((p,)) for p in ("d1", "d2"))
    assert rows(spark, f"CALL lake.sys.compact(table => '{ident}', partitions => 'dt=\"d1\"')") == [(True,)]
    snap = table.latest_snapshot()
    assert snap.id == 3 and snap.commit_kind.value == "COMPACT"
    assert {e.file.level for e in table.live_entries(snap) if e.partition == d1} == {top}
    assert rows(spark, f"CALL lake.sys.compact(table => '{ident}', partitions => \"dt='d2'\")") == [(True,)]
    assert {e.file.level for e in table.live_entries(table.latest_snapshot()) if e.partition == d2} == {top}
    with pytest.raises(Exception, match=r"compact partitions \{'dt': 'd9'\} match no partition.*'d1'"):
        spark.sql(f"CALL lake.sys.compact(table => '{ident}', partitions => 'dt=d9')")
    assert table.latest_snapshot().id == 4


def test_compact_of_an_append_table_already_compacted_commits_nothing(
    spark: Any, db: str, warehouse: Any
) -> None:
    """Each partition holds one file: there is nothing to compact, so no call commits a snapshot
    (it used to rewrite every file into a new COMPACT snapshot on every call)."""
    t = f"{db}.once".removeprefix("lake.")
    spark.sql(f"CREATE TABLE lake.{t} (id BIGINT, dt STRING) PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO lake.{t} VALUES (1, 'd1'), (2, 'd2')")
    table = Catalog(str(warehouse)).get_table(t)
    for _ in range(2):
        assert rows(spark, f"CALL lake.sys.compact(table => '{t}')") == [(True,)]
        assert table.latest_snapshot().id == 1
    for i in range(3):  # three small files in d1: merged once, then nothing again
        spark.sql(f"INSERT INTO lake.{t} VALUES ({10 + i}, 'd1')")
    assert rows(spark, f"CALL lake.sys.compact('{t}')") == [(True,)]
    snap = table.latest_snapshot()
    assert snap.id == 5 and snap.commit_kind.value == "COMPACT"
    assert rows(spark, f"CALL lake.sys.compact('{t}')") == [(True,)]
    assert table.latest_snapshot().id == 5
    assert sorted(r[0] for r in rows(spark, f"SELECT id FROM lake.{t}")) == [1, 2, 10, 11, 12]


def test_purge_files_and_mark_partition_done(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.lc"
    spark.sql(
        f"CREATE TABLE {t} (id INT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt)"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    name = t.removeprefix("lake.")
    done = spark.sql(f"CALL lake.sys.mark_partition_done(table => '{name}', partitions => 'dt=a;dt=b')")
    assert [tuple(r) for r in done.collect()] == [(True,)]
    table = Catalog(str(warehouse)).get_table(name)
    assert all(table.file_io.exists(f"{table.location}/dt={p}/_SUCCESS") for p in "ab")
    with pytest.raises(Exception, match="partition columns"):
        spark.sql(f"CALL lake.sys.mark_partition_done(table => '{name}', partitions => 'nosuch=1')")

    unexisting = spark.sql(f"CALL lake.sys.remove_unexisting_files(table => '{name}', dry_run => true)")
    assert unexisting.columns == ["fileName"] and unexisting.collect() == []
    with pytest.raises(Exception, match="parallelism"):
        spark.sql(f"CALL lake.sys.remove_unexisting_files(table => '{name}', parallelism => 2)").collect()
    assert [tuple(r) for r in spark.sql(f"CALL lake.sys.purge_files(table => '{name}')").collect()] == [("Success",)]
    assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 0
    assert spark.sql(f"SELECT count(*) FROM {db}.`lc$snapshots`").collect()[0][0] == 1
    with pytest.raises(Exception, match="watermark"):
        spark.sql(f"CALL lake.sys.rollback_to_watermark(table => '{name}', watermark => 5)").collect()


def test_compact_database(spark: Any, tmp_path: Any) -> None:
    """Every selected table fully compacted, one after another; patterns as Paimon's."""
    spark.conf.set("spark.sql.catalog.cdb", "org.stratalake.spark.StrataLakeCatalog")
    spark.conf.set("spark.sql.catalog.cdb.warehouse", str(tmp_path))
    for db in ("d1", "d2"):
        spark.sql(f"CREATE DATABASE cdb.{db}")
        for t in ("a", "b"):
            spark.sql(
                f"CREATE TABLE cdb.{db}.{t} (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                "TBLPROPERTIES ('bucket' = '1')"
            )
            for i in range(2):
                spark.sql(f"INSERT INTO cdb.{db}.{t} VALUES ({i}, 'x{i}')")

    def levels(db: str, t: str) -> list[int]:
        return sorted(r[0] for r in spark.sql(f"SELECT level FROM cdb.{db}.`{t}$files`").collect())

    assert levels("d1", "a") == [0, 0]
    out = spark.sql(
        "CALL cdb.sys.compact_database(including_databases => 'd1', excluding_tables => 'd1.b')"
    ).collect()
    assert [tuple(r) for r in out] == [("Compact database finished. Success: 1, Failed: 0",)]
    assert len(levels("d1", "a")) == 1 and levels("d1", "a")[0] > 0
    assert levels("d1", "b") == [0, 0] and levels("d2", "a") == [0, 0]
    out = spark.sql("CALL cdb.sys.compact_database(including_tables => 'b')").collect()
    assert out[0][0] == "Compact database finished. Success: 2, Failed: 0"
    assert len(levels("d2", "b")) == 1 and levels("d2", "a") == [0, 0]
    with pytest.raises(Exception, match="'options' item 'a' is not 'key=value'"):
        spark.sql("CALL cdb.sys.compact_database(options => 'a')").collect()
    out = spark.sql("CALL cdb.sys.compact_database(including_tables => 'd2.a', options => 'bucket=2')").collect()
    assert "Success: 0, Failed: 1" in out[0][0] and "'bucket' cannot be changed" in out[0][0]
    with pytest.raises(Exception, match="regular expression"):
        spark.sql("CALL cdb.sys.compact_database(including_databases => '(')").collect()


def test_compact_partition_idle_time(spark: Any, db: str, warehouse: Any) -> None:
    """Only partitions whose newest file is older than 'partition_idle_time' are compacted."""
    t = f"{db}.idle"
    spark.sql(
        f"CREATE TABLE {t} (id INT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('bucket' = '1')"
    )
    for i in range(2):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'old', 'a'), ({i}, 'new', 'b')")
    name = t.removeprefix("lake.")
    table = Catalog(str(warehouse)).get_table(name)
    last: dict[str, int] = {}
    for e in table.live_entries(table.latest_snapshot()):
        dt = table.partition_codec.to_dict(e.partition)["dt"]
        last[dt] = max(last.get(dt, 0), e.file.creation_time)
    # Which partitions are idle, at a chosen "now" (the selection the procedure runs with).
    assert idle_partitions(table, 1_000, now_ms=max(last.values()) + 1_001) == [{"dt": "new"}, {"dt": "old"}]
    assert idle_partitions(table, 1_000, now_ms=min(last.values()) + 999) == []
    assert idle_partitions(table, 1_000, [{"dt": "old"}], now_ms=max(last.values()) + 5_000) == [{"dt": "old"}]

    def files(dt: str) -> int:
        return spark.sql(f"SELECT count(*) FROM {db}.`idle$files` WHERE partition = '{{{dt}}}'").collect()[0][0]

    before = spark.sql(f"SELECT count(*) FROM {db}.`idle$snapshots`").collect()[0][0]
    assert spark.sql(f"CALL lake.sys.compact(table => '{name}', partition_idle_time => '1 h')").collect()[0][0]
    assert spark.sql(f"SELECT count(*) FROM {db}.`idle$snapshots`").collect()[0][0] == before  # none idle
    time.sleep(1.2)
    spark.sql(f"CALL lake.sys.compact(table => '{name}', partitions => 'dt=old', partition_idle_time => '1 s')")
    assert (files("old"), files("new")) == (1, 2)


def test_compact_dynamic_options(spark: Any, db: str, warehouse: Any) -> None:
    """compact's 'options' ('k1=v1,k2=v2') are table options for that compaction only, as
    Paimon's table.copy(dynamicOptions); what ALTER TABLE ... SET refuses, they refuse too."""
    t = f"{db}.dyn"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '1')")
    for i in range(2):
        # Half the keys updated, so the full compaction rewrites (it cannot just move files up);
        # more rows than one write chunk (64k), the granularity at which files roll.
        spark.sql(f"INSERT INTO {t} SELECT id, sha2(CAST(id + {i} AS STRING), 256) FROM range(0, 200000, {i + 1})")
    name = t.removeprefix("lake.")

    def files() -> int:
        return spark.sql(f"SELECT count(*) FROM {db}.`dyn$files`").collect()[0][0]

    refusals = {
        "bucket=4": "option 'bucket' cannot be changed",
        "deletion-vectors.enabled=true": "deletion-vectors.modifiable",
        "record-level.expire-time=1 d": "record-level.expire-time",
        "target-file-size=big": "option 'target-file-size' has an invalid value",
        "target-file-size": "'options' item 'target-file-size' is not 'key=value'",
    }
    for given, error in refusals.items():
        with pytest.raises(Exception, match=error):
            spark.sql(f"CALL lake.sys.compact(table => '{name}', options => '{given}')").collect()
    assert files() == 2  # refused before any work
    out = spark.sql(
        f"CALL lake.sys.compact(table => '{name}', options => 'target-file-size = 1 mb, sink.parallelism=2')"
    ).collect()
    assert out[0][0] is True
    # Rolled at the compaction's own target (one ~7 MB file at the table's 128 MB).
    top = spark.sql(f"SELECT count(*), min(level), max(file_size_in_bytes) FROM {db}.`dyn$files`").collect()[0]
    assert top[0] >= 2 and top[1] > 0 and top[2] < 4 * 1024 * 1024, top
    props = dict((r[0], r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES {t}").collect())
    assert "target-file-size" not in props  # nothing stored
    assert tuple(spark.sql(f"SELECT count(*), count(DISTINCT id) FROM {t}").collect()[0]) == (200000, 200000)


def test_automatic_tags_through_spark(spark: Any, db: str) -> None:
    """'tag.automatic-creation': a batch INSERT is tagged ('batch'); a write-only table tags only
    when trigger_tag_automatic_creation runs ('process-time'), as Paimon's procedure."""
    t = f"{db}.autotag"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '1', 'tag.automatic-creation' = 'batch', 'tag.batch.customized-name' = 'nightly')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b')")
    assert rows(spark, f"SELECT tag_name, snapshot_id FROM {db}.`autotag$tags`") == [("nightly", 2)]

    p = f"{db}.ptag"
    spark.sql(
        f"CREATE TABLE {p} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '1', "
        "'tag.automatic-creation' = 'process-time', 'write-only' = 'true')"
    )
    spark.sql(f"INSERT INTO {p} VALUES (1, 'a')")
    assert rows(spark, f"SELECT tag_name FROM {db}.`ptag$tags`") == []
    name = p.removeprefix("lake.")
    assert rows(spark, f"CALL lake.sys.trigger_tag_automatic_creation(table => '{name}')") == [(True,)]
    tagged = rows(spark, f"SELECT tag_name, snapshot_id FROM {db}.`ptag$tags`")
    assert len(tagged) == 1 and tagged[0][1] == 1 and len(tagged[0][0]) == len("2026-01-01")
