"""Row-level DML on append tables through Spark SQL: random DELETE / UPDATE / MERGE INTO sequences
against a model, with and without deletion vectors, over several write tasks."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stratalake
from stratalake.store.index_manifest import live_index_entries

pytestmark = pytest.mark.spark

ROWS = 100_000


@pytest.fixture
def multi_task(spark: Any) -> Any:
    """Several shuffle partitions with AQE coalescing down to small sizes only: statements run as
    several tasks (each one sending deletes of the same files)."""
    conf = spark.conf
    settings = {
        "spark.sql.shuffle.partitions": "3",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "16k",
        "spark.sql.files.maxPartitionBytes": "256k",
    }
    saved = {k: conf.get(k, None) for k in settings}
    for k, v in settings.items():
        conf.set(k, v)
    yield spark
    for k, v in saved.items():
        if v is None:
            conf.unset(k)
        else:
            conf.set(k, v)


class Model:
    """The table's rows as columns (ids are unique), changed with numpy masks."""

    def __init__(self, ids: np.ndarray, g: np.ndarray, v: np.ndarray) -> None:
        self.ids, self.g, self.v = ids, g, v

    def keep(self, mask: np.ndarray) -> None:
        self.ids, self.g, self.v = self.ids[mask], self.g[mask], self.v[mask]

    def rows(self) -> list[tuple[int, int, int]]:
        order = np.argsort(self.ids)
        return list(
            zip(self.ids[order].tolist(), self.g[order].tolist(), self.v[order].tolist(), strict=True)
        )


def _read(spark: Any, t: str) -> list[tuple[int, int, int]]:
    got = spark.sql(f"SELECT id, g, v FROM {t}").toArrow()
    ids, g, v = (np.asarray(got.column(c).to_numpy()) for c in ("id", "g", "v"))
    order = np.argsort(ids)
    return list(zip(ids[order].tolist(), g[order].tolist(), v[order].tolist(), strict=True))


