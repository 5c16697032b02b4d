"""What a committer runs after creating a snapshot (Paimon's commit-time expiration)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from stratalake.exceptions import StrataLakeError
from stratalake.maintenance.auto_tags import create_automatic_tags, create_batch_tag
from stratalake.maintenance.expire import ExpireConfig, expire_changelogs, expire_consumers, expire_snapshots
from stratalake.maintenance.tags import expire_tags

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_log = logging.getLogger(__name__)


def expire_after_commit(table: TableStore, snapshot_id: int | None = None) -> None:
    """What a committer runs after creating a snapshot (``snapshot_id``): the batch tag of a batch
    write (``'tag.automatic-creation'='batch'``); then, unless ``write-only``: expire consumers
    past ``consumer.expiration-time``, then snapshots, then changelogs, create the automatic tags
    now due, and expire the tags whose ``time_retained`` has passed (unless
    ``'tag.time-expire-enabled'='false'``), in Paimon's order.

    The commit already succeeded, so a failure here is logged, not raised; the next commit (or
    ``Table.expire_snapshots``) tries again.
    """
    options = table.core_options
    try:
        if snapshot_id is not None:
            # Paimon's Spark writer tags after its commit, write-only or not (TagBatchCreation).
            create_batch_tag(table, table.snapshot_manager.snapshot(snapshot_id))
        if options.get_bool("write-only"):
            return  # Paimon: write-only skips compaction and expiration (a dedicated job does them)
        cfg = ExpireConfig.from_options(options)
        # As Paimon's TableCommitImpl: expired consumers go first, so they no longer pin snapshots.
        expire_consumers(table)
        expire_snapshots(table, cfg)
        expire_changelogs(table, cfg)
        # Paimon's TagAutoManager, run after each commit: automatic tags, then TagTimeExpire.
        create_automatic_tags(table)
        if (options.get("tag.time-expire-enabled") or "true").strip().lower() != "false":
            expire_tags(table)
    except Exception as e:
        _log.warning(
            "table %s: the commit succeeded, but the maintenance after it (expiration, automatic "
            "tags) failed (the next commit or expire_snapshots tries again): %s: %s",
            table.identifier,
            type(e).__name__,
            e,
            exc_info=not isinstance(e, (StrataLakeError, OSError)),
        )
