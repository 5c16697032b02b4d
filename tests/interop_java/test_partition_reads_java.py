"""Reads of known partitions decode only the manifest blocks that hold them (issue 33), on the
manifests Paimon's Java writer lays out and encodes (BinaryRow partitions of a string and an int
column; Paimon's Avro blocks): each such read returns exactly what reading everything and
filtering returns, a commit into one partition keeps the table whole, and Paimon Java reads the
result.

Run by ``make test-paimon-java`` (and CI); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import stratalake
from stratalake.spec import avro
from stratalake.spec.manifest import ManifestEntry
from stratalake.store import manifests
from tests.interop_java.paimon_java import RELEASES, read_tables, write_table

pytestmark = pytest.mark.paimon_java

PARTITIONS = 75  # dt values; h = id % 2 makes 150 partitions, each in 4 buckets


def _rows(table: pa.Table) -> list[tuple[str, ...]]:
    cols = [table.column(c).to_pylist() for c in ("id", "v", "dt", "h")]
    return sorted(tuple("null" if x is None else str(x) for x in row) for row in zip(*cols, strict=True))


def test_one_partition_reads_of_a_table_paimon_java_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = RELEASES[-1]
    wh = str(tmp_path / "wh")
    write_table(release, wh, "db.t", True, range(0, 2400), "j", {"bucket": "4", "test.partitions": str(PARTITIONS)})
    t = stratalake.Catalog(wh).get_table("db.t")
    snap = t.latest_snapshot()
    assert snap is not None
    mio = t.manifest_io
    metas = mio.read_list(snap.base_manifest_list) + mio.read_list(snap.delta_manifest_list)
    blocks = sum(1 for m in metas for _ in fastavro.block_reader(io.BytesIO(t.file_io.read_bytes(mio.path(m.file_name)))))
    total = sum(m.num_added_files + m.num_deleted_files for m in metas)
    # ~600 entries (16 rows per partition hash into up to 4 buckets) in several Avro blocks.
    assert total > 500 and blocks >= 3, (total, blocks)
    everything = t.read()

    decoded = 0
    real = avro._entry_from

    def counted(r: Any, *shared: Any) -> ManifestEntry:
        nonlocal decoded
        decoded += 1
        return real(r, *shared)

    monkeypatch.setattr(avro, "_entry_from", counted)
    for k in (0, 37, 74, 2399):
        dt, h = f"2026-11-{k % PARTITIONS:02d}", k % 2
        manifests._CACHE = manifests._LRU(2048)  # cold, as a new process
        decoded = 0
        where = (stratalake.field("dt") == dt) & (stratalake.field("h") == h)
        got = t.read(filter=where)
        want = everything.filter(pc.and_(pc.equal(everything["dt"], dt), pc.equal(everything["h"], h)))
        assert want.num_rows == 16
        assert _rows(got) == _rows(want)
        assert decoded < total  # the blocks without the partition were not decoded

    # A commit into one partition checks its conflicts from that partition's blocks; Paimon Java
    # then reads the whole table.
    manifests._CACHE = manifests._LRU(2048)
    fresh = stratalake.Catalog(wh).get_table("db.t")
    fresh.write(
        pa.table(
            {
                "id": pa.array([0, 5000], pa.int64()),
                "v": ["s0", "s5000"],
                "dt": ["2026-11-00", "2026-11-00"],
                "h": pa.array([0, 0], pa.int32()),
            }
        )
    )
    after = stratalake.Catalog(wh).get_table("db.t").read()
    assert after.num_rows == 2401
    assert read_tables(release, wh, ["db.t"])["db.t"] == _rows(after)


def test_a_table_paimon_java_wrote_plans_in_batches_as_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paimon Java's manifests (its entry order, its Avro blocks), updated by a second Paimon
    write and compacted by stratalake (DELETE entries in the history), planned in batches of a
    few files (issue 33): the same splits in the same order as at once, and reading the batches'
    splits returns the table's rows."""
    from stratalake.read import scan as scan_module

    release = RELEASES[-1]
    wh = str(tmp_path / "wh")
    opts = {"bucket": "4", "test.partitions": "20"}
    write_table(release, wh, "db.t", True, range(0, 1200), "j", opts)
    write_table(release, wh, "db.t", True, range(600, 1800), "k", opts)
    t = stratalake.Catalog(wh).get_table("db.t")
    t.compact(full=True)
    write_table(release, wh, "db.t", True, range(0, 300), "m", opts)
    t = stratalake.Catalog(wh).get_table("db.t")
    whole = t.new_scan().plan()
    monkeypatch.setattr(scan_module, "PLAN_AT_ONCE_FILES", 8)
    monkeypatch.setattr(scan_module, "PLAN_BATCH_FILES", 8)
    batches = list(t.new_scan().plan_batches())
    assert len(batches) > 3
    assert [s for b in batches for s in b] == whole
    read = t.new_read()
    rows = pa.concat_tables([read.read_split_table(s) for b in batches for s in b])
    assert _rows(rows) == _rows(t.read())
    assert rows.num_rows == 1800
