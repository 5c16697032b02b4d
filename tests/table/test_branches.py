"""Branches through the Python API: Paimon's layout (``branch/branch-<name>/``), create (empty or
from a tag), delete, rename, fast-forward, reads and writes of a branch, ``$branches``, and
``remove_orphan_files`` keeping the files only a branch uses.

Expected layouts and answers follow Paimon's ``FileSystemBranchManager`` and ``BranchesTable``."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    CorruptFileError,
    InvalidIdentifierError,
    InvalidOptionError,
    SnapshotNotFoundError,
    TagNotFoundError,
    UnsupportedError,
)
from stratalake.server import RestCatalogServer
from stratalake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def rows(t: Table) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in t.read().to_pylist())


def make(tmp_path: Path, primary_key: bool = True) -> tuple[stratalake.Catalog, Table]:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"] if primary_key else None, options={"bucket": "1"})
    return cat, t


def listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def test_create_from_tag_copies_tag_snapshot_and_schemas(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(batch([1, 2], "a"))
    t.create_tag("t1")
    cat.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.max", "10")])
    t = t.refresh()
    t.write(batch([3], "b"))
    assert t.create_branch("b", tag="t1") is True
    root = Path(t.location) / "branch" / "branch-b"
    # As FileSystemBranchManager.createBranch(branch, tag): the tag, its snapshot, the schemas up
    # to the snapshot's (schema-1 came later and is not copied).
    assert listing(root) == ["schema/schema-0", "snapshot/snapshot-1", "tag/tag-t1"]
    assert (root / "snapshot" / "snapshot-1").read_bytes() == (
        Path(t.location) / "snapshot" / "snapshot-1"
    ).read_bytes()
    assert t.branches() == ["b"]
    b = cat.get_table("db.t$branch_b")
    assert b.current_branch == "b" and b.identifier == "db.t$branch_b"
    assert rows(b) == [(1, "a1"), (2, "a2")]
    assert b.schema().id == 0
    # Writes to the branch: its own snapshot 2, data files under the table root, main unchanged.
    assert b.write(batch([2, 4], "c")) == 2
    assert rows(b) == [(1, "a1"), (2, "c2"), (4, "c4")]
    assert rows(t.refresh()) == [(1, "a1"), (2, "a2"), (3, "b3")]
    assert (root / "snapshot" / "snapshot-2").exists()
    assert not (root / "bucket-0").exists() and not (root / "manifest").exists()
    assert b.tags().keys() == {"t1"} and [s.id for s in b.snapshots()] == [1, 2]
    # table.branch() and the identifier are the same handle; 'main' is the table itself.
    assert rows(t.branch("b")) == rows(b)
    assert rows(b.branch("main")) == rows(t) and b.branch("main").identifier == "db.t"
    assert rows(cat.get_table("db.t$branch_main")) == rows(t)


def test_create_from_a_tag_whose_snapshot_expired_writes_the_snapshot_from_the_tag(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("t1", time_retained="1 d")  # a tag file with Paimon's tag fields
    t.write(batch([2], "a"))
    t.write(batch([3], "a"))
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    t.create_branch("b", "t1")
    root = Path(t.location) / "branch" / "branch-b"
    written = json.loads((root / "snapshot" / "snapshot-1").read_text())
    assert written["id"] == 1 and "tagCreateTime" not in written and "tagTimeRetained" not in written
    assert (root / "tag" / "tag-t1").read_bytes() == (Path(t.location) / "tag" / "tag-t1").read_bytes()
    assert rows(t.branch("b")) == [(1, "a1")]


def test_create_empty_branch_copies_every_schema_and_no_snapshot(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    cat.alter_table("db.t", [SchemaChange.add_column("w", "INT")])
    t = t.refresh()
    t.create_branch("e")
    root = Path(t.location) / "branch" / "branch-e"
    assert listing(root) == ["schema/schema-0", "schema/schema-1"]
    e = t.branch("e")
    assert e.latest_snapshot() is None and e.read().num_rows == 0
    assert e.schema().field_names == ("id", "v", "w")
    e.write(pa.table({"id": pa.array([7], pa.int64()), "v": ["x"], "w": pa.array([1], pa.int32())}))
    assert e.read().to_pylist() == [{"id": 7, "v": "x", "w": 1}]
    assert t.refresh().read().num_rows == 1
    # A schema change of the branch stays on the branch.
    cat.alter_table("db.t$branch_e", [SchemaChange.add_column("z", "STRING")])
    assert cat.get_table("db.t$branch_e").schema().field_names == ("id", "v", "w", "z")
    assert t.refresh().schema().field_names == ("id", "v", "w")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("main", "default branch"),
        ("", "non-blank"),
        ("  ", "non-blank"),
        ("123", "only digits"),
        ("a/b", "'/'"),
        ("..", "'.'"),
        ("a$b", "'$'"),
        ("a.b", "'.'"),
    ],
)
def test_invalid_branch_names_are_refused(tmp_path: Path, name: str, words: str) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    with pytest.raises(InvalidIdentifierError) as err:
        t.create_branch(name)
    assert "db.t" in str(err.value) and repr(name) in str(err.value) and words in str(err.value)
    assert not (Path(t.location) / "branch").exists()


def test_existing_branch_and_unknown_tag_leave_the_table_unchanged(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_branch("b")
    before = listing(Path(t.location))
    with pytest.raises(BranchAlreadyExistsError, match=r"db\.t: branch 'b' already exists"):
        t.create_branch("b")
    assert t.create_branch("b", ignore_if_exists=True) is False
    with pytest.raises(TagNotFoundError, match="tag 'nope' does not exist"):
        t.create_branch("c", tag="nope")
    assert listing(Path(t.location)) == before


def test_unknown_branch_is_refused_by_name(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.create_branch("b")
    for open_it in (lambda: t.branch("x"), lambda: cat.get_table("db.t$branch_x")):
        with pytest.raises(
            BranchNotFoundError, match=r"table db\.t: branch 'x' does not exist; branches are \['b'\]"
        ):
            open_it()
    assert cat.table_exists("db.t$branch_b") and not cat.table_exists("db.t$branch_x")
    for bad in (t.delete_branch, t.fast_forward):
        with pytest.raises(BranchNotFoundError, match="branch 'x' does not exist"):
            bad("x")
    with pytest.raises(BranchNotFoundError, match="branch 'x' does not exist"):
        t.rename_branch("x", "y")
    with pytest.raises(InvalidIdentifierError, match="one '\\$' separator"):
        cat.get_table("db.t$files$x")


def test_delete_branch(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("t1")
    t.create_branch("b", "t1")
    b = t.branch("b")
    with pytest.raises(
        InvalidIdentifierError, match="cannot delete branch 'b' through a handle on that branch"
    ):
        b.delete_branch("b")
    with pytest.raises(InvalidIdentifierError, match="cannot delete the main branch"):
        b.delete_branch("main")
    t.delete_branch("b")
    assert t.branches() == [] and not (Path(t.location) / "branch" / "branch-b").exists()
    assert rows(t) == [(1, "a1")] and t.tags().keys() == {"t1"}
    with pytest.raises(BranchNotFoundError):
        cat.get_table("db.t$branch_b")


def test_rename_branch(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_branch("b")
    t.branch("b").write(batch([5], "b"))
    t.create_branch("other")
    t.rename_branch("b", "c")
    assert t.branches() == ["c", "other"]
    assert rows(cat.get_table("db.t$branch_c")) == [(5, "b5")]
    with pytest.raises(BranchAlreadyExistsError, match="branch 'other' already exists"):
        t.rename_branch("c", "other")
    with pytest.raises(InvalidIdentifierError, match="cannot rename the main branch"):
        t.rename_branch("main", "x")
    with pytest.raises(InvalidIdentifierError, match="only digits"):
        t.rename_branch("c", "42")
    assert t.branches() == ["c", "other"]


def test_fast_forward_replaces_mains_newer_metadata(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))  # snapshot 1
    t.create_tag("t1")
    t.write(batch([2], "a"))  # snapshot 2
    t.create_tag("t2")
    t.write(batch([3], "a"))  # snapshot 3
    t.create_branch("b", "t1")
    b = t.branch("b")
    b.write(batch([9], "b"))  # branch snapshot 2
    b.create_tag("bt")
    with pytest.raises(InvalidIdentifierError, match="fast_forward needs a branch other than 'main'"):
        t.fast_forward("main")
    with pytest.raises(InvalidIdentifierError, match="fast-forward from the current branch 'b'"):
        b.fast_forward("b")
    t.fast_forward("b")
    main = t.refresh()
    # Snapshots >= 1 (the branch's earliest) and tags on them were replaced by the branch's.
    assert [s.id for s in main.snapshots()] == [1, 2]
    assert main.latest_snapshot().id == 2  # type: ignore[union-attr]
    assert rows(main) == [(1, "a1"), (9, "b9")]
    assert sorted(main.tags()) == ["bt", "t1"]
    assert rows(main) == rows(t.branch("b"))
    # Main goes on from there.
    main.write(batch([4], "m"))
    assert rows(main) == [(1, "a1"), (4, "m4"), (9, "b9")]


def test_fast_forward_of_a_branch_without_snapshots_is_refused(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_branch("e")
    before = listing(Path(t.location))
    with pytest.raises(SnapshotNotFoundError, match="branch 'e', because it does not have a snapshot"):
        t.fast_forward("e")
    assert listing(Path(t.location)) == before


def test_branches_system_table(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.create_branch("b2")
    t.create_branch("a1")
    got = t.system_table("branches")
    assert got.schema.names == ["branch_name", "create_time"]
    assert [f.nullable for f in got.schema] == [False, False]
    assert got.column("branch_name").to_pylist() == ["a1", "b2"]
    mtime = os.stat(Path(t.location) / "branch" / "branch-a1").st_mtime
    assert abs(got.column("create_time")[0].as_py().timestamp() - mtime) < 0.01


def test_remove_orphan_files_keeps_files_only_a_branch_uses(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("t1")
    t.create_branch("b", "t1")
    b = t.branch("b")
    b.write(batch([2], "b"))
    t.create_branch("gone")
    t.branch("gone").write(batch([3], "g"))
    gone_files = {e.file.file_name for e in t.branch("gone").live_entries(t.branch("gone").latest_snapshot())}  # type: ignore[arg-type]
    t.delete_branch("gone")
    future = int(time.time() * 1000) + 60_000
    removed = t.remove_orphan_files(older_than_ms=future)
    assert rows(t.branch("b")) == [(1, "a1"), (2, "b2")]
    assert rows(t) == [(1, "a1")]
    # The deleted branch's data files (and its manifests) were orphans; no live file went.
    assert gone_files <= {Path(p).name for p in removed}
    assert t.branch("b").remove_orphan_files(older_than_ms=future) == []


def test_branch_options_are_refused_by_name(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_branch("b")
    t.create_branch("p")
    with pytest.raises(InvalidOptionError, match="'branch' selects the branch Paimon reads and writes"):
        cat.create_table("db.u", SCHEMA, options={"branch": "b"})
    # A table Paimon set it on is refused by name, not read without its fallback.
    schema = t.schema()
    options = {**schema.options, "scan.fallback-branch": "b", "scan.primary-branch": "p"}
    assert t.schema_manager.try_commit(dataclasses.replace(schema, id=schema.id + 1, options=options))
    with pytest.raises(UnsupportedError, match=r"db\.t .*'scan\.primary-branch'='p'"):
        cat.get_table("db.t").read()
    with pytest.raises(InvalidIdentifierError, match=r"configured as 'scan\.fallback-branch'"):
        cat.get_table("db.t").delete_branch("b")
    with pytest.raises(UnsupportedError, match=r"'scan\.primary-branch'='p'.*cannot delete branches of it"):
        cat.get_table("db.t").delete_branch("p")
    assert cat.get_table("db.t").branches() == ["b", "p"]


def test_remove_orphan_files_aborts_on_a_branch_without_schemas(tmp_path: Path) -> None:
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("t1")
    t.create_branch("b", "t1")
    t.branch("b").write(batch([2], "b"))
    # Paimon Java creates a branch from a tag by copying the tag and snapshot first, schemas last.
    half = Path(t.location) / "branch" / "branch-half"
    (half / "snapshot").mkdir(parents=True)
    (half / "snapshot" / "snapshot-2").write_bytes(
        (Path(t.location) / "branch" / "branch-b" / "snapshot" / "snapshot-2").read_bytes()
    )
    t.delete_branch("b")
    before = listing(Path(t.location))
    with pytest.raises(
        CorruptFileError, match=r"branches \['half'\] have no schemas, so orphan files cleaning was aborted"
    ):
        t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert listing(Path(t.location)) == before


def test_branches_through_a_jdbc_catalog_keep_its_commit_lock(tmp_path: Path) -> None:
    uri = f"jdbc:sqlite:{tmp_path / 'catalog.db'}"
    cat = stratalake.Catalog(str(tmp_path / "wh"), {"metastore": "jdbc", "uri": uri, "lock.enabled": "true"})
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(batch([1], "a"))
    t.create_branch("b")
    b = cat.get_table("db.t$branch_b")
    # The catalog's locking FileIO commits the branch too.
    assert type(b.file_io) is type(t.file_io) and type(t.file_io).__name__ == "LockedFileIO"
    b.write(batch([2], "b"))
    assert rows(cat.get_table("db.t$branch_b")) == [(2, "b2")] and rows(t) == [(1, "a1")]


def test_branches_of_a_rest_catalog_table_are_refused(tmp_path: Path) -> None:
    fs = stratalake.Catalog(str(tmp_path / "wh"))
    fs.create_database("db")
    fs.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"}).write(batch([1], "a"))
    fs.get_table("db.t").create_branch("b")
    with RestCatalogServer(fs, token="tok") as server:
        cat = stratalake.Catalog(
            "wh", {"metastore": "rest", "uri": server.url, "token.provider": "bear", "token": "tok"}
        )
        t = cat.get_table("db.t")
        for refused in (
            lambda: cat.get_table("db.t$branch_b"),
            lambda: t.branch("b"),
            lambda: t.refresh().create_branch("c"),
        ):
            with pytest.raises(
                UnsupportedError,
                match=r"db\.t.*branches of a table in a REST catalog are managed by the server",
            ):
                refused()
    assert fs.get_table("db.t").branches() == ["b"]


def test_expiration_and_tag_deletion_on_main_keep_the_files_a_branch_reads(tmp_path: Path) -> None:
    """Unlike Paimon's, which look at the current branch only and would break both branches."""
    _cat, t = make(tmp_path)
    t.write(batch([1], "a"))  # snapshot 1
    t.create_tag("t1")
    t.create_branch("b", "t1")
    t.delete_tag("t1")
    t.write(batch([2], "a"), overwrite=True)  # snapshot 2: snapshot 1's file no longer live on main
    t.create_tag("t2")
    t.create_branch("c", "t2")
    t.write(batch([3], "a"), overwrite=True)  # snapshot 3
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    t.delete_tag("t2")  # the tag kept snapshot 2's file after its snapshot expired
    assert [s.id for s in t.snapshots()] == [3] and t.tags() == {}
    assert rows(t.branch("b")) == [(1, "a1")]
    assert rows(t.branch("c")) == [(2, "a2")]
    t.delete_branch("b")
    t.delete_branch("c")
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert rows(t) == [(3, "a3")]


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(["main", "x", "y"]), st.integers(0, 5)),
        st.tuples(st.just("branch"), st.sampled_from(["x", "y"]), st.booleans()),
        st.tuples(st.just("delete"), st.sampled_from(["x", "y"]), st.integers(0, 5)),
        st.tuples(st.just("rename"), st.sampled_from(["x", "y"]), st.integers(0, 5)),
        st.tuples(st.just("forward"), st.sampled_from(["x", "y"]), st.integers(0, 5)),
        st.tuples(st.just("expire"), st.just("main"), st.integers(0, 5)),
        st.tuples(st.just("orphans"), st.just("main"), st.integers(0, 5)),
    ),
    max_size=10,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_branches_against_a_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str, Any]]
) -> None:
    """Each branch is a dict of rows: created empty or from a tag of main's latest state,
    renamed, fast-forwarded into main; expiring main and removing orphans never change what any
    branch reads."""
    _cat, t = make(tmp_path_factory.mktemp("model"))
    model: dict[str, dict[int, str]] = {"main": {}}
    has_snapshot = {"main": False}
    for n, (op, name, arg) in enumerate(ops):
        other = "y" if name == "x" else "x"
        if op == "write" and name in model:
            t.branch(name).write(batch([arg], f"w{n}-"))
            model[name][arg] = f"w{n}-{arg}"
            has_snapshot[name] = True
        elif op == "branch" and name not in model:
            if arg and has_snapshot["main"]:  # from a tag of main's latest snapshot
                t.create_tag(f"tag{n}")
                t.create_branch(name, tag=f"tag{n}")
                model[name], has_snapshot[name] = dict(model["main"]), True
            else:
                t.create_branch(name)
                model[name], has_snapshot[name] = {}, False
        elif op == "delete" and name in model:
            t.delete_branch(name)
            del model[name]
        elif op == "rename" and name in model and other not in model:
            t.rename_branch(name, other)
            model[other], has_snapshot[other] = model.pop(name), has_snapshot[name]
        elif op == "forward" and name in model:
            if not has_snapshot[name]:
                with pytest.raises(SnapshotNotFoundError):
                    t.fast_forward(name)
            else:
                t.fast_forward(name)
                t = t.refresh()
                model["main"], has_snapshot["main"] = dict(model[name]), True
        elif op == "expire":
            t.expire_snapshots(retain_max=1, retain_min=1)
        elif op == "orphans":
            t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
        assert sorted(t.branches()) == sorted(b for b in model if b != "main")
        for branch, expected in model.items():
            assert rows(t.branch(branch)) == sorted(expected.items()), (branch, ops[: n + 1])
