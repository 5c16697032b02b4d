"""What writers hand to the committer: one picklable message per (partition, bucket)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stratalake.lsm.data_file import bucket_dir
from stratalake.spec.manifest import DataFileMeta, IndexManifestEntry
from stratalake.store.files import delete_in_table

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


@dataclass(frozen=True)
class CommitMessage:
    """What one writer (e.g. a Spark task) produced for one (partition, bucket). Picklable."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_changelog_files: tuple[DataFileMeta, ...] = ()
    # Deletion vectors, changed by the compaction: the bucket's new index files replace the old.
    index_files_added: tuple[IndexManifestEntry, ...] = ()
    index_files_deleted: tuple[IndexManifestEntry, ...] = ()
    # Names of the bucket's deletion-vector index files the compaction read (None: the table has
    # none). The compaction is valid only if they are still exactly the live ones.
    index_base: tuple[str, ...] | None = None
    # Cross-partition upsert writers: (writer id, number of assigner slices N, the slices whose
    # keys the writer held). Each key's index entry lives in exactly one writer only if no two
    # writers of a commit held one slice (commit/conflicts.check_assigner_slices).
    assigner_claim: tuple[str, int, tuple[int, ...]] | None = None
    # Cross-partition upsert writers: the snapshot whose live keys the writer's key index was
    # bootstrapped from (0: the table was empty). Another job's rows committed after it could hold
    # keys this writer placed again elsewhere (commit/conflicts.check_key_index_base).
    key_index_snapshot: int | None = None

    def is_empty(self) -> bool:
        return not (
            self.new_files
            or self.compact_before
            or self.compact_after
            or self.changelog_files
            or self.compact_changelog_files
            or self.index_files_added
            or self.index_files_deleted
        )


def delete_uncommitted(table: TableStore, messages: Sequence[CommitMessage]) -> None:
    """Remove the files of messages whose commit failed (they were never visible)."""
    codec = table.partition_codec
    for m in messages:
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(m.partition)), m.bucket)
        # An upgraded file keeps its name: it is still the committed input, never delete it.
        inputs = {f.file_name for f in m.compact_before}
        outputs = [f for f in m.compact_after if f.file_name not in inputs]
        # Messages may be crafted (a refused commit comes here too): delete only inside the table.
        for f in (*m.new_files, *m.changelog_files, *outputs, *m.compact_changelog_files):
            delete_in_table(table, f"{directory}/{f.file_name}")
        for e in m.index_files_added:
            delete_in_table(table, f"{table.location}/index/{e.file_name}")
