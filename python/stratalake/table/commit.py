"""Optimistic snapshot commits: APPEND, OVERWRITE and COMPACT, with conflict checks and retries."""

from __future__ import annotations

import logging
import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CommitConflictError
from stratalake.lsm.data_file import bucket_dir, read_kv_file
from stratalake.lsm.deletion_vector import DELETION_VECTORS_INDEX
from stratalake.lsm.levels import KeyOf, key_decoder
from stratalake.merge import SEQUENCE_NUMBER
from stratalake.spec.avro import encode_manifest_entries
from stratalake.spec.binary_row import decode_row
from stratalake.spec.manifest import (
    DataFileMeta,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)
from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from stratalake.table.expire import expire_after_commit
from stratalake.table.index_manifest import dv_entries_by_bucket, live_index_entries, write_index_manifest
from stratalake.table.manifests import ManifestIO, ManifestNamer, fold_entries

if TYPE_CHECKING:
    from stratalake.table.table import Table

_LOG = logging.getLogger(__name__)


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


@dataclass
class _Plan:
    """The entries of one snapshot to commit, derived from the current latest snapshot."""

    kind: CommitKind
    delta: list[ManifestEntry]
    changelog: list[ManifestEntry] = field(default_factory=list)
    index_added: list[IndexManifestEntry] = field(default_factory=list)
    index_deleted: list[IndexManifestEntry] = field(default_factory=list)
    # Deletion-vector index files of these partitions go (an overwrite drops their data files).
    drop_index_of: Callable[[bytes], bool] | None = None
    index_base: dict[tuple[bytes, int], frozenset[str]] = field(default_factory=dict)

    def touches_index(self) -> bool:
        return bool(self.index_added or self.index_deleted or self.drop_index_of or self.index_base)


