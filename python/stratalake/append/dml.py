"""Row-level DML of append tables (no primary key): DELETE / UPDATE / MERGE INTO as deleted row
positions plus new rows.

Spark's row-level plan addresses an append table's rows by their place: the data file's name and
the row's position in it (the scan's row-id columns :data:`FILE_COLUMN` and :data:`POS_COLUMN`),
plus the snapshot the statement read (:data:`SNAPSHOT_COLUMN`). A statement's deleted rows arrive as
(file, position) pairs, its new rows (inserted, or updated: delete + insert) as plain inserts
written by the append writer. :func:`apply_changes` then commits everything as one snapshot:

- with ``'deletion-vectors.enabled'='true'`` (Paimon's approach) the positions are added to the
  files' deletion vectors, the bucket's vectors being rewritten into new index files (the same
  format and index manifest as primary-key tables, ``lsm/deletion_vector.py``);
- otherwise each touched file is rewritten without those rows (copy-on-write, batch by batch; the
  rows keep their order and the file its sequence range), its old vector, if any, applied.

A DELETE whose condition the table evaluates itself (column-vs-literal comparisons) is planned as
:class:`DeleteUnit` s: the candidate files (partition values, value statistics) of one bucket,
packed by ``source.split.*`` where files are independent (copy-on-write) and whole where the
bucket's deletion vectors change. Each unit finds its matching positions and writes its bucket's
new files or vectors (:func:`run_unit`); the units run in Spark tasks (``spark/delete_job.py``) or,
without Spark, in this process, and their :class:`DeleteResult` s commit once
(:func:`commit_results`).

Conflicts: the commit requires every touched file to be still live and the touched buckets'
deletion-vector index files to be exactly those of the snapshot the statement read; otherwise
it fails with :class:`~stratalake.exceptions.CommitConflictError` and the table is unchanged (its
new files are deleted). The snapshot is an OVERWRITE one, as Paimon's commit of file deletions or
deletion vectors is (streaming reads skip it, as Paimon's do).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CommitConflictError, SnapshotNotFoundError
from stratalake.expressions import Predicate, split_conjuncts
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.operation.commit import CommitMessage, delete_uncommitted, new_commit
from stratalake.read.append_read import FILE_COLUMN, POS_COLUMN, ROW_ID_COLUMNS, SNAPSHOT_COLUMN
from stratalake.read.scan import pack_for_ordered
from stratalake.read.value_stats import file_may_match
from stratalake.spec.manifest import DataFileMeta, FileSource, IndexManifestEntry, ManifestEntry
from stratalake.store.append_file import AppendFileWriter, iter_append_file
from stratalake.store.index_manifest import dv_entries_by_bucket, live_index_entries, restore_maintainer

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

Positions = npt.NDArray[np.int64]
Rewrite = Callable[["TableStore", ManifestEntry, Positions, FileNamer], tuple[list[DataFileMeta], list[str]]]
"""Rewrites one data file without the rows at the given positions: (new files, paths written)."""


@dataclass
class RowDeletes:
    """Deleted row positions by data file name, from one task (picklable), all read at one snapshot."""

    snapshot_id: int | None = None
    positions: dict[str, list[npt.NDArray[np.integer]]] = field(default_factory=dict)

    def add_batch(
        self,
        files: pa.Array | pa.ChunkedArray,
        pos: pa.Array | pa.ChunkedArray,
        snapshots: pa.Array | pa.ChunkedArray,
    ) -> None:
        """Record one batch of delete records (columnar: grouped by file with a sort)."""
        if len(files) == 0:
            return
        snaps = np.unique(
            np.asarray(pa.chunked_array([snapshots]).to_numpy(zero_copy_only=False), dtype=np.int64)
        )
        for s in snaps.tolist():
            self._snapshot(int(s))
        names = pa.chunked_array([files]).combine_chunks().dictionary_encode()
        codes = names.indices.to_numpy(zero_copy_only=False)
        # Positions in a file are below 2**31 (deletion vectors' range): 4 bytes each on the wire.
        values = np.asarray(pa.chunked_array([pos]).to_numpy(zero_copy_only=False), dtype=np.uint32)
        order = np.argsort(codes, kind="stable")
        codes, values = codes[order], values[order]
        bounds = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [len(codes)]])
        dictionary = names.dictionary.to_pylist()
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            self.positions.setdefault(str(dictionary[codes[a]]), []).append(values[a:b])

    def merge(self, other: RowDeletes) -> None:
        if other.snapshot_id is not None:
            self._snapshot(other.snapshot_id)
        for name, parts in other.positions.items():
            self.positions.setdefault(name, []).extend(parts)

    def _snapshot(self, snapshot_id: int) -> None:
        if self.snapshot_id is not None and self.snapshot_id != snapshot_id:
            # Spark reads the target of one statement once; two snapshots would mean two scans
            # whose positions cannot be combined safely.
            raise CommitConflictError(
                f"a row-level statement read snapshots {self.snapshot_id} and {snapshot_id} of the "
                "same table; nothing was committed. Re-run the statement."
            )
        self.snapshot_id = snapshot_id

    def compact(self) -> RowDeletes:
        """One sorted, distinct array per file (before pickling a task's deletes to the driver)."""
        self.positions = {n: [np.unique(np.concatenate(p))] for n, p in self.positions.items() if p}
        return self

    def by_file(self) -> dict[str, Positions]:
        return {n: np.unique(np.concatenate(p)).astype(np.int64) for n, p in self.positions.items() if p}


def matching_positions_in(rows: pa.Table, mask: pc.Expression, offset: int) -> Positions:
    """Positions (from ``offset``) of the rows ``mask`` is true for (null keeps the row)."""
    index = pa.array(np.arange(offset, offset + rows.num_rows, dtype=np.int64))
    hit = rows.append_column("__stratalake_row__", index).filter(mask).column("__stratalake_row__")
    return np.asarray(hit.to_numpy(), dtype=np.int64)


@dataclass(frozen=True)
class DeleteUnit:
    """One task's share of a DELETE (picklable): candidate files of one bucket, as listed in
    snapshot ``snapshot_id``, with the bucket's deletion-vector index files there. A unit that may
    write the bucket's vectors holds every candidate file of the bucket (:func:`pack_units`)."""

    snapshot_id: int
    entries: tuple[ManifestEntry, ...]
    index_base: tuple[IndexManifestEntry, ...]


@dataclass(frozen=True)
class DeleteResult:
    """What a unit wrote (picklable): its bucket's commit message and the files it deletes rows
    of, which the commit requires to be live still."""

    snapshot_id: int
    message: CommitMessage
    touched: tuple[str, ...]
    attempt: str | None = None  # the uuid in its data files' names (FileNamer)


def pack_units(
    table: TableStore,
    snapshot_id: int,
    groups: Mapping[tuple[bytes, int], Sequence[ManifestEntry]],
    dv_index: Mapping[tuple[bytes, int], Sequence[IndexManifestEntry]],
) -> list[DeleteUnit]:
    """A bucket's candidate files as units: packed by ``source.split.target-size`` (each file
    weighing at least ``source.split.open-file-cost``) where each file is rewritten on its own,
    and whole where the DELETE rewrites the bucket's deletion-vector index files (deletion
    vectors on, or the bucket has some), which one writer must do."""
    opts = table.core_options
    target = opts.get_int("source.split.target-size") or 128 * 1024 * 1024
    open_cost = opts.get_int("source.split.open-file-cost") or 0
    units: list[DeleteUnit] = []
    for key, entries in sorted(groups.items()):
        base = tuple(dv_index.get(key, ()))
        if _deletion_vectors_on(table) or base:
            units.append(DeleteUnit(snapshot_id, tuple(entries), base))
            continue
        by_name = {e.file.file_name: e for e in entries}
        for pack in pack_for_ordered([e.file for e in entries], target, open_cost):
            units.append(DeleteUnit(snapshot_id, tuple(by_name[f.file_name] for f in pack), base))
    return units


def delete_units(table: TableStore, predicate: Predicate) -> list[DeleteUnit]:
    """The units of ``DELETE FROM table WHERE predicate`` at the latest snapshot: only files the
    condition may touch (partition values, value statistics)."""
    snap = table.latest_snapshot()
    if snap is None:
        return []
    codec = table.partition_codec
    conjuncts = split_conjuncts(predicate)
    part_keys = set(table.schema().partition_keys)
    part_preds = [p for p in conjuncts if p.columns() <= part_keys]
    value_preds = [p for p in conjuncts if not p.columns() <= part_keys]
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for e in table.live_entries(snap):
        values = codec.to_dict(e.partition)
        if any(p.eval_values(values) is False for p in part_preds):
            continue
        if not file_may_match(table, e.file, value_preds):
            continue
        groups[(e.partition, e.bucket)].append(e)
    dv_index = dv_entries_by_bucket(live_index_entries(table, snap)) if groups else {}
    return pack_units(table, snap.id, groups, dv_index)


def matching_positions(table: TableStore, predicate: Predicate) -> RowDeletes:
    """Positions of the live rows of ``table`` (latest snapshot) matching ``predicate``, by file
    (for a statement that also inserts rows: :func:`apply_changes`)."""
    out = RowDeletes()
    for unit in delete_units(table, predicate):
        out.merge(unit_positions(table, unit, predicate))
    if out.snapshot_id is None:
        snap = table.latest_snapshot()
        out.snapshot_id = snap.id if snap is not None else None
    return out


def unit_positions(table: TableStore, unit: DeleteUnit, predicate: Predicate) -> RowDeletes:
    """Positions of the rows of ``unit``'s files matching ``predicate``, reading only the
    condition's columns, batch by batch."""
    out = RowDeletes(snapshot_id=unit.snapshot_id)
    schema = table.schema()
    codec = table.partition_codec
    columns = sorted(predicate.columns())
    mask = predicate.to_arrow()
    for e in unit.entries:
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(e.partition)), e.bucket)
        offset = 0
        for rows in iter_append_file(
            table.file_io,
            f"{directory}/{e.file.file_name}",
            table.file_schema(e.file.schema_id),
            schema,
            columns,
            expected_rows=e.file.row_count,
        ):
            hit = matching_positions_in(rows, mask, offset)
            if len(hit):
                out.positions.setdefault(e.file.file_name, []).append(hit)
            offset += rows.num_rows
    return out


