"""The LSM tree of one bucket: level-0 files plus one sorted run per higher level.

Level 0 holds one sorted run per file (newest first); every level >= 1 is a single sorted run whose
files have disjoint key ranges. Files are compared by their ``_MIN_KEY``/``_MAX_KEY`` through a
:data:`KeyOf` function, so these objects need no I/O and tests can use fake file metadata.

Tables written by older versions may hold overlapping files in a level >= 1 (several writers of one
bucket each compacted into the top level in one commit). Restoring such a level does not fail: it
becomes several sorted runs (the fewest, split greedily), which readers merge like any runs and the
next compaction that takes them all (a full one always does) turns into one run again.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stratalake.spec.binary_row import decode_row
from stratalake.spec.manifest import DataFileMeta
from stratalake.spec.schema import TableSchema

KeyOf = Callable[[bytes], tuple[Any, ...]]
"""Decodes a serialized trimmed-key row (``_MIN_KEY``/``_MAX_KEY``) into a comparable tuple."""


class LevelsInvariantError(AssertionError):
    """Files of a level overlap or the file set is inconsistent: a bug, never a user error."""


def key_decoder(schema: TableSchema) -> KeyOf:
    """A memoizing :data:`KeyOf` for ``schema``'s trimmed primary key.

    Python tuples of ints, strings (code-point order = UTF-8 byte order), bytes, decimals and dates
    compare like Paimon's key comparator; keys are never null.
    """
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]
    memo: dict[bytes, tuple[Any, ...]] = {}

    def key_of(data: bytes) -> tuple[Any, ...]:
        key = memo.get(data)
        if key is None:
            key = decode_row(data, types)
            if len(memo) < 100_000:
                memo[data] = key
        return key

    return key_of


@dataclass(frozen=True)
class SortedRun:
    """Files with disjoint key ranges, in key order: readable as one sorted stream."""

    files: tuple[DataFileMeta, ...]

    @staticmethod
    def empty() -> SortedRun:
        return SortedRun(())

    @staticmethod
    def from_single(file: DataFileMeta) -> SortedRun:
        return SortedRun((file,))

    @staticmethod
    def from_sorted(files: Sequence[DataFileMeta], key_of: KeyOf) -> SortedRun:
        run = SortedRun(tuple(files))
        run.validate(key_of)
        return run

    @staticmethod
    def from_unsorted(files: Iterable[DataFileMeta], key_of: KeyOf) -> SortedRun:
        ordered = sorted(files, key=lambda f: key_of(f.min_key))
        return SortedRun.from_sorted(ordered, key_of)

    def validate(self, key_of: KeyOf) -> None:
        for prev, nxt in zip(self.files, self.files[1:], strict=False):
            if key_of(prev.max_key) >= key_of(nxt.min_key):
                raise LevelsInvariantError(
                    f"sorted run has overlapping key intervals: {prev.file_name} ends at "
                    f"{key_of(prev.max_key)} but {nxt.file_name} starts at {key_of(nxt.min_key)}. "
                    "This is a bug."
                )

    def is_empty(self) -> bool:
        return not self.files

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class LevelSortedRun:
    """A sorted run and the level it lives on."""

    level: int
    run: SortedRun

    @property
    def total_size(self) -> int:
        return self.run.total_size


def split_into_runs(files: Iterable[DataFileMeta], key_of: KeyOf) -> list[SortedRun]:
    """The fewest sorted runs holding ``files`` (one run if their key ranges are disjoint), newest
    first. Greedy: in key order, each file joins the run that ends earliest if it starts after it."""
    ordered = sorted(files, key=lambda f: (key_of(f.min_key), key_of(f.max_key)))
    heap: list[tuple[tuple[Any, ...], int, list[DataFileMeta]]] = []
    for counter, f in enumerate(ordered):
        if heap and key_of(f.min_key) > heap[0][0]:
            _, _, run = heapq.heappop(heap)
            run.append(f)
        else:
            run = [f]
        heapq.heappush(heap, (key_of(run[-1].max_key), counter, run))
    runs = [SortedRun(tuple(run)) for _, _, run in heap]
    return sorted(runs, key=lambda r: (-max(f.max_sequence_number for f in r.files), r.files[0].file_name))


def overlapping_levels(files: Iterable[DataFileMeta], key_of: KeyOf) -> dict[int, list[SortedRun]]:
    """Levels >= 1 of one bucket's ``files`` whose files overlap, with the runs they split into
    (metadata only). Empty for every table this version wrote."""
    by_level: dict[int, list[DataFileMeta]] = {}
    for f in files:
        if f.level > 0:
            by_level.setdefault(f.level, []).append(f)
    out: dict[int, list[SortedRun]] = {}
    for level, group in sorted(by_level.items()):
        runs = split_into_runs(group, key_of) if len(group) > 1 else []
        if len(runs) > 1:
            out[level] = runs
    return out


def _level0_order(f: DataFileMeta) -> tuple[int, str]:
    # Newest first; several writers may produce equal max sequence numbers, so the name breaks ties.
    return (-f.max_sequence_number, f.file_name)


class Levels:
    """All files of one bucket, by level. Mutated only through :meth:`update`.

    A level >= 1 restored with overlapping files (see the module docstring) holds several runs
    until a compaction merges them; :attr:`restored_overlaps` records what was found. Only such a
    level may hold several runs: anything else that would make a level overlap is a bug.
    """

    def __init__(self, key_of: KeyOf, files: Sequence[DataFileMeta], num_levels: int) -> None:
        restored = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if restored < 2:
            raise LevelsInvariantError("number of levels must be at least 2")
        self.key_of = key_of
        self._level0: list[DataFileMeta] = []
        self._levels: list[SortedRun] = [SortedRun.empty() for _ in range(1, restored)]
        # Levels >= 1 holding several runs (restored overlapping), newest run first.
        self._runs: dict[int, list[SortedRun]] = {}
        self._update((), files, restoring=True)
        # Level -> number of sorted runs, for each level >= 1 restored with overlapping files.
        self.restored_overlaps: dict[int, int] = {level: len(r) for level, r in self._runs.items()}
        if sum(len(r.files) for r in self._levels) + len(self._level0) != len(files):
            raise LevelsInvariantError("files were lost or duplicated while building levels. This is a bug.")

    # -- accessors ------------------------------------------------------------------------------
    @property
    def level0(self) -> tuple[DataFileMeta, ...]:
        return tuple(self._level0)

    def run_of_level(self, level: int) -> SortedRun:
        """The files of ``level`` in key order: one sorted run, except in a level restored with
        overlapping files (see :meth:`runs_of_level`), where neighbours may overlap."""
        if level <= 0:
            raise LevelsInvariantError("level 0 is not one sorted run")
        return self._levels[level - 1]

    def runs_of_level(self, level: int) -> list[SortedRun]:
        """The sorted runs of ``level`` >= 1, newest first: one, or none if the level is empty."""
        if level <= 0:
            raise LevelsInvariantError("level 0 is not one sorted run")
        runs = self._runs.get(level)
        if runs is not None:
            return list(runs)
        run = self._levels[level - 1]
        return [] if run.is_empty() else [run]

    def overlapping_levels(self) -> dict[int, int]:
        """Levels >= 1 that currently hold several sorted runs, with their number of runs."""
        return {level: len(runs) for level, runs in self._runs.items()}

    @property
    def number_of_levels(self) -> int:
        return len(self._levels) + 1

    @property
    def max_level(self) -> int:
        return len(self._levels)

    def number_of_sorted_runs(self) -> int:
        return len(self._level0) + sum(len(self.runs_of_level(i + 1)) for i in range(len(self._levels)))

    def non_empty_highest_level(self) -> int:
        """The highest level holding files, 0 for only level 0, -1 for an empty tree."""
        for i in range(len(self._levels) - 1, -1, -1):
            if not self._levels[i].is_empty():
                return i + 1
        return 0 if self._level0 else -1

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Runs from newest to oldest: each level-0 file, then levels 1..max."""
        runs = [LevelSortedRun(0, SortedRun.from_single(f)) for f in self._level0]
        for level in range(1, len(self._levels) + 1):
            runs += [LevelSortedRun(level, r) for r in self.runs_of_level(level)]
        return runs

    def all_files(self) -> list[DataFileMeta]:
        return [f for r in self.level_sorted_runs() for f in r.run.files]

    def total_size(self) -> int:
        return sum(f.file_size for f in self.all_files())

    # -- mutation -------------------------------------------------------------------------------
    def update(self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta]) -> None:
        """Remove ``before`` and add ``after`` (a compaction result, or new files)."""
        self._update(before, after, restoring=False)

    def _update(self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta], restoring: bool) -> None:
        before, after = list(before), list(after)
        for level in {f.level for f in before} | {f.level for f in after}:
            if level < 0 or level >= self.number_of_levels:
                raise LevelsInvariantError(f"level {level} is outside 0..{self.max_level}")
            gone = {f.file_name for f in before if f.level == level}
            added = [f for f in after if f.level == level]
            if level == 0:
                kept = [f for f in self._level0 if f.file_name not in gone]
                names = {f.file_name for f in kept}
                kept += [f for f in added if f.file_name not in names]
                self._level0 = sorted(kept, key=_level0_order)
            else:
                current = self._levels[level - 1].files
                kept = [f for f in current if f.file_name not in gone]
                names = {f.file_name for f in kept}
                kept += [f for f in added if f.file_name not in names]
                if not restoring and level not in self._runs:
                    self._levels[level - 1] = SortedRun.from_unsorted(kept, self.key_of)
                    continue
                # Restoring, or a level restored with overlapping files: it may stay several runs
                # until a compaction takes them all.
                runs = split_into_runs(kept, self.key_of)
                ordered = sorted(kept, key=lambda f: (self.key_of(f.min_key), f.file_name))
                # One run, or all files in key order (none, or several overlapping runs).
                self._levels[level - 1] = runs[0] if len(runs) == 1 else SortedRun(tuple(ordered))
                if len(runs) > 1:
                    self._runs[level] = runs
                else:
                    self._runs.pop(level, None)

    def __repr__(self) -> str:
        runs = ", ".join(f"L{r.level}:{len(r.run.files)}f/{r.total_size}B" for r in self.level_sorted_runs())
        return f"Levels({runs})"


