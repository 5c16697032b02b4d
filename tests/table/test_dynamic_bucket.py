"""Dynamic bucket mode (``bucket = -1``): the assigner, the hash index and the commit conflict check.

Expected assignments follow Paimon's ``PartitionIndex``: a known key keeps its bucket; a new key
goes to the lowest bucket with fewer than ``dynamic-bucket.target-row-num`` keys, else to a new
bucket (the lowest free id) up to ``dynamic-bucket.max-buckets``.
"""

from __future__ import annotations

import itertools
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.bucket.dynamic import (
    HASH_FILES,
    BucketAssigner,
    assigner_ids,
    decode_hash_index,
    hash_index_entries_by_partition,
    owner_consistent_assigners,
)
from stratalake.exceptions import CommitConflictError, InvalidOptionError
from stratalake.options import CoreOptions
from stratalake.spec.bucket import hash_bytes, hash_rows
from stratalake.store.index_manifest import index_file_path, live_index_entries
from stratalake.table.table import Table
from stratalake.types import BigIntType

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(d: str, options: dict[str, str], partitioned: bool = False) -> Table:
    cat = stratalake.Catalog(d)
    cat.create_database("db", ignore_if_exists=True)
    schema = SCHEMA.append(pa.field("p", pa.string())) if partitioned else SCHEMA
    return cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id", "p"] if partitioned else ["id"],
        partition_keys=["p"] if partitioned else [],
        options={"bucket": "-1", **options},
    )


