"""``lookup.cache-max-memory-size`` bounds the lookup cache down as well as up: a small setting gets a
small cache, and files larger than it are probed batch by batch instead of being held whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake.lsm.lookup import LookupLevels, memory_cache
from stratalake.read.changelog_read import read_changelog
from stratalake.spec.manifest import DataFileMeta

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def test_memory_cache_is_bounded_by_the_setting() -> None:
    small, big = memory_cache(4096), memory_cache(64 * 1024 * 1024)
    assert small.max_bytes == 4096 and big.max_bytes == 64 * 1024 * 1024
    assert memory_cache(4096) is small  # tables with the same setting share it
    small.put("x", pa.table({"a": np.arange(10_000)}))  # larger than the cache: not kept
    assert small.nbytes == 0


@pytest.mark.parametrize("key", ["id", "v"])  # binary search (integer key) and semi join
def test_small_cache_streams_lookups_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    streamed: list[str] = []
    original = LookupLevels._parts

    def recording(self: LookupLevels, f: DataFileMeta) -> Iterator[tuple[pa.Table, int, str | None]]:
        if self._streams(f):
            streamed.append(f.file_name)
        return original(self, f)

    monkeypatch.setattr(LookupLevels, "_parts", recording)
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    results = []
    for name, cache in (("big", "64 mb"), ("small", "1 kb")):
        t = cat.create_table(
            f"db.{name}",
            schema=SCHEMA,
            primary_key=[key],
            options={"bucket": "1", "changelog-producer": "lookup", "lookup.cache-max-memory-size": cache},
        )
        rng = np.random.default_rng(3)
        for run in range(4):
            ids = rng.choice(2000, 800, replace=False)
            v = [f"k{i:05d}" for i in ids] if key == "v" else [f"{run}-{i}" for i in ids]
            t.write(
                pa.table({"id": ids if key == "id" else np.full(800, run), "v": v, "n": np.full(800, run)})
            )
        rows = sorted(tuple(r.values()) for r in t.read().to_pylist())
        changelog = sorted(tuple(str(x) for x in r.values()) for r in read_changelog(t).to_pylist())
        results.append((rows, changelog))
        if name == "big":
            assert not streamed
    assert streamed  # the small cache probed files batch by batch
    assert results[0] == results[1]
    assert memory_cache(1024).nbytes <= 1024