@pytest.mark.parametrize(
    "options",
    [
        "'deletion-vectors.enabled' = 'true'",
        "'deletion-vectors.enabled' = 'true', 'bucket' = '2', 'bucket-key' = 'id'",
        "'bucket' = '2', 'bucket-key' = 'id'",
        "'deletion-vectors.enabled' = 'false'",
        # Files rewritten by jobs of Spark tasks (a statement's files exceed one split).
        "'bucket' = '2', 'bucket-key' = 'id', 'source.split.target-size' = '1'",
    ],
)
def test_random_dml_follows_a_model(multi_task: Any, db: str, warehouse: Path, options: str) -> None:
    spark = multi_task
    t = f"{db}.events"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, g INT, v BIGINT) TBLPROPERTIES ({options})")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 13 AS INT), id * 2 FROM range(0, {ROWS}, 1, 4)")
    ids = np.arange(ROWS, dtype=np.int64)
    model = Model(ids, (ids % 13).astype(np.int64), ids * 2)
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.events")
    assert len(table.live_entries(table.latest_snapshot())) > 1  # type: ignore[arg-type]
    rng = random.Random(17)
    next_id = ROWS
    statements = ["update", "delete_row_level", "merge", "delete_pushed", "delete_subquery", "merge"]
    rng.shuffle(statements)
    for step, kind in enumerate(statements):
        before = spark.sql(f"SELECT count(*) FROM {db}.`events$snapshots`").collect()[0][0]
        k = rng.randrange(13)
        if kind == "update":
            spark.sql(f"UPDATE {t} SET v = v + 1, g = g + 100 WHERE g = {k} OR id % 1000 = 7")
            hit = (model.g == k) | (model.ids % 1000 == 7)
            model.v = np.where(hit, model.v + 1, model.v)
            model.g = np.where(hit, model.g + 100, model.g)
        elif kind == "delete_row_level":  # not expressible as pushed predicates: Spark's delta plan
            spark.sql(f"DELETE FROM {t} WHERE g = {k} AND v % 4 = 0")
            model.keep(~((model.g == k) & (model.v % 4 == 0)))
        elif kind == "delete_pushed":  # column-vs-literal: deleted without Spark's row-level plan
            spark.sql(f"DELETE FROM {t} WHERE g = {k} OR id < 100")
            model.keep(~((model.g == k) | (model.ids < 100)))
        elif kind == "delete_subquery":
            spark.sql(f"DELETE FROM {t} WHERE id IN (SELECT id * 3 FROM range(0, 5000))")
            model.keep(~((model.ids % 3 == 0) & (model.ids < 15_000)))
        else:  # MERGE with several clauses: matched delete / update, not matched insert
            existing = rng.sample(model.ids.tolist(), 3_000)
            new = list(range(next_id, next_id + 500))
            next_id += 500
            src = [(i, i % 2, 7) for i in existing + new]
            spark.createDataFrame(src, "id BIGINT, d INT, nv BIGINT").createOrReplaceTempView("src")
            spark.sql(
                f"MERGE INTO {t} USING src ON {t}.id = src.id "
                "WHEN MATCHED AND src.d = 1 THEN DELETE "
                "WHEN MATCHED THEN UPDATE SET v = src.nv "
                "WHEN NOT MATCHED THEN INSERT (id, g, v) VALUES (src.id, -1, src.nv)"
            )
            odd = np.array([i for i in existing if i % 2 == 1], dtype=np.int64)
            even = np.array([i for i in existing if i % 2 == 0], dtype=np.int64)
            model.keep(~np.isin(model.ids, odd))
            model.v = np.where(np.isin(model.ids, even), 7, model.v)
            added = np.array(new, dtype=np.int64)
            model.ids = np.concatenate([model.ids, added])
            model.g = np.concatenate([model.g, np.full(len(added), -1, dtype=np.int64)])
            model.v = np.concatenate([model.v, np.full(len(added), 7, dtype=np.int64)])
        after = spark.sql(f"SELECT count(*) FROM {db}.`events$snapshots`").collect()[0][0]
        assert after == before + 1, f"step {step} ({kind}): one snapshot per statement"
        assert _read(spark, t) == model.rows(), f"step {step} ({kind})"
    table = table.refresh()
    snap = table.latest_snapshot()
    assert snap is not None
    dv = "'deletion-vectors.enabled' = 'true'" in options
    assert bool(live_index_entries(table, snap)) == dv  # deletes went to vectors, or files were rewritten
    # Spark's native Parquet read applies the vectors by position (the reads above used it).
    df = spark.sql(f"SELECT id, g, v FROM {t}")
    found = re.findall(
        r"\[splits: (\d+) native, (\d+) merged in Python", df._jdf.queryExecution().executedPlan().toString()
    )
    assert found and all(int(n) > 0 and int(p) == 0 for n, p in found), found
    # Compaction applies the vectors and drops them; the rows stay.
    spark.sql(f"CALL lake.sys.compact(table => '{t.removeprefix('lake.')}', compact_strategy => 'full')")
    table = table.refresh()
    assert not live_index_entries(table, table.latest_snapshot())
    assert _read(spark, t) == model.rows()


def test_failed_statements_leave_the_table_unchanged_and_odd_conditions_work(spark: Any, db: str) -> None:
    t = f"{db}.e"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, s STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (2, 'b'), (3, 'c')")

    def rows() -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())

    def snapshots() -> int:
        return int(spark.sql(f"SELECT count(*) FROM {db}.`e$snapshots`").collect()[0][0])

    # Duplicated rows are separate rows: an UPDATE changes both.
    spark.sql(f"UPDATE {t} SET s = upper(s) WHERE id = 2")
    assert rows() == [(1, "a"), (2, "B"), (2, "B"), (3, "c")]
    # Two source rows matching one target row: Spark's cardinality check fails the statement.
    n = snapshots()
    with pytest.raises(Exception, match=r"MERGE_CARDINALITY_VIOLATION|matched"):
        spark.sql(
            f"MERGE INTO {t} USING (SELECT 1 AS id UNION ALL SELECT 1) s ON {t}.id = s.id "
            "WHEN MATCHED THEN UPDATE SET s = 'x'"
        )
    assert snapshots() == n and rows() == [(1, "a"), (2, "B"), (2, "B"), (3, "c")]
    # A failing expression in an UPDATE fails its tasks: nothing is committed.
    with pytest.raises(Exception, match="boom"):
        spark.sql(f"UPDATE {t} SET s = raise_error('boom') WHERE id = 3")
    assert snapshots() == n and rows() == [(1, "a"), (2, "B"), (2, "B"), (3, "c")]
    # NOT MATCHED BY SOURCE clauses.
    spark.sql(
        f"MERGE INTO {t} USING (SELECT 2 AS id) s ON {t}.id = s.id "
        f"WHEN NOT MATCHED BY SOURCE AND {t}.id = 3 THEN UPDATE SET s = 'nbs'"
    )
    assert rows() == [(1, "a"), (2, "B"), (2, "B"), (3, "nbs")]
    # A condition reading no column of the table: the scan reads only the row ids.
    spark.sql(f"DELETE FROM {t} WHERE (SELECT count(*) FROM range(3)) = 3 AND id IN (SELECT 1)")
    assert rows() == [(2, "B"), (2, "B"), (3, "nbs")]
    spark.sql(f"DELETE FROM {t} WHERE (SELECT count(*) FROM range(3)) = 3")
    assert rows() == [] and snapshots() == n + 3