class TableCommit:
    """Commits writers' messages as one snapshot with optimistic concurrency.

    A commit never leaves a visible partial state: data and manifest files are written first; the
    snapshot file, created atomically only if its id is free, is what makes them visible. On a
    lost race it re-reads the latest snapshot, re-checks conflicts and retries with the next id.
    """

    def __init__(self, table: Table, commit_user: str | None = None) -> None:
        self.table = table
        self.commit_user = commit_user or str(uuid.uuid4())

    def commit(
        self,
        messages: Sequence[CommitMessage | None],
        overwrite: bool = False,
        overwrite_partitions: Sequence[dict[str, Any]] | None = None,
        commit_identifier: int | None = None,
    ) -> int | None:
        """Commit ``messages``; returns the new snapshot id (or the last one written).

        ``overwrite=True`` replaces the whole table, or only ``overwrite_partitions`` when given
        (a list of partition specs such as ``{"dt": "2024-01-01"}``). A streaming writer passes a
        ``commit_identifier``; a commit already recorded for (commit user, identifier) is skipped.
        """
        msgs = [m for m in messages if m is not None]
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        if commit_identifier is not None:
            done = self._find_committed(identifier)
            if done is not None:
                return done
        new_files = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.new_files]
        changelog = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.changelog_files]
        compact_changelog = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.compact_changelog_files]
        compact = [self._entry(FileKind.DELETE, m, f) for m in msgs for f in m.compact_before] + [
            self._entry(FileKind.ADD, m, f) for m in msgs for f in m.compact_after
        ]
        index_added = [e for m in msgs for e in m.index_files_added]
        index_deleted = [e for m in msgs for e in m.index_files_deleted]
        index_base = {
            (m.partition, m.bucket): frozenset(m.index_base)
            for m in msgs
            if m.index_base is not None and (m.compact_before or m.compact_after or m.index_files_added)
        }
        last: int | None = None
        if overwrite:
            partition_filter = self._partition_filter(overwrite_partitions)
            last = self._commit_with_retry(
                lambda live: _Plan(
                    CommitKind.OVERWRITE,
                    [
                        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                        for e in live.values()
                        if partition_filter(e.partition)
                    ]
                    + new_files,
                    changelog,
                    drop_index_of=partition_filter,
                ),
                identifier,
                check_deletes=False,
                check_writers=True,
            )
        elif new_files or changelog:
            last = self._commit_with_retry(
                lambda live: _Plan(CommitKind.APPEND, new_files, changelog),
                identifier,
                check_deletes=False,
                check_writers=True,
            )
        if compact or index_added or index_deleted:
            try:
                last = self._commit_with_retry(
                    lambda live: _Plan(
                        CommitKind.COMPACT,
                        compact,
                        compact_changelog,
                        index_added,
                        index_deleted,
                        None,
                        index_base,
                    ),
                    identifier,
                    check_deletes=True,
                )
            except CommitConflictError:
                if last is None:
                    raise  # nothing is committed: the caller removes the files
                # The data is committed; only a writer's own compaction lost a race (e.g. with a
                # compaction job). Compaction is optional, so drop it instead of failing the write.
                self.table.delete_uncommitted([replace(m, new_files=(), changelog_files=()) for m in msgs])
                _LOG.warning(
                    "table %s: compaction after snapshot %s was abandoned: a concurrent commit "
                    "removed some of its input files",
                    self.table.identifier,
                    last,
                )
        if last is not None:
            # As Paimon's committer: expire once a new snapshot exists (skipped when write-only).
            expire_after_commit(self.table)
        return last if last is not None else self.table.snapshot_manager.latest_snapshot_id()

    def committed_snapshot(self, commit_identifier: int) -> int | None:
        """The snapshot this commit user already committed under ``commit_identifier``, if any
        (a streaming writer's replayed batch is recognised this way)."""
        return self._find_committed(commit_identifier)

    # -- internals ------------------------------------------------------------------------------
    @staticmethod
    def _entry(kind: FileKind, m: CommitMessage, f: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f)

    def _partition_filter(self, specs: Sequence[dict[str, Any]] | None) -> Callable[[bytes], bool]:
        if not specs:
            return lambda _p: True
        codec = self.table.partition_codec
        wanted = {codec.to_bytes(codec.spec_to_values(s, self.table.identifier)) for s in specs}
        return lambda p: p in wanted

    def _find_committed(self, identifier: int) -> int | None:
        sm = self.table.snapshot_manager
        latest = sm.latest_snapshot_id()
        earliest = sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            try:
                snap = sm.snapshot(sid)
            except Exception:
                break
            if snap.commit_user == self.commit_user:
                if snap.commit_identifier == identifier:
                    return snap.id
                if snap.commit_identifier < identifier:
                    return None  # this user's commits are ordered: older ones cannot match
        return None

    def _commit_with_retry(
        self,
        plan_for: Callable[[dict[tuple[bytes, int, str], ManifestEntry]], _Plan],
        identifier: int,
        check_deletes: bool,
        check_writers: bool = False,
    ) -> int | None:
        table = self.table
        sm = table.snapshot_manager
        retries = table.core_options.commit_max_retries
        keys_read: dict[str, pa.Table] = {}  # data files' keys read by the writer check, per path
        for attempt in range(retries + 1):
            latest = sm.latest_snapshot()
            base_metas = self._all_metas(latest)
            live = self._live(base_metas)
            plan = plan_for(live)
            index_live = live_index_entries(table, latest) if plan.touches_index() else None
            if plan.drop_index_of is not None and index_live is not None:
                drop = plan.drop_index_of
                plan.index_deleted += [
                    e for e in index_live if e.index_type == DELETION_VECTORS_INDEX and drop(e.partition)
                ]
            if not plan.delta and not plan.changelog and not plan.index_added and not plan.index_deleted:
                return None
            if check_deletes:
                self._check_deletes(plan.delta, live)
                if index_live is not None:
                    self._check_index(plan, index_live)
            if check_writers:
                self._check_concurrent_writers(plan.delta, live, keys_read)
            written: list[str] = []
            snapshot = self._build(latest, base_metas, plan, identifier, written, index_live)
            if sm.try_commit(snapshot):
                return snapshot.id
            for path in written:  # lost the race: our lists are based on a stale snapshot
                table.file_io.delete_quietly(path)
            time.sleep(min(0.01 * (2**attempt), 1.0) * (0.5 + random.random()))
        raise CommitConflictError(
            f"table {table.identifier}: commit failed after {retries} retries because other "
            "writers kept committing; retry the write or raise 'commit.max-retries'"
        )

    def _all_metas(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        mio = self.table.manifest_io
        return mio.read_list(latest.base_manifest_list) + mio.read_list(latest.delta_manifest_list)

    def _live(self, metas: Sequence[ManifestFileMeta]) -> dict[tuple[bytes, int, str], ManifestEntry]:
        mio = self.table.manifest_io
        return fold_entries(e for m in metas for e in mio.read_entries(m.file_name))

    def _check_deletes(
        self, delta: Sequence[ManifestEntry], live: dict[tuple[bytes, int, str], ManifestEntry]
    ) -> None:
        for e in delta:
            if e.kind is FileKind.DELETE and e.identifier() not in live:
                raise CommitConflictError(
                    f"table {self.table.identifier}: file {e.file.file_name} (bucket {e.bucket}) was "
                    "already removed by a concurrent commit (e.g. another compaction); this commit "
                    "was abandoned and the table is unchanged. Re-run the compaction."
                )

    def _check_index(self, plan: _Plan, index_live: Sequence[IndexManifestEntry]) -> None:
        """A compaction read its bucket's deletion vectors at some snapshot; if another commit
        changed them since, its output (and its new vectors) would be based on stale ones."""
        live = dv_entries_by_bucket(index_live)
        buckets = set(plan.index_base) | {
            (e.partition, e.bucket) for e in plan.index_added + plan.index_deleted
        }
        for key in buckets:
            current = {e.file_name for e in live.get(key, ())}
            base = plan.index_base.get(key)
            expected = (
                set(base)
                if base is not None
                else {e.file_name for e in plan.index_deleted if (e.partition, e.bucket) == key}
            )
            if current != expected:
                raise CommitConflictError(
                    f"table {self.table.identifier}: the deletion vectors of bucket {key[1]} changed "
                    "while this compaction ran (a concurrent compaction committed first); this commit "
                    "was abandoned and the table is unchanged. Re-run the compaction."
                )

    def _check_concurrent_writers(
        self,
        delta: Sequence[ManifestEntry],
        live: dict[tuple[bytes, int, str], ManifestEntry],
        keys_read: dict[str, pa.Table],
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
        schema = self.table.schema()
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
            theirs = pa.concat_tables(
                [self._file_keys(partition, bucket, f, key_names, keys_read) for f in suspects]
            )
            theirs = theirs.filter(pc.greater_equal(theirs.column(SEQUENCE_NUMBER), start)).select(key_names)
            if theirs.num_rows == 0:
                continue
            mine = pa.concat_tables(
                [self._file_keys(partition, bucket, f, key_names, keys_read) for f in files]
            ).select(key_names)
            shared = _shared_keys(mine, theirs, key_names)
            if shared is not None:
                codec = self.table.partition_codec
                where = f"partition {codec.to_dict(partition)}" if codec.is_partitioned else "the table"
                raise CommitConflictError(
                    f"table {self.table.identifier}: a concurrent writer committed rows with the same "
                    f"primary key (e.g. {shared}) into bucket {bucket} of {where} after this writer "
                    "started. Their sequence numbers overlap this commit's, so which version wins "
                    "would not follow the commit order (and on equal numbers readers and compaction "
                    "could pick different ones). Paimon tables need one writer per bucket; this "
                    "commit was abandoned and the table is unchanged. Retry the write (a new writer "
                    "numbers its rows after the other writer's)."
                )

    def _file_keys(
        self,
        partition: bytes,
        bucket: int,
        f: DataFileMeta,
        key_names: list[str],
        keys_read: dict[str, pa.Table],
    ) -> pa.Table:
        """The trimmed-key columns and sequence numbers of one data file (cached per commit)."""
        table = self.table
        if f.external_path:
            path = f.external_path
        else:
            codec = table.partition_codec
            path = (
                f"{bucket_dir(table.location, codec.path(codec.from_bytes(partition)), bucket)}/{f.file_name}"
            )
        cached = keys_read.get(path)
        if cached is None:
            kv = read_kv_file(table.file_io, path, table.file_schema(f.schema_id), table.schema(), key_names)
            cached = keys_read[path] = kv.select([*key_names, SEQUENCE_NUMBER])
        return cached

    def _build(
        self,
        latest: Snapshot | None,
        base_metas: list[ManifestFileMeta],
        plan: _Plan,
        identifier: int,
        written: list[str],
        index_live: Sequence[IndexManifestEntry] | None = None,
    ) -> Snapshot:
        table = self.table
        mio: ManifestIO = table.manifest_io
        index_manifest = latest.index_manifest if latest is not None else None
        if plan.index_added or plan.index_deleted:
            # The index manifest is the full live set: write a new one (Paimon does the same).
            index_manifest = write_index_manifest(
                table, index_live or (), plan.index_added, plan.index_deleted
            )
            if index_manifest is not None:
                written.append(mio.path(index_manifest))
        namer = ManifestNamer()
        base_metas = self._maybe_merge(base_metas, namer, written)
        delta_metas = mio.write_entries(plan.delta, namer)
        written += [mio.path(m.file_name) for m in delta_metas]
        base_name, base_size = mio.write_list(base_metas, namer)
        delta_name, delta_size = mio.write_list(delta_metas, namer)
        written += [mio.path(base_name), mio.path(delta_name)]
        changelog_name = changelog_size = changelog_count = None
        if plan.changelog:
            cl_metas = mio.write_entries(plan.changelog, namer)
            written += [mio.path(m.file_name) for m in cl_metas]
            changelog_name, changelog_size = mio.write_list(cl_metas, namer)
            written.append(mio.path(changelog_name))
            changelog_count = sum(e.file.row_count for e in plan.changelog)
        delta_count = sum(
            e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in plan.delta
        )
        previous_total = (latest.total_record_count or 0) if latest is not None else 0
        return Snapshot(
            id=(latest.id + 1) if latest is not None else 1,
            schema_id=table.schema().id,
            base_manifest_list=base_name,
            delta_manifest_list=delta_name,
            changelog_manifest_list=changelog_name,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=plan.kind,
            time_millis=int(time.time() * 1000),
            total_record_count=previous_total + delta_count,
            delta_record_count=delta_count,
            changelog_record_count=changelog_count if changelog_count is not None else 0,
            watermark=latest.watermark if latest is not None else None,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list_size=changelog_size,
        )

    def _maybe_merge(
        self, metas: list[ManifestFileMeta], namer: ManifestNamer, written: list[str]
    ) -> list[ManifestFileMeta]:
        """Merge the previous snapshot's manifests into the new base list, as Paimon does.

        First a full compaction when the manifests that need rewriting (those with DELETE
        entries or below ``manifest.target-file-size``) add up to
        ``manifest.full-compaction-threshold-size``: every DELETE entry cancels its ADD and the
        rest is rewritten into target-size files. Otherwise a minor merge: consecutive small
        manifests are merged once they reach the target size, and the small ones at the end once
        there are ``manifest.merge-min-count`` of them. So the base list stays bounded.
        """
        opts = self.table.core_options
        target = max(opts.get_int("manifest.target-file-size") or 1, 1)
        threshold = max(opts.get_int("manifest.full-compaction-threshold-size") or 1, 1)
        min_count = opts.get_int("manifest.merge-min-count") or 30
        full = self._full_manifest_compaction(metas, namer, written, target, threshold)
        if full is not None:
            return full
        result: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        size = 0
        for m in metas:
            candidates.append(m)
            size += m.file_size
            if size >= target:
                result += self._merge_manifests(candidates, namer, written, target)
                candidates, size = [], 0
        if len(candidates) >= min_count:
            result += self._merge_manifests(candidates, namer, written, target)
        else:
            result += candidates
        return result

    def _merge_manifests(
        self, metas: list[ManifestFileMeta], namer: ManifestNamer, written: list[str], target: int
    ) -> list[ManifestFileMeta]:
        """Consecutive manifests as fewer: an ADD and a later DELETE of the same file cancel; a
        DELETE whose ADD lies in an earlier manifest stays (after that manifest, so in order)."""
        if len(metas) <= 1:
            return metas
        mio = self.table.manifest_io
        merged: dict[tuple[bytes, int, int, str], ManifestEntry] = {}
        for m in metas:
            for e in mio.read_entries(m.file_name):
                key = _entry_key(e)
                if e.kind is FileKind.DELETE and key in merged:
                    del merged[key]
                else:
                    merged[key] = e
        return self._write_rolling(list(merged.values()), namer, written, target)

    def _full_manifest_compaction(
        self,
        metas: list[ManifestFileMeta],
        namer: ManifestNamer,
        written: list[str],
        target: int,
        threshold: int,
    ) -> list[ManifestFileMeta] | None:
        """Paimon's rule: rewrite without DELETE entries once the manifests that must change
        (with deletes, or smaller than the target) reach ``threshold`` bytes; None if not due."""

        def must_change(m: ManifestFileMeta) -> bool:
            return m.num_deleted_files > 0 or m.file_size < target

        if sum(m.file_size for m in metas if must_change(m)) < threshold:
            return None
        mio = self.table.manifest_io
        deleted = {
            _entry_key(e)
            for m in metas
            if m.num_deleted_files > 0
            for e in mio.read_entries(m.file_name)
            if e.kind is FileKind.DELETE
        }
        # A large manifest without deletes stays as it is if none of its files can be deleted.
        may_hold = self._may_hold_partitions({k[0] for k in deleted})
        kept = [m for m in metas if not must_change(m) and not may_hold(m)]
        to_merge = [m for m in metas if must_change(m) or may_hold(m)]
        if len(to_merge) <= 1:
            return None
        entries: list[ManifestEntry] = []
        rewritten: list[ManifestFileMeta] = []
        for m in to_merge:
            adds = [e for e in mio.read_entries(m.file_name) if e.kind is FileKind.ADD]
            live = [e for e in adds if _entry_key(e) not in deleted]
            if must_change(m) or len(live) < len(adds):
                entries += live
                rewritten.append(m)
            else:
                kept.append(m)
        _LOG.info(
            "table %s: full manifest compaction of %d manifests (%d bytes), %d DELETE entries dropped",
            self.table.identifier,
            len(rewritten),
            sum(m.file_size for m in rewritten),
            len(deleted),
        )
        return kept + self._write_rolling(entries, namer, written, target)

    def _may_hold_partitions(self, partitions: set[bytes]) -> Callable[[ManifestFileMeta], bool]:
        """Whether a manifest's partition statistics admit one of ``partitions`` (conservative)."""
        if not partitions:
            return lambda _m: False
        codec = self.table.partition_codec
        if not codec.is_partitioned:
            return lambda _m: True
        types = list(codec.types)
        values = [codec.from_bytes(p) for p in partitions]

        def may_hold(m: ManifestFileMeta) -> bool:
            stats = m.partition_stats
            try:
                lows = decode_row(stats.min_values, types)
                highs = decode_row(stats.max_values, types)
                nulls = stats.null_counts or (0,) * len(types)
                return any(
                    all(
                        (nulls[i] or 0) > 0
                        if v is None
                        else lo is not None and hi is not None and lo <= v <= hi
                        for i, (v, lo, hi) in enumerate(zip(p, lows, highs, strict=True))
                    )
                    for p in values
                )
            except Exception:  # statistics that do not decode or compare: read the manifest
                return True

        return may_hold

    def _write_rolling(
        self, entries: list[ManifestEntry], namer: ManifestNamer, written: list[str], target: int
    ) -> list[ManifestFileMeta]:
        """Write ``entries`` as manifests of at least ``target`` bytes each (but the last), like
        Paimon's rolling writer, so merged manifests are not merged again on the next commit.

        Entries per file are estimated from an encoded sample (with a margin: larger files
        compress better) and corrected after each file from its real size.
        """
        if not entries:
            return []
        mio = self.table.manifest_io
        header = len(encode_manifest_entries([]))
        sample = entries[:256]
        per_entry = max((len(encode_manifest_entries(sample)) - header) / len(sample), 1.0)
        out: list[ManifestFileMeta] = []
        offset = 0
        while offset < len(entries):
            chunk = max(math.ceil(1.25 * max(target - header, 1) / per_entry), 1)
            part = entries[offset : offset + chunk]
            metas = mio.write_entries(part, namer)
            written += [mio.path(m.file_name) for m in metas]
            out += metas
            offset += len(part)
            size = sum(m.file_size for m in metas) - header * len(metas)
            per_entry = max(size / len(part), 1.0)
        return out


def _entry_key(e: ManifestEntry) -> tuple[bytes, int, int, str]:
    """Paimon's identifier of a manifest entry: an upgraded file is deleted at its old level and
    added at the new one, under the same name."""
    return (e.partition, e.bucket, e.file.level, e.file.file_name)


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