def _rows(ids: list[int], v: str = "x", p: str | None = None) -> pa.Table:
    cols: dict[str, Any] = {"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}
    if p is not None:
        cols["p"] = [p] * len(ids)
    return pa.table(cols)


def _key_buckets(t: Table) -> dict[tuple[Any, ...], int]:
    """(partition values..., id) -> bucket of every live row; fails on a key in two buckets."""
    out: dict[tuple[Any, ...], int] = {}
    read = t.new_read()
    for split in t.new_scan().plan():
        for row in read.read_splits([split]).to_pylist():
            key = (*split.partition_values, row["id"])
            assert key not in out, f"key {key} in buckets {out[key]} and {split.bucket}"
            out[key] = split.bucket
    return out


def _index(t: Table) -> dict[bytes, dict[int, np.ndarray]]:
    """partition -> bucket -> key hashes, from the latest snapshot's HASH index files."""
    snap = t.latest_snapshot()
    by_part = hash_index_entries_by_partition(live_index_entries(t, snap))
    return {
        p: {b: decode_hash_index(t.file_io.read_bytes(index_file_path(t, e))) for b, e in buckets.items()}
        for p, buckets in by_part.items()
    }


def _hash(ids: list[int]) -> np.ndarray:
    return hash_rows([pa.array(ids, pa.int64())], [BigIntType(nullable=False)])


def test_bucket_option_semantics() -> None:
    # Paimon's default: an absent 'bucket' is dynamic bucket mode.
    assert CoreOptions({}).bucket == -1
    assert CoreOptions({"bucket": "-2"}).bucket == -2
    for bad in ({"bucket": "0"}, {"bucket": "-3"}, {"bucket": "-1", "dynamic-bucket.target-row-num": "0"},
                {"bucket": "-1", "dynamic-bucket.max-buckets": "0"}, {"bucket": "-1", "bucket-key": "id"}):
        with pytest.raises(InvalidOptionError):
            CoreOptions(bad, "db.t").validate()
    CoreOptions({"bucket": "-1", "dynamic-bucket.max-buckets": "-1"}).validate()
    with tempfile.TemporaryDirectory() as d:
        cat = stratalake.Catalog(d)
        cat.create_database("db")
        # Tables stratalake creates keep an explicit fixed bucket count (see README).
        t = cat.create_table("db.fixed", schema=SCHEMA, primary_key=["id"])
        assert t.options()["bucket"] == "1"


def test_new_keys_fill_buckets_to_target_and_existing_keys_stay() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "3"})
        t.write(_rows(list(range(10))))
        buckets = _key_buckets(t)
        # First appearance order fills bucket 0, then 1, 2, 3.
        assert buckets == {(k,): k // 3 for k in range(10)}
        index = _index(t)
        [part] = index.values()
        assert {b: sorted(h.tolist()) for b, h in part.items()} == {
            b: sorted(_hash([k for k in range(10) if k // 3 == b]).tolist()) for b in range(4)
        }
        # One APPEND snapshot holds the data and the index.
        assert t.snapshot_manager.latest_snapshot_id() == 1
        # Upserts keep their bucket; new keys fill bucket 3, then open bucket 4.
        t.write(_rows([9, 0, 20, 21, 22, 5], "y"))
        after = _key_buckets(t)
        assert {k: after[k] for k in buckets} == buckets
        assert after[(20,)] == 3 and after[(21,)] == 3 and after[(22,)] == 4
        assert sorted(r["id"] for r in t.read().to_pylist()) == sorted({*range(10), 20, 21, 22})
        # A bucket's HASH file was replaced, not added beside the old one.
        assert len(live_index_entries(t, t.latest_snapshot())) == 5


def test_deleted_keys_keep_their_bucket() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"})
        t.write(_rows([1, 2, 3]))
        t.write(_rows([2]).append_column("kind", pa.array(["-D"])), row_kind="kind")
        t.write(_rows([4]))  # bucket 1 still counts key 2's hash: 4 joins key 3
        t.write(_rows([2], "back"))
        got = _key_buckets(t)
        assert got == {(1,): 0, (2,): 0, (3,): 1, (4,): 1}


def test_max_buckets_bounds_new_buckets() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "3"})
        t.write(_rows(list(range(20))))
        t.write(_rows(list(range(10, 30)), "y"))
        buckets = _key_buckets(t)
        assert set(buckets.values()) == {0, 1, 2}
        assert len(buckets) == 30
        rows = t.read().to_pylist()
        assert len(rows) == 30 and {r["id"] for r in rows} == set(range(30))


def test_initial_buckets_spread_first_keys() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.initial-buckets": "3"})
        t.write(_rows(list(range(100))))
        buckets = _key_buckets(t)
        assert set(buckets.values()) == {0, 1, 2}
        # Paimon's computeAssigner with 3 assigners: (partition offset + |key hash % 3|) % 3, and
        # assigner a owns buckets b % 3 == a.
        by_bucket: dict[int, set[int]] = defaultdict(set)
        for (k,), b in buckets.items():
            by_bucket[b].add(int(np.abs(np.fmod(np.int64(_hash([k])[0]), 3))))
        # Keys of one bucket share their key-hash residue (one assigner owns each bucket).
        assert all(len(residues) == 1 for residues in by_bucket.values())


def test_partitions_have_their_own_index() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"}, partitioned=True)
        t.write(pa.concat_tables([_rows([1, 2, 3], p="a"), _rows([1, 4], p="b")]))
        t.write(pa.concat_tables([_rows([3, 5], "y", p="a"), _rows([6, 7, 1], "y", p="b")]))
        got = _key_buckets(t)
        assert got == {
            ("a", 1): 0, ("a", 2): 0, ("a", 3): 1, ("a", 5): 1,
            ("b", 1): 0, ("b", 4): 0, ("b", 6): 1, ("b", 7): 1,
        }
        index = _index(t)
        codec = t.partition_codec
        assert {codec.from_bytes(p)[0]: sorted(b) for p, b in index.items()} == {"a": [0, 1], "b": [0, 1]}


def test_assigner_vectorized_batch() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"})
        a = BucketAssigner(t)
        part = t.partition_codec.to_bytes(())
        h = np.array([5, 7, 5, 9, 7, 11, 13], dtype=np.int32)
        # First appearance order: 5, 7 -> 0; 9, 11 -> 1; 13 -> 2; repeats keep theirs.
        assert a.assign(part, h).tolist() == [0, 0, 0, 1, 0, 1, 2]
        assert a.assign(part, np.array([13, 15, 5, -1], dtype=np.int32)).tolist() == [2, 2, 0, 3]
        changes = a.prepare_commit()
        assert sorted(b for _, b in changes) == [0, 1, 2, 3]
        data = t.file_io.read_bytes(index_file_path(t, changes[(part, 0)].added))
        assert data == np.array([5, 7], dtype=">i4").tobytes()  # big-endian int32, sorted
        assert changes[(part, 3)].added.row_count == 1


def test_concurrent_writers_assigning_new_keys_conflict() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"})
        t.write(_rows([1, 2, 3]))
        w1, w2 = t.new_write(), t.new_write()
        w1.write(_rows([10, 11], "w1"))
        w2.write(_rows([12], "w2"))  # both give bucket 1's last slot away
        w1.commit()
        before = t.read().sort_by("id")
        with pytest.raises(CommitConflictError, match="dynamic-bucket index"):
            w2.commit()
        w2.abort()
        assert t.read().sort_by("id").equals(before)
        # Nothing of w2 is left behind: every index file on disk belongs to some snapshot.
        on_disk = {p.name for p in (Path(t.location) / "index").iterdir()}
        assert on_disk <= _older_index_files(t)
        t.write(_rows([10, 12], "retry"))
        assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {1: "x", 2: "x", 3: "x", 10: "retry", 11: "w1", 12: "retry"}
        _key_buckets(t)


def test_two_assigners_in_one_commit_are_refused() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"})
        w1, w2 = t.new_write(), t.new_write()
        w1.write(_rows([1, 2]))
        w2.write(_rows([3, 4]))  # w2 also starts at bucket 0: the same bucket for other keys
        messages = w1.prepare_commit() + w2.prepare_commit()
        with pytest.raises(CommitConflictError, match="2 writers assigned dynamic buckets"):
            t.new_commit().commit(messages)
        t.delete_uncommitted(messages)
        assert t.latest_snapshot() is None


def _older_index_files(t: Table) -> set[str]:
    names: set[str] = set()
    sm = t.snapshot_manager
    latest = sm.latest_snapshot_id() or 0
    for sid in range(1, latest + 1):
        names |= {e.file_name for e in live_index_entries(t, sm.snapshot(sid))}
    return names


def test_updates_only_writer_does_not_conflict() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"})
        t.write(_rows([1, 2, 3]))
        w1, w2 = t.new_write(), t.new_write()
        w1.write(_rows([1, 3], "w1"))
        w2.write(_rows([20], "w2"))
        w2.commit()
        w1.commit()  # no new key: its index is unchanged, nothing to conflict with
        assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {1: "w1", 2: "x", 3: "w1", 20: "w2"}


def test_overwrite_rebuilds_the_index() -> None:
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "2"}, partitioned=True)
        t.write(pa.concat_tables([_rows([1, 2, 3, 4, 5], p="a"), _rows([1, 2, 3], p="b")]))
        t.write(_rows([5, 9], "o", p="a"), overwrite=True, overwrite_partitions=[{"p": "a"}])
        got = _key_buckets(t)
        assert got == {("a", 5): 0, ("a", 9): 0, ("b", 1): 0, ("b", 2): 0, ("b", 3): 1}
        index = _index(t)
        a = t.partition_codec.to_bytes(("a",))
        assert sorted(index[a]) == [0]
        t.write(_rows([1, 5], "z", p="a"))
        assert _key_buckets(t)[("a", 1)] == 1


