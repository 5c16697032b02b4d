"""Bucket-unaware append tables written by Spark's own Parquet writer (NativeAppendWrite in the
shim, spark/native_write.py): several tasks, awkward partition values, every overwrite mode, a
failing task, and the tables read back by Spark, the Python API and pypaimon."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import stratalake
from stratalake.lsm.data_file import bucket_dir
from stratalake.spec.stats import compute_stats
from stratalake.store.append_file import physical_schema
from tests.interop.paimon_oracle import paimon_read
from tests.spark.test_catalyst import conf

SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"  # set by Spark's writer only

COLUMNS = (
    "id BIGINT, n INT, s STRING, f DOUBLE, d DATE, m DECIMAL(12, 2), ok BOOLEAN, raw BINARY, "
    "t TINYINT, big DECIMAL(30, 4), p STRING, k INT"
)
# Partition values with spaces and non-ASCII characters (kept as they are in directory names).
SOURCE = """
SELECT id, CAST(id % 1000 AS INT) AS n,
       CASE WHEN id % 11 = 0 THEN NULL ELSE concat('s-', id) END AS s,
       CASE WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) ELSE id / 7.0 END AS f,
       date_add(DATE'2021-03-01', CAST(id % 400 AS INT)) AS d,
       CAST(id / 100.0 - 300 AS DECIMAL(12, 2)) AS m,
       id % 3 = 0 AS ok,
       CASE WHEN id % 2 = 0 THEN CAST(concat('b', id) AS BINARY) END AS raw,
       CAST(id % 100 - 50 AS TINYINT) AS t,
       CAST(id * 1234567.1234 AS DECIMAL(30, 4)) AS big,
       element_at(array(NULL, 'plain', 'a b', 'ü-é', 'x y z'), CAST(id % 5 + 1 AS INT)) AS p,
       CAST(id % 2 AS INT) AS k
