"""``scan.fallback-branch`` across engines with Paimon's Java implementation (its
``FallbackReadFileStoreTable``, wrapped around a table by ``FileStoreTableFactory``): a table on
which Paimon Java sets the option and writes both branches reads the same in stratalake as in Java,
latest and by snapshot id; and a table stratalake sets it on reads the same in Java. Run by
``make test-paimon-java``."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from tests.interop_java.paimon_java import RELEASES, branch, read_tables

pytestmark = pytest.mark.paimon_java

# Paimon 1.0.1 cannot read such tables itself (it looks for main's schema file in the fallback
# branch), so the latest release is the one compared.
# PaimonBranch.java writes rows (id BIGINT, v STRING): partitioned by v, each v is a partition.
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def ours(t: stratalake.Table, snapshot_id: int | None = None) -> list[tuple[str, str]]:
    return sorted((str(r["id"]), str(r["v"])) for r in t.read(snapshot_id=snapshot_id).to_pylist())


def batch(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)})


@pytest.mark.parametrize("release", [RELEASES[-1]])
@pytest.mark.parametrize("keyed", [False, True])
def test_java_fallback_table_read_by_stratalake(tmp_path: Path, release: str, keyed: bool) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    options = {"bucket": "1"} if keyed else {}
    cat.create_table(
        "db.t", SCHEMA, primary_key=["id", "v"] if keyed else None, partition_keys=["v"], options=options
    )
    branch(release, wh, "db.t", "create", "fb")
    branch(release, wh, "db.t$branch_fb", "write", "10", "p1")
    branch(release, wh, "db.t$branch_fb", "write", "20", "p2")
    branch(release, wh, "db.t", "set", "scan.fallback-branch", "fb")
    time.sleep(0.01)
    branch(release, wh, "db.t", "write", "1", "p1")  # main snapshot 1
    time.sleep(0.01)
    branch(release, wh, "db.t$branch_fb", "write", "30", "p3")
    branch(release, wh, "db.t", "write", "2", "p1")
    t = cat.get_table("db.t")
    assert t.options()["scan.fallback-branch"] == "fb"
    first = t.snapshots()[0].id
    java = read_tables(release, wh, ["db.t", "db.t$branch_fb", f"db.t@scan.snapshot-id={first}"])
    expected = [("1", "p1"), ("2", "p1"), ("20", "p2"), ("30", "p3")]
    assert java["db.t"] == ours(t) == expected
    assert java["db.t$branch_fb"] == ours(t.branch("fb")) == [("10", "p1"), ("20", "p2"), ("30", "p3")]
    # Main's first snapshot: the fallback branch as it was then (Paimon's snapshot-id mapping by time).
    assert java[f"db.t@scan.snapshot-id={first}"] == ours(t, first) == [("1", "p1"), ("20", "p2")]


@pytest.mark.parametrize("release", [RELEASES[-1]])
def test_stratalake_fallback_table_read_by_java(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", SCHEMA, primary_key=["id", "v"], partition_keys=["v"], options={"bucket": "2"}
    )
    t.create_branch("fb")
    t.branch("fb").write(pa.concat_tables([batch([10, 11], "p1"), batch([20], "p2")]))
    t.branch("fb").write(batch([11, 21], "p2"))
    t = cat.alter_table("db.t", [stratalake.SchemaChange.set_option("scan.fallback-branch", "fb")])
    t.write(batch([1], "p1"))
    t.write(batch([3], "p3"))
    expected = [("1", "p1"), ("11", "p2"), ("20", "p2"), ("21", "p2"), ("3", "p3")]
    assert ours(t) == expected
    assert read_tables(release, wh, ["db.t"])["db.t"] == expected