def run_unit(
    table: TableStore,
    unit: DeleteUnit,
    deletes: RowDeletes,
    rewrite: Rewrite | None = None,
    namer: FileNamer | None = None,
) -> DeleteResult | None:
    """Write what ``deletes`` (positions in ``unit``'s files) change in the unit's bucket: new
    vectors, or copies of the touched files (``rewrite``, default: append files; named by
    ``namer``). None when no row is deleted. On failure its files are deleted."""
    by_file = deletes.by_file()
    if not by_file:
        return None
    entries = [e for e in unit.entries if e.file.file_name in by_file]
    stray = sorted(set(by_file) - {e.file.file_name for e in entries})
    if stray:
        raise ValueError(f"table {table.identifier}: positions of files {stray[:3]} outside the unit")
    namer = namer or FileNamer("data")
    written: list[str] = []
    try:
        (message,) = _bucket_messages(
            table, [(entries, unit.index_base)], by_file, written, rewrite or _rewrite_without, namer
        )
    except BaseException:
        for path in written:
            table.file_io.delete_quietly(path)
        raise
    return DeleteResult(unit.snapshot_id, message, tuple(sorted(by_file)), namer.uuid)


def run_units(
    table: TableStore, units: Sequence[DeleteUnit], run: Callable[[DeleteUnit], DeleteResult | None]
) -> list[DeleteResult]:
    """Run ``units`` in this process (a few at a time: Parquet decoding and encoding release the
    GIL). If one fails, the files of the others are deleted (nothing was committed)."""
    results: list[DeleteResult] = []
    error: BaseException | None = None
    workers = min(len(units), os.cpu_count() or 1, 4)
    with ThreadPoolExecutor(max(workers, 1)) as pool:
        for fut in [pool.submit(run, u) for u in units]:
            try:
                r = fut.result()
            except BaseException as e:  # wait for every unit, so all their files are known
                error = error or e
                continue
            if r is not None:
                results.append(r)
    if error is not None:
        delete_uncommitted(table, [r.message for r in results])
        raise error
    return results


