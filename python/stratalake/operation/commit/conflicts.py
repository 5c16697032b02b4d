"""Conflict checks of a commit against the latest snapshot, and the key reads they need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.bucket.dynamic import check_hash_index_conflicts
from stratalake.exceptions import CommitConflictError, CorruptFileError, SnapshotNotFoundError
from stratalake.lsm.data_file import bucket_dir, read_kv_file
from stratalake.lsm.levels import KeyOf, key_decoder, split_into_runs
from stratalake.merge import SEQUENCE_NUMBER
from stratalake.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from stratalake.spec.names import check_data_file, check_index_file
from stratalake.spec.snapshot import CommitKind, Snapshot
from stratalake.store.files import data_file_path
from stratalake.store.index_manifest import dv_entries_by_bucket

if TYPE_CHECKING:
    from stratalake.operation.commit.message import CommitMessage
    from stratalake.store.table_store import TableStore

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


class InvalidCommitError(CommitConflictError):
    """The messages of a commit contradict each other or would break the LSM invariants (e.g. two
    writers compacted the same bucket). Nothing was committed; retrying the same messages fails
    again: the write itself must be repeated (with one writer per bucket)."""


def _where(table: TableStore, partition: bytes, bucket: int) -> str:
    codec = table.partition_codec
    part = f"partition {codec.to_dict(partition)}, " if codec.is_partitioned else ""
    return f"table {table.identifier} ({part}bucket {bucket})"


def check_messages(table: TableStore, messages: Sequence[CommitMessage]) -> None:
    """Refuse messages that contradict each other (metadata only, before anything is committed):
    a file added twice or compacted away twice, or two messages compacting one (partition,
    bucket). Each would come from several writers of one bucket (e.g. a Spark job whose tasks
    were not one per bucket, or a duplicated task output); their compactions were each planned
    without the others' files, so committing them would leave overlapping sorted runs or
    duplicated rows."""
    check_file_names(table, messages)
    check_assigner_slices(table, messages)
    added: set[tuple[bytes, int, int, str]] = set()
    deleted: set[tuple[bytes, int, int, str]] = set()
    compacting: set[tuple[bytes, int]] = set()
    for m in messages:
        for f in (*m.new_files, *m.compact_after, *m.changelog_files, *m.compact_changelog_files):
            key = (m.partition, m.bucket, f.level, f.file_name)
            if key in added:
                raise InvalidCommitError(
                    f"{_where(table, m.partition, m.bucket)}: file {f.file_name} (level {f.level}) is "
                    "added twice by this commit (a writer's output was passed twice, e.g. two "
                    "attempts of one task); nothing was committed."
                )
            added.add(key)
        for f in m.compact_before:
            key = (m.partition, m.bucket, f.level, f.file_name)
            if key in deleted:
                raise InvalidCommitError(
                    f"{_where(table, m.partition, m.bucket)}: file {f.file_name} (level {f.level}) is "
                    "compacted away twice by this commit: several writers compacted the same bucket "
                    "(Paimon tables need one writer per bucket); nothing was committed. Repeat the "
                    "write with one writer per bucket."
                )
            deleted.add(key)
        if m.compact_before or m.compact_after:
            if (m.partition, m.bucket) in compacting:
                raise InvalidCommitError(
                    f"{_where(table, m.partition, m.bucket)}: two writers of this commit compacted the "
                    "same bucket, each without the other's files, so their outputs would overlap "
                    "(Paimon tables need one writer per bucket); nothing was committed. Repeat the "
                    "write with one writer per bucket."
                )
            compacting.add((m.partition, m.bucket))


def check_file_names(table: TableStore, messages: Sequence[CommitMessage]) -> None:
    """Every file a message names is one file name inside its bucket or ``index/`` directory, with
    no external path: messages come from writers (e.g. unpickled from Spark tasks), and what a
    snapshot names is later read, and deleted by expiration, with the committer's rights."""
    for m in messages:
        try:
            for f in (*m.new_files, *m.compact_before, *m.compact_after):
                check_data_file(f)
            for f in (*m.changelog_files, *m.compact_changelog_files):
                check_data_file(f, "changelog file")
            for e in (*m.index_files_added, *m.index_files_deleted):
                check_index_file(e)
        except CorruptFileError as e:
            raise InvalidCommitError(
                f"{_where(table, m.partition, m.bucket)}: {e}; nothing was committed"
            ) from None


