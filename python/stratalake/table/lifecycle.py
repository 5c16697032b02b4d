"""Whole-table lifecycle steps of Paimon's procedures: ``purge_files``, ``mark_partition_done``,
``rollback_to_watermark``, ``reset_consumer`` and ``clear_consumers`` (the Table methods of the
same names call these).

- :func:`purge_files` empties a table as Paimon's ``FileStoreTable.purgeFiles``: tags and
  consumers are deleted, an OVERWRITE commit removes every row, snapshots and changelogs expire down to that
  last one, and files no snapshot uses are removed. The schema stays.
- :func:`mark_partitions_done` runs the table's ``partition.mark-done-action``; ``success-file``
  (the default) writes Paimon's ``_SUCCESS`` file in the partition directory (JSON
  ``creationTime``/``modificationTime``; a second mark keeps the creation time);
  ``done-partition`` and ``mark-event`` act on the metastore of a Hive catalog.
- :func:`remove_unexisting_files` drops from the table the data files its latest snapshot lists
  but storage no longer holds (lost to a mistaken delete or a bad copy), so that reads work again
  without the rows those files held: one commit deleting their entries, as Paimon's procedure.
- :func:`reset_consumer` sets a consumer's next snapshot (which must exist, as Paimon checks) or,
  without one, deletes the consumer; :func:`clear_consumers` deletes the consumers whose id matches
  a regular expression (Paimon's ``ResetConsumerProcedure`` / ``ClearConsumersProcedure``).
- :func:`snapshot_at_watermark` is the newest snapshot whose watermark is at most the given one
  (watermarks are recorded by streaming writers such as Paimon's Flink sink).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError, UnsupportedError
from stratalake.lsm.data_file import bucket_dir
from stratalake.maintenance import expire, orphan
from stratalake.operation.commit import CommitMessage
from stratalake.spec.manifest import DataFileMeta
from stratalake.spec.snapshot import Snapshot
from stratalake.store.files import data_file_path

if TYPE_CHECKING:
    from stratalake.table.table import Table

SUCCESS_FILE = "_SUCCESS"
MARK_DONE_ACTION = "partition.mark-done-action"
PARTITIONED_TABLE = "metastore.partitioned-table"
SUCCESS_FILE_ACTION = "success-file"
DONE_PARTITION_ACTION = "done-partition"
MARK_EVENT_ACTION = "mark-event"
DONE_SUFFIX = ".done"  # AddDonePartitionAction: appended to the last partition value
_ACTIONS = (SUCCESS_FILE_ACTION, DONE_PARTITION_ACTION, MARK_EVENT_ACTION)
# Paimon's other actions, refused by name with why.
_REFUSED_ACTIONS = {
    "http-report": "it posts to 'partition.mark-done-action.http.url'; notify that server from your job",
    "custom": "it loads the Java class 'partition.mark-done-action.custom.class', which a Python engine "
    "cannot run; run that class from a Paimon Java engine",
}
_INT_MAX = 2**31 - 1


def purge_files(table: Table) -> None:
    """Delete every row, snapshot but the last, changelog, tag and unused file of ``table``."""
    table.check_supported("purge files of")
    for name in sorted(table.tag_manager.tags()):
        table.delete_tag(name)
    for consumer_id in table.consumer_manager.ids():  # a consumer would pin the old snapshots
        table.consumer_manager.delete_consumer(consumer_id)
    table.new_commit().commit([], overwrite=True)
    everything = expire.ExpireConfig(
        snapshot_retain_min=1,
        snapshot_retain_max=1,
        snapshot_time_retain_ms=0,
        snapshot_max_deletes=_INT_MAX,
        changelog_retain_min=1,
        changelog_retain_max=1,
        changelog_time_retain_ms=0,
        changelog_max_deletes=_INT_MAX,
    )
    now = int(time.time() * 1000)
    expire.expire_changelogs(table, everything, now_ms=now + 1)
    expire.expire_snapshots(table, everything, older_than_ms=now + 1)
    orphan.remove_orphan_files(table, now + 1, False)


def reset_consumer(table: Table, consumer_id: str, next_snapshot_id: int | None = None) -> None:
    """Point consumer ``consumer_id`` at ``next_snapshot_id`` (a snapshot that exists), or delete
    it when ``next_snapshot_id`` is None."""
    cm = table.consumer_manager
    cm.consumer_path(consumer_id)  # refuses a path-like id before anything else
    if next_snapshot_id is None:
        cm.delete_consumer(consumer_id)
        return
    try:
        table.snapshot_manager.snapshot(next_snapshot_id)
    except SnapshotNotFoundError:
        sm = table.snapshot_manager
        raise SnapshotNotFoundError(
            f"table {table.identifier}: cannot reset consumer {consumer_id!r} to snapshot {next_snapshot_id}, "
            f"which does not exist (snapshots are {sm.earliest_snapshot_id()} to {sm.latest_snapshot_id()}); "
            "the consumer is unchanged"
        ) from None
    cm.reset_consumer(consumer_id, next_snapshot_id)


def clear_consumers(table: Table, including: str | None = None, excluding: str | None = None) -> list[str]:
    """Delete the consumers whose whole id matches ``including`` (None or blank: all) and not
    ``excluding``; returns their ids."""
    return table.consumer_manager.clear_consumers(including, excluding)


def mark_done_actions(table: Table) -> list[str]:
    """The actions of the table's ``partition.mark-done-action`` in order, each once (Paimon's
    ``CoreOptions.partitionMarkDoneActions`` is a set), after checking every one can run here
    (Paimon's ``PartitionMarkDoneAction.createActions`` checks before any partition is marked)."""
    raw = table.options().get(MARK_DONE_ACTION, SUCCESS_FILE_ACTION)
    actions: list[str] = []
    for part in raw.split(","):
        action = part.strip().lower()
        if not action:  # 'success-file,' (Java's split drops the trailing empty entry)
            continue
        if action in _REFUSED_ACTIONS:
            raise UnsupportedError(
                f"table {table.identifier}: '{MARK_DONE_ACTION}' = '{raw}': action '{action}' is not "
                f"supported by stratalake ({_REFUSED_ACTIONS[action]}); use "
                f"{', '.join(repr(a) for a in _ACTIONS)}"
            )
        if action not in _ACTIONS:
            raise InvalidOptionError(
                f"table {table.identifier}: '{MARK_DONE_ACTION}' = '{raw}' names an unknown action "
                f"{part.strip()!r}; actions are {', '.join(repr(a) for a in (*_ACTIONS, *_REFUSED_ACTIONS))}, "
                "separated by commas"
            )
        if action not in actions:
            actions.append(action)
    if not actions:
        raise InvalidOptionError(
            f"table {table.identifier}: '{MARK_DONE_ACTION}' = '{raw}' names no action; use "
            f"{', '.join(repr(a) for a in _ACTIONS)}, separated by commas"
        )
    metastore_actions = [a for a in actions if a in (DONE_PARTITION_ACTION, MARK_EVENT_ACTION)]
    if metastore_actions:
        if table.metastore_partitions is None:
            raise UnsupportedError(
                f"table {table.identifier}: '{MARK_DONE_ACTION}' action '{metastore_actions[0]}' needs a "
                "metastore that records partitions, and this table's catalog has none; open the table "
                "through a catalog with 'metastore' = 'hive', or use 'success-file'"
            )
        if table.options().get(PARTITIONED_TABLE, "false").strip().lower() != "true":
            raise InvalidOptionError(
                f"table {table.identifier}: '{MARK_DONE_ACTION}' action '{metastore_actions[0]}' needs the "
                f"table option '{PARTITIONED_TABLE}' = 'true' (partitions listed in the metastore), "
                "as Paimon requires; set it with ALTER TABLE ... SET TBLPROPERTIES"
            )
        # Checked once before any partition is marked, so a lost entry leaves every mark undone.
        table.metastore_partitions.check_registered(table)
    return actions


def mark_partitions_done(table: Table, specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Run ``partition.mark-done-action`` for each partition of ``specs`` (every partition column
    named); returns the partition paths marked. Actions: ``success-file`` (a ``_SUCCESS`` file in
    the partition directory), ``done-partition`` (a metastore partition whose last value ends in
    ``.done``), ``mark-event`` (the metastore's LOAD_DONE event for the partition); several may be
    combined, separated by commas."""
    codec = table.partition_codec
    if not codec.is_partitioned:
        raise InvalidOptionError(f"table {table.identifier} is not partitioned; there is no partition to mark done")
    if not specs:
        raise InvalidOptionError(f"table {table.identifier}: mark_partition_done needs at least one partition")
    actions = mark_done_actions(table)
    values = [codec.spec_to_values(spec, table.identifier) for spec in specs]
    paths = [codec.path(v) for v in values]
    metastore = table.metastore_partitions
    # Partition by partition, every action on each (Paimon's MarkPartitionDoneProcedure.markDone).
    for value, path in zip(values, paths, strict=True):
        for action in actions:
            if action == SUCCESS_FILE_ACTION:
                _write_success_file(table, path)
                continue
            assert metastore is not None  # mark_done_actions refused the action without one
            # The partition's unescaped values, as Paimon's extractPartitionSpecFromPath gives them.
            spec = codec.strings(value)
            if action == DONE_PARTITION_ACTION:
                last = codec.keys[-1]
                metastore.partitions_created(table, [{**spec, last: spec[last] + DONE_SUFFIX}])
            else:
                metastore.mark_done_events(table, [spec])
    return paths


def _write_success_file(table: Table, path: str) -> None:
    """Paimon's ``SuccessFileMarkDoneAction``: a second mark keeps the creation time."""
    now = int(time.time() * 1000)
    target = f"{table.location}/{path}/{SUCCESS_FILE}"
    created = now
    if table.file_io.exists(target):
        created = int(json.loads(table.file_io.read_text(target)).get("creationTime", now))
    body = json.dumps({"creationTime": created, "modificationTime": now}, indent=2)
    table.file_io.write_bytes(target, body.encode())


def snapshot_at_watermark(table: Table, watermark: int) -> Snapshot:
    """The newest retained snapshot whose watermark is at most ``watermark`` (Paimon's
    ``earlierOrEqualWatermark``: watermarks only grow from the first snapshot that has one)."""
    sm = table.snapshot_manager
    earliest, latest = sm.earliest_snapshot_id(), sm.latest_snapshot_id()
    if earliest is None or latest is None:
        raise SnapshotNotFoundError(f"table {table.identifier}: no snapshot exists yet")
    first = next((i for i in range(earliest, latest + 1) if sm.snapshot(i).watermark is not None), None)
    if first is None:
        raise SnapshotNotFoundError(
            f"table {table.identifier}: no snapshot records a watermark (streaming writers record them)"
        )
    lo, hi, found = first, latest, None
    while lo <= hi:
        mid = (lo + hi) // 2
        mark = sm.snapshot(mid).watermark
        if mark is not None and mark <= watermark:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    if found is None:
        raise SnapshotNotFoundError(
            f"table {table.identifier}: no snapshot has a watermark at or before {watermark}"
        )
    return sm.snapshot(found)


def remove_unexisting_files(table: Table, dry_run: bool = False) -> list[str]:
    """Remove the entries of data files the latest snapshot lists but storage lacks; returns their
    paths. One listing per bucket directory, not one request per file. ``dry_run``: only report."""
    table.check_supported("remove unexisting files of")
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return []
    codec = table.partition_codec
    buckets: dict[tuple[bytes, int], tuple[int, list[DataFileMeta]]] = {}
    for entry in table.live_files(snapshot).values():
        total, files = buckets.setdefault((entry.partition, entry.bucket), (entry.total_buckets, []))
        files.append(entry.file)
    missing: list[str] = []
    messages: list[CommitMessage] = []
    for (partition, bucket), (total, files) in sorted(buckets.items()):
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(partition)), bucket)
        present = set(table.file_io.list_names(directory))
        gone = [f for f in files if f.file_name not in present]
        if gone:
            missing.extend(data_file_path(directory, f) for f in gone)
            messages.append(CommitMessage(partition, bucket, total, compact_before=tuple(gone)))
    if messages and not dry_run:
        table.new_commit().commit(messages)
    return missing
