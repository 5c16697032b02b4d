"""Streaming k-way merge of a bucket's sorted runs in bounded memory.

Each sorted run (a level-0 file, or the key-ordered files of one level >= 1) is read batch by
batch; within a run keys ascend and occur at most once. Every step takes, from every run, the rows
whose key is at most the *bound*, the smallest last key of the runs' current batches: all records
of those keys are then in hand, since any later batch of any run starts above the bound. The slices
are concatenated oldest run first (the order :meth:`BucketFiles.read_all` uses), so the stable
key-only sort of :func:`~stratalake.lsm.compaction.rewriter.sort_runs` yields merge order, and are
merged with the table's merge function. Memory held: O(runs x batch rows); every step consumes at
least one whole batch, so there are no more steps than batches.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.lsm.levels import KeyOf
from stratalake.spec.manifest import DataFileMeta

RunBatches = Iterable[pa.Table]
"""The batches of one sorted run, in key order (possibly empty batches, which are skipped)."""


def sorted_runs(files: Iterable[DataFileMeta], key_of: KeyOf) -> list[list[DataFileMeta]]:
    """``files`` as sorted runs (each a key-ordered list of files with disjoint key ranges), oldest
    run first: higher level first, then, in level 0, by max sequence number and file name.

    Level-0 files that follow each other in that order and have disjoint key ranges (the files of
    one flush, rolled at ``target-file-size``) are read as one run: each key is in at most one of
    them, and every other run is older or newer than all of them, so merge order holds; fewer runs
    mean fewer batches in memory. The files of a level >= 1 form one run; should some overlap
    anyway, they are split greedily into several runs, so every run stays a valid stream.
    """
    by_level: dict[int, list[DataFileMeta]] = {}
    for f in files:
        by_level.setdefault(f.level, []).append(f)
    runs: list[list[DataFileMeta]] = []
    for level in sorted(by_level, reverse=True):
        level_files = by_level[level]
        if level == 0:
            group: list[DataFileMeta] = []
            for f in sorted(level_files, key=lambda f: (f.max_sequence_number, f.file_name)):
                if group and not _disjoint([*group, f], key_of):
                    runs.append(sorted(group, key=lambda g: key_of(g.min_key)))
                    group = []
                group.append(f)
            if group:
                runs.append(sorted(group, key=lambda g: key_of(g.min_key)))
            continue
        level_runs: list[list[DataFileMeta]] = []
        for f in sorted(level_files, key=lambda f: (key_of(f.min_key), f.max_sequence_number, f.file_name)):
            lo = key_of(f.min_key)
            for run in level_runs:
                if key_of(run[-1].max_key) < lo:
                    run.append(f)
                    break
            else:
                level_runs.append([f])
        level_runs.sort(key=lambda r: (max(f.max_sequence_number for f in r), r[0].file_name))
        runs += level_runs
    return runs


def runs_in_sequence_order(runs: Sequence[Sequence[DataFileMeta]]) -> bool:
    """Whether every sorted run's sequence numbers are all below the next (newer) run's: then the
    runs' order, oldest first, is every key's merge order, whatever the records' numbers."""
    ranges = [
        (min(f.min_sequence_number for f in run), max(f.max_sequence_number for f in run))
        for run in runs
        if run
    ]
    return all(older[1] < newer[0] for older, newer in itertools.pairwise(ranges))


def _disjoint(files: list[DataFileMeta], key_of: KeyOf) -> bool:
    ordered = sorted(files, key=lambda f: key_of(f.min_key))
    return all(key_of(a.max_key) < key_of(b.min_key) for a, b in itertools.pairwise(ordered))


def is_int_key(schema: pa.Schema, key_names: Sequence[str]) -> bool:
    """Whether the key is one integer column of ``schema`` (the fast paths' case)."""
    return len(key_names) == 1 and pa.types.is_integer(schema.field(key_names[0]).type)


