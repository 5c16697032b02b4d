"""What a committer runs after creating a snapshot (Paimon's commit-time expiration)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from stratalake.exceptions import StrataLakeError
from stratalake.maintenance.expire import ExpireConfig, expire_changelogs, expire_consumers, expire_snapshots
from stratalake.maintenance.tags import expire_tags

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_log = logging.getLogger(__name__)


def expire_after_commit(table: TableStore) -> None:
    """What a committer runs after creating a snapshot: expire consumers past
    ``consumer.expiration-time``, then snapshots, then changelogs, then tags whose
    ``time_retained`` has passed.

    The commit already succeeded, so a failure here is logged, not raised; the next commit (or
    ``Table.expire_snapshots``) tries again.
    """
    options = table.core_options
    if options.get_bool("write-only"):
        return  # Paimon: write-only skips compaction and expiration (a dedicated job does them)
    try:
        cfg = ExpireConfig.from_options(options)
        # As Paimon's TableCommitImpl: expired consumers go first, so they no longer pin snapshots.
        expire_consumers(table)
        expire_snapshots(table, cfg)
        expire_changelogs(table, cfg)
        # Paimon's TagTimeExpire, run after each commit too: tags past their time_retained go.
        expire_tags(table)
    except Exception as e:
        _log.warning(
            "table %s: the commit succeeded, but expiration after it failed (the next commit or "
            "expire_snapshots tries again): %s: %s",
            table.identifier,
            type(e).__name__,
            e,
            exc_info=not isinstance(e, (StrataLakeError, OSError)),
        )