# -- property test against a dict model -----------------------------------------------------------
ops = st.lists(
    st.tuples(st.sampled_from(["+I", "+U", "-D"]), st.integers(0, 25), st.sampled_from(["a", "b"]), st.integers(0, 9)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=ops,
    cuts=st.lists(st.integers(1, 60), max_size=5),
    target=st.sampled_from([1, 2, 3]),
    max_buckets=st.sampled_from([-1, 2]),
    initial=st.sampled_from([None, 2]),
    partitioned=st.booleans(),
)
def test_dynamic_buckets_match_dict_model(
    history: list[tuple[str, int, str, int]],
    cuts: list[int],
    target: int,
    max_buckets: int,
    initial: int | None,
    partitioned: bool,
) -> None:
    options = {"dynamic-bucket.target-row-num": str(target), "dynamic-bucket.max-buckets": str(max_buckets)}
    if initial is not None:
        options["dynamic-bucket.initial-buckets"] = str(initial)
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, options, partitioned=partitioned)
        model: dict[tuple[Any, ...], str] = {}
        first_bucket: dict[tuple[Any, ...], int] = {}
        bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
        for lo, hi in itertools.pairwise(bounds):
            commit = history[lo:hi]
            cols: dict[str, Any] = {
                "id": pa.array([o[1] for o in commit], pa.int64()),
                "v": [str(o[3]) for o in commit],
                "kind": [o[0] for o in commit],
            }
            if partitioned:
                cols["p"] = [o[2] for o in commit]
            t.write(pa.table(cols), row_kind="kind")
            for kind, k, p, v in commit:
                key = (p, k) if partitioned else (k,)
                if kind == "-D":
                    model.pop(key, None)
                else:
                    model[key] = str(v)
            got = {(*([r["p"]] if partitioned else []), r["id"]): r["v"] for r in t.read().to_pylist()}
            assert got == model
            # Each key lives in exactly one bucket, the same one across snapshots.
            for key, bucket in _key_buckets(t).items():
                assert first_bucket.setdefault(key, bucket) == bucket
            # The index agrees: every written key's hash sits in exactly one bucket's file.
            for buckets in _index(t).values():
                all_hashes = np.concatenate(list(buckets.values()))
                assert len(np.unique(all_hashes)) == len(all_hashes)
                if max_buckets != -1:
                    assert max(buckets) < max_buckets