FROM range({start}, {end})
"""


def _source(spark: Any, start: int, end: int, tasks: int = 3) -> Any:
    return spark.sql(SOURCE.format(start=start, end=end)).repartition(tasks)


def _same_rows(spark: Any, a: Any, b: Any) -> None:
    assert a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def _data_files(table: stratalake.Table) -> list[Path]:
    return sorted(Path(table.location).rglob("data-*.parquet"))


def _live_paths(table: stratalake.Table) -> set[Path]:
    codec = table.partition_codec
    snap = table.latest_snapshot()
    out = set()
    for e in table.live_entries(snap) if snap is not None else []:
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(e.partition)), e.bucket)
        out.add(Path(f"{directory}/{e.file.file_name}"))
    return out


def _written_by_spark(path: Path) -> bool:
    return SPARK_SCHEMA_KEY in (pq.ParquetFile(path).metadata.metadata or {})


def test_multi_task_write_reads_back_everywhere(four_tasks: Any, db: str, warehouse: Path) -> None:
    spark = four_tasks
    name = db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {db}.e ({COLUMNS}) PARTITIONED BY (p, k)")
    first, second = _source(spark, 0, 120_000), _source(spark, 120_000, 150_000, tasks=2)
    first.writeTo(f"{db}.e").append()
    second.writeTo(f"{db}.e").append()
    expected = first.unionByName(second)
    _same_rows(spark, spark.table(f"{db}.e"), expected)

    table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.e")
    files = _data_files(table)
    assert files and all(_written_by_spark(f) for f in files)
    assert set(files) == _live_paths(table)  # every file committed, nothing left over
    # 10 partitions, written by several tasks each (file names carry the task writer's uuid)
    dirs = {f.parent for f in files}
    assert len(dirs) == 10
    assert max(len({f.name.rsplit("-", 1)[0] for f in files if f.parent == d}) for d in dirs) >= 3
    assert len([s.id for s in table.snapshot_manager.snapshots()]) == 2

    # The manifest's statistics are what the Python writer would compute from the same rows.
    schema = table.schema()
    names, types = [f.name for f in schema.fields], [f.type for f in schema.fields]
    codec = table.partition_codec
    for e in table.live_entries(table.latest_snapshot()):
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(e.partition)), e.bucket)
        rows = pq.ParquetFile(f"{directory}/{e.file.file_name}").read().cast(physical_schema(schema))
        assert e.file.row_count == rows.num_rows
        assert e.file.value_stats == compute_stats(rows, names, types, table.core_options.stats_mode)
        assert e.file.max_sequence_number - e.file.min_sequence_number + 1 == rows.num_rows

    # The Python API and pypaimon read the same rows.
    py = table.read()
    assert py.num_rows == 150_000 and sum(py.column("id").to_pylist()) == sum(range(150_000))
    pa_rows = paimon_read(warehouse, f"{name}.e")
    assert pa_rows.num_rows == 150_000
    assert sorted(pa_rows.column("id").to_pylist()) == list(range(150_000))
    by_p = {v: 0 for v in (None, "plain", "a b", "ü-é", "x y z")}
    for v in pa_rows.column("p").to_pylist():
        by_p[v] += 1
    assert set(by_p.values()) == {30_000}
    # Value-column pruning from the footer-derived statistics.
    got = spark.sql(f"SELECT count(*), sum(n) FROM {db}.e WHERE id >= 140000 AND p = 'ü-é'").collect()
    want = expected.where("id >= 140000 AND p = 'ü-é'").selectExpr("count(*)", "sum(n)").collect()
    assert got == want


def test_partition_directories_follow_paimon(spark: Any, db: str, warehouse: Path) -> None:
    """Escaped characters, blank values and nulls: the directories Paimon's writer names (its
    PartitionPathUtils), whichever writer wrote the rows."""
    values = ["a/b", "x:y=%#", "  ", "", None, "ü{}", "tab\there"]
    dirs = {"p=a%2Fb", "p=x%3Ay%3D%25%23", "p=__DEFAULT_PARTITION__", "p=ü%7B%7D", "p=tab%09here"}
    name = db.split(".", 1)[1]
    for native in ("true", "false"):
        with conf(spark, stratalake__write__native__enabled=native):
            spark.sql(f"CREATE TABLE {db}.d{native} (id BIGINT, p STRING) PARTITIONED BY (p)")
            rows = [(i, values[i % len(values)]) for i in range(700)]
            spark.createDataFrame(rows, "id BIGINT, p STRING").writeTo(f"{db}.d{native}").append()
        table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.d{native}")
        files = _data_files(table)
        assert {f.parent.parent.name for f in files} == dirs
        assert all(_written_by_spark(f) == (native == "true") for f in files)
        got = spark.sql(f"SELECT p, count(*) FROM {db}.d{native} GROUP BY p").collect()
        assert sorted(map(tuple, got), key=repr) == sorted(((v, 100) for v in values), key=repr)
        assert table.read().num_rows == 700


def test_column_encodings_follow_the_python_writer(four_tasks: Any, db: str, warehouse: Path) -> None:
    """Both writers of append files choose dictionary encoding of strings alike, from the first
    rows: a string column with few distinct values is dictionary-encoded, a string column of
    distinct values and numbers are not (parquet-mr's default would start every column with a
    dictionary and abandon it mid-file). Also for a task of fewer rows than the sample."""
    spark = four_tasks
    spark.sql(f"CREATE TABLE {db}.enc (id BIGINT, few STRING, many STRING, flag BOOLEAN, x DOUBLE, p STRING) "
              "PARTITIONED BY (p)")  # fmt: skip
    select = (
        "SELECT id, concat('k', id % 5), concat('v', id), id % 2 = 0, id * 0.5, concat('p', id % 2) "
        "FROM range({}) DISTRIBUTE BY id % 4"
    )
    spark.sql(f"INSERT INTO {db}.enc " + select.format(60_000))
    spark.sql(f"INSERT INTO {db}.enc " + select.format(40))  # tasks of about 10 rows
    name = db.split(".", 1)[1]
    table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.enc")
    files = sorted(_live_paths(table))
    assert files and all(_written_by_spark(f) for f in files)
    for f in files:
        md = pq.ParquetFile(f).metadata
        rg = md.row_group(0)
        encodings = {rg.column(i).path_in_schema: set(rg.column(i).encodings) for i in range(rg.num_columns)}
        dictionary = {c for c, e in encodings.items() if e & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}}
        if md.num_rows >= 1000:
            assert dictionary == {"few", "p"}, (f, encodings)
        else:  # a handful of rows: a quarter of them or fewer distinct values only for few/p
            assert {"id", "x"}.isdisjoint(dictionary), (f, encodings)
    assert spark.sql(f"SELECT count(*), count(DISTINCT many) FROM {db}.enc").collect()[0] == (60_040, 60_000)


def test_overwrite_modes(four_tasks: Any, db: str, warehouse: Path) -> None:
    spark = four_tasks
    spark.sql(f"CREATE TABLE {db}.o (id BIGINT, v STRING, p STRING) PARTITIONED BY (p)")
    spark.sql(
        f"INSERT INTO {db}.o SELECT id, 'old', concat('p', id % 3) FROM range(30000) DISTRIBUTE BY id % 4"
    )
    # static partition: only p0 replaced
    spark.sql(f"INSERT OVERWRITE {db}.o PARTITION (p = 'p0') SELECT id, 'new' FROM range(100) DISTRIBUTE BY id")
    counts = dict(spark.sql(f"SELECT p, count(*) FROM {db}.o GROUP BY p").collect())
    assert counts == {"p0": 100, "p1": 10000, "p2": 10000}
    # dynamic: the partitions written (p1, p9) replaced, p0 and p2 kept
    with conf(spark, spark__sql__sources__partitionOverwriteMode="dynamic"):
        spark.sql(
            f"INSERT OVERWRITE {db}.o SELECT id, 'dyn', CASE WHEN id < 50 THEN 'p1' ELSE 'p9' END "
            "FROM range(80) DISTRIBUTE BY id"
        )
    rows = spark.sql(f"SELECT p, v, count(*) FROM {db}.o GROUP BY p, v ORDER BY p, v").collect()
    assert [tuple(r) for r in rows] == [("p0", "new", 100), ("p1", "dyn", 50), ("p2", "old", 10000), ("p9", "dyn", 30)]
    # the whole table
    spark.sql(f"INSERT OVERWRITE {db}.o SELECT id, 'all', 'p5' FROM range(7)")
    assert [tuple(r) for r in spark.sql(f"SELECT p, count(*) FROM {db}.o GROUP BY p").collect()] == [("p5", 7)]
    name = db.split(".", 1)[1]
    table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.o")
    assert all(_written_by_spark(f) for f in _live_paths(table))
    assert paimon_read(warehouse, f"{name}.o").num_rows == 7


@pytest.mark.parametrize(
    ("native", "ddl"),
    [
        ("true", "(id BIGINT, n INT NOT NULL, p STRING) PARTITIONED BY (p)"),
        ("false", "(id BIGINT, n INT NOT NULL, p STRING) PARTITIONED BY (p)"),
        # a bucketed primary-key table holding data, 4 tasks into 3 buckets x 2 partitions
        ("true", "(id BIGINT, n INT NOT NULL, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) "
         "TBLPROPERTIES ('bucket' = '3')"),
    ],
)  # fmt: skip
def test_failed_task_leaves_the_table_unchanged(
    four_tasks: Any, db: str, warehouse: Path, native: str, ddl: str
) -> None:
    """A task fails late (a NOT NULL violation) while the others have written their files: no
    snapshot, the job's abort removes the files of every task Spark reports, whichever writer
    wrote them (Spark hands the abort a null message for the failed task, which Python's abort
    cannot take), and anything Spark never reports is an orphan that orphan removal takes."""
    spark = four_tasks
    name = db.split(".", 1)[1]
    with conf(spark, stratalake__write__native__enabled=native):
        spark.sql(f"CREATE TABLE {db}.f {ddl}")
        spark.sql(f"INSERT INTO {db}.f SELECT id, 1, concat('p', id % 2) FROM range(1000)")
        table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.f")
        before = set(_data_files(table))
        snapshots = [s.id for s in table.snapshot_manager.snapshots()]
        bad = (
            f"INSERT INTO {db}.f SELECT id, CASE WHEN id = 99990 THEN NULL ELSE 1 END, concat('p', id % 2) "
            "FROM range(100000) DISTRIBUTE BY id % 4"
        )
        with pytest.raises(Exception, match=r"(?i)null"):
            spark.sql(bad)
    table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.f")
    assert [s.id for s in table.snapshot_manager.snapshots()] == snapshots
    left = set(_data_files(table)) - before
    # The JVM writers delete their files when their task fails, is killed or is denied its commit,
    # and the job's abort deletes those of every task whose commit message reached the driver. Left
    # are only files Spark never reports: a JVM task its commit coordinator let commit just before
    # the stage failed, finishing after the job's abort (Spark drops its message; seen once in a
    # fresh-clone run), or a Python task still running when the job aborts (Spark kills its worker).
    # They are unreferenced, and orphan removal takes them.
    removed = table.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 1000)
    assert {Path(table.file_io.to_fs_path(p)) for p in removed} >= left
    assert set(_data_files(table)) == before
    assert spark.sql(f"SELECT count(*) FROM {db}.f").collect()[0][0] == 1000


def test_small_files_are_compacted_after_native_writes(spark: Any, db: str, warehouse: Path) -> None:
    """Native writers do not compact; a commit that leaves files the append compaction would pick
    is followed by it (a COMPACT snapshot), unless the table is write-only."""
    name = db.split(".", 1)[1]
    opts = "'compaction.max.file-num' = '4'"
    spark.sql(f"CREATE TABLE {db}.c (id BIGINT, p STRING) PARTITIONED BY (p) TBLPROPERTIES ({opts})")
    spark.sql(f"CREATE TABLE {db}.w (id BIGINT, p STRING) PARTITIONED BY (p) TBLPROPERTIES ({opts}, 'write-only' = 'true')")
    for i in range(5):
        for t in ("c", "w"):
            spark.sql(f"INSERT INTO {db}.{t} SELECT id, 'x' FROM range({i * 100}, {(i + 1) * 100}) DISTRIBUTE BY 1")
    catalog = stratalake.Catalog(str(warehouse))
    compacted = catalog.get_table(f"{name}.c")
    kinds = [s.commit_kind.name for s in compacted.snapshot_manager.snapshots()]
    assert kinds == ["APPEND"] * 4 + ["COMPACT", "APPEND"], kinds
    assert len(_live_paths(compacted)) == 2  # the compacted four, then the fifth insert
    left = catalog.get_table(f"{name}.w")
    assert len(_live_paths(left)) == 5
    assert all(_written_by_spark(f) for f in _live_paths(left))
    for t in ("c", "w"):
        assert spark.sql(f"SELECT count(*), sum(id) FROM {db}.{t}").collect()[0] == (500, sum(range(500)))


def test_python_writer_when_off_or_not_eligible(four_tasks: Any, db: str, warehouse: Path) -> None:
    spark = four_tasks
    name = db.split(".", 1)[1]
    catalog = stratalake.Catalog(str(warehouse))
    with conf(spark, stratalake__write__native__enabled="false"):
        spark.sql(f"CREATE TABLE {db}.off (id BIGINT, v STRING)")
        spark.sql(f"INSERT INTO {db}.off SELECT id, 'x' FROM range(5000)")
    # timestamps, fixed buckets and primary keys go through Python
    spark.sql(f"CREATE TABLE {db}.ts (id BIGINT, at TIMESTAMP)")
    spark.sql(f"INSERT INTO {db}.ts SELECT id, TIMESTAMP'2024-01-01 00:00:00' FROM range(5000)")
    spark.sql(f"CREATE TABLE {db}.fixed (id BIGINT, v STRING) TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id')")
    spark.sql(f"INSERT INTO {db}.fixed SELECT id, 'x' FROM range(5000)")
    for t in ("off", "ts", "fixed"):
        table = catalog.get_table(f"{name}.{t}")
        files = _data_files(table)
        assert files and not any(_written_by_spark(f) for f in files), t
        assert spark.sql(f"SELECT count(*) FROM {db}.{t}").collect()[0][0] == 5000
    # CTAS goes native
    spark.sql(f"CREATE TABLE {db}.ctas PARTITIONED BY (p) AS SELECT id, concat('p', id % 2) AS p FROM range(5000)")
    files = _data_files(catalog.get_table(f"{name}.ctas"))
    assert files and all(_written_by_spark(f) for f in files)
    assert spark.sql(f"SELECT count(*), sum(id) FROM {db}.ctas").collect()[0] == (5000, sum(range(5000)))


def test_table_pypaimon_wrote(four_tasks: Any, warehouse: Path) -> None:
    """An append table pypaimon created and filled with Paimon's defaults: Spark's native insert
    adds to its partitions, both read everything, and pypaimon appends again after it."""
    import numpy as np
    import pyarrow as pa

    from tests.interop.paimon_oracle import paimon_create_table, paimon_write

    spark = four_tasks
    wh = str(warehouse)
    ident = "native_paimon.events"
    schema = pa.schema([("id", pa.int64()), ("user", pa.string()), ("amount", pa.float64()), ("dt", pa.string())])
    paimon_create_table(wh, ident, schema, primary_keys=[], partition_keys=["dt"])
    ids = np.arange(50_000)
    first = pa.table(
        {"id": ids, "user": [f"u{i % 97}" for i in ids], "amount": ids / 4, "dt": [f"d{i % 3}" for i in ids]},
        schema=schema,
    )
    paimon_write(wh, ident, first)
    assert "bucket" not in stratalake.Catalog(wh).get_table(ident).schema().options  # Paimon's default: -1
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, concat('s', id % 13), id / 2.0, concat('d', id % 4) "
        "FROM range(50000, 150000) DISTRIBUTE BY id % 4"
    )
    paimon_write(wh, ident, first.slice(0, 1000))
    table = stratalake.Catalog(wh).get_table(ident)
    spark_files = [f for f in _data_files(table) if _written_by_spark(f)]
    assert len({f.parent for f in spark_files}) == 4  # d0..d3, one of them new
    expected_ids = sorted([*range(150_000), *range(1000)])
    got = paimon_read(wh, ident)
    assert sorted(got.column("id").to_pylist()) == expected_ids
    row = spark.sql(f"SELECT count(*), sum(id), count(DISTINCT dt) FROM lake.{ident}").collect()[0]
    assert tuple(row) == (151_000, sum(expected_ids), 4)
    assert spark.sql(f"SELECT count(*) FROM lake.{ident} WHERE dt = 'd3'").collect()[0][0] == 25_000


def test_files_roll_at_target_file_size(spark: Any, db: str, warehouse: Path) -> None:
    """A task's rows of one partition become several files once each reaches target-file-size."""
    name = db.split(".", 1)[1]
    spark.sql(
        f"CREATE TABLE {db}.r (id BIGINT, s STRING, p INT) PARTITIONED BY (p) "
        "TBLPROPERTIES ('target-file-size' = '1 mb')"
    )
    spark.sql(
        f"INSERT INTO {db}.r SELECT id, sha2(CAST(id AS STRING), 256), CAST(id % 2 AS INT) "
        "FROM range(200000) DISTRIBUTE BY id % 2"
    )
    table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.r")
    entries = list(table.live_entries(table.latest_snapshot()))
    assert len(entries) >= 6 and all(_written_by_spark(p) for p in _live_paths(table))
    # every file but the last of its writer is near the target (rolled after reaching it)
    assert max(e.file.file_size for e in entries) < 3 * 1024 * 1024
    assert sum(e.file.row_count for e in entries) == 200_000
    assert all(e.file.max_sequence_number - e.file.min_sequence_number + 1 == e.file.row_count for e in entries)
    row = spark.sql(f"SELECT count(*), count(DISTINCT s), sum(id) FROM {db}.r").collect()[0]
    assert tuple(row) == (200_000, 200_000, sum(range(200_000)))


