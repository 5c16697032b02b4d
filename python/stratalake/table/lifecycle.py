"""Whole-table lifecycle steps of Paimon's procedures: ``purge_files``, ``mark_partition_done``,
``rollback_to_watermark``, ``reset_consumer`` and ``clear_consumers`` (the Table methods of the
same names call these).

- :func:`purge_files` empties a table as Paimon's ``FileStoreTable.purgeFiles``: tags and
  consumers are deleted, an OVERWRITE commit removes every row, snapshots and changelogs expire down to that
  last one, and files no snapshot uses are removed. The schema stays.
- :func:`mark_partitions_done` runs the table's ``partition.mark-done-action``; ``success-file``
  (the default) writes Paimon's ``_SUCCESS`` file in the partition directory (JSON
  ``creationTime``/``modificationTime``; a second mark keeps the creation time).
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


def mark_partitions_done(table: Table, specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Run ``partition.mark-done-action`` for each partition of ``specs`` (every partition column
    named); returns the partition paths marked."""
    codec = table.partition_codec
    if not codec.is_partitioned:
        raise InvalidOptionError(f"table {table.identifier} is not partitioned; there is no partition to mark done")
    if not specs:
        raise InvalidOptionError(f"table {table.identifier}: mark_partition_done needs at least one partition")
    actions = [a.strip().lower() for a in table.options().get(MARK_DONE_ACTION, "success-file").split(",") if a.strip()]
    for action in actions:
        if action != "success-file":
            raise UnsupportedError(
                f"table {table.identifier}: '{MARK_DONE_ACTION}' = '{action}' is not supported by stratalake "
                "(only 'success-file'); 'done-partition' and 'mark-event' need a metastore that records partitions"
            )
    paths = [codec.path(codec.spec_to_values(spec, table.identifier)) for spec in specs]
    now = int(time.time() * 1000)
    for path in paths:
        target = f"{table.location}/{path}/{SUCCESS_FILE}"
        created = now
        if table.file_io.exists(target):
            created = int(json.loads(table.file_io.read_text(target)).get("creationTime", now))
        body = json.dumps({"creationTime": created, "modificationTime": now}, indent=2)
        table.file_io.write_bytes(target, body.encode())
    return paths


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
