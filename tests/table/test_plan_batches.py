"""Scan planning in batches of buckets (issue 33): the same splits, in the same order, holding
one batch's decoded manifest entries at a time."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.expressions import Compare
from stratalake.read import scan as scan_module
from stratalake.read.scan import sorted_entries
from stratalake.store import manifests
from tests.table.metadata_helpers import _io, _synthesize, _table, cold_manifest_cache

__all__ = ["cold_manifest_cache"]


def _written(tmp_path: Any) -> Any:
    """3 partitions x 4 buckets: updates over several commits, one full compaction in between,
    so the manifests hold ADD and DELETE entries, and files of several levels."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())]),
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "4", "write-only": "true"},
    )
    for i in range(6):
        ids = list(range(i * 7, i * 7 + 40))
        t.write(pa.table({"id": ids, "dt": [("a", "b", "c")[k % 3] for k in ids], "v": [f"v{i}"] * 40}))
        if i == 2:
            t.compact(full=True)
    return t


@pytest.mark.parametrize("max_files", [1, 3, 7, 1_000_000])
def test_batched_plan_is_the_plan(tmp_path: Any, max_files: int) -> None:
    t = _written(tmp_path)
    for where in (None, Compare("dt", "=", "b"), Compare("id", "=", 12)):
        whole = t.new_scan(filter=where).plan()
        batches = list(t.new_scan(filter=where).plan_batches(max_files))
        assert [s for b in batches for s in b] == whole
        for batch in batches:  # whole buckets, each batch within the bound unless one bucket is larger
            files = sum(len(s.files) for s in batch)
            assert files <= max_files or len({(s.partition, s.bucket) for s in batch}) == 1
        if where is None and max_files < 30:
            assert len(batches) > 3


@pytest.mark.parametrize("fan_in", [3, 64])
def test_entries_sorted_through_spilled_runs_keep_each_bucket_in_order(
    monkeypatch: pytest.MonkeyPatch, fan_in: int
) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(scan_module, "SPILL_FAN_IN", fan_in)  # 3: runs merged into one on the way

    entries = [
        SimpleNamespace(partition=bytes([p]), bucket=b, n=i)
        for i, (p, b) in enumerate((j * 7 % 5, j * 3 % 4) for j in range(1000))
    ]
    out = list(sorted_entries(iter(entries), 64))  # type: ignore[arg-type]
    assert [e.n for e in out] == [e.n for e in sorted(entries, key=lambda e: (e.partition, e.bucket, e.n))]


def test_a_large_snapshot_is_planned_holding_one_batch(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12,000 live files in 40 partitions: planned in batches of 1,000, about two batches of
    decoded entries are held at a time (and no manifest is cached), for a fraction of the memory."""
    t = _table(tmp_path)
    _synthesize(t, [f"p{j % 40:02d}" for j in range(12_000)], files_per_manifest=600)

    def peak(run: Any) -> int:
        monkeypatch.setattr(manifests, "_CACHE", manifests._LRU(2048))
        gc.collect()
        tracemalloc.start()
        try:
            run()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    files = 0

    def batched() -> None:
        nonlocal files
        for batch in t.new_scan().plan_batches():
            files += sum(len(s.files) for s in batch)

    assert len(list(t.new_scan().plan_batches())) == 1  # a small snapshot: planned at once
    whole = peak(lambda: t.new_scan().plan())
    monkeypatch.setattr(scan_module, "PLAN_AT_ONCE_FILES", 5_000)
    monkeypatch.setattr(scan_module, "PLAN_BATCH_FILES", 1_000)
    assert len(list(t.new_scan().plan_batches())) >= 12
    small = peak(batched)
    assert files == 12_000
    assert small * 3 < whole, (small, whole)
    # A batch's manifests are decoded, not kept (the manifest list is).
    assert not [k for k in manifests._CACHE._data if "manifest-list-" not in str(k)]


def test_a_pinned_partition_planned_in_batches_stays_cached(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query pinning one partition of a table too large to plan at once (its manifests mix
    every partition) keeps its partial manifest reads cached, as a plan at once does."""
    t = _table(tmp_path)
    _synthesize(t, [f"p{j % 40:02d}" for j in range(4_000)], files_per_manifest=500)
    monkeypatch.setattr(scan_module, "PLAN_AT_ONCE_FILES", 100)
    monkeypatch.setattr(scan_module, "PLAN_BATCH_FILES", 100)
    where = Compare("dt", "=", "p07")
    first = [s for batch in t.new_scan(filter=where).plan_batches() for s in batch]
    assert sum(len(s.files) for s in first) == 100
    _io(t).manifests_read.clear()
    again = [s for batch in t.new_scan(filter=where).plan_batches() for s in batch]
    assert again == first and _io(t).manifests_read == []


def test_a_batch_of_no_files_is_refused(tmp_path: Any) -> None:
    t = _written(tmp_path)
    with pytest.raises(ValueError, match="max_files must be at least 1, got 0"):
        t.new_scan().plan_batches(0)