def _count_at_most(batch: pa.Table, key_names: Sequence[str], bound: pa.Table) -> int:
    """Rows of key-sorted ``batch`` whose key is <= the key of one-row ``bound`` (lexicographic,
    Arrow's order: numbers by value, strings and binary bytewise)."""
    if is_int_key(batch.schema, key_names):
        keys = batch.column(key_names[0]).to_numpy()
        return int(np.searchsorted(keys, bound.column(key_names[0]).to_numpy()[0], side="right"))
    mask: pa.ChunkedArray | pa.Array | None = None
    for name in reversed(key_names):
        col = batch.column(name)
        b = bound.column(name)[0]
        if mask is None:
            mask = pc.less_equal(col, b)
        else:
            mask = pc.or_(pc.less(col, b), pc.and_(pc.equal(col, b), mask))
    assert mask is not None
    # Sorted input: the matching rows are a prefix, and counting them is one pass.
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def _min_last_key(batches: Sequence[pa.Table], key_names: Sequence[str]) -> pa.Table:
    """The smallest last key of ``batches`` (non-empty, key-sorted), as a one-row table."""
    lasts = pa.concat_tables([b.select(list(key_names)).slice(b.num_rows - 1, 1) for b in batches])
    if is_int_key(lasts.schema, key_names):
        i = int(np.argmin(lasts.column(key_names[0]).to_numpy()))
    else:
        i = pc.sort_indices(lasts, sort_keys=[(k, "ascending") for k in key_names])[0].as_py()
    return lasts.slice(i, 1)


B = TypeVar("B")


def _complete_parts(
    runs: Sequence[Iterable[B]],
    size: Callable[[B], int],
    counts: Callable[[list[B]], list[int]],
    split: Callable[[B, int], tuple[B, B]],
) -> Iterator[list[tuple[int, B]]]:
    """The k-way step shared by :func:`key_complete_parts` and :func:`int_key_parts`, over any
    batch type: ``counts`` gives, for the runs' current batches, how many leading rows of each
    are at most the smallest last key among them; ``split`` cuts a batch after that many rows."""
    iters = [iter(r) for r in runs]
    current: list[B | None] = [None] * len(iters)

    def advance(i: int) -> None:
        for b in iters[i]:
            if size(b):
                current[i] = b
                return
        current[i] = None

    for i in range(len(iters)):
        advance(i)
    while True:
        live = [(i, b) for i, b in enumerate(current) if b is not None]
        if not live:
            return
        if len(live) == 1:
            # One run left: its batches hold each key once and are complete as they are.
            yield [live[0]]
            advance(live[0][0])
            continue
        parts: list[tuple[int, B]] = []
        for (i, b), n in zip(live, counts([b for _, b in live]), strict=True):
            if n == size(b):
                parts.append((i, b))
                advance(i)
            elif n:
                head, current[i] = split(b, n)
                parts.append((i, head))
        yield parts


def key_complete_parts(
    runs: Sequence[RunBatches], key_names: Sequence[str]
) -> Iterator[list[tuple[int, pa.Table]]]:
    """Chunks of the rows of ``runs`` (given oldest first) such that every key's records are all in
    one chunk, each chunk as its parts: (run index, that run's rows of the chunk, a slice of one of
    its batches), oldest run first; chunks come in key order. Each chunk holds at most one batch's
    worth of rows per run."""

    def counts(batches: list[pa.Table]) -> list[int]:
        bound = _min_last_key(batches, key_names)
        return [_count_at_most(b, key_names, bound) for b in batches]

    return _complete_parts(runs, lambda b: b.num_rows, counts, lambda b, n: (b.slice(0, n), b.slice(n)))


IntKeyBatch = tuple[np.ndarray, int, int]
"""A batch of one integer key column as (key-sorted keys, file index, position of the first key
in that file): what :func:`int_key_parts` streams when the merge needs nothing but the keys."""