class _ReferencePartitionIndex:
    """Paimon's ``PartitionIndex.assign`` one key at a time (plus ``BucketAssigner.computeAssigner``
    with as many channels as assigners); past the bucket limit, the full bucket stratalake picks
    by key hash stands in for Paimon's random pick."""

    def __init__(self, target: int, max_buckets: int, assigners: int, partition_hash: int) -> None:
        self.target, self.max_buckets, self.n = target, max_buckets, assigners
        self.start = abs(int(np.fmod(partition_hash, assigners)))
        self.hash_to_bucket: dict[int, int] = {}
        self.counts: dict[int, int] = {}
        self.upper_bound: set[int] = set()

    def assign(self, h: int) -> int:
        if h in self.hash_to_bucket:
            return self.hash_to_bucket[h]
        a = (self.start + abs(int(np.fmod(h, self.n)))) % self.n
        mine = sorted(b for b in self.counts if b % self.n == a)
        bucket = next((b for b in mine if self.counts[b] < self.target), None)
        if bucket is None and a not in self.upper_bound:
            top = 32766 if self.max_buckets == -1 else self.max_buckets - 1
            bucket = next((b for b in range(a, top + 1, self.n) if b not in self.counts), None)
            if bucket is None:
                self.upper_bound.add(a)
        if bucket is None:
            bucket = mine[abs(int(np.fmod(h, len(mine))))]
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.hash_to_bucket[h] = bucket
        return bucket


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.lists(st.integers(-40, 40), max_size=30), min_size=1, max_size=5),
    target=st.integers(1, 4),
    max_buckets=st.sampled_from([-1, 1, 3, 5]),
    initial=st.sampled_from([None, 2, 3]),
)
def test_assigner_matches_paimon_partition_index(
    batches: list[list[int]], target: int, max_buckets: int, initial: int | None
) -> None:
    options = {"dynamic-bucket.target-row-num": str(target), "dynamic-bucket.max-buckets": str(max_buckets)}
    if initial is not None:
        options["dynamic-bucket.initial-buckets"] = str(initial)
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, options, partitioned=True)
        a = BucketAssigner(t)
        part = t.partition_codec.to_bytes(("x",))
        n = a.options.num_assigners
        ref = _ReferencePartitionIndex(target, max_buckets, n, hash_bytes(part[4:]))
        for batch in batches:
            got = a.assign(part, np.array(batch, dtype=np.int32)).tolist()
            assert got == [ref.assign(h) for h in batch]


# -- assigner slices (a Spark write: one writer per slice of the key hashes) ------------------------
def _slices(t: Table, ids: list[int], n: int) -> list[list[int]]:
    """``ids`` split by Paimon's assigner (as Spark's clustering by ``|key hash % n|`` routes them)."""
    hashes = hash_rows([pa.array(ids, pa.int64())], [BigIntType(nullable=False)])
    owners = assigner_ids(t.partition_codec.to_bytes(()), hashes, n)
    return [[i for i, o in zip(ids, owners.tolist(), strict=True) if o == s] for s in range(n)]


