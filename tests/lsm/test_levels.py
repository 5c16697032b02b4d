"""Levels and sorted runs: invariants, ordering, interval partition."""

from __future__ import annotations

import pytest

from stratalake.lsm.levels import LevelsInvariantError, SortedRun, interval_partition
from tests.lsm.fakes import key_of, levels_of, meta


def test_runs_newest_first_and_update() -> None:
    old0, new0 = meta(0, seq=1), meta(0, seq=5)
    l1 = [meta(1, lo=0, hi=9), meta(1, lo=10, hi=19)]
    l3 = meta(3, lo=0, hi=100)
    levels = levels_of([old0, *l1, new0, l3], num_levels=4)
    runs = levels.level_sorted_runs()
    assert [r.level for r in runs] == [0, 0, 1, 3]
    assert runs[0].run.files == (new0,) and runs[2].run.files == tuple(l1)
    assert levels.number_of_sorted_runs() == 4 and levels.non_empty_highest_level() == 3
    out = meta(2, lo=0, hi=19)
    levels.update([old0, new0, *l1], [out])
    assert [r.level for r in levels.level_sorted_runs()] == [2, 3]
    assert levels_of([]).non_empty_highest_level() == -1
    assert levels_of([meta(0)]).non_empty_highest_level() == 0


def test_restore_grows_levels_to_fit_files() -> None:
    levels = levels_of([meta(7)], num_levels=3)
    assert levels.number_of_levels == 8 and levels.max_level == 7


def test_overlapping_files_in_a_level_are_a_bug() -> None:
    levels = levels_of([meta(1, lo=0, hi=9), meta(1, lo=20, hi=29)])
    with pytest.raises(LevelsInvariantError, match="overlapping"):
        levels.update((), (meta(1, lo=5, hi=25),))  # a compaction breaking a healthy level
    with pytest.raises(LevelsInvariantError):
        SortedRun.from_sorted([meta(1, lo=5, hi=9), meta(1, lo=0, hi=3)], key_of)


def test_restored_overlapping_level_becomes_several_runs_until_compacted() -> None:
    """Tables broken by older versions (several writers compacted one bucket into the top level
    in one commit): restoring splits the level into the fewest runs instead of failing."""
    a, b = meta(3, lo=0, hi=10, seq=5), meta(3, lo=11, hi=20, seq=5)  # one writer's run
    c = meta(3, lo=5, hi=15, seq=9)  # another writer's, overlapping both
    d = meta(3, lo=30, hi=40, seq=1)
    l0 = meta(0, seq=20)
    levels = levels_of([a, b, c, d, l0], num_levels=4)
    assert levels.restored_overlaps == {3: 2} and levels.overlapping_levels() == {3: 2}
    runs = levels.level_sorted_runs()
    assert [r.level for r in runs] == [0, 3, 3]
    assert [f.file_name for f in runs[1].run.files] == [c.file_name, d.file_name]  # newest run first
    assert [f.file_name for f in runs[2].run.files] == [a.file_name, b.file_name]
    assert levels.number_of_sorted_runs() == 3
    for r in runs:
        r.run.validate(key_of)
    assert {f.file_name for f in levels.run_of_level(3).files} == {x.file_name for x in (a, b, c, d)}
    # A compaction leaving it overlapping is allowed (it was broken before) ...
    e = meta(3, lo=0, hi=4, seq=21)
    levels.update([l0, a], [e])
    assert levels.overlapping_levels() == {3: 2}
    # ... and one taking all its runs repairs it; later updates are checked again.
    out = [meta(3, lo=0, hi=19), meta(3, lo=20, hi=40)]
    levels.update([b, c, d, e], out)
    assert levels.overlapping_levels() == {} and levels.restored_overlaps == {3: 2}
    assert levels.run_of_level(3).files == tuple(out)
    with pytest.raises(LevelsInvariantError):
        levels.update((), (meta(3, lo=15, hi=25),))


def test_full_compaction_takes_every_run_of_a_broken_level() -> None:
    from stratalake.lsm.compaction.strategy import pick_full_compaction

    files = [meta(3, lo=0, hi=10, seq=1), meta(3, lo=5, hi=15, seq=2), meta(3, lo=8, hi=9, seq=3)]
    levels = levels_of(files, num_levels=4)
    assert levels.overlapping_levels() == {3: 3}
    unit = pick_full_compaction(levels.number_of_levels, levels.level_sorted_runs())
    assert unit is not None and unit.output_level == 3
    assert {f.file_name for f in unit.files} == {f.file_name for f in files}


def test_interval_partition_sections_and_runs() -> None:
    a, b, c = meta(lo=0, hi=10), meta(lo=5, hi=15), meta(lo=11, hi=12)
    d = meta(lo=20, hi=30)
    sections = interval_partition([d, c, b, a], key_of)
    assert len(sections) == 2
    first = sections[0]
    assert sorted(len(r.files) for r in first) == [1, 2]  # a+c share a run, b overlaps both
    assert {f.file_name for r in first for f in r.files} == {a.file_name, b.file_name, c.file_name}
    assert sections[1][0].files == (d,)
    for section in sections:
        for run in section:
            run.validate(key_of)