def check_assigner_slices(table: TableStore, messages: Sequence[CommitMessage]) -> None:
    """Cross-partition upserts: the writers of one commit (e.g. the tasks of a Spark statement)
    must have split the keys by one N, each slice held by one writer; otherwise two writers could
    each have placed (or moved) the same key, leaving it in two partitions or buckets."""
    claims: dict[str, tuple[int, tuple[int, ...]]] = {}
    for m in messages:
        if m.assigner_claim is not None:
            writer, n, held = m.assigner_claim
            claims[writer] = (n, held)
    if len(claims) < 2:
        return
    sizes = sorted({n for n, _ in claims.values()})
    if len(sizes) > 1:
        raise InvalidCommitError(
            f"table {table.identifier}: the writers of this cross-partition upsert commit split the "
            f"primary keys into different numbers of assigner slices {sizes}, so one key could have "
            "been placed by two of them; nothing was committed. Repeat the write with one number of "
            "assigners (stratalake.write.dynamic-assigners) for every writer."
        )
    owner: dict[int, str] = {}
    for writer, (_, held) in claims.items():
        for s in held:
            other = owner.setdefault(s, writer)
            if other != writer:
                raise InvalidCommitError(
                    f"table {table.identifier}: two writers of this cross-partition upsert commit held "
                    f"keys of assigner slice {s} of {sizes[0]}, so each could have placed or moved the "
                    "same key (leaving it in two partitions or buckets); nothing was committed. Route "
                    "each slice of the key hashes to one writer (Spark clusters by "
                    "stratalake_bucket(N, mask, primary key))."
                )


def check_key_index_base(
    table: TableStore, base: int | None, latest: Snapshot | None, commit_user: str
) -> None:
    """Cross-partition upserts: refuse a commit when another job added rows (an APPEND or
    OVERWRITE snapshot of another commit user) after the snapshot the writers bootstrapped their
    key -> (partition, bucket) index from. That job may have placed keys this commit places again,
    in another partition or bucket (Paimon allows one writing job at a time on such a table and
    does not reconcile two; refusing keeps every key in one place). Compactions keep keys where
    they are and pass; an expired snapshot in between counts as a conflict (it cannot be read)."""
    if base is None or latest is None or latest.id <= base:
        return
    sm = table.snapshot_manager
    for sid in range(base + 1, latest.id + 1):
        try:
            snap = sm.snapshot(sid)
        except SnapshotNotFoundError:
            snap = None
        if snap is None or (
            snap.commit_user != commit_user and snap.commit_kind in (CommitKind.APPEND, CommitKind.OVERWRITE)
        ):
            raise CommitConflictError(
                f"table {table.identifier}: another job wrote rows to this cross-partition upsert table "
                f"(snapshot {sid}) after this write read where its keys live (snapshot {base}); both may "
                "have placed one key in different partitions or buckets. Paimon allows one writing job "
                "at a time on such a table; this commit was abandoned and the table is unchanged. Retry "
                "the write"
            )