@pytest.mark.parametrize("dv", ["true", "false"])
def test_concurrent_statement_on_the_same_files_conflicts_and_loses_no_rows(
    spark: Any, db: str, warehouse: Path, dv: str
) -> None:
    """A DELETE commits while an UPDATE of the same files runs (deterministically: from a UDF the
    UPDATE evaluates after its scan); the UPDATE fails with CommitConflictError and the table
    holds exactly the DELETE's result."""
    t = f"{db}.c"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT) TBLPROPERTIES ('deletion-vectors.enabled' = '{dv}')")
    spark.sql(f"INSERT INTO {t} SELECT id, id FROM range(0, 1000, 1, 1)")
    marker = str(warehouse / f"{db}-{dv}-interfered")
    ident = f"{db.split('.', 1)[1]}.c"
    wh = str(warehouse)

    def interfere(v: int) -> int:
        import os

        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return v
        from stratalake import Catalog, field
        from stratalake.append.dml import apply_changes, matching_positions
        from stratalake.expressions import to_predicate

        other = Catalog(wh).get_table(ident)
        predicate = to_predicate(field("id") < 10)
        assert predicate is not None
        apply_changes(other, matching_positions(other, predicate))
        return v

    spark.udf.register(f"interfere_{dv}", interfere, "bigint")
    with pytest.raises(Exception, match="CommitConflictError"):
        spark.sql(f"UPDATE {t} SET v = interfere_{dv}(v) + 1 WHERE id >= 500")
    assert _read_two(spark, t) == [(i, i) for i in range(10, 1000)]


def _read_two(spark: Any, t: str) -> list[tuple[int, int]]:
    return sorted((int(r[0]), int(r[1])) for r in spark.sql(f"SELECT id, v FROM {t}").collect())


def test_streaming_reads_apply_deletion_vectors_and_skip_dml_snapshots(
    spark: Any, db: str, tmp_path: Path
) -> None:
    """A stream's initial full read applies the vectors; the OVERWRITE snapshots of later DML are
    skipped (as Paimon's streaming reads skip them), appends after them are read."""
    src, dst = f"{db}.src", f"{db}.dst"
    spark.sql(f"CREATE TABLE {src} (id BIGINT, s STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    spark.sql(f"CREATE TABLE {dst} (id BIGINT, s STRING)")
    spark.sql(f"INSERT INTO {src} SELECT id, 'a' FROM range(10)")
    spark.sql(f"DELETE FROM {src} WHERE id % 2 = 0")

    def run() -> None:
        q = (
            spark.readStream.table(src)
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .toTable(dst)
        )
        q.awaitTermination(120)

    def ids() -> list[tuple[int, str]]:
        return sorted((int(r[0]), str(r[1])) for r in spark.sql(f"SELECT * FROM {dst}").collect())

    run()
    assert ids() == [(i, "a") for i in (1, 3, 5, 7, 9)]
    spark.sql(f"UPDATE {src} SET s = 'u' WHERE id = 1")
    spark.sql(f"INSERT INTO {src} VALUES (20, 'n')")
    run()
    assert ids() == [*((i, "a") for i in (1, 3, 5, 7, 9)), (20, "n")]
