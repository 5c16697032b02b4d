"""Branches across engines with Paimon's Java implementation: a branch Paimon Java creates (from a
tag, or empty) and writes is listed and read by stratalake, and a branch stratalake creates and
writes is listed, read, written and fast-forwarded by Java. Run by ``make test-paimon-java``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from tests.interop_java.paimon_java import RELEASES, branch, read_tables, tag

pytestmark = pytest.mark.paimon_java

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def ours(t: stratalake.Table) -> list[tuple[str, str]]:
    return sorted((str(r["id"]), str(r["v"])) for r in t.read().to_pylist())


@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]])
def test_java_branches_read_by_stratalake(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(batch([1, 2], "a"))
    tag(release, wh, "db.t", "create", "t1", 1)
    t.write(batch([3], "a"))
    branch(release, wh, "db.t", "create", "jb", "t1")
    branch(release, wh, "db.t", "create", "je")
    branch(release, wh, "db.t$branch_jb", "write", "2", "java")
    branch(release, wh, "db.t$branch_je", "write", "9", "empty")
    t = t.refresh()
    assert t.branches() == ["jb", "je"]
    assert ours(cat.get_table("db.t$branch_jb")) == [("1", "a1"), ("2", "java")]
    assert ours(t.branch("je")) == [("9", "empty")]
    assert ours(t) == [("1", "a1"), ("2", "a2"), ("3", "a3")]
    # Our writes on Java's branch, and orphan removal from main, leave it readable by Java.
    t.branch("jb").write(batch([4], "s"))
    t.remove_orphan_files(older_than_ms=2**62)
    got = read_tables(release, wh, ["db.t$branch_jb", "db.t$branch_je"])
    assert got["db.t$branch_jb"] == [("1", "a1"), ("2", "java"), ("4", "s4")]
    assert got["db.t$branch_je"] == [("9", "empty")]


@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]])
def test_stratalake_branches_used_by_java(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(batch([1, 2], "a"))
    t.create_tag("t1")
    t.write(batch([3], "a"))
    t.create_branch("sb", tag="t1")
    t.create_branch("se")
    t.branch("sb").write(batch([2, 5], "s"))
    assert sorted(branch(release, wh, "db.t", "list").split()) == ["sb", "se"]
    got = read_tables(release, wh, ["db.t$branch_sb", "db.t$branch_se"])
    assert got["db.t$branch_sb"] == [("1", "a1"), ("2", "s2"), ("5", "s5")]
    assert got["db.t$branch_se"] == []
    # Java writes on our branch, deletes the empty one, and fast-forwards main to ours.
    branch(release, wh, "db.t$branch_sb", "write", "6", "java")
    branch(release, wh, "db.t", "delete", "se")
    branch(release, wh, "db.t", "fastforward", "sb")
    t = cat.get_table("db.t")
    assert t.branches() == ["sb"]
    expected = [("1", "a1"), ("2", "s2"), ("5", "s5"), ("6", "java")]
    assert ours(t) == ours(t.branch("sb")) == expected
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert read_tables(release, wh, ["db.t"])["db.t"] == expected
