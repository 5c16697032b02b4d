"""Schedules the compactions of one bucket: pick (strategy), carry out (task plan + rewriter), and
keep the bucket's :class:`Levels` in step. Compactions run synchronously when triggered."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from stratalake.lsm.compaction.rewriter import CompactResult, MergeTreeCompactRewriter
from stratalake.lsm.compaction.strategy import (
    CompactionOptions,
    CompactStrategy,
    CompactUnit,
    drop_delete,
    is_worth_compacting,
    pick_full_compaction,
)
from stratalake.lsm.compaction.task import Rewrite, plan_steps
from stratalake.lsm.data_file import pending_meta
from stratalake.lsm.levels import Levels
from stratalake.spec.manifest import DataFileMeta


class MergeTreeCompactManager:
    """Compaction of one bucket's LSM tree."""

    def __init__(
        self,
        levels: Levels,
        strategy: CompactStrategy,
        rewriter: MergeTreeCompactRewriter,
        options: CompactionOptions,
    ) -> None:
        self.levels = levels
        self.strategy = strategy
        self.rewriter = rewriter
        self.options = options
        # The bucket's deletion vectors, when the table has them (the rewriter's files hold them).
        self.dv_maintainer = rewriter.files.deletion_vectors

    @property
    def deletion_vectors(self) -> bool:
        return self.dv_maintainer is not None

    def _has_deletion_vector(self, f: DataFileMeta) -> bool:
        return self.dv_maintainer is not None and self.dv_maintainer.has_deletion_vector(f.file_name)

    def add_new_file(self, f: DataFileMeta) -> None:
        self.levels.update((), (f,))

    def all_files(self) -> list[DataFileMeta]:
        return self.levels.all_files()

    def should_wait(self) -> bool:
        """Too many sorted runs: writers must compact before buffering more (stop trigger)."""
        return self.levels.number_of_sorted_runs() > self.options.num_sorted_run_stop_trigger

    def compaction_not_completed(self) -> bool:
        """Lookup tables must not commit with level-0 files left: their changelog is still due."""
        return self.options.needs_lookup and bool(self.levels.level0)

    def pick(self, full: bool = False) -> CompactUnit | None:
        runs = self.levels.level_sorted_runs()
        num_levels = self.levels.number_of_levels
        if full:
            # A full compaction also rewrites max-level files with vectors, to apply them.
            return pick_full_compaction(
                num_levels, runs, self._has_deletion_vector if self.deletion_vectors else None
            )
        unit = self.strategy.pick(num_levels, runs)
        return unit if unit is not None and is_worth_compacting(unit) else None

    def write_new_run(self, kv: pa.Table, estimated_size: int) -> CompactResult | None:
        """Lookup tables compact every new level-0 run away before their commit. When the run
        alone would be picked (level 0 is otherwise empty), merge it straight into the level that
        compaction would choose instead of writing it to level 0, reading it back and rewriting it.
        None when that does not apply: the caller writes the run to level 0 as usual."""
        if self.levels.level0 or not self.rewriter.merges_new_runs():
            return None
        pending = pending_meta(kv, self.rewriter.files.schema, estimated_size)
        self.levels.update((), (pending,))
        try:
            unit = self.pick()
        finally:
            self.levels.update((pending,), ())
        if unit is None or [f.file_name for f in unit.files] != [pending.file_name]:
            return None
        result = self.rewriter.merge_new_run(kv, unit.output_level)
        self.levels.update((), result.after)
        return result

    def trigger_compaction(self, full: bool = False) -> CompactResult | None:
        """Compact if the strategy (or ``full``) says so; the levels reflect the result."""
        unit = self.pick(full)
        if unit is None:
            return None
        dropping = drop_delete(
            unit.output_level, self.levels.non_empty_highest_level(), self.deletion_vectors
        )
        has_dv = self._has_deletion_vector if self.deletion_vectors and full else None
        steps = plan_steps(
            unit, self.levels.key_of, self.options.compaction_file_size, self.levels.max_level, has_dv
        )
        result = CompactResult()
        for step in steps:
            if isinstance(step, Rewrite):
                result = result.merge(self.rewriter.rewrite(unit.output_level, dropping, step.sections))
            else:
                result = result.merge(self.rewriter.upgrade(unit.output_level, step.file))
        if self.dv_maintainer is not None:
            # A rewritten file is gone and its vector with it; an upgraded file keeps its name
            # (and vector). As Paimon's notifyRewriteCompactBefore.
            kept = {f.file_name for f in result.after}
            for f in result.before:
                if f.file_name not in kept:
                    self.dv_maintainer.remove(f.file_name)
        self.levels.update(result.before, result.after)
        return result


class CompactIncrement:
    """Compaction results of one writer between two commits, folded like Paimon's writer does:
    a file both produced and consumed here was never committed and is deleted at once."""

    def __init__(self, delete_file: Callable[[DataFileMeta], None]) -> None:
        self._delete = delete_file
        self.before: dict[str, DataFileMeta] = {}
        self.after: dict[tuple[str, int], DataFileMeta] = {}
        self.changelog: list[DataFileMeta] = []

    def add(self, result: CompactResult) -> None:
        after_names = {f.file_name for f in result.after}
        for f in result.before:
            if self.after.pop((f.file_name, f.level), None) is not None:
                # An intermediate output; keep it only if an upgrade still refers to the name.
                if f.file_name not in self.before and f.file_name not in after_names:
                    self._delete(f)
            else:
                self.before[f.file_name] = f
        for f in result.after:
            self.after[(f.file_name, f.level)] = f
        self.changelog += result.changelog

    def is_empty(self) -> bool:
        return not (self.before or self.after or self.changelog)

    def drain(self) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]:
        out = (tuple(self.before.values()), tuple(self.after.values()), tuple(self.changelog))
        self.before, self.after, self.changelog = {}, {}, []
        return out