def test_file_uri_warehouse(spark: Any, tmp_path: Path) -> None:
    """A catalog whose warehouse is a file: URI: the JVM writes to the local path it names."""
    from stratalake.spark.session import CATALOG_CLASS

    warehouse = f"file://{tmp_path}/uri-wh"
    spark.conf.set("spark.sql.catalog.urilake", CATALOG_CLASS)
    spark.conf.set("spark.sql.catalog.urilake.warehouse", warehouse)
    spark.sql("CREATE DATABASE urilake.db")
    spark.sql("CREATE TABLE urilake.db.e (id BIGINT, p STRING) PARTITIONED BY (p)")
    spark.sql("INSERT INTO urilake.db.e SELECT id, concat('p', id % 3) FROM range(30000) DISTRIBUTE BY id % 2")
    assert spark.sql("SELECT count(*), sum(id) FROM urilake.db.e").collect()[0] == (30_000, sum(range(30_000)))
    table = stratalake.Catalog(warehouse).get_table("db.e")
    files = sorted(Path(f"{tmp_path}/uri-wh").rglob("data-*.parquet"))
    assert len({f.parent for f in files}) == 3 and all(_written_by_spark(f) for f in files)
    assert table.read().num_rows == 30_000
    assert not Path("file:").exists()  # nothing written relative to the working directory


