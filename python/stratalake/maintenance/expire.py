"""Snapshot and changelog expiration: drop old snapshots and the files only they referenced.

Which snapshots expire follows Paimon (``ExpireSnapshotsImpl``): the newest
``snapshot.num-retained.min`` always stay, at most ``snapshot.num-retained.max`` stay, and in
between a snapshot expires only once its *successor* is older than ``snapshot.time-retained`` (so
time travel to any instant within the retention still finds the snapshot current at that instant);
one run expires at most ``snapshot.expire.limit`` snapshots. It runs after every commit that
created a snapshot (unless ``write-only``) and on demand through ``Table.expire_snapshots``.

Consumers (:mod:`stratalake.store.consumer_manager`) pin snapshots: none from the smallest
``nextSnapshot`` of any consumer on expires (unless ``consumer.changelog-only``), and no
long-lived changelog from it on either (Paimon's ``ExpireSnapshotsImpl`` and
``ExpireChangelogImpl``). Consumers whose file is older than ``consumer.expiration-time`` are
deleted first (:func:`expire_consumers`), so that an abandoned consumer stops pinning.

What is deleted is a set difference: the files the expiring snapshots reference minus the files
every retained snapshot, every tag and every long-lived changelog references
(:mod:`stratalake.store.references`). A file a retained snapshot can read is never a candidate.

Order, chosen so that a crash at any point leaves every visible snapshot readable:

1. compute both sets while all metadata still exists;
2. with a decoupled changelog lifecycle, write ``changelog/changelog-<id>`` copies first;
3. delete the expiring ``snapshot-<id>`` files oldest first (the remaining ids stay contiguous),
   then move the EARLIEST hint;
4. re-read the tags (a tag created meanwhile protects its files, see ``tags.create_tag``);
5. delete data, changelog and index files, then manifests and manifest lists.

Java Paimon deletes data files before snapshot files instead; after a crash there, the oldest
snapshots still listed can have lost files until expiration runs again. Here a crash after step 3
leaves unreferenced files behind, which ``Table.remove_orphan_files`` reclaims.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stratalake.exceptions import CorruptFileError, InvalidOptionError, StrataLakeError
from stratalake.identifiers import MAIN_BRANCH
from stratalake.options import CoreOptions
from stratalake.spec.snapshot import Snapshot
from stratalake.store.branch_manager import BranchManager, branch_path
from stratalake.store.changelog_manager import ChangelogManager
from stratalake.store.files import delete_in_table
from stratalake.store.references import FileSet, ReferenceCollector
from stratalake.store.snapshot_manager import SnapshotManager
from stratalake.store.tag_manager import TagManager

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_log = logging.getLogger(__name__)

_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ExpireConfig:
    """Retention settings; :meth:`from_options` reads them from table options (Paimon's names)."""

    snapshot_retain_min: int = 10  # snapshot.num-retained.min
    snapshot_retain_max: int = _INT_MAX  # snapshot.num-retained.max
    snapshot_time_retain_ms: int = 3_600_000  # snapshot.time-retained
    snapshot_max_deletes: int = 50  # snapshot.expire.limit
    changelog_retain_min: int = 10  # changelog.num-retained.min (default: the snapshot value)
    changelog_retain_max: int = _INT_MAX  # changelog.num-retained.max
    changelog_time_retain_ms: int = 3_600_000  # changelog.time-retained
    changelog_max_deletes: int = 50
    consumer_changelog_only: bool = False  # consumer.changelog-only

    @staticmethod
    def from_options(
        options: CoreOptions,
        retain_max: int | None = None,
        retain_min: int | None = None,
        max_deletes: int | None = None,
    ) -> ExpireConfig:
        """The table's retention, with explicitly given snapshot values taking precedence.

        Unset ``changelog.*`` options follow the effective snapshot values (as in Paimon), so
        overriding the snapshot retention alone never makes changelogs long-lived.
        """

        def get(key: str, fallback: int) -> int:
            value = options.get_int(key)
            return fallback if value is None else value

        s_min = retain_min if retain_min is not None else get("snapshot.num-retained.min", 10)
        s_max = retain_max if retain_max is not None else get("snapshot.num-retained.max", _INT_MAX)
        s_time = get("snapshot.time-retained", 3_600_000)
        limit = max_deletes if max_deletes is not None else get("snapshot.expire.limit", 50)
        return ExpireConfig(
            snapshot_retain_min=s_min,
            snapshot_retain_max=s_max,
            snapshot_time_retain_ms=s_time,
            snapshot_max_deletes=limit,
            changelog_retain_min=get("changelog.num-retained.min", s_min),
            changelog_retain_max=get("changelog.num-retained.max", s_max),
            changelog_time_retain_ms=get("changelog.time-retained", s_time),
            changelog_max_deletes=limit,
            consumer_changelog_only=options.get_bool("consumer.changelog-only"),
        )

    @property
    def changelog_decoupled(self) -> bool:
        """Changelogs outlive snapshots, so expiring snapshots leave long-lived changelogs."""
        return (
            self.changelog_retain_max > self.snapshot_retain_max
            or self.changelog_time_retain_ms > self.snapshot_time_retain_ms
            or self.changelog_retain_min > self.snapshot_retain_min
        )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _check_bounds(table: TableStore, what: str, retain_min: int, retain_max: int) -> None:
    if retain_min < 1:
        raise InvalidOptionError(
            f"table {table.identifier}: '{what}.num-retained.min' must be >= 1, got {retain_min}"
        )
    if retain_max < retain_min:
        raise InvalidOptionError(
            f"table {table.identifier}: '{what}.num-retained.max' ({retain_max}) must not be less "
            f"than '{what}.num-retained.min' ({retain_min})"
        )


# -- snapshots ---------------------------------------------------------------------------------------
def expire_snapshots(
    table: TableStore,
    config: ExpireConfig | None = None,
    older_than_ms: int | None = None,
    now_ms: int | None = None,
) -> int:
    """Expire snapshots per ``config`` (default: the table's options); returns how many expired.

    ``older_than_ms`` (epoch millis) replaces ``now - snapshot.time-retained`` as the age bound.
    """
    cfg = config if config is not None else ExpireConfig.from_options(table.core_options)
    _check_bounds(table, "snapshot", cfg.snapshot_retain_min, cfg.snapshot_retain_max)
    sm = table.snapshot_manager
    latest, earliest = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
    if latest is None or earliest is None:
        return 0
    older_than = (
        older_than_ms if older_than_ms is not None else (now_ms or _now_ms()) - cfg.snapshot_time_retain_ms
    )
    # Ids below ``low`` expire on count alone; from ``low`` on, also by age.
    low = max(latest - cfg.snapshot_retain_max + 1, earliest)
    end = min(latest - cfg.snapshot_retain_min + 1, earliest + max(cfg.snapshot_max_deletes, 0))
    if not cfg.consumer_changelog_only:
        end = _below_consumers(table, end)
    for sid in range(low, end):
        successor = _try_snapshot(table, sid + 1)
        if successor is not None and successor.time_millis >= older_than:
            end = sid
            break
    if end <= earliest:
        if not table.file_io.exists(f"{sm.snapshot_dir}/EARLIEST"):
            sm.commit_hint("EARLIEST", earliest)
        return 0
    return _expire_until(table, cfg, earliest, end)


def _below_consumers(table: TableStore, end: int) -> int:
    """``end`` lowered to the smallest consumer's ``nextSnapshot``: what it reads next stays."""
    pinned = table.consumer_manager.min_next_snapshot()
    return end if pinned is None else min(end, pinned)


def expire_consumers(table: TableStore, now_ms: int | None = None) -> list[str]:
    """Delete the consumers last written longer than ``consumer.expiration-time`` ago (none when
    the option is unset); returns their ids."""
    keep_ms = table.core_options.get_int("consumer.expiration-time")
    if keep_ms is None:
        return []
    return table.consumer_manager.expire((now_ms or _now_ms()) - keep_ms)


def _try_snapshot(table: TableStore, snapshot_id: int) -> Snapshot | None:
    try:
        return table.snapshot_manager.snapshot(snapshot_id)
    except StrataLakeError:
        return None  # expired by a concurrent process


def _expire_until(table: TableStore, cfg: ExpireConfig, earliest: int, end: int) -> int:
    """Expire the snapshots with ids in [earliest, end); snapshot ``end`` exists and stays."""
    sm = table.snapshot_manager
    expiring = [s for s in (_try_snapshot(table, i) for i in range(earliest, end)) if s is not None]
    if not expiring:
        sm.commit_hint("EARLIEST", end)
        return 0
    collector = ReferenceCollector(table)
    candidates = collector.snapshots(expiring, strict=False)
    retained = [s for s in sm.snapshots() if s.id >= end]
    new_changelogs = expiring if cfg.changelog_decoupled else []
    keep = retained_references(table, retained, [*table.changelog_manager.changelogs(), *new_changelogs])

    cm = table.changelog_manager
    for snap in new_changelogs:
        cm.commit(snap)
    if new_changelogs:
        cm.commit_hint("LATEST", new_changelogs[-1].id)
    gone = 0
    for snap in expiring:  # oldest first: the snapshots left are always contiguous
        if not _delete_snapshot_file(table, snap.id):
            break  # it stays, and with it every newer one: their files must stay too
        sm.forget(snap.id)
        gone += 1
    if gone < len(expiring):
        stayed = expiring[gone:]
        keep.update(collector.snapshots(stayed, strict=True))
        candidates = collector.snapshots(expiring[:gone], strict=False)
        _log.warning(
            "table %s: expiration stopped at snapshot %s, whose file could not be deleted; the "
            "next expiration continues from there",
            table.identifier,
            stayed[0].id,
        )
    sm.commit_hint("EARLIEST", end if gone == len(expiring) else expiring[gone].id)
    if not gone:
        return 0

    keep.update(collector.snapshots(table.tag_manager.tagged_snapshots(), strict=True))
    delete_files(table, candidates.minus(keep))
    return gone


def _delete_snapshot_file(table: TableStore, snapshot_id: int) -> bool:
    """Delete one expiring snapshot file; False if it is (or may be) still there."""
    path = table.snapshot_manager.snapshot_path(snapshot_id)
    if table.file_io.delete_quietly(path):
        return True
    try:
        return not table.file_io.exists(path)  # already gone (a concurrent expiration)
    except OSError:
        return False


# -- long-lived changelogs ---------------------------------------------------------------------------
def expire_changelogs(
    table: TableStore, config: ExpireConfig | None = None, now_ms: int | None = None
) -> int:
    """Expire long-lived changelogs per ``changelog.*`` retention; returns how many expired."""
    cfg = config if config is not None else ExpireConfig.from_options(table.core_options)
    cm = table.changelog_manager
    changelogs = cm.changelogs()
    latest = table.snapshot_manager.latest_snapshot_id()
    if not changelogs or latest is None:
        return 0
    _check_bounds(table, "changelog", cfg.changelog_retain_min, cfg.changelog_retain_max)
    older_than = (now_ms or _now_ms()) - cfg.changelog_time_retain_ms
    first, last = changelogs[0].id, changelogs[-1].id
    low = max(latest - cfg.changelog_retain_max + 1, first)
    end = min(latest - cfg.changelog_retain_min + 1, first + max(cfg.changelog_max_deletes, 0), last + 1)
    end = _below_consumers(table, end)
    by_id = {c.id: c for c in changelogs}
    for cid in range(low, end):
        c = by_id.get(cid)
        if c is not None and c.time_millis >= older_than:
            end = cid
            break
    expiring = [c for c in changelogs if c.id < end]
    if not expiring:
        return 0
    collector = ReferenceCollector(table)
    candidates = collector.changelogs(expiring, strict=False)
    keep = retained_references(table, None, [c for c in changelogs if c.id >= end])
    gone = 0
    for c in expiring:  # oldest first; one that stays keeps its files (and the newer ones)
        if not cm.delete(c.id):
            break
        gone += 1
    if gone < len(expiring):
        keep.update(collector.changelogs(expiring[gone:], strict=True))
        candidates = collector.changelogs(expiring[:gone], strict=False)
    cm.commit_hint("EARLIEST", end if gone == len(expiring) else expiring[gone].id)
    if not gone:
        return 0
    keep.update(collector.snapshots(table.tag_manager.tagged_snapshots(), strict=True))
    delete_files(table, candidates.minus(keep))
    return gone


# -- shared by expiration, tag deletion and orphan removal -----------------------------------------
def retained_references(
    table: TableStore,
    snapshots: Sequence[Snapshot] | None = None,
    changelogs: Sequence[Snapshot] | None = None,
) -> FileSet:
    """Files that retained snapshots (default: all), tags and long-lived changelogs reference."""
    collector = ReferenceCollector(table)
    snaps = list(table.snapshot_manager.snapshots()) if snapshots is None else list(snapshots)
    out = collector.snapshots(snaps, strict=True)
    out.update(collector.snapshots(table.tag_manager.tagged_snapshots(), strict=True))
    cls = table.changelog_manager.changelogs() if changelogs is None else changelogs
    out.update(collector.changelogs(cls, strict=True))
    out.update(other_branches_references(table, collector))
    return out


def other_branches_references(table: TableStore, collector: ReferenceCollector) -> FileSet:
    """Files the table's other branches use (main's, seen from a branch): kept whatever this
    branch deletes. Paimon's expiration and tag deletion do not look at other branches, so they
    may delete files a branch created from a tag still reads; stratalake keeps them (orphan
    removal reclaims them once no branch uses them)."""
    out = FileSet()
    manager = BranchManager(table.file_io, table.location, table.identifier, MAIN_BRANCH)
    for branch in [MAIN_BRANCH, *manager.branches()]:
        if branch != table.current_branch:
            out.update(branch_references(table, collector, branch))
    return out


def branch_references(table: TableStore, collector: ReferenceCollector, branch: str) -> FileSet:
    """Files any snapshot, tag or long-lived changelog of ``branch`` of ``table`` names. Snapshots
    are re-listed until none appears, and one expired while being read is skipped (what it shared
    with later snapshots, they name too)."""
    root = branch_path(table.location, branch)
    sm = SnapshotManager(table.file_io, root, table.identifier)
    cm = ChangelogManager(table.file_io, root, table.identifier)
    tm = TagManager(table.file_io, root, table.identifier)
    used = FileSet()
    seen: set[int] = set()
    while True:  # until no snapshot appeared while reading (see orphan's module docstring)
        new = [s for s in sm.snapshots() if s.id not in seen]
        if not new:
            break
        for snap in new:
            seen.add(snap.id)
            try:
                used.update(collector.mentioned(snap, strict=True))
            except CorruptFileError:
                if table.file_io.exists(sm.snapshot_path(snap.id)):
                    raise
                # expired while being read: what it shared with later snapshots, they name too
    for c in cm.changelogs():
        try:
            used.update(collector.mentioned(c, strict=True, long_lived_changelog=True))
        except CorruptFileError:
            if table.file_io.exists(cm.changelog_path(c.id)):
                raise
    for name, tag in tm.tags().items():
        try:
            used.update(collector.mentioned(tag, strict=True))
        except CorruptFileError:
            if tm.exists(name):
                raise
    return used


def delete_files(table: TableStore, files: FileSet) -> list[str]:
    """Delete ``files`` (data first, manifest lists last); returns the paths actually deleted.

    Every path is proven inside the table first (:func:`~stratalake.store.files.delete_in_table`);
    one that is not is left alone and logged.
    """
    loc = table.location
    paths = sorted(files.data)
    # Names are joined as they are: a crafted one ('../x') fails the containment check below.
    paths += [f"{loc}/index/{n}" for n in sorted(files.index)]
    paths += [f"{loc}/statistics/{n}" for n in sorted(files.statistics)]
    # Manifests before manifest lists: a list is the entry point, so it goes last.
    names = sorted(files.manifests, key=lambda n: (n.startswith("manifest-list-"), n))
    paths += [f"{table.manifest_io.dir}/{n}" for n in names]
    return [p for p in paths if delete_in_table(table, p)]
