"""Distributed cross-partition upserts (``bucket/cross_partition.py``): several writers, each holding
the keys of its assigner slices ``|key hash % N|``, commit one statement together.

Each writer's index holds only its slices' keys (bootstrapped from the table's live keys, a second
scan for a slice first met in a later batch); a new key goes only to a bucket its slice owns
(``bucket % N == slice``); existing keys and the retractions of moved keys go to the bucket holding
them, whoever owns it, and only the owner compacts. The commit refuses writers whose slices overlap
or whose N differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake.bucket.cross_partition import key_slices, owner_consistent_slices
from stratalake.exceptions import CommitConflictError
from stratalake.operation.commit import CommitMessage
from stratalake.operation.commit.conflicts import InvalidCommitError
from stratalake.operation.write import TableWrite
from stratalake.table.table import Table

N = 3


def _table(d: Path, engine: str) -> Table:
    cat = stratalake.Catalog(str(d))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "40", "merge-engine": engine},
    )


def _rows(ids: np.ndarray, v: str, part: Any) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids), "p": [part(int(i)) for i in ids]})


def _located(t: Table) -> dict[int, tuple[str, int, str]]:
    """id -> (partition, bucket, v) of every live row; fails on a key stored twice."""
    out: dict[int, tuple[str, int, str]] = {}
    read = t.new_read()
    for split in t.new_scan().plan():
        for row in read.read_splits([split]).to_pylist():
            assert row["id"] not in out, f"key {row['id']} in {out[row['id']]} and {split.partition_values}"
            out[row["id"]] = (row["p"], split.bucket, row["v"])
    return out


def _slice_of(t: Table, ids: np.ndarray) -> np.ndarray:
    return key_slices(t, pa.table({"id": pa.array(ids, pa.int64())}), N)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_slice_writers_commit_one_statement(tmp_path: Path, engine: str) -> None:
    t = _table(tmp_path, engine)
    old = np.arange(0, 1200)
    t.write(_rows(old, "old", lambda i: "a" if i % 2 else "b"))  # one writer: buckets 0.. of a and b
    before = _located(t)
    old_buckets = {(p, b) for p, b, _ in before.values()}
    # The statement: 600 existing keys switch partition, 600 new keys.
    ids = np.concatenate([np.arange(0, 600), np.arange(5000, 5600)])
    slices = _slice_of(t, ids)
    writers: list[TableWrite] = []
    messages: list[CommitMessage] = []
    # Writer 0 holds slice 0; writer 1 slices 1 and 2, met in two batches (two bootstrap scans).
    for held in ([0], [1, 2]):
        # Without the per-process cache of key indexes (key_index_cache.py), whose writers hold
        # every slice's keys.
        w = t.copy({"stratalake.key-index-cache.max-memory": "0"}).new_write()
        w.dynamic_assigners = N
        for s in held:
            w.write(_rows(ids[slices == s], "new", lambda i: "b" if i % 2 else "a"))
        cross = w._cross
        assert cross is not None and cross._slices == set(held)
        # The index holds its slices' keys only (every key it saw or wrote), not the table's.
        mine = np.union1d(old[np.isin(_slice_of(t, old), held)], ids[np.isin(slices, held)])
        assert cross._index.num_rows == len(mine) < len(old) + 600
        # Bucket counts cover every live key of the table, whatever its slice.
        # (a moved key leaves one bucket for another: only its new keys add to the total).
        total = sum(sum(c.values()) for c in cross._counts.values())
        assert total == len(old) + np.isin(slices[600:], held).sum()
        messages += w.prepare_commit()
        writers.append(w)
    compacted = [(m.partition, m.bucket) for m in messages if m.compact_before or m.compact_after]
    assert len(compacted) == len(set(compacted))
    for m in messages:
        if m.compact_before or m.compact_after:  # only the bucket's owner compacts it
            owner = [w for w in writers if w._cross is not None and w._cross.owns(m.partition, m.bucket)]
            assert len(owner) == 1 and owner[0]._cross is not None
            assert m.assigner_claim == owner[0]._cross.claim()
    writers_of: dict[tuple[bytes, int], set[str]] = {}
    for m in messages:
        if m.new_files and m.assigner_claim is not None:
            writers_of.setdefault((m.partition, m.bucket), set()).add(m.assigner_claim[0])
    assert max(len(w) for w in writers_of.values()) > 1  # a bucket updated by both writers
    t.new_commit().commit(messages)

    t = t.refresh()
    after = _located(t)
    model = {int(i): (p, "old") for i, (p, _, _) in before.items()}
    for i in ids.tolist():
        if engine == "deduplicate" or i not in model:
            model[i] = ("b" if i % 2 else "a", "new")
        else:
            model[i] = (model[i][0], "new")  # partial-update: the key stays where it is
    assert {i: (p, v) for i, (p, _, v) in after.items()} == model
    for i, (p, b, _) in after.items():
        if (p, b) not in old_buckets:  # a bucket this statement created: its owner slice's keys
            assert int(_slice_of(t, np.array([i]))[0]) == b % N, (i, p, b)
        if i in before and before[i][0] == p:
            assert before[i][1] == b  # a key that stayed keeps its bucket
    new_buckets = {(p, b) for p, b, _ in after.values()} - old_buckets
    assert {b % N for _, b in new_buckets} == set(range(N))

    # A later single writer (no slices) bootstraps every key and agrees.
    t.write(_rows(np.arange(0, 1200, 7), "late", lambda i: "a"))
    for i in range(0, 1200, 7):
        model[i] = ("a" if engine == "deduplicate" else model[i][0], "late")
    assert {i: (p, v) for i, (p, _, v) in _located(t.refresh()).items()} == model


def test_commit_refuses_inconsistent_slice_writers(tmp_path: Path) -> None:
    t = _table(tmp_path, "deduplicate")
    t.write(_rows(np.arange(0, 300), "old", lambda i: "a"))
    snapshot = t.latest_snapshot()
    ids = np.arange(100, 400)
    slices = _slice_of(t, ids)

    def messages(splits: list[tuple[int, np.ndarray]]) -> list[CommitMessage]:
        out: list[CommitMessage] = []
        for n, part in splits:
            w = t.new_write()
            w.dynamic_assigners = n
            w.write(_rows(part, "x", lambda i: "b"))
            out += w.prepare_commit()
        return out

    # Both writers hold keys of slice 0.
    overlapping = messages([(N, ids[slices != 1]), (N, ids[slices != 2])])
    with pytest.raises(InvalidCommitError, match="slice 0 of 3"):
        t.new_commit().commit(overlapping)
    # Different numbers of slices.
    halves = messages([(N, ids[slices == 0]), (2, ids[slices != 0])])
    with pytest.raises(InvalidCommitError, match=r"different numbers of assigner slices \[2, 3\]"):
        t.new_commit().commit(halves)
    assert t.refresh().latest_snapshot() == snapshot
    # Disjoint slices of one N commit.
    t.new_commit().commit(messages([(N, ids[slices == s]) for s in range(N)]))
    assert {i: p for i, (p, _, _) in _located(t.refresh()).items()} == {
        **dict.fromkeys(range(0, 100), "a"),
        **dict.fromkeys(range(100, 400), "b"),
    }


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, {"kind": "dynamic", "num_assigners": None, "max_assigners": 32767}),
        (
            {"dynamic-bucket.assigner-parallelism": "5", "dynamic-bucket.initial-buckets": "3"},
            {"kind": "dynamic", "num_assigners": 3, "max_assigners": 3},
        ),
        ({"changelog-producer": "input"}, {"kind": "dynamic"}),
        ({"merge-engine": "aggregation"}, {"kind": "dynamic", "owners_only": False}),
        # Writers that must compact every bucket they write: no key in another slice's bucket
        # (the shim asks for the N the table allows).
        ({"changelog-producer": "lookup"}, {"kind": "dynamic", "owners_only": True}),
        ({"changelog-producer": "full-compaction"}, {"kind": "dynamic", "owners_only": True}),
        ({"deletion-vectors.enabled": "true"}, {"kind": "dynamic", "owners_only": True}),
        ({"merge-engine": "first-row"}, {"kind": "dynamic", "owners_only": True}),
        # write-only: no writer compacts, so level-0 files of any writer are fine.
        ({"changelog-producer": "lookup", "write-only": "true"}, {"kind": "dynamic", "owners_only": False}),
    ],
)
def test_spark_clusters_cross_partition_writes_by_key_slice(
    tmp_path: Path, options: dict[str, str], expected: dict[str, Any]
) -> None:
    from stratalake.spark.bridge_handlers import write_distribution

    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.int64()), ("p", pa.string())]),
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", **options},
    )
    got = write_distribution(t)
    assert {k: got.get(k) for k in expected} == expected
    if got["kind"] == "dynamic":  # the slice alone: no partition columns
        assert got["partition_keys"] == [] and got["bucket_keys"] == ["id"]


@pytest.mark.parametrize("writer_slices", [1, 2, 3])
def test_owner_consistent_slices_match_brute_force(tmp_path: Path, writer_slices: int) -> None:
    """The largest N <= the request under which every live key lies in a bucket its slice owns
    (one gcd over the live keys) agrees with checking each N key by key."""
    t = _table(tmp_path, "first-row")
    assert owner_consistent_slices(t, 6) == 6  # no key yet
    ids = np.arange(0, 900)
    slices = key_slices(t, pa.table({"id": pa.array(ids, pa.int64())}), writer_slices)
    messages: list[CommitMessage] = []
    for s in range(writer_slices):
        w = t.new_write()
        w.dynamic_assigners = writer_slices
        w.write(_rows(ids[slices == s], "a", lambda i: "a" if i % 3 else "b"))
        messages += w.prepare_commit()
    t.new_commit().commit(messages)
    located = _located(t)

    def holds(n: int) -> bool:
        got = key_slices(t, pa.table({"id": pa.array(list(located), pa.int64())}), n)
        return all(int(s) == b % n for s, (_, b, _) in zip(got.tolist(), located.values(), strict=True))

    assert holds(writer_slices)
    for requested in range(1, 7):
        assert owner_consistent_slices(t, requested) == max(n for n in range(1, requested + 1) if holds(n))


def test_owners_only_cross_partition_writer_refuses_a_bucket_of_another_slice(tmp_path: Path) -> None:
    t = _table(tmp_path, "first-row")
    t.write(_rows(np.arange(0, 300), "a", lambda i: "a"))  # one writer: every slice in each bucket
    assert owner_consistent_slices(t, N) == 1
    snapshot = t.latest_snapshot()
    ids = np.arange(0, 300)
    w = t.new_write()
    w.dynamic_assigners = N
    with pytest.raises(CommitConflictError, match="holds keys of another of the write's 3 assigner slices"):
        w.write(_rows(ids[_slice_of(t, ids) == 0], "b", lambda i: "a"))
    w.abort()
    assert t.refresh().latest_snapshot() == snapshot


def test_concurrent_jobs_on_a_cross_partition_table_conflict(tmp_path: Path) -> None:
    """Two jobs bootstrap their key index from the same snapshot and each places the new key 500
    (one in partition b, one in a, so no bucket is shared and the concurrent-writer check of
    buckets does not see it): the second commit is refused and the key stays in one place. A
    compaction committed in between moves no key and does not conflict."""
    t = _table(tmp_path, "deduplicate")
    t.write(_rows(np.arange(0, 100), "old", lambda i: "a"))
    first, second = t.new_write(), t.new_write()
    first.write(_rows(np.array([7, 500]), "first", lambda i: "b"))  # 7 moves to b, 500 is new in b
    second.write(_rows(np.array([500]), "second", lambda i: "a"))
    assert t.compact(full=True) is not None  # a compaction in between: keys stay put
    first.commit()
    snapshot = t.latest_snapshot()
    with pytest.raises(CommitConflictError, match="another job wrote rows to this cross-partition"):
        second.commit()
    second.abort()
    assert t.refresh().latest_snapshot() == snapshot
    located = _located(t)  # fails on a key in two places
    assert located[7] == ("b", located[7][1], "first") and located[500][0] == "b"
    # A writer that starts now sees the first job's keys and commits.
    t.write(_rows(np.array([7, 500]), "third", lambda i: "a"))
    located = _located(t)
    assert located[7][0] == located[500][0] == "a" and located[7][2] == "third"
