"""Helpers of the issue 33 tests: a FileIO that records manifest reads, synthetic manifests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.io import LocalFileIO
from stratalake.operation.commit import live_cache
from stratalake.spec.binary_row import encode_row
from stratalake.spec.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from stratalake.store import manifests
from stratalake.store.manifests import ManifestIO, ManifestNamer
from stratalake.table import Table
from stratalake.types import DataType

BIGINT = DataType.parse("BIGINT")


class RecordingFileIO(LocalFileIO):
    """The local FileIO, recording the manifest files (not lists) it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.manifests_read: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            self.manifests_read.append(name)
        return super().read_bytes(path)


@pytest.fixture(autouse=True)
def cold_manifest_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts with no decoded manifest cached (reads reach the FileIO)."""
    monkeypatch.setattr(manifests, "_CACHE", manifests._LRU(2048))
    live_cache.clear()  # nor any commit's kept fold of live files
    yield
    live_cache.clear()


def _file(j: int, seq: int) -> DataFileMeta:
    key = encode_row([j], [BIGINT])
    return DataFileMeta(
        file_name=f"data-test-{j:08d}-0.parquet",
        file_size=100,
        row_count=1,
        min_key=key,
        max_key=key,
        key_stats=SimpleStats(key, key, (0,)),
        value_stats=SimpleStats.empty(),
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=0,
        delete_row_count=0,
    )


def _table(tmp_path: Any, partition_type: pa.DataType | None = None, buckets: int = 4) -> Table:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("id", pa.int64()), ("dt", partition_type or pa.string()), ("v", pa.string())])
    cat.create_table(
        "db.t", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": str(buckets)}
    )
    return Table(RecordingFileIO(), f"{tmp_path}/db.db/t", "db.t")


def _synthesize(
    table: Table, partitions: list[Any], files_per_manifest: int, buckets: int = 4, bucket_run: int = 1
) -> None:
    """One snapshot whose manifests hold ``partitions`` (one entry per item, in order), written
    through ManifestIO: ``files_per_manifest`` consecutive entries per manifest, buckets taking
    turns every ``bucket_run`` entries."""
    mio: ManifestIO = table.manifest_io
    codec = table.partition_codec
    namer = ManifestNamer()
    entries = [
        ManifestEntry(FileKind.ADD, codec.to_bytes([p]), (j // bucket_run) % buckets, buckets, _file(j, j))
        for j, p in enumerate(partitions)
    ]
    metas = []
    for off in range(0, len(entries), files_per_manifest):
        metas += mio.write_entries(entries[off : off + files_per_manifest], namer)
    base, base_size = mio.write_list([], namer)
    delta, delta_size = mio.write_list(metas, namer)
    snap = Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list=base,
        delta_manifest_list=delta,
        changelog_manifest_list=None,
        index_manifest=None,
        commit_user="test",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.APPEND,
        time_millis=int(time.time() * 1000),
        total_record_count=len(entries),
        delta_record_count=len(entries),
        changelog_record_count=0,
        watermark=None,
        base_manifest_list_size=base_size,
        delta_manifest_list_size=delta_size,
        changelog_manifest_list_size=None,
    )
    assert table.snapshot_manager.try_commit(snap)
    manifests._CACHE = manifests._LRU(2048)  # written manifests were cached: start cold


def _io(table: Table) -> RecordingFileIO:
    assert isinstance(table.file_io, RecordingFileIO)
    return table.file_io


def _split_files(splits: list[Any]) -> set[tuple[bytes, int, str]]:
    return {(s.partition, s.bucket, f.file_name) for s in splits for f in s.files}