def test_date_boolean_and_integer_partitions(spark: Any, db: str, warehouse: Path) -> None:
    """Typed partition values name the same directories whichever writer wrote them."""
    name = db.split(".", 1)[1]
    query = (
        "SELECT id, date_add(DATE'1999-12-30', CAST(id % 3 AS INT)) AS d, id % 2 = 0 AS b, "
        "CAST(id % 2 - 1 AS TINYINT) AS t FROM range(600)"
    )
    dirs = {}
    for native in ("true", "false"):
        with conf(spark, stratalake__write__native__enabled=native):
            spark.sql(f"CREATE TABLE {db}.typed{native} (id BIGINT, d DATE, b BOOLEAN, t TINYINT) PARTITIONED BY (d, b, t)")
            spark.sql(f"INSERT INTO {db}.typed{native} {query}")
        table = stratalake.Catalog(str(warehouse)).get_table(f"{name}.typed{native}")
        files = _data_files(table)
        assert all(_written_by_spark(f) == (native == "true") for f in files)
        dirs[native] = {str(f.parent.relative_to(table.location)) for f in files}
        got = spark.sql(f"SELECT d, b, t, count(*) FROM {db}.typed{native} GROUP BY d, b, t").collect()
        assert sorted(map(tuple, got)) == sorted(map(tuple, spark.sql(f"SELECT d, b, t, count(*) FROM ({query}) GROUP BY d, b, t").collect()))
    assert dirs["true"] == dirs["false"]
    assert "d=1999-12-31/b=false/t=0/bucket-0" in dirs["true"]


