"""Lookup levels: the merge rule of lookup tables, the bounded cache, local copies of remote files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

import stratalake
from stratalake.io import FileIO
from stratalake.lsm.lookup import LEVEL, GroupLevels, LocalCopies, LookupCache, LookupMergeFunction
from stratalake.merge import key_group_starts, sort_kv
from stratalake.operation.compact import bucket_files
from stratalake.table.table import Table
from tests.merge.helpers import kv_table, make_ctx


def test_lookup_merge_uses_only_the_newest_high_level_record() -> None:
    ctx = make_ctx(
        [("k", "BIGINT NOT NULL"), ("n", "BIGINT")],
        ["k"],
        {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    )
    # Level 2 holds the old total 5; level 1 the newer total 8 (5 + 3); level 0 adds 1.
    kv = kv_table(ctx, [{"k": 1, "n": 5}, {"k": 1, "n": 8}, {"k": 1, "n": 1}, {"k": 2, "n": 4}])
    kv = kv.append_column(LEVEL, pa.array([2, 1, 0, 3], pa.int32()))
    sorted_kv = sort_kv(kv, ctx)
    starts = key_group_starts(sorted_kv, ctx.key_names)
    from stratalake.merge import create_merge_function

    out = LookupMergeFunction(create_merge_function(ctx)).merge(sorted_kv, starts)
    assert LEVEL not in out.column_names
    assert {r["k"]: r["n"] for r in out.to_pylist()} == {1: 9, 2: 4}
    groups = GroupLevels.of(sorted_kv.column(LEVEL).to_numpy(), starts)
    assert groups.has_level0.tolist() == [True, False]
    assert sorted_kv.column(LEVEL).to_numpy()[groups.high].tolist() == [1, 3]


def test_cache_is_bounded_in_bytes() -> None:
    cache = LookupCache(max_bytes=3000)
    tables = {f"f{i}": pa.table({"x": np.arange(200, dtype=np.int64)}) for i in range(3)}  # 1600 B each
    for name, tbl in tables.items():
        assert cache.get_or_load(name, lambda tbl=tbl: tbl) is tbl
    assert cache.nbytes <= 3000
    cache.get_or_load("f2", lambda: pa.table({}))
    assert cache.hits == 1 and cache.misses == 3


def test_files_put_and_not_read_hold_a_quarter_of_the_cache() -> None:
    cache = LookupCache(max_bytes=8000)  # 2000 B for files put and not read since
    table = lambda: pa.table({"x": np.arange(100, dtype=np.int64)})  # noqa: E731 - 800 B each
    loaded = table()
    assert cache.get_or_load("loaded", lambda: loaded) is loaded
    for name in ("w1", "w2", "w3"):
        cache.put(name, table())
    # w1 went (the oldest unread), the loaded file stayed although it is older still.
    assert cache.get_or_load("loaded", lambda: pa.table({})) is loaded
    assert cache.nbytes == 3 * 800
    kept = cache.get_or_load("w2", lambda: pa.table({}))  # read: from now on an ordinary entry
    assert kept.num_rows == 100 and cache.hits == 2 and cache.misses == 1
    for name in ("w4", "w5", "w6"):
        cache.put(name, table())
    assert cache.get_or_load("w2", lambda: pa.table({})) is kept
    assert cache.nbytes == 4 * 800  # loaded, w2, w5, w6
    assert cache.get_or_load("w3", lambda: pa.table({})).num_rows == 0  # w3 and w4 went
    cache.put("big", pa.table({"x": np.arange(300, dtype=np.int64)}))  # over the quarter: not kept
    assert cache.get_or_load("big", lambda: pa.table({})).num_rows == 0


def test_lookup_on_a_remote_filesystem_reads_local_copies(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("k", pa.int64()), ("v", pa.string())]),
        primary_key=["k"],
        options={"bucket": "1", "changelog-producer": "lookup"},
    )
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    # A FileIO that is not the local one stands in for S3/HDFS (commits there need more support).
    remote = Table(FileIO(pafs.LocalFileSystem()), t.location, t.identifier)
    files = bucket_files(remote, (), 0)
    assert files.local_path is not None
    (entry,) = t.live_entries(t.latest_snapshot())
    assert files.read(entry.file).equals(bucket_files(t, (), 0).read(entry.file))
    copies = LocalCopies.default(2**40, 3_600_000)
    assert any(name.endswith(entry.file.file_name) for name in os.listdir(copies.directory))
    # Bounded on disk: beyond the budget older copies go, never the one about to be read.
    tiny = LocalCopies(str(tmp_path / "copies"), 0, 3_600_000)
    (tmp_path / "copies").mkdir(mode=0o700)  # a lookup cache directory must be private
    (tmp_path / "copies" / "old-copy").write_bytes(b"x" * 10)
    kept = tiny.local_path(remote.file_io, files.path(entry.file))
    assert os.listdir(tmp_path / "copies") == [os.path.basename(kept)]
