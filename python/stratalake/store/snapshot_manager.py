"""Reads and commits snapshot files; keeps the LATEST/EARLIEST hints (which may be stale)."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator

from stratalake.exceptions import (
    CommitConflictError,
    CommitStateUnknownError,
    CorruptFileError,
    SnapshotNotFoundError,
)
from stratalake.io import FileIO, WriteOutcomeUnknownError
from stratalake.spec.snapshot import Snapshot

_SNAPSHOT_RE = re.compile(r"^snapshot-(\d+)$")
# How far the clock of an object store may be behind this machine's (see ``_resurrected``).
_CLOCK_SKEW_MS = 30_000
# Rounds of reading back a snapshot whose create had an unknown outcome (about 1.5 s in all).
_RESOLVE_ATTEMPTS = 5
_LOG = logging.getLogger(__name__)


class SnapshotManager:
    """All snapshot-file I/O of one table. Snapshot files are immutable, so they are cached."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_path = table_path.rstrip("/")
        self.table_name = table_name
        self.snapshot_dir = f"{self.table_path}/snapshot"
        self._cache: dict[int, Snapshot] = {}

    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/snapshot-{snapshot_id}"

    def _read_hint(self, name: str) -> int | None:
        path = f"{self.snapshot_dir}/{name}"
        try:
            text = self.file_io.read_text(path).strip()
        except (OSError, UnicodeDecodeError):
            return None  # missing or garbled: a hint only, the directory listing decides
        return int(text) if text.isascii() and text.isdigit() else None

    def _list_ids(self) -> list[int]:
        return sorted(
            int(m.group(1))
            for name in self.file_io.list_names(self.snapshot_dir)
            if (m := _SNAPSHOT_RE.match(name))
        )

    def latest_snapshot_id(self) -> int | None:
        """The newest committed snapshot id. The LATEST hint is checked, never trusted."""
        hint = self._read_hint("LATEST")
        if hint is not None and self.file_io.exists(self.snapshot_path(hint)):
            next_id = hint + 1
            while self.file_io.exists(self.snapshot_path(next_id)):
                next_id += 1
            return next_id - 1
        ids = self._list_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        hint = self._read_hint("EARLIEST")
        if hint is not None and self.file_io.exists(self.snapshot_path(hint)):
            prev = hint - 1
            while prev > 0 and self.file_io.exists(self.snapshot_path(prev)):
                prev -= 1
            return prev + 1
        ids = self._list_ids()
        return ids[0] if ids else None

    def snapshot(self, snapshot_id: int, fresh: bool = False) -> Snapshot:
        """Read snapshot ``snapshot_id``; :class:`SnapshotNotFoundError` if missing or expired.

        ``fresh`` reads the file even when it is cached: a commit builds on the snapshot as it is
        on disk, since another engine's writer may have replaced a file (see ``try_commit``).
        """
        cached = self._cache.get(snapshot_id)
        if cached is not None and not fresh:
            return cached
        path = self.snapshot_path(snapshot_id)
        try:
            text = self.file_io.read_text(path)
        except OSError as e:
            # Only a file that is not there is "not found": any other read error propagates, since
            # callers (expiration's keep-set, a commit's base) would otherwise take a snapshot
            # that could not be read for one that does not exist, and delete the files it uses.
            if not isinstance(e, FileNotFoundError) and self.file_io.exists(path):
                raise
            earliest, latest = self.earliest_snapshot_id(), self.latest_snapshot_id()
            if latest is None:
                raise SnapshotNotFoundError(
                    f"table {self.table_name}: snapshot {snapshot_id} does not exist (the table has no snapshots)"
                ) from None
            why = "has expired" if earliest is not None and snapshot_id < earliest else "does not exist"
            raise SnapshotNotFoundError(
                f"table {self.table_name}: snapshot {snapshot_id} {why}; "
                f"available snapshots are {earliest}..{latest}"
            ) from None
        snap = Snapshot.from_json(text, origin=path)
        if snap.id != snapshot_id:
            raise CorruptFileError(f"{path}: holds snapshot id {snap.id}, expected {snapshot_id}")
        self._cache[snapshot_id] = snap
        return snap

    def latest_snapshot(self, fresh: bool = False) -> Snapshot | None:
        latest = self.latest_snapshot_id()
        return None if latest is None else self.snapshot(latest, fresh)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every retained snapshot, oldest first."""
        for sid in self._list_ids():
            try:
                yield self.snapshot(sid)
            except SnapshotNotFoundError:
                continue  # expired while listing

    def snapshot_at_or_before(self, timestamp_ms: int) -> Snapshot:
        """The newest snapshot committed at or before ``timestamp_ms`` (time travel by time)."""
        earliest, latest = self.earliest_snapshot_id(), self.latest_snapshot_id()
        if latest is None or earliest is None:
            raise SnapshotNotFoundError(f"table {self.table_name}: no snapshot exists yet")
        lo, hi, found = earliest, latest, None
        while lo <= hi:  # snapshot times are monotonic in id
            mid = (lo + hi) // 2
            snap = self.snapshot(mid)
            if snap.time_millis <= timestamp_ms:
                found, lo = snap, mid + 1
            else:
                hi = mid - 1
        if found is None:
            first = self.snapshot(earliest)
            raise SnapshotNotFoundError(
                f"table {self.table_name}: no snapshot at or before timestamp {timestamp_ms}; the "
                f"earliest retained snapshot {earliest} was committed at {first.time_millis}"
            )
        return found

    def snapshot_at_or_after(self, timestamp_ms: int) -> Snapshot | None:
        """The oldest retained snapshot committed at or after ``timestamp_ms``; None if none was."""
        earliest, latest = self.earliest_snapshot_id(), self.latest_snapshot_id()
        if latest is None or earliest is None:
            return None
        lo, hi, found = earliest, latest, None
        while lo <= hi:  # snapshot times are monotonic in id
            mid = (lo + hi) // 2
            snap = self.snapshot(mid)
            if snap.time_millis >= timestamp_ms:
                found, hi = snap, mid - 1
            else:
                lo = mid + 1
        return found

    def try_commit(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>`` if absent. A commit has three outcomes:

        - True: published, the commit happened (nothing after it may delete its files);
        - False, or any exception but :class:`CommitStateUnknownError`: it did not happen (False:
          another writer holds the id, retry on the new latest snapshot);
        - :class:`CommitStateUnknownError`: it cannot be told, so nothing may be cleaned up.

        A create whose outcome the filesystem could not tell (an object store's lost answer) is
        resolved by reading the file back: the snapshot's bytes are unique to this commit
        (commit user, manifest list names), so equal bytes mean it is ours.

        Expiration deletes snapshot files, so a committer whose base went stale could find an
        *expired* id free and "win" it: its commit would vanish below the newer snapshots. So the
        create is refused unless the snapshot before it still exists, and a snapshot found to be
        below newer ones afterwards is withdrawn with :class:`CommitConflictError`.
        """
        path = self.snapshot_path(snapshot.id)
        data = snapshot.to_json().encode()
        started_ms = int(time.time() * 1000)

        # A missing predecessor means newer snapshots exist: the caller re-reads and retries.
        def predecessor() -> bool:
            return self._predecessor_exists(snapshot.id)

        try:
            created = self.file_io.try_create_atomic(path, data, predecessor)
        except WriteOutcomeUnknownError as e:
            created = self._resolve(snapshot, data, predecessor, e)
        if not created:
            return False
        if not self._still_ours(snapshot, data):
            return False  # another engine's writer replaced it: a lost race, retried on top of theirs
        self._confirm(snapshot, started_ms)
        self._cache[snapshot.id] = snapshot
        # Hints are only hints (readers verify them): nothing about them may fail a commit.
        try:
            self.commit_hint("LATEST", snapshot.id)
            if snapshot.id == 1 or self._read_hint("EARLIEST") is None:
                self.commit_hint("EARLIEST", self.earliest_snapshot_id() or snapshot.id)
        except Exception as e:
            _LOG.warning(
                "table %s: snapshot %s committed, but its hint was not updated: %s",
                self.table_name,
                snapshot.id,
                e,
            )
        return True

    def _resolve(
        self,
        snapshot: Snapshot,
        data: bytes,
        precondition: Callable[[], bool],
        error: BaseException,
    ) -> bool:
        """Decide a create whose outcome is unknown: True if the file holds our bytes, False if
        it holds another commit's (or newer snapshots exist and ours is absent). An absent file
        is created again with the same bytes (the store then takes it, or refuses it because an
        earlier attempt of ours, or another writer, got there first: the next round reads it)."""
        path = self.snapshot_path(snapshot.id)
        last: BaseException = error
        for attempt in range(_RESOLVE_ATTEMPTS):
            time.sleep(min(0.05 * 2**attempt, 1.0))
            try:
                if self.file_io.exists(path):
                    return _same_commit(self.file_io.read_bytes(path), data, snapshot)
                if not precondition():
                    return False  # newer snapshots exist and ours is not there
                if self.file_io.try_create_atomic(path, data, precondition):
                    return True
            except FileNotFoundError as e:  # deleted between the two calls: look again
                last = e
            except OSError as e:  # WriteOutcomeUnknownError included
                last = e
        raise self.unknown_outcome(snapshot.id, snapshot.commit_user, last)

    def unknown_outcome(
        self, snapshot_id: int, commit_user: str | None, error: BaseException
    ) -> CommitStateUnknownError:
        """The error of a commit whose outcome cannot be told, saying how to check it."""
        who = f"commit user {commit_user}" if commit_user else "this commit"
        return CommitStateUnknownError(
            f"table {self.table_name}: cannot tell whether snapshot {snapshot_id} was committed ({error}). "
            f"Check the table's snapshots (SELECT * FROM <table>$snapshots, or Table.system_table"
            f"('snapshots')) for {who}. Its files were kept: if it did not commit, "
            "remove_orphan_files reclaims them. Re-running a primary-key write is safe (the same "
            "rows upsert the same keys); re-running an append write after a commit that did land "
            "adds its rows twice.",
            commit_user,
            snapshot_id,
        )

    def _still_ours(self, snapshot: Snapshot, data: bytes) -> bool:
        """Whether ``snapshot-<id>`` still holds this commit's bytes a moment after it was created.

        Other engines' writers on filesystems without an atomic no-replace publish (Paimon Java's
        local, HDFS and object-store FileIOs check ``exists`` and then rename) can replace the
        file within that window: their rename lands a few milliseconds after the check. Reporting
        such a commit would lose it, and building on it would drop their files. The delay is
        :attr:`FileIO.publish_settle_ms`; a replacement later than that needs the catalog lock
        (README: concurrent writers of different engines).
        """
        path = self.snapshot_path(snapshot.id)
        time.sleep(self.file_io.publish_settle_ms / 1000)
        last: BaseException | None = None
        for attempt in range(_RESOLVE_ATTEMPTS):
            try:
                if _same_commit(self.file_io.read_bytes(path), data, snapshot):
                    return True
                _LOG.warning(
                    "table %s: snapshot %s was replaced by another writer right after this commit "
                    "published it (a writer without an atomic create, e.g. another engine's); "
                    "committing again on top of it",
                    self.table_name,
                    snapshot.id,
                )
                self._cache.pop(snapshot.id, None)
                return False
            except FileNotFoundError:
                # Created by this commit and deleted since: only expiration deletes a snapshot
                # file, and it expires one only once newer snapshots (built on it) exist.
                return True
            except OSError as e:
                last = e
                time.sleep(min(0.05 * 2**attempt, 1.0))
        assert last is not None
        raise self.unknown_outcome(snapshot.id, snapshot.commit_user, last)

    def _confirm(self, snapshot: Snapshot, started_ms: int) -> None:
        """After the create: withdraw a snapshot that sits below newer ones (see ``_resurrected``)
        with :class:`CommitConflictError` (not committed); a check that cannot run, or a
        withdrawal that fails, leaves the outcome unknown."""
        path = self.snapshot_path(snapshot.id)
        last: BaseException | None = None
        for attempt in range(_RESOLVE_ATTEMPTS):
            try:
                resurrected = self._resurrected(snapshot.id, started_ms)
                break
            except OSError as e:
                last = e
                time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            assert last is not None
            raise self.unknown_outcome(snapshot.id, snapshot.commit_user, last)
        if not resurrected:
            return
        if not self.file_io.delete_quietly(path) and self.file_io.exists(path):
            raise self.unknown_outcome(
                snapshot.id,
                snapshot.commit_user,
                OSError(f"{path} sits below newer snapshots and could not be withdrawn"),
            )
        raise CommitConflictError(
            f"table {self.table_name}: snapshot {snapshot.id} had already been committed and "
            "expired while this commit was prepared on an older snapshot; the commit was "
            "withdrawn and the table is unchanged. Retry the write."
        )

    def _predecessor_exists(self, snapshot_id: int) -> bool:
        # Expiration deletes oldest first and always keeps the latest: an expired id implies an
        # expired predecessor.
        if snapshot_id == 1:
            return not self._list_ids()
        return self.file_io.exists(self.snapshot_path(snapshot_id - 1))

    def _resurrected(self, snapshot_id: int, started_ms: int) -> bool:
        """Whether ``snapshot-<id>``, just created, sits below snapshots that existed before it.

        Only certain evidence counts, since withdrawing a good snapshot that a successor already
        built on would lose data: a gap right above it (expiration deletes oldest first, so a
        live snapshot never has one), or a successor written before this commit began (allowing
        for clock skew off the local filesystem). Left open: an expired id re-won within the
        instant between the predecessor check and the create.

        First the cheap proof that ``<id>`` did not expire: its predecessor still holds the
        snapshot this process read (the commit's base, see :meth:`_base_unchanged`). Otherwise one
        listing of names (no absent id can be told from hints, which may be stale, so a gap above
        a resurrected id needs the listing), plus one ``stat`` of the successor when there is one
        (its time, the only metadata the check reads). A successor deleted between the two raises
        FileNotFoundError, and ``_confirm`` runs the check again.
        """
        if snapshot_id > 1 and self._base_unchanged(snapshot_id):
            return False
        names = self.file_io.list_names(self.snapshot_dir, ordered=False)
        present = set(names)
        if f"snapshot-{snapshot_id}" not in present or not _any_id_above(names, snapshot_id):
            return False
        if f"snapshot-{snapshot_id + 1}" not in present:
            return True
        successor = self.file_io.status(self.snapshot_path(snapshot_id + 1))
        skew_ms = 0 if self.file_io.is_local else _CLOCK_SKEW_MS
        return successor.mtime_ms < started_ms - 1 - skew_ms

    def _base_unchanged(self, snapshot_id: int) -> bool:
        """Whether ``snapshot-<id - 1>`` still holds the snapshot this process read as it (a
        commit of ``<id>`` builds on it), so ``<id>`` cannot have expired before its create.

        Expiration deletes oldest first (Paimon Java's too), so an expired ``<id>`` means
        ``<id - 1>`` was deleted before it; a file there now was then created again, and the
        bytes of a snapshot are unique to its commit (commit user, manifest list names). A
        stratalake committer creates ``<id - 1>`` only while ``<id - 2>`` exists, which was
        deleted even earlier: so only a writer without that check could have put back the very
        snapshot this process read, and none can, having other bytes. One small read instead of
        a listing of every snapshot (10,000 names: ~8 ms locally, ten LIST pages on S3).
        Unknown (not read by this process, unreadable, absent): False, and the caller lists.
        """
        base = self._cache.get(snapshot_id - 1)
        if base is None:
            return False
        try:
            return Snapshot.from_json(self.file_io.read_text(self.snapshot_path(snapshot_id - 1))) == base
        except Exception:  # gone, unreadable or not a snapshot: not proven, so the listing decides
            return False

    def commit_hint(self, name: str, snapshot_id: int) -> None:
        """Best-effort hint update: readers verify hints, so a failure here is harmless."""
        with contextlib.suppress(OSError):
            self.file_io.write_bytes(f"{self.snapshot_dir}/{name}", str(snapshot_id).encode())

    def forget(self, snapshot_id: int) -> None:
        self._cache.pop(snapshot_id, None)

    def forget_all(self) -> None:
        """Drop every cached snapshot (after a fast-forward replaced snapshot files)."""
        self._cache.clear()

    def list_ids(self) -> list[int]:
        """The ids of the snapshot files in the directory, sorted (no file is read)."""
        return self._list_ids()


