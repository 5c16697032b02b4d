"""Merged reads and compactions stream: a bucket far larger than the batch size is merged in
chunks of at most one batch per sorted run, with the same result as the in-memory merge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
import stratalake.lsm.compaction.rewriter as rewriter_module
import stratalake.operation.compact as compact_module
import stratalake.read.merge_read as read_module
from stratalake.lsm.compaction.rewriter import BucketFiles
from stratalake.merge import merge_kv

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
BATCH = 100
RUNS = 5
ROWS = 3000


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _fill(t: Any, seed: int = 1) -> dict[int, tuple[str, int]]:
    """RUNS commits of overlapping keys into one bucket; the expected live rows by key."""
    rng = np.random.default_rng(seed)
    expected: dict[int, tuple[str, int]] = {}
    for run in range(RUNS):
        ids = rng.choice(ROWS * 2, ROWS, replace=False)
        rows = [(int(i), f"r{run}-{int(i)}", run) for i in ids]
        t.write(pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "n": [r[2] for r in rows]}))
        for i, v, n in rows:
            expected[i] = (v, n)
    return expected


def _chunk_sizes(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    sizes: list[int] = []
    original: Callable[..., pa.Table] = getattr(module, name)

    def recording(kv: pa.Table, *args: Any, **kwargs: Any) -> pa.Table:
        sizes.append(kv.num_rows)
        return original(kv, *args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return sizes


def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    original = compact_module.bucket_files

    def small(*args: Any, **kwargs: Any) -> BucketFiles:
        files = original(*args, **kwargs)
        files.batch_rows = BATCH
        return files

    monkeypatch.setattr(compact_module, "bucket_files", small)


def test_merged_read_streams_in_bounded_chunks(
    cat: stratalake.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "write-only": "true"}
    )
    expected = _fill(t)
    (split,) = t.new_scan().plan()
    assert len(split.files) == RUNS
    sizes = _chunk_sizes(monkeypatch, read_module, "picked_rows")  # how a deduplicate table merges a chunk
    read = t.new_read()
    read.batch_rows = BATCH
    batches = list(read.read_split(split))
    assert all(b.num_rows <= BATCH for b in batches)
    got = {r["id"]: (r["v"], r["n"]) for b in batches for r in b.to_pylist()}
    assert got == expected
    ids = [r["id"] for b in batches for r in b.to_pylist()]
    assert ids == sorted(ids)
    assert sum(sizes) == RUNS * ROWS
    assert max(sizes) <= RUNS * BATCH < RUNS * ROWS
    # The same rows as the in-memory merge of the whole bucket.
    whole = merge_kv(read.read_kv_split(split), t.merge_context)
    assert len(got) == whole.num_rows


def test_filtered_and_projected_streaming_read(cat: stratalake.Catalog) -> None:
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "write-only": "true"}
    )
    expected = _fill(t, seed=3)
    (split,) = t.new_scan().plan()
    read = t.new_read(columns=["n"], filter=[("id", "<", 500), ("n", ">=", 2)])
    read.batch_rows = 7
    got = pa.Table.from_batches(list(read.read_split(split)), schema=read.output_schema())
    want = sorted(n for i, (_, n) in expected.items() if i < 500 and n >= 2)
    assert sorted(got.column("n").to_pylist()) == want


def test_full_compaction_streams_with_rolling_files(
    cat: stratalake.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id"],
        options={"bucket": "1", "write-only": "true", "target-file-size": "16 kb"},
    )
    expected = _fill(t)
    _small_batches(monkeypatch)
    sizes = _chunk_sizes(monkeypatch, rewriter_module, "merge_runs")
    t.compact(full=True)
    (split,) = t.new_scan().plan()
    assert len(split.files) > 1  # rolled at target-file-size
    assert len({f.level for f in split.files}) == 1
    assert max(sizes) <= RUNS * BATCH
    assert sum(sizes) == RUNS * ROWS
    got = {r["id"]: (r["v"], r["n"]) for r in t.read().to_pylist()}
    assert got == expected
    assert sum(f.row_count for f in split.files) == len(expected)


@pytest.mark.parametrize(
    "options",
    [
        {"changelog-producer": "lookup"},
        {"changelog-producer": "full-compaction"},
        {"deletion-vectors.enabled": "true"},
        {"merge-engine": "first-row"},
        {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    ],
    ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()),
)
def test_changelog_and_lookup_tables_stream(
    cat: stratalake.Catalog, monkeypatch: pytest.MonkeyPatch, options: dict[str, str]
) -> None:
    """The same writes with the default and with tiny batches give the same table and changelog."""
    results = []
    for name, batch in (("big", None), ("small", 3)):
        if batch is not None:
            _small_batches(monkeypatch)
        t = cat.create_table(
            f"db.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options}
        )
        rng = np.random.default_rng(5)
        for run in range(4):
            ids = rng.choice(400, 150, replace=False)
            t.write(pa.table({"id": ids, "v": [f"{run}-{i}" for i in ids], "n": np.full(150, run + 1)}))
        t.compact(full=True)
        rows = sorted(tuple(r.values()) for r in t.read().to_pylist())
        changelog = _changelog(t)
        results.append((rows, changelog))
    assert results[0] == results[1]
    assert results[0][0] and (results[0][1] or "changelog-producer" not in options)


def _changelog(t: Any) -> list[tuple[Any, ...]]:
    from stratalake.read.changelog_read import read_changelog

    table = read_changelog(t)
    return sorted(tuple(str(v) for v in r.values()) for r in table.to_pylist())


def test_writer_keeps_sorted_runs_below_the_stop_trigger(cat: stratalake.Catalog) -> None:
    """Many flushes of one writer into one bucket: compaction keeps up, runs stay <= stop trigger."""
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id"],
        options={
            "bucket": "1",
            "write-buffer-size": "16 kb",
            "num-sorted-run.compaction-trigger": "3",
            "num-sorted-run.stop-trigger": "4",
        },
    )
    rng = np.random.default_rng(2)
    expected: dict[int, int] = {}
    most = 0
    with t.new_write() as w:
        for i in range(30):
            ids = rng.choice(5000, 400, replace=False)
            w.write(pa.table({"id": ids, "v": [str(x) for x in ids], "n": np.full(400, i)}))
            expected.update((int(x), i) for x in ids)
            (buf,) = w._buffers.values()
            assert buf.manager is not None
            most = max(most, buf.manager.levels.number_of_sorted_runs())
        w.commit()
    assert 0 < most <= 4
    assert {r["id"]: r["n"] for r in t.read().to_pylist()} == expected
