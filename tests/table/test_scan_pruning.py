"""Issue 33: scans read only the manifests whose partition statistics and bucket range admit
their filter, and plan exactly what evaluating the filter on every live entry plans."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.expressions import And, Compare, In, IsNotNull, IsNull, Not, Or, Predicate
from stratalake.spec.manifest import FileKind, ManifestEntry
from stratalake.store import manifests
from stratalake.store.manifest_filter import ManifestFilter, outcomes
from stratalake.store.manifests import ManifestNamer
from tests.table.metadata_helpers import _file, _io, _split_files, _synthesize, _table, cold_manifest_cache

__all__ = ["cold_manifest_cache"]


def test_scan_of_one_partition_reads_only_its_manifests(tmp_path: Any) -> None:
    table = _table(tmp_path)
    parts = [f"2024-01-{d:02d}" for d in range(1, 11) for _ in range(20)]  # 10 partitions, clustered
    _synthesize(table, parts, files_per_manifest=20)
    io = _io(table)
    splits = table.new_scan(filter=stratalake.field("dt") == "2024-01-05").plan()
    assert len(io.manifests_read) == 1
    assert {s.partition_values for s in splits} == {("2024-01-05",)}
    io.manifests_read.clear()
    everything = table.new_scan().plan()
    assert len(io.manifests_read) == 9  # the other nine (the first one is cached now)
    assert _split_files(splits) == {k for k in _split_files(everything) if k[0] == splits[0].partition}


def test_scan_of_one_bucket_skips_manifests_of_other_buckets(tmp_path: Any) -> None:
    table = _table(tmp_path, buckets=4)
    mio = table.manifest_io
    codec = table.partition_codec
    namer = ManifestNamer()
    # Manifests holding one bucket each: a key-equality filter's bucket decides which are read.
    metas = []
    for b in range(4):
        metas += mio.write_entries(
            [ManifestEntry(FileKind.ADD, codec.to_bytes(["x"]), b, 4, _file(b * 10 + i, i)) for i in range(3)], namer
        )
    where = ManifestFilter(codec, buckets={2})
    assert [m.min_bucket for m in metas if where.manifest_may_match(m)] == [2]


def test_null_and_default_partitions_are_kept(tmp_path: Any) -> None:
    table = _table(tmp_path)
    _synthesize(table, [None] * 5 + ["b"] * 5 + [None, "c"], files_per_manifest=5)
    io = _io(table)
    nulls = table.new_scan(filter=stratalake.field("dt").is_null()).plan()
    assert {s.partition_values for s in nulls} == {(None,)}
    assert len(io.manifests_read) == 2  # the all-null manifest and the mixed one
    io.manifests_read.clear()
    manifests._CACHE = manifests._LRU(2048)
    not_b = table.new_scan(filter=~(stratalake.field("dt") == "b")).plan()
    # NOT (dt = 'b') holds for the default partition (dt = 'b' is False on a null there).
    assert {s.partition_values for s in not_b} == {(None,), ("c",)}
    assert len(io.manifests_read) == 2


# -- pruning never drops what the entry filter keeps -------------------------------------------

_VALUES = st.one_of(st.none(), st.integers(0, 6))


def _predicates() -> st.SearchStrategy[Predicate]:
    leaf = st.one_of(
        st.builds(Compare, st.just("dt"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _VALUES),
        st.builds(In, st.just("dt"), st.lists(_VALUES, max_size=3).map(tuple)),
        st.builds(IsNull, st.just("dt")),
        st.builds(IsNotNull, st.just("dt")),
    )
    return st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.lists(kids, min_size=1, max_size=3).map(lambda c: And(tuple(c))),
            st.lists(kids, min_size=1, max_size=3).map(lambda c: Or(tuple(c))),
            kids.map(Not),
        ),
        max_leaves=6,
    )


@settings(max_examples=300, deadline=None)
@given(
    groups=st.lists(st.lists(_VALUES, min_size=1, max_size=5), min_size=1, max_size=6),
    predicate=_predicates(),
)
def test_manifest_pruning_matches_entry_filter(tmp_path_factory: Any, groups: list[list[Any]], predicate: Predicate) -> None:
    """Model: a manifest may be skipped only if no entry's partition passes ``eval_values``."""
    table = _table(tmp_path_factory.mktemp("t"), partition_type=pa.int64())
    codec = table.partition_codec
    mio = table.manifest_io
    namer = ManifestNamer()
    where = ManifestFilter(codec, predicate)
    j = 0
    for group in groups:
        entries = []
        for value in group:
            entries.append(ManifestEntry(FileKind.ADD, codec.to_bytes([value]), 0, 1, _file(j, j)))
            j += 1
        (meta,) = mio.write_entries(entries, namer)
        wanted = [e for e in entries if predicate.eval_values(codec.to_dict(e.partition)) is not False]
        if wanted:
            assert where.manifest_may_match(meta), (group, predicate)
        # The outcome set is an over-approximation of every value the predicate takes.
        ranges_outcomes = outcomes(predicate, _ranges(where, meta))
        for e in entries:
            assert predicate.eval_values(codec.to_dict(e.partition)) in ranges_outcomes


def _ranges(where: ManifestFilter, meta: Any) -> Any:
    from stratalake.store.manifest_filter import column_ranges

    ranges = column_ranges(meta, where.codec)
    assert ranges is not None
    return ranges


@settings(max_examples=25, deadline=None)
@given(
    parts=st.lists(_VALUES, min_size=1, max_size=40),
    per_manifest=st.integers(1, 8),
    predicate=_predicates(),
)
def test_planning_is_identical_with_and_without_pruning(
    tmp_path_factory: Any, parts: list[Any], per_manifest: int, predicate: Predicate
) -> None:
    table = _table(tmp_path_factory.mktemp("t"), partition_type=pa.int64())
    _synthesize(table, parts, files_per_manifest=per_manifest)
    codec = table.partition_codec
    snap = table.latest_snapshot()
    assert snap is not None
    model = {
        (e.partition, e.bucket, e.file.file_name)
        for e in table.live_entries(snap)
        if predicate.eval_values(codec.to_dict(e.partition)) is not False
    }
    assert _split_files(table.new_scan(filter=predicate).plan()) == model
