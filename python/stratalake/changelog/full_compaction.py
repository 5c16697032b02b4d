"""``changelog-producer = full-compaction``: changelog = what changed in the top level.

Every compaction into the max level (a full compaction, run every ``full-compaction.delta-commits``
commits) compares, per key, the record already in the max level (the state at the previous full
compaction) with the newly merged value and emits the difference (Paimon's
``FullChangelogMergeFunctionWrapper``). Files moved up to the max level without merging go through
the same path, so their keys show up as inserts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from stratalake.changelog.diff import align_results, diff_changelog
from stratalake.lsm.compaction.rewriter import (
    BucketFiles,
    CompactResult,
    MergeTreeCompactRewriter,
    section_files,
    sort_runs,
)
from stratalake.lsm.levels import SortedRun
from stratalake.lsm.lookup import LEVEL, without_level
from stratalake.merge import MergeContext, drop_retracted, key_group_starts
from stratalake.spec.manifest import DataFileMeta


class FullChangelogRewriter(MergeTreeCompactRewriter):
    """Compaction rewriter that emits changelog for every rewrite into the max level."""

    def __init__(
        self, files: BucketFiles, ctx: MergeContext, max_level: int, row_deduplicate: bool, lookup_merge: bool
    ) -> None:
        super().__init__(files, ctx, lookup_merge=lookup_merge)
        self.max_level = max_level
        self.row_deduplicate = row_deduplicate

    def rewrite(
        self, output_level: int, drop_delete: bool, sections: Sequence[Sequence[SortedRun]]
    ) -> CompactResult:
        if output_level != self.max_level:
            return super().rewrite(output_level, drop_delete, sections)
        return self._rewrite_with_changelog(section_files(sections))

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        if output_level == self.max_level:
            return self._rewrite_with_changelog((file,))
        return super().upgrade(output_level, file)

    def _rewrite_with_changelog(self, files: Sequence[DataFileMeta]) -> CompactResult:
        # Streamed: every key's records arrive in one chunk, so the diff is done chunk by chunk.
        data = self.files.open_writer(self.max_level)
        changelog = self.files.open_writer(self.max_level, changelog=True)
        try:
            for chunk in self.files.chunks(files, levels=True):
                merged, cl = self._merge_chunk(sort_runs(chunk, self.ctx))
                # Nothing is older than the max level: retractions are dropped.
                data.write(drop_retracted(merged))
                if cl is not None:
                    changelog.write(cl)
        except BaseException:
            data.abort()
            changelog.abort()
            raise
        after = self.files.close_writer(data)
        return CompactResult(tuple(files), after, self.files.close_writer(changelog))

    def _merge_chunk(self, kv: pa.Table) -> tuple[pa.Table, pa.Table | None]:
        """Merged rows (KV) and changelog of key-complete ``kv`` (KV + LEVEL, merge order)."""
        ctx = self.ctx
        starts = key_group_starts(kv, ctx.key_names)
        n = kv.num_rows
        levels = kv.column(LEVEL).to_numpy()
        rows = np.arange(n, dtype=np.int64)
        # A key has at most one record in the max level: the state of the last full compaction.
        top = np.maximum.reduceat(np.where(levels == self.max_level, rows, -1), starts)
        sizes = np.diff(np.append(starts, n))
        merged = without_level(
            self.merge_function.merge(kv if self.lookup_merge else without_level(kv), starts)
        )
        after_idx = align_results(kv, starts, merged, ctx.key_names)
        # A lone top-level record is unchanged: no changelog for it.
        active = ~((sizes == 1) & (top >= 0))
        changelog = diff_changelog(
            kv, top.astype(np.int64), merged, after_idx, active, ctx.value_names, self.row_deduplicate
        )
        return merged, changelog