def test_lifecycle_of_a_natively_written_table(spark: Any, db: str, warehouse: Path) -> None:
    """RTAS, tags, time travel by tag, rollback, snapshot expiry and orphan removal through
    Spark on an append table whose files Spark's writer made."""
    name = db.split(".", 1)[1]
    ident = f"{name}.life"
    spark.sql(f"CREATE TABLE {db}.life PARTITIONED BY (p) AS SELECT id, concat('p', id % 2) AS p FROM range(1000)")
    spark.sql(f"INSERT INTO {db}.life SELECT id, 'p9' FROM range(1000, 1500)")
    assert spark.sql(f"CALL lake.sys.create_tag('{ident}', 'two')").collect() == [(True,)]
    spark.sql(f"INSERT INTO {db}.life SELECT id, 'p9' FROM range(1500, 1700)")
    assert spark.sql(f"SELECT count(*) FROM {db}.life VERSION AS OF 'two'").collect()[0][0] == 1500
    spark.sql(f"CALL lake.sys.rollback(table => '{ident}', version => 'two')").collect()
    assert spark.sql(f"SELECT count(*), sum(id) FROM {db}.life").collect()[0] == (1500, sum(range(1500)))
    spark.sql(f"INSERT INTO {db}.life SELECT id, 'p8' FROM range(1500, 1600)")
    spark.sql(f"CALL lake.sys.expire_snapshots(table => '{ident}', retain_max => 1)").collect()
    table = stratalake.Catalog(str(warehouse)).get_table(ident)
    assert len(list(table.snapshot_manager.snapshots())) == 1
    # the rolled-back insert's files are referenced by nothing now: orphans
    older = int(time.time() * 1000) + 1000
    removed = spark.sql(f"CALL lake.sys.remove_orphan_files(table => '{ident}', older_than => '{older}')").collect()
    assert removed, "the rolled-back insert's files are orphans"
    assert all(_written_by_spark(f) for f in _live_paths(table))
    assert spark.sql(f"SELECT count(*), sum(id) FROM {db}.life").collect()[0] == (1600, sum(range(1600)))
    assert spark.sql(f"SELECT count(*) FROM {db}.life VERSION AS OF 'two'").collect()[0][0] == 1500
    # RTAS replaces the table's rows in one snapshot, written natively as well
    spark.sql(f"CREATE OR REPLACE TABLE {db}.life PARTITIONED BY (p) AS SELECT id, 'p0' AS p FROM range(10)")
    table = stratalake.Catalog(str(warehouse)).get_table(ident)
    assert spark.sql(f"SELECT count(*) FROM {db}.life").collect()[0][0] == 10
    assert all(_written_by_spark(f) for f in _live_paths(table))
