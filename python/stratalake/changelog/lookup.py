"""``changelog-producer = lookup``: changelog from compacting level 0 with a lookup of old values.

At every commit the writer compacts its level-0 files up (see ``ForceUpLevel0Compaction``). For each
key written, the old value is the newest record of that key in a higher level: either among the
compacted files or, if none, looked up in the levels above the output. New records are merged with
it, and the difference becomes the changelog (Paimon's ``LookupChangelogMergeFunctionWrapper``).
Vectorized over many keys at once: the compaction streams key-complete chunks, and each group of
them gets one sort, one lookup pass and one merge.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.changelog.diff import align_results, diff_changelog
from stratalake.lsm.compaction.rewriter import (
    BucketFiles,
    CompactResult,
    MergeTreeCompactRewriter,
    section_files,
    sort_runs,
)
from stratalake.lsm.data_file import kv_schema
from stratalake.lsm.levels import SortedRun
from stratalake.lsm.lookup import LEVEL, GroupLevels, LookupLevels, filter_groups, with_level, without_level
from stratalake.merge import VALUE_KIND, MergeContext, drop_retracted, key_group_starts
from stratalake.options import MergeEngine
from stratalake.spec.manifest import DataFileMeta, FileSource

LOOKUP_GROUP_BATCHES = 8
"""Batches' worth of rows merged per lookup pass when compacting level 0 (bounded memory, few passes)."""

HELD_CHANGELOG_BYTES = 64 * 1024 * 1024
"""Changelog of an upgraded level-0 file held while it may still be the file itself (then copied)."""
"""Batches' worth of rows merged per lookup pass when compacting level 0 (bounded memory, few passes)."""


