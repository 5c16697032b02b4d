"""``scan.fallback-branch`` through the Python API: a batch read takes each partition from the
table's branch when it has the partition, else from the fallback branch, as Paimon's
``FallbackReadFileStoreTable`` (its docs' example, ``FallbackReadFileStoreTableTest``); setting
the option needs an existing branch (``SchemaValidation.validateFallbackBranch``); the branches
must have the same row type (``validateSchema``); time travel by snapshot id maps to the fallback
branch's snapshot by time (``rewriteOtherOptions``)."""

from __future__ import annotations

import dataclasses
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
    BranchNotFoundError,
    InvalidOptionError,
    SchemaError,
    SnapshotNotFoundError,
    TagNotFoundError,
    UnsupportedError,
)
from stratalake.expressions import field
from stratalake.read.scan import TableScan
from stratalake.table import Table

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        ("amount", pa.int64()),
    ]
)


def rows(dt: str, *pairs: tuple[str, int]) -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(pairs), "name": [n for n, _ in pairs], "amount": [a for _, a in pairs]},
        schema=SCHEMA,
    )


def result(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def make(
    tmp_path: Path, primary_key: list[str] | None = None, **options: str
) -> tuple[stratalake.Catalog, Table]:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", SCHEMA, primary_key=primary_key, partition_keys=["dt"], options=options)
    return cat, t


def set_fallback(cat: stratalake.Catalog, branch: str | None, ident: str = "db.t") -> Table:
    change = (
        SchemaChange.set_option("scan.fallback-branch", branch)
        if branch is not None
        else SchemaChange.remove_option("scan.fallback-branch")
    )
    return cat.alter_table(ident, [change])


def test_paimon_docs_example(tmp_path: Path) -> None:
    """Paimon's manage-branches page: today's partition comes from the streaming branch."""
    cat, t = make(tmp_path)
    t.create_branch("test")
    t.branch("test").write(
        pa.concat_tables(
            [rows("20240725", ("apple", 4), ("peach", 10)), rows("20240726", ("cherry", 3), ("pear", 6))]
        )
    )
    t = set_fallback(cat, "test")
    t.write(rows("20240725", ("apple", 5), ("banana", 7)))
    expected = [
        ("20240725", "apple", 5),
        ("20240725", "banana", 7),
        ("20240726", "cherry", 3),
        ("20240726", "pear", 6),
    ]
    assert result(t.read()) == expected
    assert result(cat.get_table("db.t").read()) == expected
    # Projection and the low-level scan API give the same answer.
    assert sorted(t.read(columns=["name"]).column("name").to_pylist()) == [
        "apple",
        "banana",
        "cherry",
        "pear",
    ]
    splits = t.new_scan().plan()
    assert {s.branch for s in splits} == {None, "test"}
    assert result(t.new_read().read_splits(splits)) == expected
    # The branch itself is read alone; writes went to main only.
    assert result(t.branch("test").read()) == [
        ("20240725", "apple", 4),
        ("20240725", "peach", 10),
        ("20240726", "cherry", 3),
        ("20240726", "pear", 6),
    ]
    # Partitions as a read sees them (Paimon's listPartitionEntries of the fallback scan).
    assert t.partitions() == [{"dt": "20240725"}, {"dt": "20240726"}]
    listed = t.system_table("partitions").to_pylist()
    assert [(r["partition"], r["record_count"]) for r in listed] == [("dt=20240725", 2), ("dt=20240726", 2)]
    assert t.drop_partitions([{"dt": "20240726"}]) is None  # main has no such partition to drop
    # Unset: main alone again.
    t = set_fallback(cat, None)
    assert result(t.read()) == expected[:2]
    assert t.partitions() == [{"dt": "20240725"}]
    assert [r["partition"] for r in t.system_table("partitions").to_pylist()] == ["dt=20240725"]


def test_primary_key_tables_merge_within_their_branch(tmp_path: Path) -> None:
    cat, t = make(tmp_path, primary_key=["dt", "name"], bucket="2")
    t.create_branch("s")
    s = t.branch("s")
    s.write(rows("d1", ("a", 1)))
    s.write(rows("d1", ("a", 2), ("b", 1)))
    s.write(rows("d2", ("c", 1)))
    s.write(rows("d2", ("c", 9)))
    t = set_fallback(cat, "s")
    t.write(rows("d1", ("x", 1)))
    assert result(t.read()) == [("d1", "x", 1), ("d2", "c", 9)]
    # A later write of d2 to main replaces the whole partition.
    t.write(rows("d2", ("y", 1)))
    assert result(t.read()) == [("d1", "x", 1), ("d2", "y", 1)]


def test_filters_decide_complete_partitions_by_partition_filter_only(tmp_path: Path) -> None:
    """A main partition is complete even when the data filter leaves nothing of it (Paimon's fix of
    FallbackReadScan#plan mixing partition and data filters)."""
    cat, t = make(tmp_path)
    t.create_branch("s")
    t.branch("s").write(pa.concat_tables([rows("d1", ("a", 100)), rows("d2", ("b", 100))]))
    t = set_fallback(cat, "s")
    t.write(rows("d1", ("a", 1)))
    assert result(t.read(filter=field("amount") > 50)) == [("d2", "b", 100)]
    assert result(t.read(filter=field("dt") == "d2")) == [("d2", "b", 100)]
    assert result(t.read(filter=field("dt") == "d1")) == [("d1", "a", 1)]
    assert result(t.read(filter=(field("dt") == "d1") & (field("amount") > 50))) == []


def test_non_partitioned_table_reads_fallback_only_while_main_is_empty(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["name"], options={"bucket": "1"})
    t.create_branch("s")
    t.branch("s").write(rows("d", ("a", 1), ("b", 2)))
    t = set_fallback(cat, "s")
    assert result(t.read()) == [("d", "a", 1), ("d", "b", 2)]
    t.write(rows("d", ("c", 3)))
    assert result(t.read()) == [("d", "c", 3)]


def test_time_travel_by_snapshot_maps_to_the_fallback_snapshot_by_time(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.create_branch("s")
    t.branch("s").write(rows("d2", ("old", 1)))  # branch snapshot 1
    time.sleep(0.01)
    t = set_fallback(cat, "s")
    main1 = t.write(rows("d1", ("m", 1)))
    time.sleep(0.01)
    t.branch("s").write(rows("d3", ("new", 1)))  # branch snapshot 2, after main's 1
    time.sleep(0.01)
    t.write(rows("d1", ("m", 2)))
    assert main1 is not None
    assert result(t.read(snapshot_id=main1)) == [("d1", "m", 1), ("d2", "old", 1)]
    assert result(t.read()) == [("d1", "m", 1), ("d1", "m", 2), ("d2", "old", 1), ("d3", "new", 1)]
    # By time: each branch at its newest snapshot at or before that time.
    at = t.snapshot(main1).time_millis
    assert result(t.read(timestamp_ms=at)) == [("d1", "m", 1), ("d2", "old", 1)]


def test_time_travel_before_every_fallback_snapshot_reads_its_snapshot_1(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(rows("d1", ("m", 1)))  # main snapshot 1, older than the branch
    t.create_branch("s")
    t.branch("s").write(rows("d2", ("b", 1)))
    t = set_fallback(cat, "s")
    # Paimon reads the fallback branch at snapshot 1 when it has none as old as main's.
    assert result(t.read(snapshot_id=1)) == [("d1", "m", 1), ("d2", "b", 1)]
    # A branch made from a tag starts at the tag's snapshot: no snapshot 1 to read.
    t.write(rows("d1", ("m", 2)))
    t.create_tag("v2")
    t.create_branch("late", "v2")
    t.branch("late").write(rows("d3", ("l", 1)))
    t = set_fallback(cat, "late")
    with pytest.raises(
        SnapshotNotFoundError, match=r"older than every snapshot of its 'scan\.fallback-branch' 'late'"
    ):
        t.read(snapshot_id=1)


def test_tags_read_the_fallback_branch_at_its_tag_of_the_same_name(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.create_branch("s")
    s = t.branch("s")
    s.write(rows("d2", ("old", 1)))
    s.create_tag("v1")
    s.write(rows("d2", ("new", 2)))
    t = set_fallback(cat, "s")
    t.write(rows("d1", ("m", 1)))
    t.create_tag("v1")
    t.write(rows("d1", ("m", 2)))
    assert result(t.read(tag="v1")) == [("d1", "m", 1), ("d2", "old", 1)]
    # The branch's tagged snapshot expired: its tag's own copy is read (as Paimon's tag scans).
    assert s.expire_snapshots(retain_max=1, retain_min=1) >= 1
    assert result(t.read(tag="v1", columns=["name"])) == [("m",), ("old",)]
    t.create_tag("v2")
    with pytest.raises(TagNotFoundError, match=r"tag 'v2' does not exist in its 'scan\.fallback-branch' 's'"):
        t.read(tag="v2")


def test_setting_needs_an_existing_branch(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.write(rows("d1", ("a", 1)))
    with pytest.raises(
        InvalidOptionError, match=r"cannot set 'scan\.fallback-branch' = 'nope' because the branch"
    ):
        set_fallback(cat, "nope")
    assert "scan.fallback-branch" not in cat.get_table("db.t").options()
    with pytest.raises(InvalidOptionError, match="a new table has no branches"):
        cat.create_table("db.u", SCHEMA, options={"scan.fallback-branch": "b"})
    assert not cat.table_exists("db.u")
    with pytest.raises(InvalidOptionError, match=r"'scan\.fallback-branch'.*not a valid branch name"):
        set_fallback(cat, "a/b")
    # A branch may fall back to main.
    t.create_branch("b")
    b = set_fallback(cat, "main", "db.t$branch_b")
    b.write(rows("d2", ("b", 1)))
    assert result(b.read()) == [("d1", "a", 1), ("d2", "b", 1)]
    assert result(cat.get_table("db.t").read()) == [("d1", "a", 1)]


def test_a_missing_fallback_branch_fails_the_read_by_name(tmp_path: Path) -> None:
    """Paimon logs an error and reads main alone; stratalake refuses rather than lose partitions."""
    _cat, t = make(tmp_path)
    t.write(rows("d1", ("a", 1)))
    schema = t.schema()
    options = {**schema.options, "scan.fallback-branch": "gone"}
    assert t.schema_manager.try_commit(dataclasses.replace(schema, id=schema.id + 1, options=options))
    with pytest.raises(
        BranchNotFoundError, match=r"'scan\.fallback-branch'='gone' names branch 'gone', which does not exist"
    ):
        t.refresh().read()


def test_branches_with_other_columns_are_refused(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.create_branch("s")
    t = set_fallback(cat, "s")
    t.write(rows("d1", ("a", 1)))
    cat.alter_table("db.t$branch_s", [SchemaChange.add_column("extra", "INT")])
    with pytest.raises(
        SchemaError, match=r"branch 'main' and its 'scan\.fallback-branch' 's' do not have the same row type"
    ):
        t.refresh().read()
    # Nullability alone does not matter (Paimon compares types ignoring it).
    cat2, t2 = make(tmp_path / "n")
    t2.create_branch("s")
    b = t2.branch("s")
    schema = b.schema()
    fields = [
        dataclasses.replace(f, type=f.type.copy(nullable=False)) if f.name == "amount" else f
        for f in schema.fields
    ]
    assert b.schema_manager.try_commit(dataclasses.replace(schema, id=schema.id + 1, fields=fields))
    t2.branch("s").write(rows("d2", ("b", 2)))
    t2 = set_fallback(cat2, "s")
    assert result(t2.read()) == [("d2", "b", 2)]


def test_reads_not_built_for_fallback_are_refused_by_name(tmp_path: Path) -> None:
    cat, t = make(tmp_path, primary_key=["dt", "name"], bucket="1")
    t.create_branch("s")
    t.branch("s").write(rows("d2", ("b", 1)))
    t = set_fallback(cat, "s")
    t.write(rows("d1", ("a", 1)))
    for call, what in (
        (lambda: t.audit_log(), r"\$audit_log"),
        (lambda: t.system_table("ro"), r"\$ro"),
        (lambda: t.changelog(), "a change-record read"),
        (lambda: t.read_incremental(0, 1), "an incremental read"),
        (lambda: t.analyze(), "ANALYZE"),
    ):
        with pytest.raises(UnsupportedError, match=f"{what} of a table with 'scan\\.fallback-branch'='s'"):
            call()
    # Scan options stored as table options pin main only in Paimon (the fallback branch reads its
    # own options): not built, refused rather than applied to both or to one.
    t = cat.alter_table("db.t", [SchemaChange.set_option("scan.snapshot-id", "1")])
    with pytest.raises(UnsupportedError, match=r"stored scan options scan\.snapshot-id of a table"):
        t.read()
    assert result(t.read(snapshot_id=1)) == [("d1", "a", 1), ("d2", "b", 1)]
    t = cat.alter_table("db.t", [SchemaChange.remove_option("scan.snapshot-id")])
    # Paimon's default read-fail-fast (false) would hide fallback read errors: refused by name.
    with pytest.raises(UnsupportedError, match=r"'scan\.fallback-branch\.read-fail-fast'='false'"):
        cat.alter_table("db.t", [SchemaChange.set_option("scan.fallback-branch.read-fail-fast", "false")])
    t = cat.alter_table("db.t", [SchemaChange.set_option("scan.fallback-branch.read-fail-fast", "true")])
    assert result(t.read()) == [("d1", "a", 1), ("d2", "b", 1)]
    # Compaction and writes act on main alone.
    t.write(rows("d1", ("a", 2)))
    t.compact(full=True)
    assert result(t.new_read().read_splits(TableScan(t).plan())) == [("d1", "a", 2)]
    assert result(t.read()) == [("d1", "a", 2), ("d2", "b", 1)]


def test_fallback_branch_cannot_be_deleted(tmp_path: Path) -> None:
    cat, t = make(tmp_path)
    t.create_branch("s")
    t = set_fallback(cat, "s")
    with pytest.raises(Exception, match=r"configured as 'scan\.fallback-branch'"):
        t.delete_branch("s")
    assert t.branches() == ["s"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    main=st.dictionaries(
        st.sampled_from(["p0", "p1", "p2", "p3"]), st.lists(st.integers(0, 9), min_size=1, max_size=4)
    ),
    other=st.dictionaries(
        st.sampled_from(["p0", "p1", "p2", "p3"]), st.lists(st.integers(0, 9), min_size=1, max_size=4)
    ),
    keyed=st.booleans(),
    wanted=st.none() | st.sampled_from(["p0", "p1", "p2", "p3"]),
)
def test_model_each_partition_from_main_if_it_has_it(
    tmp_path_factory: pytest.TempPathFactory,
    main: dict[str, list[int]],
    other: dict[str, list[int]],
    keyed: bool,
    wanted: str | None,
) -> None:
    root = tmp_path_factory.mktemp("model")
    cat, t = make(root, primary_key=["dt", "name"] if keyed else None, **({"bucket": "2"} if keyed else {}))
    t.create_branch("s")

    def data(parts: dict[str, list[int]], tag: str) -> pa.Table:
        return pa.concat_tables(
            [
                rows(p, *[(f"k{v}", i * 10 + v + (1000 if tag == "s" else 0)) for i, v in enumerate(vs)])
                for p, vs in parts.items()
            ]
        )

    if other:
        t.branch("s").write(data(other, "s"))
    t = set_fallback(cat, "s")
    if main:
        t.write(data(main, "m"))

    def model(parts: dict[str, list[int]], tag: str) -> list[tuple[Any, ...]]:
        out: dict[tuple[str, str], int] = {}
        plain = []
        for p, vs in parts.items():
            for i, v in enumerate(vs):
                value = i * 10 + v + (1000 if tag == "s" else 0)
                if keyed:
                    out[(p, f"k{v}")] = value  # the newest record of a key wins
                else:
                    plain.append((p, f"k{v}", value))
        return [(p, n, a) for (p, n), a in out.items()] if keyed else plain

    expected = model(main, "m") + [r for r in model(other, "s") if r[0] not in main]
    if wanted is not None:
        expected = [r for r in expected if r[0] == wanted]
    got = t.read(filter=field("dt") == wanted if wanted is not None else None)
    assert result(got) == sorted(expected)
