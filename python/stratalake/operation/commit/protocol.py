"""Optimistic snapshot commits: APPEND, OVERWRITE and COMPACT, with conflict checks and retries.

The protocol: plan the entries against the latest snapshot, check conflicts (``conflicts.py``),
write manifests (merging old ones, ``manifest_merge.py``) and publish the snapshot atomically;
on a lost race, start over from the new latest snapshot.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import random
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.bucket.dynamic import drop_hash_index, split_index_entries
from stratalake.exceptions import (
    CommitConflictError,
    CommitStateUnknownError,
    CorruptFileError,
    SnapshotNotFoundError,
)
from stratalake.lsm.deletion_vector import DELETION_VECTORS_INDEX
from stratalake.maintenance.after_commit import expire_after_commit
from stratalake.operation.commit import conflicts, live_cache, partition_expire
from stratalake.operation.commit.manifest_merge import ManifestMerger
from stratalake.operation.commit.message import CommitMessage, delete_uncommitted
from stratalake.spec.manifest import (
    DataFileMeta,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)
from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from stratalake.store.index_manifest import live_index_entries, write_index_manifest
from stratalake.store.manifest_filter import ManifestFilter
from stratalake.store.manifests import ManifestIO, ManifestNamer, filtered_entries, fold_entries
from stratalake.store.stats_file import read_stats

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_LOG = logging.getLogger(__name__)


class CommitOutcome(enum.Enum):
    """What is known about a commit: it happened, it did not, or it cannot be told."""

    COMMITTED = "committed"
    NOT_COMMITTED = "not committed"
    UNKNOWN = "unknown"


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

    def __init__(self, table: TableStore, commit_user: str | None = None) -> None:
        self.table = table
        self.commit_user = commit_user or str(uuid.uuid4())
        self._published: list[int] = []  # snapshots this commit call published
        self._in_flight: int | None = None  # the snapshot id being published right now
        #: The outcome of the last :meth:`commit` / :meth:`commit_row_level` call.
        self.outcome = CommitOutcome.NOT_COMMITTED

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

        A commit has three outcomes, kept in :attr:`outcome`: committed, not committed, unknown.
        When it raises, the caller calls :meth:`abort` (or retries), which deletes the messages'
        files only when the commit is known not to have happened: never when the outcome is
        unknown (:class:`~stratalake.exceptions.CommitStateUnknownError`) or when the data was
        committed and a later step was interrupted (the error then carries a note saying so).
        """
        msgs = [m for m in messages if m is not None]
        with self._outcome_of():
            committed = self._commit(msgs, overwrite, overwrite_partitions, commit_identifier)
        self._report_partitions(msgs)
        if self.outcome is CommitOutcome.COMMITTED:
            partition_expire.expire_after_commit(
                self.table,
                BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier,
                lambda specs: TableCommit(self.table, self.commit_user).commit(
                    [], overwrite=True, overwrite_partitions=specs
                ),
            )
        return committed

    def _commit(
        self,
        msgs: list[CommitMessage],
        overwrite: bool,
        overwrite_partitions: Sequence[dict[str, Any]] | None,
        commit_identifier: int | None,
    ) -> int | None:
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        if commit_identifier is not None:
            done = self._find_committed(identifier)
            if done is not None:
                return done
        conflicts.check_messages(self.table, msgs)
        new_files = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.new_files]
        changelog = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.changelog_files]
        compact_changelog = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.compact_changelog_files]
        compact = [self._entry(FileKind.DELETE, m, f) for m in msgs for f in m.compact_before] + [
            self._entry(FileKind.ADD, m, f) for m in msgs for f in m.compact_after
        ]
        index_added = [e for m in msgs for e in m.index_files_added]
        index_deleted = [e for m in msgs for e in m.index_files_deleted]
        # Dynamic-bucket HASH indexes commit with the data they index; deletion vectors with compaction.
        hash_added, hash_deleted, index_added, index_deleted = split_index_entries(index_added, index_deleted)
        index_base = {
            (m.partition, m.bucket): frozenset(m.index_base)
            for m in msgs
            if m.index_base is not None and (m.compact_before or m.compact_after or m.index_files_added)
        }
        bases = [m.key_index_snapshot for m in msgs if m.key_index_snapshot is not None]
        key_base = min(bases) if bases else None
        last: int | None = None
        # The partitions and buckets this commit touches: its conflict checks read only their
        # live files (an overwrite of the whole table reads them all).
        touched = [*new_files, *compact]
        if overwrite:
            wanted = self._overwritten(overwrite_partitions)
            partition_filter = (lambda _p: True) if wanted is None else wanted.__contains__
            overwrite_scope = None if wanted is None else self._scope([*touched], extra_partitions=wanted)
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
                    hash_added,
                    hash_deleted,
                    drop_index_of=partition_filter,
                ),
                identifier,
                check_deletes=False,
                check_writers=True,
                then=compact,
                key_index_base=key_base,
                scope=overwrite_scope,
            )
        elif new_files or changelog or hash_added or hash_deleted:
            last = self._commit_with_retry(
                lambda live: _Plan(CommitKind.APPEND, new_files, changelog, hash_added, hash_deleted),
                identifier,
                check_deletes=False,
                check_writers=True,
                then=compact,
                key_index_base=key_base,
                scope=self._scope(touched),
            )
        if compact or index_added or index_deleted:
            try:
                compacted = self._commit_with_retry(
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
                    scope=self._scope(compact, [*index_added, *index_deleted], index_base),
                )
                last = compacted if compacted is not None else last
            except Exception as e:
                if last is None:
                    raise  # nothing is committed: the caller's abort() removes the files
                # The data is committed (snapshot `last`); only the writer's own compaction failed:
                # it lost a race (e.g. with a compaction job), or its manifests could not be
                # written. Compaction is optional: drop it instead of failing the write. Its
                # outputs go only when its snapshot is known not to exist.
                if not isinstance(e, CommitStateUnknownError):
                    self._delete_quietly([replace(m, new_files=(), changelog_files=()) for m in msgs])
                _LOG.warning(
                    "table %s: the data is committed as snapshot %s; the compaction after it was "
                    "abandoned (%s: %s); its input files stay until the next compaction",
                    self.table.identifier,
                    last,
                    type(e).__name__,
                    e,
                )
        if last is not None:
            # As Paimon's committer: expire once a new snapshot exists (skipped when write-only).
            expire_after_commit(self.table, last)
        return last if last is not None else self.table.snapshot_manager.latest_snapshot_id()

    @contextlib.contextmanager
    def _outcome_of(self) -> Iterator[None]:
        """Record the outcome of one commit call (see :attr:`outcome`); errors raised after the
        data was published, or while publishing, get a note that says so."""
        self._published = []
        self._in_flight = None
        self.outcome = CommitOutcome.NOT_COMMITTED
        try:
            yield
        except BaseException as e:
            if self._published:
                self.outcome = CommitOutcome.COMMITTED
                e.add_note(
                    f"table {self.table.identifier}: the data IS committed (snapshot "
                    f"{self._published[0]}); only a step after the commit failed. Do not re-run "
                    "the write; remove_orphan_files reclaims any leftover."
                )
            elif isinstance(e, CommitStateUnknownError):
                self.outcome = CommitOutcome.UNKNOWN  # its message says what to check
            elif self._in_flight is not None:
                # Interrupted (KeyboardInterrupt, SystemExit) while publishing: unknown.
                self.outcome = CommitOutcome.UNKNOWN
                e.add_note(
                    str(self.table.snapshot_manager.unknown_outcome(self._in_flight, self.commit_user, e))
                )
            raise
        self.outcome = CommitOutcome.COMMITTED

    def abort(self, messages: Sequence[CommitMessage | None]) -> bool:
        """Delete the files of ``messages`` after a failed :meth:`commit`, if and only if that
        commit is known not to have happened (:attr:`outcome` ``NOT_COMMITTED``); returns whether
        it deleted them. After a commit that landed, or whose outcome is unknown, the files are
        kept (they may be referenced; ``remove_orphan_files`` reclaims what is not)."""
        if self.outcome is not CommitOutcome.NOT_COMMITTED:
            _LOG.warning(
                "table %s: the files of commit user %s are kept (commit outcome: %s)",
                self.table.identifier,
                self.commit_user,
                self.outcome.value,
            )
            return False
        self._delete_quietly([m for m in messages if m is not None])
        return True

    def _delete_quietly(self, msgs: Sequence[CommitMessage]) -> None:
        """Delete the files of a commit known not to have happened; a failure only leaves orphans."""
        try:
            delete_uncommitted(self.table, msgs)
        except Exception as e:
            _LOG.warning(
                "table %s: could not remove the files of a failed commit (%s); remove_orphan_files reclaims them",
                self.table.identifier,
                e,
            )

    def commit_row_level(
        self, messages: Sequence[CommitMessage], required_files: Collection[str] = ()
    ) -> int | None:
        """Commit a row-level statement of an append table (``append/dml.py``) as ONE
        snapshot: new files, rewritten files (``compact_before`` -> ``compact_after``) and the
        touched buckets' deletion-vector index files. Kind OVERWRITE, as Paimon's commit of file
        deletions or deletion vectors. Conflicts (CommitConflictError, nothing committed): a
        rewritten file or one of ``required_files`` (files whose rows it deletes) is no longer
        live, or a touched bucket's vectors are not the ones the statement started from."""
        msgs = [m for m in messages if m is not None]
        with self._outcome_of():
            committed = self._commit_row_level(msgs, required_files)
        self._report_partitions(msgs)
        return committed

    def _report_partitions(self, msgs: Sequence[CommitMessage]) -> None:
        """Tell the table's metastore (if it lists partitions) the partitions this commit wrote,
        as Paimon's ``AddPartitionCommitCallback`` does after a commit. Best-effort: the data is
        committed, so a metastore failure is logged, not raised (Paimon's repair re-syncs)."""
        handler = self.table.partition_handler
        codec = self.table.partition_codec
        if handler is None or not codec.is_partitioned:
            return
        written = sorted({m.partition for m in msgs if not m.is_empty()})
        if not written:
            return
        try:
            handler.partitions_created(self.table, [codec.strings(codec.from_bytes(p)) for p in written])
        except Exception as e:
            _LOG.warning(
                "table %s: the commit succeeded, but its partitions could not be added to the "
                "metastore (%s: %s)",
                self.table.identifier,
                type(e).__name__,
                e,
            )

    def _commit_row_level(self, msgs: list[CommitMessage], required_files: Collection[str]) -> int | None:
        conflicts.check_messages(self.table, msgs)
        delta = [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.new_files]
        delta += [self._entry(FileKind.DELETE, m, f) for m in msgs for f in m.compact_before]
        delta += [self._entry(FileKind.ADD, m, f) for m in msgs for f in m.compact_after]
        index_added = [e for m in msgs for e in m.index_files_added]
        index_deleted = [e for m in msgs for e in m.index_files_deleted]
        index_base = {
            (m.partition, m.bucket): frozenset(m.index_base) for m in msgs if m.index_base is not None
        }
        required = set(required_files)

        def plan_for(live: conflicts.LiveEntries) -> _Plan:
            if required:
                names = {k[2] for k in live}
                gone = sorted(required - names)
                if gone:
                    raise CommitConflictError(
                        f"table {self.table.identifier}: data file(s) {gone[:3]} were removed by a "
                        "concurrent commit (another DELETE / UPDATE / MERGE or a compaction) while "
                        "this statement ran; it was abandoned and the table is unchanged. Re-run it."
                    )
            return _Plan(
                CommitKind.OVERWRITE,
                list(delta),
                [],
                list(index_added),
                list(index_deleted),
                None,
                dict(index_base),
            )

        last = self._commit_with_retry(plan_for, BATCH_COMMIT_IDENTIFIER, check_deletes=True)
        if last is not None:
            expire_after_commit(self.table, last)
        return last

    def commit_statistics(self, stats_file: str) -> int | None:
        """Commit the statistics file ``stats_file`` (already written) as one ANALYZE snapshot
        with no file changes, as Paimon's ``FileStoreCommit.commitStatistics``; later commits
        carry it forward while the schema is unchanged (:meth:`_build`)."""
        with self._outcome_of():
            return self._commit_with_retry(
                lambda live: _Plan(CommitKind.ANALYZE, []),
                BATCH_COMMIT_IDENTIFIER,
                check_deletes=False,
                statistics=stats_file,
            )

    def committed_snapshot(self, commit_identifier: int) -> int | None:
        """The snapshot this commit user already committed under ``commit_identifier``, if any
        (a streaming writer's replayed batch is recognised this way)."""
        return self._find_committed(commit_identifier)

    # -- internals ------------------------------------------------------------------------------
    @staticmethod
    def _entry(kind: FileKind, m: CommitMessage, f: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f)

    def _overwritten(self, specs: Sequence[dict[str, Any]] | None) -> frozenset[bytes] | None:
        """The partitions an overwrite replaces (None: the whole table)."""
        if not specs:
            return None
        codec = self.table.partition_codec
        return frozenset(codec.to_bytes(codec.spec_to_values(s, self.table.identifier)) for s in specs)

    def _scope(
        self,
        entries: Sequence[ManifestEntry],
        index_entries: Sequence[IndexManifestEntry] = (),
        index_base: Collection[tuple[bytes, int]] = (),
        extra_partitions: Collection[bytes] | None = None,
    ) -> ManifestFilter:
        """The live files a commit of ``entries`` must check: those of the partitions (and, unless
        ``extra_partitions`` are replaced whole, the buckets) it touches."""
        pairs = {(e.partition, e.bucket) for e in entries}
        pairs |= {(e.partition, e.bucket) for e in index_entries}
        pairs |= set(index_base)
        partitions = {p for p, _ in pairs}
        if extra_partitions is not None:
            return self.table.manifest_filter(partitions=partitions | set(extra_partitions))
        return self.table.manifest_filter(partitions=partitions, buckets={b for _, b in pairs})

    def _find_committed(self, identifier: int) -> int | None:
        """The snapshot of this commit user with ``identifier``, newest first down to the earliest.

        Fails closed: a snapshot that cannot be read (other than one expired meanwhile) raises
        :class:`~stratalake.exceptions.CommitConflictError` instead of answering "not committed",
        which would commit a replayed batch twice.
        """
        sm = self.table.snapshot_manager
        latest = sm.latest_snapshot_id()
        earliest = sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            try:
                snap = sm.snapshot(sid)
            except SnapshotNotFoundError as e:
                if not self._snapshot_gone(sid, e, identifier):
                    continue  # a hole (e.g. a withdrawn snapshot): older ones still count
                break  # expired meanwhile: the older ones are gone too (expiration goes oldest first)
            except Exception as e:
                raise self._unknown_commit(identifier, sid, e) from e
            if snap.commit_user == self.commit_user:
                if snap.commit_identifier == identifier:
                    return snap.id
                if snap.commit_identifier < identifier:
                    return None  # this user's commits are ordered: older ones cannot match
        return None

    def _snapshot_gone(self, sid: int, error: SnapshotNotFoundError, identifier: int) -> bool:
        """Whether snapshot ``sid`` really is missing because it expired (True) or is a hole in
        the retained range (False); a file that exists but could not be read raises."""
        sm = self.table.snapshot_manager
        path = sm.snapshot_path(sid)
        try:
            present = sm.file_io.exists(path)
            earliest = sm.earliest_snapshot_id() if not present else None
            if present:  # the read failed for another reason than a missing file: name it
                sm.file_io.read_text(path)
        except Exception as e:
            raise self._unknown_commit(identifier, sid, e) from e
        if present:  # readable now: still refuse, a retry of the commit will tell
            raise self._unknown_commit(identifier, sid, error)
        return earliest is None or sid < earliest

    def _unknown_commit(self, identifier: int, sid: int, error: BaseException) -> CommitConflictError:
        return CommitConflictError(
            f"table {self.table.identifier}: cannot tell whether commit user {self.commit_user} "
            f"already committed identifier {identifier}: snapshot {sid} could not be read "
            f"({error}). Nothing was committed (committing could apply a replayed batch twice); "
            "retry once the table's files are readable."
        )

    def _commit_with_retry(
        self,
        plan_for: Callable[[dict[tuple[bytes, int, str], ManifestEntry]], _Plan],
        identifier: int,
        check_deletes: bool,
        check_writers: bool = False,
        then: Sequence[ManifestEntry] = (),
        key_index_base: int | None = None,
        scope: ManifestFilter | None = None,
        statistics: str | None = None,
    ) -> int | None:
        """Commit the plan ``plan_for`` derives from the latest snapshot, retrying lost races.

        ``then`` are the entries of a snapshot this commit writes right after (a writer's
        compaction after its data): the sorted-run check covers both, so a commit that would
        break the levels is refused before anything is committed. ``key_index_base``: the
        snapshot cross-partition writers bootstrapped their key index from. ``scope``: the
        partitions and buckets whose live files ``plan_for`` and the checks look at (None: all);
        only manifests whose statistics admit them are read, and a retry advances the previous
        attempt's live files by the delta manifests of the snapshots committed since.
        ``statistics``: the statistics file an ANALYZE snapshot names (its plan has no entries).
        """
        table = self.table
        sm = table.snapshot_manager
        retries = table.core_options.commit_max_retries
        keys_read: dict[str, pa.Table] = {}  # data files' keys read by the writer check, per path
        previous: tuple[Snapshot, conflicts.LiveEntries] | None = None
        for attempt in range(retries + 1):
            latest = sm.latest_snapshot(fresh=True)  # as on disk, never a cached copy
            base_metas = self._all_metas(latest)
            live = self._advance(previous, latest, scope) if previous is not None else None
            if live is None:
                live = self._live_at(latest, base_metas, scope)
            if latest is not None:
                previous = (latest, live)
            plan = plan_for(live)
            self._check_scope(plan, scope)
            index_live = live_index_entries(table, latest) if plan.touches_index() else None
            if plan.drop_index_of is not None and index_live is not None:
                drop = plan.drop_index_of
                plan.index_deleted += [
                    e for e in index_live if e.index_type == DELETION_VECTORS_INDEX and drop(e.partition)
                ]
                plan.index_deleted += drop_hash_index(index_live, drop)
            if (
                not plan.delta
                and not plan.changelog
                and not plan.index_added
                and not plan.index_deleted
                and statistics is None
            ):
                return None
            if check_deletes:
                self._check_deletes(plan.delta, live)
                if index_live is not None:
                    self._check_index(plan, index_live)
            if check_writers:
                conflicts.check_key_index_base(table, key_index_base, latest, self.commit_user)
                try:
                    self._check_concurrent_writers(plan.delta, live, keys_read)
                except CorruptFileError:
                    # A file live in `latest` may be gone by now: another job compacted it away and
                    # expiration deleted it after a newer snapshot appeared. The plan is stale, not
                    # the table broken: plan again on the newer snapshot. With no newer snapshot
                    # the file really is missing or broken, and that is an error.
                    newest = sm.latest_snapshot_id()
                    if newest is None or latest is None or newest == latest.id:
                        raise
                    time.sleep(min(0.01 * (2**attempt), 1.0) * (0.5 + random.random()))
                    continue
            conflicts.check_hash_index(table, plan.index_added, index_live)
            conflicts.check_sorted_runs(table, live, [plan.delta, then])
            written: list[str] = []
            try:
                snapshot = self._build(latest, base_metas, plan, identifier, written, index_live, statistics)
            except BaseException:
                self._delete_paths(written)  # manifests of a snapshot never published
                raise
            self._in_flight = snapshot.id
            try:
                created = sm.try_commit(snapshot)
            except CommitStateUnknownError:
                raise  # its manifests may be referenced: keep them
            except Exception:
                self._in_flight = None
                self._delete_paths(written)
                raise
            if created:
                self._published.append(snapshot.id)
                self._in_flight = None
                return snapshot.id
            self._in_flight = None
            self._delete_paths(written)  # lost the race: our lists are based on a stale snapshot
            time.sleep(min(0.01 * (2**attempt), 1.0) * (0.5 + random.random()))
        raise CommitConflictError(
            f"table {table.identifier}: commit failed after {retries} retries because other "
            "writers kept committing; retry the write or raise 'commit.max-retries'"
        )

    def _delete_paths(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.table.file_io.delete_quietly(path)

    def _all_metas(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        mio = self.table.manifest_io
        return mio.read_list(latest.base_manifest_list) + mio.read_list(latest.delta_manifest_list)

    def _live(
        self, metas: Sequence[ManifestFileMeta], scope: ManifestFilter | None = None
    ) -> conflicts.LiveEntries:
        return fold_entries(filtered_entries(self.table.manifest_io, metas, scope))

    def _live_at(
        self, latest: Snapshot | None, base_metas: Sequence[ManifestFileMeta], scope: ManifestFilter | None
    ) -> conflicts.LiveEntries:
        """The live files of ``latest`` in ``scope``: advanced from this process's last fold of the
        same partitions when that is safe (:mod:`live_cache`), else folded from ``base_metas``."""
        k = live_cache.key(self.table.snapshot_manager.snapshot_dir, scope)
        if latest is None or k is None or scope is None:
            return self._live(base_metas, scope)
        wide = live_cache.widen(scope)
        live: conflicts.LiveEntries | None = None
        kept = live_cache.get(k)
        if kept is not None:
            if kept[0] == latest:
                live = kept[1]
            elif latest.id - kept[0].id <= live_cache.MAX_GAP:
                live = self._advance(kept, latest, wide)
        if live is None:
            live = self._live(base_metas, wide)
        if kept is None or live is not kept[1]:
            live_cache.put(k, latest, live)
        return live_cache.narrow(live, scope)

    def _advance(
        self,
        previous: tuple[Snapshot, conflicts.LiveEntries],
        latest: Snapshot | None,
        scope: ManifestFilter | None,
    ) -> conflicts.LiveEntries | None:
        """The live files of ``latest`` from those of the previous attempt's snapshot and the
        delta manifests of every snapshot after it (each lists exactly what it changed); None
        when that cannot be done safely (a snapshot in between is gone or unreadable, or the
        previous one is no longer what was read: another engine's writer replaced it), and the
        caller reads ``latest``'s manifests instead."""
        before, live = previous
        if latest is None or latest.id <= before.id:
            return None
        sm = self.table.snapshot_manager
        mio = self.table.manifest_io
        try:
            if sm.snapshot(before.id, fresh=True) != before:
                return None
            snaps = [sm.snapshot(sid, fresh=True) for sid in range(before.id + 1, latest.id)] + [latest]
            delta = [m for snap in snaps for m in mio.read_list(snap.delta_manifest_list)]
            advanced = dict(live)
            for e in filtered_entries(mio, delta, scope):
                if e.kind is FileKind.ADD:
                    advanced[e.identifier()] = e
                else:
                    advanced.pop(e.identifier(), None)
        except (SnapshotNotFoundError, CorruptFileError, OSError):
            return None
        return advanced

    def _check_scope(self, plan: _Plan, scope: ManifestFilter | None) -> None:
        """Every file the plan deletes lies in the scope whose live files were read: a delete
        outside it could not be checked (a bug, not a conflict)."""
        if scope is None:
            return
        for e in plan.delta:
            if e.kind is FileKind.DELETE and not (
                (scope.buckets is None or e.bucket in scope.buckets) and scope.entry_partition_ok(e.partition)
            ):
                raise AssertionError(
                    f"commit deletes {e.file.file_name} outside the files it checked; this is a bug"
                )

    def _check_deletes(self, delta: Sequence[ManifestEntry], live: conflicts.LiveEntries) -> None:
        conflicts.check_deletes(self.table, delta, live)

    def _check_index(self, plan: _Plan, index_live: Sequence[IndexManifestEntry]) -> None:
        conflicts.check_index(self.table, plan.index_base, plan.index_added, plan.index_deleted, index_live)

    def _check_concurrent_writers(
        self, delta: Sequence[ManifestEntry], live: conflicts.LiveEntries, keys_read: dict[str, pa.Table]
    ) -> None:
        """See :func:`conflicts.check_concurrent_writers`."""
        conflicts.check_concurrent_writers(self.table, delta, live, keys_read, self._file_keys)

    def _file_keys(
        self,
        partition: bytes,
        bucket: int,
        f: DataFileMeta,
        key_names: list[str],
        keys_read: dict[str, pa.Table],
    ) -> pa.Table:
        """The trimmed-key columns and sequence numbers of one data file (cached per commit)."""
        return conflicts.read_file_keys(self.table, partition, bucket, f, key_names, keys_read)

    def _build(
        self,
        latest: Snapshot | None,
        base_metas: list[ManifestFileMeta],
        plan: _Plan,
        identifier: int,
        written: list[str],
        index_live: Sequence[IndexManifestEntry] | None = None,
        statistics: str | None = None,
    ) -> Snapshot:
        table = self.table
        schema_id = table.schema().id
        # As Paimon's commit: the latest snapshot's statistics stay while their schema is the
        # table's; after a schema change they describe other columns and are dropped.
        if (
            statistics is None
            and latest is not None
            and latest.statistics is not None
            and read_stats(table, latest.statistics).schema_id == schema_id
        ):
            statistics = latest.statistics
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
        base_metas = ManifestMerger(table).maybe_merge(base_metas, namer, written)
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
            schema_id=schema_id,
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
            statistics=statistics,
        )


def new_commit(table: TableStore, commit_user: str | None = None) -> TableCommit:
    """The committer of ``table`` (refused for tables with unsupported features)."""
    table.check_supported("write")
    return TableCommit(table, commit_user)