class LookupChangelogRewriter(MergeTreeCompactRewriter):
    """Compaction rewriter that emits changelog whenever level-0 records take part.

    With deletion vectors (``files.deletion_vectors``), the old records found above the output
    level are marked deleted in their files' vectors, whether or not changelog is produced.
    """

    def __init__(
        self,
        files: BucketFiles,
        ctx: MergeContext,
        lookup_levels: LookupLevels,
        row_deduplicate: bool,
        produce_changelog: bool = True,
    ) -> None:
        first_row = ctx.options.merge_engine is MergeEngine.FIRST_ROW
        # first-row keeps the oldest record anyway; it needs no "newest high-level" filter.
        super().__init__(files, ctx, lookup_merge=not first_row)
        self.first_row = first_row
        self.lookup_levels = lookup_levels
        self.row_deduplicate = row_deduplicate
        # False for deletion-vector tables without the lookup producer: the same lookup then only
        # finds old records to merge with and to mark deleted.
        self.produce_changelog = produce_changelog

    def rewrite(
        self, output_level: int, drop_delete: bool, sections: Sequence[Sequence[SortedRun]]
    ) -> CompactResult:
        files = section_files(sections)
        if output_level == 0 or all(f.level != 0 for f in files):
            return super().rewrite(output_level, drop_delete, sections)
        return self._rewrite_with_changelog(output_level, drop_delete, files)

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        if file.level != 0:
            return super().upgrade(output_level, file)
        if self._rewrites_on_upgrade(output_level, file):
            return self._rewrite_with_changelog(output_level, False, (file,))
        return self._upgrade_in_place(output_level, file)

    def _rewrites_on_upgrade(self, output_level: int, file: DataFileMeta) -> bool:
        """Whether moving level-0 ``file`` up must rewrite it, as Paimon's lookup rewriter decides
        (``upgradeStrategy``): when the output level's format differs, when the file holds
        retractions (dropped on the way up; stricter than Paimon, which keeps them at the top level
        without vectors), or unless the file's rows are the merge's result whatever is stored
        above: the top level (nothing above it), or deduplicate without a sequence field (the
        level-0 record is the newest)."""
        opts = self.files.options
        if opts.format_for_level(0) != opts.format_for_level(output_level):
            return True
        if file.delete_row_count is None or file.delete_row_count > 0:
            return True
        if output_level == self.lookup_levels.levels.max_level:
            return False
        return not (self.ctx.options.merge_engine is MergeEngine.DEDUPLICATE and not self.ctx.sequence_fields)

    def _upgrade_in_place(self, output_level: int, file: DataFileMeta) -> CompactResult:
        """Paimon's upgrade without rewrite: ``file`` moves to ``output_level`` as it is, and its
        records still go through the lookup (older records masked by deletion vectors, the
        changelog). A changelog that is the file's own rows, every one an insert (no key of it was
        stored before: a first load), is the file copied rather than encoded again."""
        upgraded = dataclasses.replace(file, level=output_level)
        changelog = self.files.open_writer(output_level, changelog=True) if self.produce_changelog else None
        # Changelog chunks held while each equals its rows of the file (bounded: past the budget
        # they are written and the copy is off).
        held: list[pa.Table] | None = (
            [] if changelog is not None and self._copies_as_changelog(file, output_level) else None
        )
        held_bytes = 0
        budget = self.lookup_levels.remember_budget()
        kept: list[pa.Table] | None = []  # the file's rows, for the lookup cache, as a rewrite keeps its own
        kept_bytes = 0
        try:
            for group in self._groups(self.files.chunks((file,), levels=True)):
                rows = without_level(group)  # a lone sorted run: in file order
                _, cl = self._merge_level0(group, output_level, False)
                if kept is not None:
                    kept_bytes += rows.nbytes
                    if kept_bytes <= budget:
                        kept.append(rows)
                    else:
                        kept = None
                if cl is None or changelog is None:
                    continue
                if (
                    held is not None
                    and _inserts_of(cl, rows)
                    and held_bytes + cl.nbytes <= HELD_CHANGELOG_BYTES
                ):
                    held.append(cl)
                    held_bytes += cl.nbytes
                    continue
                for h in held or ():
                    changelog.write(h)
                held = None
                changelog.write(cl)
        except BaseException:
            if changelog is not None:
                changelog.abort()
            raise
        if kept and sum(k.num_rows for k in kept) == file.row_count:
            # Every row of the file (none masked by a vector): lookups address rows by position.
            self.lookup_levels.remember((upgraded,), pa.concat_tables(kept), self.files.schema)
        if changelog is None:
            return CompactResult((file,), (upgraded,))
        if held is not None and sum(h.num_rows for h in held) == file.row_count:
            changelog.abort()
            return CompactResult((file,), (upgraded,), (self._copy_as_changelog(file, output_level),))
        for h in held or ():
            changelog.write(h)
        return CompactResult((file,), (upgraded,), self.files.close_writer(changelog))

    def _copies_as_changelog(self, file: DataFileMeta, output_level: int) -> bool:
        """Whether a changelog of ``file``'s own rows may be the file copied: the bytes a changelog
        writer would produce (same schema, format and compression), of an engine whose merge of
        a lone record is that record."""
        opts = self.files.options
        return (
            self.ctx.options.merge_engine in (MergeEngine.DEDUPLICATE, MergeEngine.FIRST_ROW)
            and file.schema_id == self.files.schema.id
            and file.external_path is None
            and opts.format_for_level(output_level, True) == opts.format_for_level(0)
            and opts.compression_for_level(output_level, True) == opts.compression_for_level(0)
        )

    def _copy_as_changelog(self, file: DataFileMeta, output_level: int) -> DataFileMeta:
        opts = self.files.options
        name = self.files.changelog_namer.next(opts.format_for_level(output_level, True))
        meta = dataclasses.replace(
            file,
            file_name=name,
            level=output_level,
            extra_files=(),
            creation_time=int(time.time() * 1000),
            embedded_file_index=None,
            file_source=int(FileSource.COMPACT),
        )
        target = self.files.path(meta)
        self.files.written.append(target)  # deleted with the writer's other files on failure
        self.files.file_io.copy_file(self.files.path(file), target)
        return meta

    def merges_new_runs(self) -> bool:
        # With deletion vectors the old records are masked in index files, committed with
        # compactions: keep Paimon's level-0-then-compact path for those tables.
        return self.files.deletion_vectors is None

    def merge_new_run(self, kv: pa.Table, output_level: int) -> CompactResult:
        read_schema = kv_schema(self.files.schema)
        new = with_level(kv.select(read_schema.names).cast(read_schema), 0)
        # Same merge and changelog as upgrading the run's level-0 file (no retractions dropped).
        result, changelog = self._merge_level0(sort_runs(new, self.ctx), output_level, False)
        after = self.files.write(result, output_level, source=FileSource.APPEND)
        self.lookup_levels.remember(after, result, self.files.schema)
        cl = (
            self.files.write(changelog, output_level, changelog=True, source=FileSource.APPEND)
            if changelog is not None
            else ()
        )
        return CompactResult((), after, cl)

    def _rewrite_with_changelog(
        self, output_level: int, drop_delete: bool, files: Sequence[DataFileMeta]
    ) -> CompactResult:
        # Streamed: every key's records arrive in one chunk, so lookup, merge and diff go group of
        # chunks by group. The written rows are kept for the lookup cache while they fit its budget.
        data = self.files.open_writer(output_level)
        changelog = self.files.open_writer(output_level, changelog=True)
        budget = self.lookup_levels.remember_budget()
        kept: list[pa.Table] | None = []
        kept_bytes = 0
        try:
            for group in self._groups(self.files.chunks(files, levels=True)):
                result, cl = self._merge_level0(group, output_level, drop_delete)
                data.write(result)
                if cl is not None:
                    changelog.write(cl)
                if kept is not None and result.num_rows:
                    kept_bytes += result.nbytes
                    if kept_bytes <= budget:
                        kept.append(result)
                    else:
                        kept = None
        except BaseException:
            data.abort()
            changelog.abort()
            raise
        after = self.files.close_writer(data)
        if kept:
            self.lookup_levels.remember(after, pa.concat_tables(kept), self.files.schema)
        return CompactResult(tuple(files), after, self.files.close_writer(changelog))

    def _groups(self, chunks: Iterable[pa.Table]) -> Iterator[pa.Table]:
        """Consecutive key-complete chunks in merge order, concatenated up to
        :data:`LOOKUP_GROUP_BATCHES` batches' rows: each group looks its keys up in one pass over
        the levels above (a file too large for the lookup cache is read once per group)."""
        limit = self.files.batch_rows * LOOKUP_GROUP_BATCHES
        pending: list[pa.Table] = []
        rows = 0
        for chunk in chunks:
            pending.append(sort_runs(chunk, self.ctx))
            rows += chunk.num_rows
            if rows >= limit:
                yield pa.concat_tables(pending) if len(pending) > 1 else pending[0]
                pending, rows = [], 0
        if pending:
            yield pa.concat_tables(pending) if len(pending) > 1 else pending[0]

    def _merge_level0(
        self, kv: pa.Table, output_level: int, drop_delete: bool
    ) -> tuple[pa.Table, pa.Table | None]:
        """Merge sorted runs (KV + LEVEL, in merge order) holding level-0 records with the old
        values of their keys, looked up above ``output_level``: the rows to write at the output
        level, and the changelog (None when this rewriter produces none)."""
        ctx = self.ctx
        if self.files.deletion_vectors is not None:
            # Older records are masked, never merged later: a retraction has nothing left to
            # retract, even when upgrading a level-0 file (as Paimon forces it with vectors).
            drop_delete = True
        starts = key_group_starts(kv, ctx.key_names)
        groups = GroupLevels.of(kv.column(LEVEL).to_numpy(), starts)
        missing = groups.has_level0 & (groups.high < 0)
        looked_up = np.zeros(len(starts), dtype=bool)
        if missing.any():
            keys = kv.take(pa.array(starts[missing])).select(list(ctx.key_names))
            found, where = self.lookup_levels.lookup_positions(keys, output_level + 1)
            dvs = self.files.deletion_vectors
            if dvs is not None and not self.first_row:
                # The merged record goes to the output level; the old one, in a file above it,
                # is superseded: mask it rather than rewrite that file (Paimon's
                # notifyNewDeletion). first-row keeps the old record and drops the new one.
                for file_name, positions in where:
                    dvs.notify_new_deletions(file_name, positions)
            if found is not None:
                found = found.select(kv.column_names).cast(kv.schema)
                # Found records are older than every record of their key here: first, so the
                # key-only stable sort of sort_runs yields merge order.
                kv = sort_runs(pa.concat_tables([found, kv]), ctx)
                starts = key_group_starts(kv, ctx.key_names)
                levels = kv.column(LEVEL).to_numpy()
                groups = GroupLevels.of(levels, starts)
                # Groups whose only high-level record came from the lookup (above the output).
                high_level = np.where(groups.high >= 0, levels[np.maximum(groups.high, 0)], 0)
                looked_up = groups.high >= 0
                looked_up &= high_level > output_level
        if self.first_row:
            merge_kv_, merge_starts = kv, starts
        else:
            merge_kv_, merge_starts = filter_groups(kv, starts, groups.keep)
        merged = without_level(self.merge_function.merge(without_level(merge_kv_), merge_starts))
        after_idx = align_results(kv, starts, merged, ctx.key_names)
        changelog = (
            diff_changelog(
                kv,
                groups.high,
                merged,
                after_idx,
                groups.has_level0,
                ctx.value_names,
                self.row_deduplicate,
                inserts_only=self.first_row,
            )
            if self.produce_changelog
            else None
        )
        result = merged
        if self.first_row and looked_up.any():
            # The kept record already lives in a higher level; do not write it twice.
            keep = np.ones(merged.num_rows, dtype=bool)
            idx = after_idx[looked_up]
            keep[idx[idx >= 0]] = False
            result = merged.filter(pa.array(keep))
        if drop_delete:
            result = drop_retracted(result)
        return result, changelog


def _inserts_of(changelog: pa.Table, rows: pa.Table) -> bool:
    """Whether ``changelog`` is ``rows`` themselves: as many records, every one an insert (+I), of
    input rows that are all inserts (one +I per key means each key was new)."""
    if changelog.num_rows != rows.num_rows:
        return False
    zero = pa.scalar(0, changelog.schema.field(VALUE_KIND).type)
    return bool(pc.all(pc.equal(changelog.column(VALUE_KIND), zero)).as_py()) and bool(
        pc.all(pc.equal(rows.column(VALUE_KIND), zero)).as_py()
    )