def commit_results(
    table: TableStore,
    results: Sequence[DeleteResult],
    commit_user: str | None = None,
    inserts: Sequence[CommitMessage] = (),
) -> int | None:
    """Commit the units' results, with the statement's inserted files (``inserts``, already
    written), as one snapshot; returns its id (None when nothing changed). The commit fails,
    unchanged, if a touched file is no longer live or a touched bucket's vectors changed; the
    files are then deleted (only if the commit is known not to have happened, see
    ``TableCommit.commit``)."""
    messages = list(inserts) + _one_per_bucket([r.message for r in results])
    snapshots = sorted({r.snapshot_id for r in results})
    if len(snapshots) > 1:
        delete_uncommitted(table, messages)
        raise CommitConflictError(
            f"table {table.identifier}: a DELETE's tasks read snapshots {snapshots}; nothing was committed. "
            "Re-run the statement."
        )
    return _commit_once(table, messages, {name for r in results for name in r.touched}, commit_user)


def kept_rows(drop: Positions, offset: int, n: int) -> npt.NDArray[np.bool_]:
    """Which of the ``n`` rows from position ``offset`` are not in ``drop`` (sorted positions)."""
    keep = np.ones(n, dtype=bool)
    lo, hi = np.searchsorted(drop, [offset, offset + n])
    keep[drop[lo:hi] - offset] = False
    return keep


