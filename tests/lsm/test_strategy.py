"""Universal compaction picking, on fake file metadata (no I/O)."""

from __future__ import annotations

from stratalake.lsm.compaction import (
    CompactionOptions,
    CompactUnit,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    drop_delete,
    pick_full_compaction,
    plan_steps,
)
from stratalake.lsm.compaction.task import Rewrite, Upgrade
from stratalake.lsm.levels import LevelSortedRun, SortedRun
from stratalake.options import CoreOptions
from tests.lsm.fakes import key_of, meta, runs


def sizes(unit: CompactUnit | None) -> list[int]:
    assert unit is not None
    return [f.file_size for f in unit.files]


def test_output_level_is_below_the_first_run_left_out_and_never_zero() -> None:
    levels = runs((0, 1), (0, 1), (1, 1), (3, 1), (4, 1))
    assert UniversalCompaction.create_unit(levels, 5, 1).output_level == 1  # skips level 0
    assert UniversalCompaction.create_unit(levels, 5, 2).output_level == 1
    assert UniversalCompaction.create_unit(levels, 5, 3).output_level == 2
    assert UniversalCompaction.create_unit(levels, 5, 4).output_level == 3
    assert UniversalCompaction.create_unit(levels, 5, 5).output_level == 5  # everything: max level


def test_pick_by_size_amplification_ratio_and_run_count() -> None:
    u = UniversalCompaction(25, 1, 3)
    assert sizes(u.pick(3, runs((0, 1), (0, 2), (0, 3), (0, 3)))) == [1, 2, 3, 3]
    assert sizes(u.pick(4, runs((0, 1), (1, 1), (2, 1), (3, 50)))) == [1, 1, 1]
    # Run count picks 2 runs; the size ratio then absorbs the third.
    assert sizes(u.pick(4, runs((0, 1), (1, 2), (2, 3), (3, 50)))) == [1, 2, 3]
    assert u.pick(4, runs((0, 1), (3, 50))) is None  # below the trigger


def test_no_output_level_zero() -> None:
    u = UniversalCompaction(25, 1, 3)
    unit = u.pick(3, runs((0, 1), (0, 1), (1, 1), (2, 50)))
    assert sizes(unit) == [1, 1, 1] and unit is not None and unit.output_level == 1
    unit = UniversalCompaction(200, 1, 5).pick(6, runs((0, 1), (0, 1), (0, 1), (0, 1024), (0, 1024 * 1024)))
    assert sizes(unit) == [1, 1, 1, 1024, 1024 * 1024] and unit is not None and unit.output_level == 5


def test_run_count_then_size_ratio_reaches_level_2() -> None:
    unit = UniversalCompaction(200, 1, 3).pick(3, runs((0, 10), (0, 20), (1, 97), (2, 100)))
    assert unit is not None and len(unit.files) == 4 and unit.output_level == 2


def _simulate_size_ratio(u: UniversalCompaction, steps: int) -> list[list[int]]:
    current: list[int] = [1, 1, 1, 1]
    seen = []
    for _ in range(steps):
        current = [1, *current]
        levelled = [LevelSortedRun(i, SortedRun.from_single(meta(i, s))) for i, s in enumerate(current)]
        unit = u.pick_for_size_ratio(len(current), levelled)
        if unit is not None:
            picked = [f.file_size for f in unit.files]
            rest = list(current)
            for s in picked:
                rest.remove(s)
            current = [sum(picked), *rest]
        seen.append(list(current))
    return seen


def test_size_ratio_sequence() -> None:
    seen = _simulate_size_ratio(UniversalCompaction(25, 1, 5), 12)
    assert seen[:5] == [[5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5]]
    assert seen[10:12] == [[1, 2, 3, 4, 5], [16]]


def test_size_amplification_sequence() -> None:
    u = UniversalCompaction(25, 0, 1)
    current = [1]
    seen = []
    for _ in range(9):
        current = [1, *current]
        unit = u.pick_for_size_amp(2, [LevelSortedRun(0, SortedRun.from_single(meta(0, s))) for s in current])
        if unit is not None:
            current = [sum(f.file_size for f in unit.files)]
        seen.append(current)
    assert seen == [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8]]


def test_force_up_level0_for_lookup() -> None:
    c = ForceUpLevel0Compaction(UniversalCompaction(25, 1, 3))
    unit = c.pick(3, runs((0, 1), (0, 2), (0, 2), (0, 2)))
    assert sizes(unit) == [1, 2, 2, 2] and unit is not None and unit.output_level == 2
    unit = c.pick(3, runs((0, 1), (1, 2), (2, 2)))
    assert sizes(unit) == [1, 2, 2] and unit is not None and unit.output_level == 2
    unit = c.pick(3, runs((0, 1), (2, 2)))
    assert sizes(unit) == [1] and unit is not None and unit.output_level == 1
    assert c.pick(3, runs((1, 5), (2, 50))) is None  # no level 0: nothing forced


def test_full_compaction_and_drop_delete() -> None:
    assert pick_full_compaction(3, []) is None
    assert pick_full_compaction(3, runs((2, 5))) is None  # already one top-level run
    unit = pick_full_compaction(3, runs((0, 1), (2, 5)))
    assert unit is not None and unit.output_level == 2 and sizes(unit) == [1, 5]
    assert not drop_delete(0, 0)
    assert not drop_delete(1, 3)
    assert drop_delete(3, 3) and drop_delete(2, 1)
    assert drop_delete(1, 3, deletion_vectors=True)


def test_options_defaults_follow_paimon() -> None:
    o = CompactionOptions.of(CoreOptions({}))
    assert (o.num_sorted_run_compaction_trigger, o.num_sorted_run_stop_trigger, o.size_ratio) == (5, 8, 1)
    assert (o.max_size_amplification_percent, o.num_levels) == (200, 6)
    assert o.compaction_file_size == 128 * 1024 * 1024 // 10 * 7
    o = CompactionOptions.of(
        CoreOptions({"num-sorted-run.compaction-trigger": "2", "changelog-producer": "lookup"})
    )
    assert (o.num_levels, o.num_sorted_run_stop_trigger, o.needs_lookup) == (3, 5, True)


def test_task_plan_upgrades_large_isolated_files_and_merges_overlaps() -> None:
    big = meta(0, size=1000, lo=100, hi=200)
    a, b = meta(0, size=10, lo=0, hi=10), meta(1, size=10, lo=5, hi=20)
    unit = CompactUnit(2, (a, b, big))
    steps = plan_steps(unit, key_of, min_file_size=500, max_level=3)
    assert isinstance(steps[0], Rewrite) and set(steps[0].files) == {a, b}
    assert steps[1] == Upgrade(big)
    # Into the max level, a file with (or with unknown) retractions is rewritten, not upgraded.
    for deletes in (3, None):
        d = meta(1, size=1000, lo=0, hi=5, deletes=deletes)
        steps = plan_steps(CompactUnit(3, (d,)), key_of, min_file_size=500, max_level=3)
        assert isinstance(steps[0], Rewrite)
    clean = meta(1, size=1000, lo=0, hi=5, deletes=0)
    assert plan_steps(CompactUnit(3, (clean,)), key_of, 500, 3) == [Upgrade(clean)]
    # A lone small file is moved too; a file already at the output level is left alone.
    small = meta(0, size=1, lo=0, hi=5)
    assert plan_steps(CompactUnit(1, (small,)), key_of, 500, 3) == [Upgrade(small)]
    assert plan_steps(CompactUnit(1, (meta(1, size=1000),)), key_of, 500, 3) == []
