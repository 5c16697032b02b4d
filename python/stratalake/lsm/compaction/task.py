"""How one compaction unit is carried out: which files are merged and which only change level.

Mirrors Paimon's ``MergeTreeCompactTask``, without I/O: files are split into sections of disjoint
key ranges; sections of several runs must be merged, while a large file that overlaps nothing is
just moved to the output level ("upgraded"). Small files are merged with their neighbours so that
compaction also reduces the number of files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stratalake.lsm.compaction.strategy import CompactUnit
from stratalake.lsm.levels import KeyOf, SortedRun, interval_partition
from stratalake.spec.manifest import DataFileMeta


@dataclass(frozen=True)
class Rewrite:
    """Merge these sections (each a list of overlapping runs) into new files."""

    sections: tuple[tuple[SortedRun, ...], ...]

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for section in self.sections for run in section for f in run.files)


@dataclass(frozen=True)
class Upgrade:
    """Move this file to the output level without rewriting it."""

    file: DataFileMeta


Step = Rewrite | Upgrade


def plan_steps(
    unit: CompactUnit,
    key_of: KeyOf,
    min_file_size: int,
    max_level: int,
    has_deletion_vector: Callable[[DataFileMeta], bool] | None = None,
) -> list[Step]:
    """The rewrites and upgrades that compact ``unit``, in key order."""
    steps: list[Step] = []
    candidate: list[tuple[SortedRun, ...]] = []
    output_level = unit.output_level

    def upgrade(f: DataFileMeta) -> None:
        if f.level == output_level:
            # Already in place; only a file with a deletion vector must be rewritten to apply it.
            if has_deletion_vector is not None and has_deletion_vector(f):
                steps.append(Rewrite(((SortedRun.from_single(f),),)))
            return
        if output_level != max_level or f.delete_row_count == 0:
            steps.append(Upgrade(f))
        else:
            # Retractions must not reach the max level: rewrite to drop them (unknown count too).
            steps.append(Rewrite(((SortedRun.from_single(f),),)))

    def flush() -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0].files:
                upgrade(f)
        else:
            steps.append(Rewrite(tuple(candidate)))
        candidate.clear()

    for section in interval_partition(unit.files, key_of):
        if len(section) > 1:
            candidate.append(tuple(section))
            continue
        for f in section[0].files:
            if f.file_size < min_file_size:
                candidate.append((SortedRun.from_single(f),))
            else:
                flush()
                upgrade(f)
    flush()
    return steps
