"""Conflict checks of a commit against the latest snapshot, and the key reads they need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CommitConflictError
from stratalake.lsm.data_file import bucket_dir, read_kv_file
from stratalake.lsm.levels import KeyOf, key_decoder
from stratalake.merge import SEQUENCE_NUMBER
from stratalake.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from stratalake.table.dynamic_bucket import check_hash_index_conflicts
from stratalake.table.index_manifest import dv_entries_by_bucket

if TYPE_CHECKING:
    from stratalake.table.table import Table

LiveEntries = dict[tuple[bytes, int, str], ManifestEntry]


class FileKeys(Protocol):
    """Reads one data file's trimmed-key columns and sequence numbers (cached in ``keys_read``)."""

    def __call__(
        self,
        partition: bytes,
        bucket: int,
        f: DataFileMeta,
        key_names: list[str],
        keys_read: dict[str, pa.Table],
    ) -> pa.Table: ...


def check_deletes(table: Table, delta: Sequence[ManifestEntry], live: LiveEntries) -> None:
    for e in delta:
        if e.kind is FileKind.DELETE and e.identifier() not in live:
            raise CommitConflictError(
                f"table {table.identifier}: file {e.file.file_name} (bucket {e.bucket}) was "
                "already removed by a concurrent commit (e.g. another compaction); this commit "
                "was abandoned and the table is unchanged. Re-run the compaction."
            )


def check_hash_index(
    table: Table, index_added: Sequence[IndexManifestEntry], index_live: Sequence[IndexManifestEntry] | None
) -> None:
    """Dynamic buckets: a partition's hash index changed by another commit since this writer
    loaded it (see :func:`stratalake.table.dynamic_bucket.check_hash_index_conflicts`)."""
    check_hash_index_conflicts(table, index_added, index_live)


def check_index(
    table: Table,
    index_base: dict[tuple[bytes, int], frozenset[str]],
    index_added: Sequence[IndexManifestEntry],
    index_deleted: Sequence[IndexManifestEntry],
    index_live: Sequence[IndexManifestEntry],
) -> None:
    """A compaction read its bucket's deletion vectors at some snapshot; if another commit
    changed them since, its output (and its new vectors) would be based on stale ones."""
    live = dv_entries_by_bucket(index_live)
    buckets = set(index_base) | {(e.partition, e.bucket) for e in [*index_added, *index_deleted]}
    for key in buckets:
        current = {e.file_name for e in live.get(key, ())}
        base = index_base.get(key)
        expected = (
            set(base)
            if base is not None
            else {e.file_name for e in index_deleted if (e.partition, e.bucket) == key}
        )
        if current != expected:
            raise CommitConflictError(
                f"table {table.identifier}: the deletion vectors of bucket {key[1]} changed "
                "while this compaction ran (a concurrent compaction committed first); this commit "
                "was abandoned and the table is unchanged. Re-run the compaction."
            )


