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

Conflicts: the commit requires every touched file to be still live and the touched buckets'
deletion-vector index files to be exactly those of the snapshot the statement read; otherwise
it fails with :class:`~stratalake.exceptions.CommitConflictError` and the table is unchanged (its
new files are deleted). The snapshot is an OVERWRITE one, as Paimon's commit of file deletions or
deletion vectors is (streaming reads skip it, as Paimon's do).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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
from stratalake.read.value_stats import file_may_match
from stratalake.spec.manifest import DataFileMeta, FileSource, ManifestEntry
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


def matching_positions(table: TableStore, predicate: Predicate) -> RowDeletes:
    """Positions of the live rows of ``table`` (latest snapshot) matching ``predicate``, by file:
    only files the condition may touch (partition values, value statistics) are read, and only the
    condition's columns."""
    out = RowDeletes()
    snap = table.latest_snapshot()
    if snap is None:
        return out
    out.snapshot_id = snap.id
    schema = table.schema()
    codec = table.partition_codec
    conjuncts = split_conjuncts(predicate)
    part_keys = set(schema.partition_keys)
    part_preds = [p for p in conjuncts if p.columns() <= part_keys]
    value_preds = [p for p in conjuncts if not p.columns() <= part_keys]
    columns = sorted(predicate.columns())
    for e in table.live_entries(snap):
        values = codec.to_dict(e.partition)
        if any(p.eval_values(values) is False for p in part_preds):
            continue
        if not file_may_match(table, e.file, value_preds):
            continue
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
            hit = matching_positions_in(rows, predicate.to_arrow(), offset)
            if len(hit):
                out.positions.setdefault(e.file.file_name, []).append(hit)
            offset += rows.num_rows
    return out


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
    if not any(not m.is_empty() for m in messages):
        return None
    required = set(deletes.positions)
    commit = new_commit(table, commit_user)
    try:
        return commit.commit_row_level(messages, required)
    except BaseException:
        commit.abort(messages)  # only if the commit is known not to have happened
        raise


def _delete_messages(
    table: TableStore, deletes: RowDeletes, written: list[str], rewrite: Rewrite
) -> list[CommitMessage]:
    by_file = deletes.by_file()
    if not by_file:
        return []
    assert deletes.snapshot_id is not None
    try:
        snap = table.snapshot(deletes.snapshot_id)
    except SnapshotNotFoundError as missing_snapshot:
        raise CommitConflictError(
            f"table {table.identifier}: snapshot {deletes.snapshot_id}, which the statement read, expired "
            "while it ran; nothing was committed. Re-run the statement."
        ) from missing_snapshot
    entries = {e.file.file_name: e for e in table.live_entries(snap)}
    missing = sorted(set(by_file) - set(entries))
    if missing:
        raise CommitConflictError(
            f"table {table.identifier}: data file(s) {missing[:3]} are not in snapshot {snap.id}, which "
            "the statement read; nothing was committed. Re-run the statement."
        )
    dv_index = dv_entries_by_bucket(live_index_entries(table, snap))
    buckets: dict[tuple[bytes, int], list[str]] = defaultdict(list)
    for name in sorted(by_file):
        e = entries[name]
        buckets[(e.partition, e.bucket)].append(name)
    use_dv = _deletion_vectors_on(table)
    namer = FileNamer("data")
    messages = []
    rewrites: list[tuple[tuple[bytes, int], ManifestEntry, Positions]] = []
    maintainers = {}
    for key, names in buckets.items():
        base = dv_index.get(key, [])
        m = restore_maintainer(table, key[0], key[1], base)
        maintainers[key] = m
        for name in names:
            if use_dv:
                m.notify_new_deletions(name, by_file[name].astype(np.uint32))
            else:
                old = m.deletion_vector_of(name)
                drop = by_file[name]
                if old is not None:
                    drop = np.union1d(drop, np.asarray(old.positions, dtype=np.int64))
                rewrites.append((key, entries[name], drop))
                m.remove(name)
    results = _run_rewrites(table, rewrites, namer, written, rewrite)
    before: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    after: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for (key, entry, _), new_files in zip(rewrites, results, strict=True):
        before[key].append(entry.file)
        after[key] += new_files
    for key, m in maintainers.items():
        base_names = tuple(e.file_name for e in m.base_files)
        added, deleted = m.write(table.file_io)
        written += [f"{m.index_dir}/{e.file_name}" for e in added]
        total = entries[buckets[key][0]].total_buckets
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
    """``DELETE FROM table WHERE predicate`` without Spark's row-level plan (a condition of
    column-vs-literal comparisons): deletion vectors or copy-on-write as the table says."""
    return apply_changes(table, matching_positions(table, predicate))


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