def interval_partition(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[list[SortedRun]]:
    """Split files into sections with disjoint key ranges, each section into the fewest sorted runs.

    Sections are in key order; a section with a single run needs no merge with its neighbours.
    """
    ordered = sorted(files, key=lambda f: (key_of(f.min_key), key_of(f.max_key)))
    sections: list[list[SortedRun]] = []
    section: list[DataFileMeta] = []
    bound: tuple[Any, ...] | None = None
    for f in ordered:
        if section and bound is not None and key_of(f.min_key) > bound:
            sections.append(_partition_section(section, key_of))
            section, bound = [], None
        section.append(f)
        if bound is None or key_of(f.max_key) > bound:
            bound = key_of(f.max_key)
    if section:
        sections.append(_partition_section(section, key_of))
    return sections


def _partition_section(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[SortedRun]:
    # Greedy: append each file to the run that ends earliest if it starts after that end.
    heap: list[tuple[tuple[Any, ...], int, list[DataFileMeta]]] = []
    for counter, f in enumerate(files):
        if heap and key_of(f.min_key) > heap[0][0]:
            _, _, run = heapq.heappop(heap)
            run.append(f)
        else:
            run = [f]
        heapq.heappush(heap, (key_of(run[-1].max_key), counter, run))
    return [SortedRun(tuple(run)) for _, _, run in heap]