def int_key_parts(runs: Sequence[Iterable[IntKeyBatch]]) -> Iterator[list[IntKeyBatch]]:
    """:func:`key_complete_parts` for runs of a single integer key column read as numpy arrays
    (oldest run first): chunks in which every key's records are all present, each as the parts of
    the runs that hold rows of it, oldest first, each part a slice of one batch with its file and
    position updated. No Arrow tables, no position columns: the count and the superseded-row
    paths only need keys and where they are."""

    def counts(batches: list[IntKeyBatch]) -> list[int]:
        bound = min(keys[-1] for keys, _, _ in batches)
        return [int(np.searchsorted(keys, bound, side="right")) for keys, _, _ in batches]

    def split(b: IntKeyBatch, n: int) -> tuple[IntKeyBatch, IntKeyBatch]:
        keys, file, start = b
        return (keys[:n], file, start), (keys[n:], file, start + n)

    for parts in _complete_parts(runs, lambda b: len(b[0]), counts, split):
        yield [b for _, b in parts]


def replaced_in_newer_parts(keys: Sequence[np.ndarray]) -> list[np.ndarray]:
    """For the key columns of a chunk's parts (from :func:`key_complete_parts`: oldest run first,
    each key-sorted and holding a key at most once), the positions in each part of the keys a
    newer part also holds (none for the newest part). Binary searches of the newer parts' keys
    (usually the smaller ones), no sort of the chunk."""
    out = []
    for a, ka in enumerate(keys):
        newer = np.zeros(len(ka), dtype=bool)
        for kb in keys[a + 1 :]:
            at = np.searchsorted(ka, kb)
            at = at[at < len(ka)]  # (the keys beyond ka's last are a suffix of kb)
            newer[at[ka[at] == kb[: len(at)]]] = True
        out.append(np.flatnonzero(newer))
    return out


def key_complete_chunks(runs: Sequence[RunBatches], key_names: Sequence[str]) -> Iterator[pa.Table]:
    """Chunks of the rows of ``runs`` (given oldest first) such that every key's records are all in
    one chunk, concatenated oldest run first; chunks come in key order. Each chunk holds at most
    one batch's worth of rows per run."""
    schema: pa.Schema | None = None
    for parts in key_complete_parts(runs, key_names):
        if len(parts) == 1:
            yield parts[0][1]
            continue
        tables = [t for _, t in parts]
        if schema is None:
            schema = tables[0].schema
        tables = [t if t.schema == schema else t.cast(schema) for t in tables]
        yield pa.concat_tables(tables)


def merge_sorted_runs(
    runs: Sequence[RunBatches], key_names: Sequence[str], merge: Callable[[pa.Table], pa.Table]
) -> Iterator[pa.Table]:
    """The merged rows of ``runs`` (oldest first), chunk by chunk in key order: ``merge`` folds
    each key-complete chunk (e.g. ``lambda kv: merge_runs(kv, ctx, mf)``)."""
    for chunk in key_complete_chunks(runs, key_names):
        merged = merge(chunk)
        if merged.num_rows:
            yield merged


def slices(table: pa.Table, batch_rows: int) -> Iterator[pa.Table]:
    """``table`` as consecutive slices of at most ``batch_rows`` rows (zero-copy)."""
    for offset in range(0, table.num_rows, max(batch_rows, 1)):
        yield table.slice(offset, batch_rows)


def dv_keep_mask(positions: np.ndarray, offset: int, num_rows: int) -> np.ndarray | None:
    """Keep-mask of rows ``[offset, offset + num_rows)`` of a file given its sorted deleted
    ``positions``; None when none of them is deleted."""
    lo, hi = np.searchsorted(positions, [offset, offset + num_rows])
    if lo == hi:
        return None
    keep = np.ones(num_rows, dtype=bool)
    keep[positions[lo:hi].astype(np.int64) - offset] = False
    return keep


__all__ = [
    "RunBatches",
    "dv_keep_mask",
    "key_complete_chunks",
    "merge_sorted_runs",
    "runs_in_sequence_order",
    "slices",
    "sorted_runs",
]