def _rewrite_without(
    table: TableStore, entry: ManifestEntry, drop: Positions, namer: FileNamer
) -> tuple[list[DataFileMeta], list[str]]:
    """``entry``'s file rewritten without the rows at ``drop`` (batch by batch, order kept)."""
    codec = table.partition_codec
    directory = bucket_dir(table.location, codec.path(codec.from_bytes(entry.partition)), entry.bucket)
    f = entry.file
    writer = AppendFileWriter(
        table.file_io,
        table.schema(),
        table.core_options,
        directory,
        namer,
        f.min_sequence_number,
        file_source=FileSource.APPEND,
    )
    try:
        offset = 0
        for rows in iter_append_file(
            table.file_io,
            f"{directory}/{f.file_name}",
            table.file_schema(f.schema_id),
            table.schema(),
            expected_rows=f.row_count,
        ):
            n = rows.num_rows
            keep = kept_rows(drop, offset, n)
            offset += n
            if keep.any():
                writer.write(rows.filter(pa.array(keep)))
        return writer.close(), list(writer.paths)
    except BaseException:
        writer.abort()
        raise


def _deletion_vectors_on(table: TableStore) -> bool:
    return table.core_options.deletion_vectors_enabled


def apply_changes(
    table: TableStore,
    deletes: RowDeletes,
    inserts: Sequence[CommitMessage] = (),
    commit_user: str | None = None,
    rewrite: Rewrite | None = None,
) -> int | None:
    """Commit a statement's deleted positions and its inserted files (``inserts``, already
    written) as one snapshot; returns its id (None when nothing changed). On any failure the new
    files are deleted and the table is unchanged (the commit itself keeps them when it cannot
    tell whether it happened, see ``TableCommit.commit``). ``rewrite`` replaces the append-file
    rewrite of copy-on-write (primary-key files: ``table/row_delete.py``)."""
    written: list[str] = []
    try:
        messages = list(inserts) + _delete_messages(table, deletes, written, rewrite or _rewrite_without)
    except BaseException:
        for path in written:
            table.file_io.delete_quietly(path)
        delete_uncommitted(table, list(inserts))
        raise
    return _commit_once(table, messages, set(deletes.positions), commit_user)


def _commit_once(
    table: TableStore, messages: Sequence[CommitMessage], required: set[str], commit_user: str | None
) -> int | None:
    """One OVERWRITE snapshot of a statement's ``messages`` requiring the ``required`` files to be
    live still; None when nothing changed. On failure the messages' files are deleted only if the
    commit is known not to have happened."""
    if not any(not m.is_empty() for m in messages):
        return None
    commit = new_commit(table, commit_user)
    try:
        return commit.commit_row_level(messages, required)
    except BaseException:
        commit.abort(messages)
        raise


