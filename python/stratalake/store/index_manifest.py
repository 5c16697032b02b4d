"""Index manifests (docs/format.md section 10): which index files (deletion vectors, dynamic-bucket hash
indexes) a snapshot holds.

A snapshot's ``indexManifest`` names an Avro file under ``manifest/`` listing every live index file
as an ADD entry: unlike data manifests it is the full state, rewritten whenever index files change
(as Paimon's ``IndexManifestFileHandler`` does), and carried over unchanged by commits that touch
no index. Entries of types stratalake does not produce are kept as they are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from stratalake.lsm.deletion_vector import DELETION_VECTORS_INDEX, DeletionFile, DeletionVectorsMaintainer
from stratalake.spec.manifest import FileKind, IndexManifestEntry
from stratalake.spec.snapshot import Snapshot
from stratalake.store import files

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

BucketKey = tuple[bytes, int]
HASH_INDEX = "HASH"  # dynamic-bucket key hashes (bucket/dynamic.py)


def index_dir(table: TableStore) -> str:
    return f"{table.location}/index"


def index_file_path(table: TableStore, entry: IndexManifestEntry) -> str:
    return files.index_file_path(index_dir(table), entry)


def live_index_entries(table: TableStore, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
    """Live index files of ``snapshot`` (ADDs not deleted; older writers may list DELETEs)."""
    if snapshot is None or snapshot.index_manifest is None:
        return []
    entries = table.manifest_io.read_index(snapshot.index_manifest)
    deleted = {(e.partition, e.bucket, e.file_name) for e in entries if e.kind is FileKind.DELETE}
    return [
        e for e in entries if e.kind is FileKind.ADD and (e.partition, e.bucket, e.file_name) not in deleted
    ]


def dv_entries_by_bucket(entries: Iterable[IndexManifestEntry]) -> dict[BucketKey, list[IndexManifestEntry]]:
    out: dict[BucketKey, list[IndexManifestEntry]] = defaultdict(list)
    for e in entries:
        if e.index_type == DELETION_VECTORS_INDEX:
            out[(e.partition, e.bucket)].append(e)
    return dict(out)


def deletion_files(table: TableStore, entries: Iterable[IndexManifestEntry]) -> dict[str, DeletionFile]:
    """Data file name -> where its vector is, for one bucket's DELETION_VECTORS entries."""
    out: dict[str, DeletionFile] = {}
    for e in entries:
        path = index_file_path(table, e)
        for r in e.dv_ranges or ():
            out[r.data_file] = DeletionFile(path, r.offset, r.length, r.cardinality)
    return out


def restore_maintainer(
    table: TableStore, partition: bytes, bucket: int, entries: Sequence[IndexManifestEntry]
) -> DeletionVectorsMaintainer:
    """The bucket's vectors, loaded from its live index files."""
    m = DeletionVectorsMaintainer.restore(table.file_io, index_dir(table), partition, bucket, entries)
    m.target_file_size = (
        table.core_options.get_int("deletion-vector.index-file.target-size") or m.target_file_size
    )
    return m


def write_index_manifest(
    table: TableStore,
    previous: Sequence[IndexManifestEntry],
    added: Sequence[IndexManifestEntry],
    deleted: Sequence[IndexManifestEntry],
) -> str | None:
    """Write the live set ``previous - deleted + added``; returns its name (None when empty).

    A HASH entry (dynamic-bucket index) replaces the bucket's previous one even when not listed in
    ``deleted``: each is the bucket's full key set, and Paimon's writers add without deleting
    (its index-manifest combiner keys HASH entries by partition and bucket).
    """
    gone = {(e.partition, e.bucket, e.file_name) for e in deleted}
    replaced = {
        (e.partition, e.bucket) for e in added if e.index_type == HASH_INDEX and e.kind is FileKind.ADD
    }
    entries = [
        e
        for e in previous
        if (e.partition, e.bucket, e.file_name) not in gone
        and not (e.index_type == HASH_INDEX and (e.partition, e.bucket) in replaced)
    ]
    entries += [e for e in added if e.kind is FileKind.ADD]
    if not entries:
        return None
    return table.manifest_io.write_index(entries)