def test_slice_writers_share_a_table_filled_by_one_assigner() -> None:
    """Three writers, each holding one slice, on a table whose buckets hold every slice's keys:
    existing keys stay where they are (several writers add level-0 files to one bucket), new keys
    go only to the buckets of their slice, only a bucket's owner compacts it or rewrites its index,
    and each writer loaded only its slice of the index."""
    n = 3
    with tempfile.TemporaryDirectory() as d:
        # A full compaction at every commit: every writer of an old bucket would compact it.
        t = _table(d, {"dynamic-bucket.target-row-num": "10", "full-compaction.delta-commits": "1"})
        t.write(_rows(list(range(100)), "a"))  # one assigner: buckets 0..9, every slice in each
        before = _key_buckets(t)
        model = dict.fromkeys(range(100), "a")
        writers = []
        messages = []
        for s, ids in enumerate(_slices(t, [*range(50, 100), *range(100, 400)], n)):
            w = t.new_write()
            w.dynamic_assigners = n
            w.write(_rows(ids, f"s{s}"))
            loaded = next(iter(w._assigner._partitions.values())) if w._assigner else None
            assert loaded is not None and loaded.slices == {s}
            assert len(loaded.hashes) < 100 + len(ids)  # its slice only, not every key
            messages += w.prepare_commit()
            writers.append(w)
            model.update(dict.fromkeys(ids, f"s{s}"))
        compacted = [(m.partition, m.bucket) for m in messages if m.compact_before or m.compact_after]
        assert compacted and len(compacted) == len(set(compacted))
        assert all(m.bucket % n == next(
            s for s, w in enumerate(writers) if w._assigner and w._assigner.owns(m.partition, m.bucket)
        ) for m in messages if m.index_files_added)  # fmt: skip
        shared: dict[int, int] = defaultdict(int)
        for m in messages:
            if m.new_files and m.bucket < 10:
                shared[m.bucket] += 1
        assert max(shared.values()) > 1  # several writers updated one of the old buckets
        t.new_commit().commit(messages)
        t = t.refresh()
        after = _key_buckets(t)
        rows = t.read().to_pylist()
        assert len(rows) == len(model) and {r["id"]: r["v"] for r in rows} == model
        assert all(after[k] == b for k, b in before.items())
        index = _index(t)[t.partition_codec.to_bytes(())]
        for bucket, hashes in index.items():
            if bucket >= 10:  # created by the slice writers: one slice's keys only
                assert set(assigner_ids(t.partition_codec.to_bytes(()), hashes, n).tolist()) == {bucket % n}
        assert {b % n for b in index if b >= 10} == set(range(n))


def test_slice_writers_holding_the_same_slice_are_refused() -> None:
    n = 2
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "10"})
        ids = _slices(t, list(range(200)), n)[0]
        messages = []
        for half in (ids[::2], ids[1::2]):
            w = t.new_write()
            w.dynamic_assigners = n
            w.write(_rows(half))
            messages += w.prepare_commit()
        with pytest.raises(CommitConflictError, match="same key-hash slice"):
            t.new_commit().commit(messages)
        assert t.refresh().latest_snapshot() is None


def _consistent_brute_force(t: Table, n: int) -> bool:
    """Every indexed key lies in a bucket its own assigner (of ``n``) owns."""
    return all(
        (assigner_ids(partition, hashes, n) == bucket % n).all()
        for partition, buckets in _index(t).items()
        for bucket, hashes in buckets.items()
    )


@pytest.mark.parametrize("writer_assigners", [1, 2, 3, 6])
def test_owner_consistent_assigners_match_brute_force(writer_assigners: int) -> None:
    """The largest N <= the request under which every bucket holds only its owner slice's keys,
    from one gcd over the index, agrees with checking every N key by key; a table written with N
    assigners allows N (and its divisors)."""
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "20", "dynamic-bucket.initial-buckets": str(writer_assigners)}, True)
        assert owner_consistent_assigners(t, 8) == 8  # no key yet
        for p in ("x", "y", "z"):
            t.write(_rows(list(range(400)), "a", p))
        t.write(_rows(list(range(300, 700)), "b", "x"))
        t = t.refresh()
        assert _consistent_brute_force(t, writer_assigners)
        for requested in range(1, 9):
            expected = max(n for n in range(1, requested + 1) if _consistent_brute_force(t, n))
            assert owner_consistent_assigners(t, requested) == expected, requested
        if writer_assigners == 1:  # 2,100 keys hashed at random: no N > 1 holds
            assert owner_consistent_assigners(t, 8) == 1