def _one_per_bucket(messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    """The units of one bucket as one message (the commit takes one rewriter per bucket). Units
    sharing a bucket only rewrite files: one that writes the bucket's vectors holds it whole."""
    grouped: dict[tuple[bytes, int], list[CommitMessage]] = defaultdict(list)
    for m in messages:
        grouped[(m.partition, m.bucket)].append(m)
    out = []
    for parts in grouped.values():
        first = parts[0]
        if len(parts) > 1:
            assert not any(m.index_files_added or m.index_files_deleted or m.index_base for m in parts)
            first = replace(
                first,
                compact_before=tuple(f for m in parts for f in m.compact_before),
                compact_after=tuple(f for m in parts for f in m.compact_after),
            )
        out.append(first)
    return out


def touched_entries(
    table: TableStore, deletes: RowDeletes
) -> tuple[dict[str, ManifestEntry], dict[tuple[bytes, int], list[IndexManifestEntry]]]:
    """The entries of the files ``deletes`` deletes rows of, in the snapshot the statement read,
    and that snapshot's deletion-vector index files by bucket. Refused (a conflict: nothing was
    committed) if that snapshot expired or does not list one of the files."""
    assert deletes.snapshot_id is not None
    try:
        snap = table.snapshot(deletes.snapshot_id)
    except SnapshotNotFoundError as missing_snapshot:
        raise CommitConflictError(
            f"table {table.identifier}: snapshot {deletes.snapshot_id}, which the statement read, expired "
            "while it ran; nothing was committed. Re-run the statement."
        ) from missing_snapshot
    names = {n for n, p in deletes.positions.items() if p}
    entries = {e.file.file_name: e for e in table.live_entries(snap) if e.file.file_name in names}
    missing = sorted(names - set(entries))
    if missing:
        raise CommitConflictError(
            f"table {table.identifier}: data file(s) {missing[:3]} are not in snapshot {snap.id}, which "
            "the statement read; nothing was committed. Re-run the statement."
        )
    return entries, dv_entries_by_bucket(live_index_entries(table, snap))


def _touched_by_bucket(
    table: TableStore, deletes: RowDeletes
) -> tuple[dict[tuple[bytes, int], list[ManifestEntry]], dict[tuple[bytes, int], list[IndexManifestEntry]]]:
    """:func:`touched_entries` by (partition, bucket), each bucket's files by name."""
    entries, dv_index = touched_entries(table, deletes)
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for name in sorted(entries):
        e = entries[name]
        groups[(e.partition, e.bucket)].append(e)
    return dict(groups), dv_index


def position_units(table: TableStore, deletes: RowDeletes) -> list[tuple[DeleteUnit, dict[str, Positions]]]:
    """A statement's deleted positions as units (:func:`pack_units`), each with its files'
    positions: Spark's row-level plan found the rows, the units rewrite them in Spark tasks."""
    by_file = deletes.by_file()
    if not by_file:
        return []
    groups, dv_index = _touched_by_bucket(table, deletes)
    assert deletes.snapshot_id is not None
    units = pack_units(table, deletes.snapshot_id, groups, dv_index)
    return [(u, {e.file.file_name: by_file[e.file.file_name] for e in u.entries}) for u in units]


def _delete_messages(
    table: TableStore, deletes: RowDeletes, written: list[str], rewrite: Rewrite
) -> list[CommitMessage]:
    by_file = deletes.by_file()
    if not by_file:
        return []
    buckets, dv_index = _touched_by_bucket(table, deletes)
    return _bucket_messages(
        table,
        [(es, dv_index.get(key, [])) for key, es in buckets.items()],
        by_file,
        written,
        rewrite,
        FileNamer("data"),
    )


def _bucket_messages(
    table: TableStore,
    buckets: Sequence[tuple[Sequence[ManifestEntry], Sequence[IndexManifestEntry]]],
    by_file: Mapping[str, Positions],
    written: list[str],
    rewrite: Rewrite,
    namer: FileNamer,
) -> list[CommitMessage]:
    """One message per (touched files of a bucket, the bucket's vectors' index files): the
    positions join the files' vectors, or each file is rewritten without them (its old vector
    applied and removed). Paths written are appended to ``written`` as they appear."""
    use_dv = _deletion_vectors_on(table)
    rewrites: list[tuple[tuple[bytes, int], ManifestEntry, Positions]] = []
    maintainers = []
    for entries, base in buckets:
        key = (entries[0].partition, entries[0].bucket)
        m = restore_maintainer(table, key[0], key[1], base)
        m.namer = namer.sibling("index")  # the attempt's own names (spark/job_attempts.py)
        maintainers.append((key, entries[0].total_buckets, m))
        for e in entries:
            name = e.file.file_name
            if use_dv:
                m.notify_new_deletions(name, by_file[name].astype(np.uint32))
            else:
                old = m.deletion_vector_of(name)
                drop = by_file[name]
                if old is not None:
                    drop = np.union1d(drop, np.asarray(old.positions, dtype=np.int64))
                rewrites.append((key, e, drop))
                m.remove(name)
    results = _run_rewrites(table, rewrites, namer, written, rewrite)
    before: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    after: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for (key, entry, _), new_files in zip(rewrites, results, strict=True):
        before[key].append(entry.file)
        after[key] += new_files
    messages = []
    for key, total, m in maintainers:
        base_names = tuple(e.file_name for e in m.base_files)
        added, deleted = m.write(table.file_io)
        written += [f"{m.index_dir}/{e.file_name}" for e in added]
        messages.append(
            CommitMessage(
                partition=key[0],
                bucket=key[1],
                total_buckets=total,
                compact_before=tuple(before.get(key, ())),
                compact_after=tuple(after.get(key, ())),
                index_files_added=added,
                index_files_deleted=deleted,
                index_base=base_names,
            )
        )
    return messages


def _run_rewrites(
    table: TableStore,
    rewrites: Sequence[tuple[tuple[bytes, int], ManifestEntry, Positions]],
    namer: FileNamer,
    written: list[str],
    rewrite: Rewrite,
) -> list[list[DataFileMeta]]:
    """Rewrite files concurrently (Parquet encoding and decoding release the GIL)."""

    def one(item: tuple[tuple[bytes, int], ManifestEntry, Positions]) -> tuple[list[DataFileMeta], list[str]]:
        return rewrite(table, item[1], item[2], namer)

    workers = min(len(rewrites), os.cpu_count() or 1, 4)
    results: list[list[DataFileMeta]] = []
    if workers <= 1:
        for item in rewrites:
            files, paths = one(item)
            written += paths
            results.append(files)
        return results
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(one, item) for item in rewrites]
        error: BaseException | None = None
        for fut in futures:
            try:
                files, paths = fut.result()
                written += paths
                results.append(files)
            except BaseException as e:  # wait for every rewrite so all their files are known
                error = error or e
        if error is not None:
            raise error
    return results


