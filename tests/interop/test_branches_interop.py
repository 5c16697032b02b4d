"""Branches with pypaimon 2.1.0, both ways: a branch stratalake creates and writes is listed, read
and written by pypaimon (``db.t$branch_b``), and a branch pypaimon creates and writes is read by
stratalake; fast-forward and remove_orphan_files leave tables pypaimon reads as stratalake does."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake

from .paimon_oracle import paimon_create_table, paimon_read, paimon_table, paimon_write, sorted_rows

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def batch(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def ours(wh: Path, ident: str) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in stratalake.Catalog(str(wh)).get_table(ident).read().to_pylist())


def theirs(wh: Path, ident: str) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in paimon_read(wh, ident).to_pylist())


def test_stratalake_branches_read_and_written_by_pypaimon(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    cat = stratalake.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(batch([1, 2], "a"))
    t.create_tag("t1")
    t.write(batch([3], "a"))
    t.create_branch("b", tag="t1")
    t.create_branch("e")
    t.branch("b").write(batch([2, 4], "b"))
    assert sorted(paimon_table(wh, "db.t").branch_manager().branches()) == ["b", "e"]
    assert theirs(wh, "db.t$branch_b") == ours(wh, "db.t$branch_b") == [(1, "a1"), (2, "b2"), (4, "b4")]
    assert theirs(wh, "db.t") == [(1, "a1"), (2, "a2"), (3, "a3")]
    assert paimon_read(wh, "db.t$branch_e").num_rows == 0
    # $branches as pypaimon's BranchesTable shows it (its order is the listing's; ours is sorted).
    theirs_branches = sorted(paimon_read(wh, "db.t$branches").to_pylist(), key=lambda r: r["branch_name"])
    assert t.system_table("branches").to_pylist() == theirs_branches
    # pypaimon writes on top of stratalake's branch snapshot; both read the merge.
    paimon_write(wh, "db.t$branch_b", batch([4, 5], "p"))
    assert (
        ours(wh, "db.t$branch_b")
        == theirs(wh, "db.t$branch_b")
        == [(1, "a1"), (2, "b2"), (4, "p4"), (5, "p5")]
    )
    # After fast-forward and orphan removal, main is the branch for both readers.
    t.delete_branch("e")
    t.fast_forward("b")
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert theirs(wh, "db.t") == ours(wh, "db.t") == [(1, "a1"), (2, "b2"), (4, "p4"), (5, "p5")]
    assert theirs(wh, "db.t$branch_b") == ours(wh, "db.t$branch_b")


def test_pypaimon_branches_read_by_stratalake(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    paimon_create_table(wh, "db.t", SCHEMA, ["id"], options={"bucket": "1"})
    paimon_write(wh, "db.t", batch([1, 2], "a"))
    table = paimon_table(wh, "db.t")
    table.create_tag("t1")
    paimon_write(wh, "db.t", batch([3], "a"))
    table.branch_manager().create_branch("b", "t1")
    table.branch_manager().create_branch("e")
    paimon_write(wh, "db.t$branch_b", batch([1, 7], "p"))
    paimon_write(wh, "db.t$branch_e", batch([8], "e"))
    t = stratalake.Catalog(str(wh)).get_table("db.t")
    assert t.branches() == ["b", "e"]
    assert t.system_table("branches").column("branch_name").to_pylist() == ["b", "e"]
    assert ours(wh, "db.t$branch_b") == theirs(wh, "db.t$branch_b") == [(1, "p1"), (2, "a2"), (7, "p7")]
    assert ours(wh, "db.t$branch_e") == [(8, "e8")]
    assert t.branch("b").tags().keys() == {"t1"}
    # Orphan removal from main must keep every file pypaimon's branches use.
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert theirs(wh, "db.t$branch_e") == [(8, "e8")]
    assert sorted_rows(paimon_read(wh, "db.t$branch_b"), ["id"]) == sorted_rows(
        stratalake.Catalog(str(wh)).get_table("db.t$branch_b").read(), ["id"]
    )


def test_branch_from_a_tag_whose_snapshot_expired_is_read_by_pypaimon(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    cat = stratalake.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(batch([1, 2], "a"))
    t.create_tag("t1", time_retained="1 d")
    t.write(batch([2], "b"))
    t.write(batch([3], "b"))
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    t.create_branch("b", "t1")
    assert theirs(wh, "db.t$branch_b") == ours(wh, "db.t$branch_b") == [(1, "a1"), (2, "a2")]