def test_owners_only_slice_writers_compact_their_buckets() -> None:
    """Lookup-changelog table written with 3 assigners: 3 slice writers each write and compact
    only buckets they own; the commit has one writer per bucket and the changelog of every key."""
    n = 3
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {
            "dynamic-bucket.target-row-num": "10", "dynamic-bucket.initial-buckets": str(n),
            "changelog-producer": "lookup",
        })  # fmt: skip
        t.write(_rows(list(range(100)), "a"))
        assert owner_consistent_assigners(t, n) == n
        messages = []
        for s, ids in enumerate(_slices(t, list(range(50, 200)), n)):
            w = t.new_write()
            w.dynamic_assigners = n
            w.write(_rows(ids, f"s{s}"))
            for m in w.prepare_commit():
                assert m.bucket % n == s, "a writer wrote a bucket of another slice"
                messages.append(m)
        assert len({(m.partition, m.bucket) for m in messages}) == len(messages)
        t.new_commit().commit(messages)
        t = t.refresh()
        snap = t.latest_snapshot()
        assert snap is not None
        assert all(e.file.level > 0 for e in t.live_entries(snap))  # level 0 compacted
        model = {**dict.fromkeys(range(100), "a")}
        for s, ids in enumerate(_slices(t, list(range(50, 200)), n)):
            model.update(dict.fromkeys(ids, f"s{s}"))
        assert {r["id"]: r["v"] for r in t.read().to_pylist()} == model
        changelog = [r for m in messages for f in m.compact_changelog_files for r in [f.row_count]]
        assert sum(changelog) == 50 * 2 + 100  # -U/+U for 50 updated keys, +I for 100 new ones


def test_owners_only_writer_refuses_a_bucket_of_another_slice() -> None:
    """A lookup table one assigner filled holds every slice's keys in each bucket: a slice writer
    meeting such a key refuses (Spark would have chosen N = 1 for it) and nothing is committed."""
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "10", "changelog-producer": "lookup"})
        t.write(_rows(list(range(100)), "a"))
        assert owner_consistent_assigners(t, 3) == 1
        snapshot = t.latest_snapshot()
        w = t.new_write()
        w.dynamic_assigners = 3
        with pytest.raises(CommitConflictError, match="holds keys of another of the write's 3 assigner slices"):
            w.write(_rows(_slices(t, list(range(100)), 3)[0], "b"))
            w.prepare_commit()
        w.abort()
        assert t.refresh().latest_snapshot() == snapshot


def test_hash_files_are_kept_per_process() -> None:
    """A writer's next statement reads no HASH file its own process wrote or read before; files
    another process wrote are read once; a budget of 0 reads every time; answers never change."""
    with tempfile.TemporaryDirectory() as d:
        t = _table(d, {"dynamic-bucket.target-row-num": "3"}, partitioned=True)
        HASH_FILES.clear()
        t.write(pa.concat_tables([_rows(list(range(10)), p="a"), _rows(list(range(5)), p="b")]))
        assert HASH_FILES.stats["wrote"] == 6 and HASH_FILES.stats["read"] == 0
        t.write(_rows([0, 4, 9, 30], "y", p="a"))  # bucket 3 of 'a' gets key 30: its file is rewritten
        assert HASH_FILES.stats["read"] == 0 and HASH_FILES.stats["hit"] >= 4
        expected = _key_buckets(t)
        HASH_FILES.clear()  # as a fresh process: the files of the partition written are read once
        t.write(_rows([1, 31], "z", p="a"))
        assert HASH_FILES.stats["read"] == 4
        t.write(_rows([2, 32], "w", p="a"))
        assert HASH_FILES.stats["read"] == 4
        off = t.copy({"stratalake.key-index-cache.max-memory": "0"})
        HASH_FILES.clear()
        off.write(_rows([3, 33], "v", p="a"))
        off.write(_rows([5, 34], "u", p="a"))
        assert HASH_FILES.stats["read"] >= 8 and HASH_FILES.stats["hit"] == 0  # (re-read to rewrite, too)
        got = _key_buckets(t)
        assert {k: got[k] for k in expected} == expected
        fresh = _key_buckets(stratalake.Catalog(d).get_table("db.t"))
        assert got == fresh