def check_sorted_runs(
    table: TableStore, live: LiveEntries, stages: Sequence[Sequence[ManifestEntry]]
) -> None:
    """Refuse a commit after which a level >= 1 of a bucket it touches would hold files with
    overlapping key ranges (such a level is one sorted run). ``stages`` are the entries of the
    snapshots this commit writes, applied in order to ``live``; a stage deleting a file that is
    not live is skipped (its own delete check refuses it). Metadata only: ``_MIN_KEY`` and
    ``_MAX_KEY`` compared like :mod:`stratalake.lsm.levels` does.

    Levels that already overlapped before (tables written by older versions) are left to
    compaction, which repairs them; only overlaps this commit would create are refused.
    """
    touched = {(e.partition, e.bucket) for stage in stages for e in stage if e.file.level > 0}
    if not touched:
        return

    def ident(e: ManifestEntry) -> tuple[bytes, int, int, str]:
        return (e.partition, e.bucket, e.file.level, e.file.file_name)

    # The touched buckets' files (every level: a stage deleting a file that is gone is skipped).
    state = {ident(e): e for e in live.values() if (e.partition, e.bucket) in touched}
    before = {k: e.file for k, e in state.items() if k[2] > 0}
    new: set[tuple[bytes, int, int, str]] = set()
    for stage in stages:
        mine = [e for e in stage if (e.partition, e.bucket) in touched]
        if any(e.kind is FileKind.DELETE and ident(e) not in state for e in mine):
            continue
        for e in mine:
            if e.kind is FileKind.DELETE:
                del state[ident(e)]
                new.discard(ident(e))
            else:
                state[ident(e)] = e
                new.add(ident(e))
    state = {k: e for k, e in state.items() if k[2] > 0}
    if not new:
        return
    key_of = key_decoder(table.schema())
    levels: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
    for (partition, bucket, level, _), e in state.items():
        levels.setdefault((partition, bucket, level), []).append(e.file)
    old_levels: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
    for (partition, bucket, level, _), f in before.items():
        old_levels.setdefault((partition, bucket, level), []).append(f)
    for (partition, bucket, level), files in levels.items():
        if not any((partition, bucket, level, f.file_name) in new for f in files) or len(files) < 2:
            continue
        pair = _first_overlap(key_of, files)
        if pair is None:
            continue
        if len(split_into_runs(old_levels.get((partition, bucket, level), []), key_of)) > 1:
            continue  # overlapping before this commit: compaction repairs it
        a, b = pair
        raise InvalidCommitError(
            f"{_where(table, partition, bucket)}: this commit would leave overlapping files at level "
            f"{level}, which must be one sorted run: {_describe(key_of, a)} and {_describe(key_of, b)}. "
            "Several writers compacted or wrote the same bucket (Paimon tables need one writer per "
            "bucket); nothing was committed. Repeat the write with one writer per bucket."
        )


def _first_overlap(key_of: KeyOf, files: Sequence[DataFileMeta]) -> tuple[DataFileMeta, DataFileMeta] | None:
    """Two files whose key ranges intersect (files whose keys do not decode count as disjoint:
    they were written under an older schema and are not this commit's)."""
    try:
        ordered = sorted(files, key=lambda f: key_of(f.min_key))
        reach = ordered[0]
        for f in ordered[1:]:
            if key_of(f.min_key) <= key_of(reach.max_key):
                return reach, f
            if key_of(f.max_key) > key_of(reach.max_key):
                reach = f
    except Exception:
        return None
    return None


def _describe(key_of: KeyOf, f: DataFileMeta) -> str:
    return f"{f.file_name} (keys {key_of(f.min_key)}..{key_of(f.max_key)})"


def check_deletes(table: TableStore, delta: Sequence[ManifestEntry], live: LiveEntries) -> None:
    for e in delta:
        if e.kind is FileKind.DELETE and e.identifier() not in live:
            raise CommitConflictError(
                f"table {table.identifier}: file {e.file.file_name} (bucket {e.bucket}) was "
                "already removed by a concurrent commit (e.g. another compaction); this commit "
                "was abandoned and the table is unchanged. Re-run the compaction."
            )


def check_hash_index(
    table: TableStore,
    index_added: Sequence[IndexManifestEntry],
    index_live: Sequence[IndexManifestEntry] | None,
) -> None:
    """Dynamic buckets: a partition's hash index changed by another commit since this writer
    loaded it (see :func:`stratalake.bucket.dynamic.check_hash_index_conflicts`)."""
    check_hash_index_conflicts(table, index_added, index_live)


def check_index(
    table: TableStore,
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
                "since this commit read them (a concurrent compaction or DELETE / UPDATE / MERGE "
                "committed first); this commit was abandoned and the table is unchanged. Re-run "
                "the compaction or statement."
            )


def check_concurrent_writers(
    table: TableStore,
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
    table: TableStore,
    partition: bytes,
    bucket: int,
    f: DataFileMeta,
    key_names: list[str],
    keys_read: dict[str, pa.Table],
) -> pa.Table:
    """The trimmed-key columns and sequence numbers of one data file (cached per commit)."""
    codec = table.partition_codec
    path = data_file_path(bucket_dir(table.location, codec.path(codec.from_bytes(partition)), bucket), f)
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
