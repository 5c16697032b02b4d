"""Which sorted runs to compact, and into which level: Paimon's universal compaction. No I/O.

A strategy sees the runs of one bucket newest first (level-0 files, then levels 1..max) and returns a
:class:`CompactUnit`: the runs to merge and the output level. Paimon's rules, after RocksDB's
universal compaction:

1. size amplification: when the runs above the oldest one exceed ``compaction.max-size-amplification-percent``
   of it, compact everything into the max level;
2. size ratio: starting from the newest run, absorb the next run while the candidates' total size
   (widened by ``compaction.size-ratio`` percent) is at least the next run's size;
3. run count: with more than ``num-sorted-run.compaction-trigger`` runs, compact the newest ones
   so that the trigger is met again.

The output level is one below the first run not compacted (never level 0); compacting every run
outputs the max level, which is the only place deletes may be dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from stratalake.lsm.levels import LevelSortedRun
from stratalake.options import ChangelogProducer, CoreOptions, MergeEngine
from stratalake.spec.manifest import DataFileMeta


@dataclass(frozen=True)
class CompactUnit:
    """Files to compact together and the level of their output."""

    output_level: int
    files: tuple[DataFileMeta, ...]

    @staticmethod
    def from_level_runs(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return CompactUnit(output_level, tuple(f for r in runs for f in r.run.files))


class CompactStrategy(Protocol):
    """Picks the runs of one bucket to compact (``runs`` newest first)."""

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None: ...


@dataclass(frozen=True)
class CompactionOptions:
    """The compaction options of a table, with Paimon's defaults."""

    num_sorted_run_compaction_trigger: int = 5
    num_sorted_run_stop_trigger: int = 8
    size_ratio: int = 1
    max_size_amplification_percent: int = 200
    num_levels: int = 6
    compaction_file_size: int = 128 * 1024 * 1024 // 10 * 7
    force_up_level0: bool = False
    needs_lookup: bool = False

    @staticmethod
    def of(options: CoreOptions) -> CompactionOptions:
        trigger = options.get_int("num-sorted-run.compaction-trigger") or 5
        stop = options.get_int("num-sorted-run.stop-trigger")
        return CompactionOptions(
            num_sorted_run_compaction_trigger=trigger,
            # Paimon: default trigger + 3, and never below the trigger.
            num_sorted_run_stop_trigger=max(trigger, stop if stop is not None else trigger + 3),
            size_ratio=options.get_int("compaction.size-ratio") or 0,
            max_size_amplification_percent=options.get_int("compaction.max-size-amplification-percent") or 0,
            num_levels=options.num_levels,
            # Files below 70% of the target size are rewritten; larger ones are only re-levelled.
            compaction_file_size=options.target_file_size // 10 * 7,
            force_up_level0=options.get_bool("compaction.force-up-level-0"),
            needs_lookup=needs_lookup(options),
        )


def needs_lookup(options: CoreOptions) -> bool:
    """Paimon's ``needLookup``: every commit pushes level 0 up, looking old values up on the way."""
    return (
        options.changelog_producer is ChangelogProducer.LOOKUP
        or options.deletion_vectors_enabled
        or options.merge_engine is MergeEngine.FIRST_ROW
        or options.get_bool("force-lookup")
    )


class UniversalCompaction:
    """Universal compaction (size amplification, size ratio, run count)."""

    def __init__(self, max_size_amp: int, size_ratio: int, num_run_compaction_trigger: int) -> None:
        self.max_size_amp = max_size_amp
        self.size_ratio = size_ratio
        self.num_run_compaction_trigger = num_run_compaction_trigger

    @staticmethod
    def of(opts: CompactionOptions) -> UniversalCompaction:
        return UniversalCompaction(
            opts.max_size_amplification_percent, opts.size_ratio, opts.num_sorted_run_compaction_trigger
        )

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.num_run_compaction_trigger:
            return self.pick_for_size_ratio_from(
                max_level, runs, len(runs) - self.num_run_compaction_trigger + 1
            )
        return None

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        candidate_size = sum(r.total_size for r in runs[:-1])
        earliest_size = runs[-1].total_size
        if candidate_size * 100 > self.max_size_amp * earliest_size:
            return CompactUnit.from_level_runs(max_level, runs)
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        return self.pick_for_size_ratio_from(max_level, runs, 1)

    def pick_for_size_ratio_from(
        self, max_level: int, runs: Sequence[LevelSortedRun], candidate_count: int, force_pick: bool = False
    ) -> CompactUnit | None:
        candidate_size = sum(r.total_size for r in runs[:candidate_count])
        triggered = force_pick or candidate_count > 1
        for nxt in runs[candidate_count:]:
            too_big = candidate_size * (100.0 + self.size_ratio) / 100.0 < nxt.total_size
            # Once triggered, small runs of levels 0 and 1 are still worth absorbing.
            if too_big and (not triggered or nxt.level > 1):
                break
            candidate_size += nxt.total_size
            candidate_count += 1
            triggered = True
        return self.create_unit(runs, max_level, candidate_count) if triggered else None

    def force_pick_l0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Compact every level-0 file (and whatever the size ratio adds)."""
        count = 0
        for r in runs:
            if r.level > 0:
                break
            count += 1
        if count == 0:
            return None
        return self.pick_for_size_ratio_from(num_levels - 1, runs, count, force_pick=True)

    @staticmethod
    def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
        output_level = max_level if run_count == len(runs) else max(0, runs[run_count].level - 1)
        if output_level == 0:
            # Never output level 0: extend the unit through the next non-empty higher level.
            for nxt in runs[run_count:]:
                run_count += 1
                if nxt.level != 0:
                    output_level = nxt.level
                    break
        if run_count == len(runs):
            output_level = max_level
        return CompactUnit.from_level_runs(output_level, runs[:run_count])


class ForceUpLevel0Compaction:
    """Universal compaction, else all level-0 files: what lookup tables do at every commit."""

    def __init__(self, universal: UniversalCompaction) -> None:
        self.universal = universal

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        return self.universal.force_pick_l0(num_levels, runs)


def create_strategy(opts: CompactionOptions) -> CompactStrategy:
    universal = UniversalCompaction.of(opts)
    if opts.needs_lookup or opts.force_up_level0:
        return ForceUpLevel0Compaction(universal)
    return universal


def pick_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    has_deletion_vector: Callable[[DataFileMeta], bool] | None = None,
) -> CompactUnit | None:
    """Everything into the max level; a lone max-level run only for files with deletion vectors."""
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = [f for f in runs[0].run.files if has_deletion_vector is not None and has_deletion_vector(f)]
        return CompactUnit(max_level, tuple(files)) if files else None
    return CompactUnit.from_level_runs(max_level, runs)


def is_worth_compacting(unit: CompactUnit) -> bool:
    """A unit of one file already at its output level would change nothing."""
    return bool(unit.files) and (len(unit.files) > 1 or unit.files[0].level != unit.output_level)


def drop_delete(output_level: int, non_empty_highest_level: int, deletion_vectors: bool = False) -> bool:
    """Retractions may be dropped only when nothing older can remain below the output.

    Output level 0 never drops them; an output at or above the highest non-empty level is the
    oldest data of the bucket. With deletion vectors, older rows are masked instead of merged.
    """
    return output_level != 0 and (output_level >= non_empty_highest_level or deletion_vectors)