def delete_rows(table: TableStore, predicate: Predicate) -> int | None:
    """``DELETE FROM table WHERE predicate`` on an append table without Spark (a condition of
    column-vs-literal comparisons): deletion vectors or copy-on-write as the table says, its units
    run in this process (``spark/delete_job.py`` runs them in Spark tasks)."""
    units = delete_units(table, predicate)
    results = run_units(table, units, lambda u: run_unit(table, u, unit_positions(table, u, predicate)))
    return commit_results(table, results)


def split_changes(batch: pa.RecordBatch | pa.Table, row_kind: str, deletes: RowDeletes) -> Iterator[pa.Table]:
    """A batch of change records from Spark: its ``-D`` records go into ``deletes``; yields the
    rest (inserts, and the new version of updated rows) without the row-kind and row-id columns."""
    rows = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    kinds = rows.column(row_kind)
    is_delete = np.asarray(
        pa.compute.fill_null(pa.compute.equal(kinds, "-D"), False).to_numpy(zero_copy_only=False), dtype=bool
    )
    if is_delete.any():
        d = rows.filter(pa.array(is_delete))
        deletes.add_batch(d.column(FILE_COLUMN), d.column(POS_COLUMN), d.column(SNAPSHOT_COLUMN))
    if not is_delete.all():
        keep = rows.filter(pa.array(~is_delete)) if is_delete.any() else rows
        drop = [c for c in (row_kind, *ROW_ID_COLUMNS) if c in keep.column_names]
        yield keep.drop_columns(drop)