def _any_id_above(names: list[str], snapshot_id: int) -> bool:
    """Whether ``names`` hold a ``snapshot-<n>`` with n > ``snapshot_id``.

    A commit whose base it cannot prove unchanged lists the snapshot directory (``_resurrected``),
    which at 10,000 snapshots made a regular expression per name ~11 ms of an 18 ms commit: a name shorter
    than ``snapshot-<snapshot_id>`` cannot hold a larger id, so only the others are parsed.
    """
    own = f"snapshot-{snapshot_id}"
    width = len(own)
    for name in names:
        size = len(name)
        if size < width or (size == width and name <= own):
            continue  # (digit strings of one width order as their numbers)
        if name.startswith("snapshot-"):
            digits = name[9:]
            if digits.isascii() and digits.isdigit() and int(digits) > snapshot_id:
                return True
    return False


def _same_commit(found: bytes, data: bytes, snapshot: Snapshot) -> bool:
    """Whether a snapshot file holding ``found`` is the commit of ``snapshot`` (written as ``data``).

    Our bytes are; so is the same snapshot written out by someone else: a catalog that publishes
    snapshots (Paimon's REST ``commit`` endpoint) serializes it its own way. Its commit user,
    commit identifier and manifest list names (unique per commit) identify a commit.
    """
    if found == data:
        return True
    try:
        other = Snapshot.from_json(found)
    except CorruptFileError:
        return False
    return (
        other.id,
        other.commit_user,
        other.commit_identifier,
        other.base_manifest_list,
        other.delta_manifest_list,
    ) == (
        snapshot.id,
        snapshot.commit_user,
        snapshot.commit_identifier,
        snapshot.base_manifest_list,
        snapshot.delta_manifest_list,
    )