def check_concurrent_writers(
    table: Table,
    delta: Sequence[ManifestEntry],
    live: LiveEntries,
    keys_read: dict[str, pa.Table],
    file_keys: FileKeys,
) -> None:
    """Refuse new files that share keys with rows a concurrent writer committed to the bucket.

    A writer numbers a bucket's rows from one above the highest sequence number of the
    bucket's live files when it started, so every row it did not see (committed by another
    writer since) has a sequence number >= the new files' smallest one; rows it saw have
    lower ones (compaction keeps each row's number). Two writers of the same key would give
    it overlapping (even equal) numbers, and then readers and compaction could pick different
    winners: Paimon's contract is one writer per bucket. Files of other buckets, files below
    the new range and files whose key range misses the new files' cost no I/O; only the rest
    have their keys read (once per commit) and compared exactly, so writers of disjoint keys
    (and concurrent compactions of what they wrote) still commit.
    """
    schema = table.schema()
    key_names = list(schema.trimmed_primary_keys)
    ours: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in delta:
        if e.kind is FileKind.ADD:
            ours.setdefault((e.partition, e.bucket), []).append(e.file)
    if not ours or not key_names:
        return
    dropped = {e.identifier() for e in delta if e.kind is FileKind.DELETE}  # an overwrite's
    others: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for ident, e in live.items():
        if (e.partition, e.bucket) in ours and ident not in dropped:
            others.setdefault((e.partition, e.bucket), []).append(e.file)
    key_of = key_decoder(schema)
    for (partition, bucket), files in ours.items():
        start = min(f.min_sequence_number for f in files)
        suspects = [
            f
            for f in others.get((partition, bucket), ())
            if f.max_sequence_number >= start and any(_keys_overlap(key_of, f, g) for g in files)
        ]
        if not suspects:
            continue
        theirs = pa.concat_tables([file_keys(partition, bucket, f, key_names, keys_read) for f in suspects])
        theirs = theirs.filter(pc.greater_equal(theirs.column(SEQUENCE_NUMBER), start)).select(key_names)
        if theirs.num_rows == 0:
            continue
        mine = pa.concat_tables(
            [file_keys(partition, bucket, f, key_names, keys_read) for f in files]
        ).select(key_names)
        shared = _shared_keys(mine, theirs, key_names)
        if shared is not None:
            codec = table.partition_codec
            where = f"partition {codec.to_dict(partition)}" if codec.is_partitioned else "the table"
            raise CommitConflictError(
                f"table {table.identifier}: a concurrent writer committed rows with the same "
                f"primary key (e.g. {shared}) into bucket {bucket} of {where} after this writer "
                "started. Their sequence numbers overlap this commit's, so which version wins "
                "would not follow the commit order (and on equal numbers readers and compaction "
                "could pick different ones). Paimon tables need one writer per bucket; this "
                "commit was abandoned and the table is unchanged. Retry the write (a new writer "
                "numbers its rows after the other writer's)."
            )


def read_file_keys(
    table: Table,
    partition: bytes,
    bucket: int,
    f: DataFileMeta,
    key_names: list[str],
    keys_read: dict[str, pa.Table],
) -> pa.Table:
    """The trimmed-key columns and sequence numbers of one data file (cached per commit)."""
    if f.external_path:
        path = f.external_path
    else:
        codec = table.partition_codec
        path = f"{bucket_dir(table.location, codec.path(codec.from_bytes(partition)), bucket)}/{f.file_name}"
    cached = keys_read.get(path)
    if cached is None:
        kv = read_kv_file(table.file_io, path, table.file_schema(f.schema_id), table.schema(), key_names)
        cached = keys_read[path] = kv.select([*key_names, SEQUENCE_NUMBER])
    return cached


def _keys_overlap(key_of: KeyOf, a: DataFileMeta, b: DataFileMeta) -> bool:
    """Whether two files' ``[min_key, max_key]`` ranges intersect (True when undecidable)."""
    try:
        return bool(key_of(a.min_key) <= key_of(b.max_key) and key_of(b.min_key) <= key_of(a.max_key))
    except Exception:  # keys of an older schema that do not decode or compare: check the rows
        return True


def _shared_keys(mine: pa.Table, theirs: pa.Table, key_names: list[str]) -> dict[str, Any] | None:
    """One primary key present in both tables (None if they share none)."""
    if len(key_names) == 1:
        name = key_names[0]
        column = mine.column(name)
        mask = pc.is_in(column, value_set=theirs.column(name).combine_chunks())
        hits = mine.filter(mask)
    else:
        try:
            hits = mine.join(theirs, keys=key_names, join_type="left semi")
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # a key type hash joins lack
            seen = set(zip(*(theirs.column(k).to_pylist() for k in key_names), strict=True))
            rows = zip(*(mine.column(k).to_pylist() for k in key_names), strict=True)
            found = next((r for r in rows if r in seen), None)
            return None if found is None else dict(zip(key_names, found, strict=True))
    return hits.slice(0, 1).to_pylist()[0] if hits.num_rows else None
