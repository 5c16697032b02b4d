"""Branches through Spark SQL with Paimon's answers (its ``BranchProcedureTest``): the branch
procedures, ``SELECT``/``INSERT`` on ``t$branch_b``, ``t$branch_b$snapshots``, ``t$branches``;
the branch read back by pypaimon from disk; bad arguments refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import UnsupportedError
from stratalake.spark.read_options import check_read_options
from stratalake.spark.source import infer_schema
from stratalake.spark.streaming import StrataLakeStreamReader
from tests.interop.paimon_oracle import paimon_read

pytestmark = pytest.mark.spark


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def _error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as err:  # Spark's and Py4J's classes vary; the text is checked
        spark.sql(sql).collect()
    return str(err.value)


def test_branch_procedures_reads_and_writes(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.T"
    name = db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {t} (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b2')")
    call = f"CALL lake.sys.create_tag(table => '{name}.T', tag => 'test_tag', snapshot => 2)"
    assert _rows(spark, call) == [(True,)]
    create = f"CALL lake.sys.create_branch(table => '{name}.T', branch => 'test_branch', tag => 'test_tag')"
    assert _rows(spark, create) == [(True,)]
    assert spark.sql(create.replace("'test_tag')", "'test_tag', ignoreIfExists => 'true')")).collect()[0][0]
    branch = f"{db}.`T$branch_test_branch`"
    assert _rows(spark, f"SELECT * FROM {branch} ORDER BY a") == [(1, "a"), (2, "b")]
    spark.sql(f"INSERT INTO {branch} VALUES (3, 'c')")
    assert _rows(spark, f"SELECT * FROM {branch} ORDER BY a") == [(1, "a"), (2, "b"), (3, "c")]
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY a") == [(1, "a"), (2, "b2")]
    # Row-level DML and schema changes of the branch stay on it.
    spark.sql(f"UPDATE {branch} SET b = 'c2' WHERE a = 3")
    spark.sql(f"ALTER TABLE {branch} ADD COLUMN c INT")
    assert _rows(spark, f"SELECT * FROM {branch} WHERE a = 3") == [(3, "c2", None)]
    assert [f.name for f in spark.table(t).schema] == ["a", "b"]
    # The branch's own system tables, and time travel within it.
    assert _rows(spark, f"SELECT snapshot_id FROM {db}.`T$branch_test_branch$snapshots`") == [
        (2,),
        (3,),
        (4,),
    ]
    assert _rows(spark, f"SELECT a FROM {branch} VERSION AS OF 2 ORDER BY a") == [(1,), (2,)]
    # A tag on the branch, and a branch from a branch (Paimon's test).
    tag2 = f"CALL lake.sys.create_tag(table => '{name}.`T$branch_test_branch`', tag => 'test_tag2', snapshot => 3)"
    assert _rows(spark, tag2) == [(True,)]
    branch2 = (
        f"CALL lake.sys.create_branch(table => '{name}.`T$branch_test_branch`', branch => 'test_branch2', "
        "tag => 'test_tag2')"
    )
    assert _rows(spark, branch2) == [(True,)]
    assert _rows(spark, f"SELECT * FROM {db}.`T$branch_test_branch2` ORDER BY a") == [
        (1, "a"),
        (2, "b"),
        (3, "c"),
    ]
    assert _rows(spark, f"CALL lake.sys.create_branch('{name}.T', 'empty_branch')") == [(True,)]
    assert _rows(spark, f"SELECT * FROM {db}.`T$branch_empty_branch`") == []
    assert [r[0] for r in _rows(spark, f"SELECT branch_name FROM {db}.`T$branches`")] == [
        "empty_branch",
        "test_branch",
        "test_branch2",
    ]
    assert [f.name for f in spark.table(f"{db}.`T$branches`").schema] == ["branch_name", "create_time"]
    # pypaimon reads the branch stratalake wrote through Spark.
    ident = f"{name}.T$branch_test_branch"
    assert sorted((r["a"], r["b"]) for r in paimon_read(warehouse, ident).to_pylist()) == [
        (1, "a"),
        (2, "b"),
        (3, "c2"),
    ]

    # rename, delete, fast-forward: Paimon's arguments and answers.
    rename = (
        f"CALL lake.sys.rename_branch(table => '{name}.T', from_branch => 'test_branch2', to_branch => 'b3')"
    )
    assert _rows(spark, rename) == [(True,)]
    delete = f"CALL lake.sys.delete_branch(table => '{name}.T', branch => 'b3,empty_branch')"
    assert _rows(spark, delete) == [(True,)]
    assert _rows(spark, f"SELECT branch_name FROM {db}.`T$branches`") == [("test_branch",)]
    assert "does not exist" in _error(spark, f"SELECT * FROM {db}.`T$branch_b3`")
    forward = f"CALL lake.sys.fast_forward(table => '{name}.T', branch => 'test_branch')"
    assert _rows(spark, forward) == [(True,)]
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY a") == [(1, "a", None), (2, "b", None), (3, "c2", None)]
    assert _rows(spark, f"SELECT snapshot_id FROM {db}.`T$snapshots`") == [(1,), (2,), (3,), (4,)]


def test_bad_branch_arguments_are_refused_by_name(spark: Any, db: str) -> None:
    name = db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {db}.t (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='1')")
    spark.sql(f"INSERT INTO {db}.t VALUES (1, 'a')")
    spark.sql(f"CALL lake.sys.create_branch('{name}.t', 'b')")
    cases = {
        f"CALL lake.sys.create_branch('{name}.t', 'b')": ["table", f"{name}.t", "branch 'b' already exists"],
        f"CALL lake.sys.create_branch('{name}.t', 'main')": ["'main'", "default branch"],
        f"CALL lake.sys.create_branch('{name}.t', '123')": ["'123'", "only digits"],
        f"CALL lake.sys.create_branch('{name}.t', 'x', 'no_tag')": ["tag 'no_tag' does not exist"],
        f"CALL lake.sys.create_branch(table => '{name}.t', branch => 'x', ignoreIfExists => 'yes')": [
            "'ignoreIfExists'",
            "'yes'",
        ],
        f"CALL lake.sys.delete_branch('{name}.t', 'b,nope')": ["'nope'", "nothing was deleted"],
        f"CALL lake.sys.delete_branch('{name}.`t$branch_b`', 'b')": [
            "cannot delete branch 'b' through a handle"
        ],
        f"CALL lake.sys.rename_branch('{name}.t', 'nope', 'x')": ["branch 'nope' does not exist"],
        f"CALL lake.sys.fast_forward('{name}.t', 'main')": ["fast_forward needs a branch other than 'main'"],
        f"CALL lake.sys.fast_forward('{name}.t', 'b')": ["branch 'b'", "does not have a snapshot"],
        f"SELECT * FROM {db}.`t$branch_nope`": ["branch 'nope' does not exist", "branches are ['b']"],
    }
    for sql, words in cases.items():
        message = _error(spark, sql)
        for word in words:
            assert word in message, (sql, message)
    assert _rows(spark, f"SELECT branch_name FROM {db}.`t$branches`") == [("b",)]
    assert _rows(spark, f"SELECT * FROM {db}.t") == [(1, "a")]


def test_paimons_branch_read_option_is_refused_with_the_way_to_read_a_branch() -> None:
    with pytest.raises(UnsupportedError, match=r"table db\.t: read option 'branch': .*`t\$branch_<name>`"):
        check_read_options("db.t", {"branch": "b"})


def test_a_stream_of_a_branch_reads_its_changes_and_keeps_its_consumer_there(tmp_path: Path) -> None:
    """Spark's micro-batch calls played against the stream reader of ``t$branch_b`` (no session)."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["main"]}))
    t.create_branch("b")
    b = t.branch("b")
    b.write(pa.table({"id": [2], "v": ["b1"]}))
    options = {"warehouse": str(tmp_path / "wh"), "table": "db.t$branch_b", "consumer-id": "job"}
    reader = StrataLakeStreamReader(options, infer_schema(options))
    offset = reader.initialOffset()

    def batch() -> list[tuple[Any, ...]]:
        nonlocal offset
        end = reader.latestOffset(offset, reader.getDefaultReadLimit())
        out = [
            tuple(r.values())
            for p in reader.partitions(offset, end)
            for x in reader.read(p)
            for r in x.to_pylist()
        ]
        reader.commit(end)
        offset = end
        return sorted(out)

    assert batch() == [(2, "b1")]  # the branch's state, not main's
    t.write(pa.table({"id": [3], "v": ["main"]}))
    b.write(pa.table({"id": [4], "v": ["b2"]}))
    assert batch() == [(4, "b2")]
    # Paimon's ConsumerManager keeps a branch's consumers under the branch.
    assert b.consumers() == {"job": 3} and t.consumers() == {}
    assert (Path(t.location) / "branch" / "branch-b" / "consumer" / "consumer-job").exists()
