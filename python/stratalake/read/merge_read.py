"""Merge-on-read of splits: read a bucket's files, merge by key, drop retractions, filter."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stratalake.changelog.producers import lookup_merge_enabled
from stratalake.exceptions import SchemaError
from stratalake.expressions import FilterLike, Predicate, conjunction, split_conjuncts, to_predicate
from stratalake.lsm.data_file import DEFAULT_BATCH_ROWS, bucket_dir, iter_kv_file, kv_schema
from stratalake.lsm.deletion_vector import read_deletion_vector
from stratalake.lsm.levels import KeyOf, key_decoder
from stratalake.lsm.lookup import LookupMergeFunction, with_level
from stratalake.lsm.merge_reader import (
    IntKeyBatch,
    dv_keep_mask,
    int_key_parts,
    is_int_key,
    key_complete_chunks,
    merge_sorted_runs,
    replaced_in_newer_parts,
    runs_in_sequence_order,
    sorted_runs,
)
from stratalake.merge import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    MergeContext,
    MergeFunction,
    create_merge_function,
    drop_retracted,
    merge_kv,
    picked_rows,
    take_rows,
)
from stratalake.merge.projection import merge_columns, project
from stratalake.merge.sort import count_distinct_keys
from stratalake.read.fallback import BranchReaders
from stratalake.read.scan import Split
from stratalake.spec.manifest import DataFileMeta
from stratalake.store.files import data_file_path

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


class TableRead:
    """Reads splits into Arrow batches of the requested columns."""

    def __init__(
        self, table: TableStore, columns: Sequence[str] | None = None, filter: FilterLike = None
    ) -> None:
        self.table = table
        schema = table.schema()
        names = [f.name for f in schema.fields]
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise SchemaError(
                    f"table {table.identifier}: unknown column(s) {unknown}; columns are {names}"
                )
        self.columns: list[str] = list(columns) if columns is not None else names
        self.predicate: Predicate | None = to_predicate(filter)
        if self.predicate is not None:
            unknown = sorted(self.predicate.columns() - set(names))
            if unknown:
                raise SchemaError(f"table {table.identifier}: filter uses unknown column(s) {unknown}")
        conjuncts = split_conjuncts(self.predicate)
        safe = set(schema.trimmed_primary_keys) | set(schema.partition_keys)
        # Key and partition filters may run before the merge: all versions of a key share them.
        self._pre_merge = conjunction([p for p in conjuncts if p.columns() <= safe])
        self._post_merge = conjunction([p for p in conjuncts if not p.columns() <= safe])
        self._read_columns = self._columns_to_read()
        # Splits read without a merge (one file, or deletion-vector files) need no merge columns.
        self._raw_read_columns = self._columns_to_read(merge=False)
        ctx = table.merge_context
        self._merge_ctx = ctx if self._read_columns is None else project(ctx, self._read_columns)
        # Lookup tables merge only a key's newest high-level record with its level-0 records.
        self._lookup_merge = lookup_merge_enabled(table.merge_context)
        # Rows per batch read from each sorted run (and per batch returned).
        self.batch_rows = DEFAULT_BATCH_ROWS
        self._key_decoder: KeyOf | None = None
        self._branches = BranchReaders(table, self.columns, self.predicate)

    def _columns_to_read(self, merge: bool = True) -> list[str] | None:
        """Columns to read from files: the requested ones, the filter's, and (with ``merge``) what
        the merge needs to compute them (see :func:`stratalake.merge.projection.merge_columns`);
        None = all."""
        wanted = list(self.columns)
        if self.predicate is not None:
            wanted += sorted(self.predicate.columns())
        needed = set(merge_columns(self.table.merge_context, wanted) if merge else wanted)
        names = [f.name for f in self.table.schema().fields]
        return None if needed >= set(names) else [n for n in names if n in needed]

    @property
    def read_columns(self) -> list[str] | None:
        """The columns read from data files (None: all of them)."""
        return self._read_columns

    def output_schema(self) -> pa.Schema:
        full = self.table.arrow_schema()
        return pa.schema([full.field(c) for c in self.columns])

    def read_split(self, split: Split) -> Iterator[pa.RecordBatch]:
        """Merged, filtered rows of one split as record batches of :meth:`output_schema`.

        Streams: splits that merge go through the k-way merge of their sorted runs
        (:mod:`stratalake.lsm.merge_reader`), the others file by file; memory stays
        O(sorted runs x :attr:`batch_rows`) whatever the bucket holds.
        """
        schema = self.output_schema()
        other = self._other(split)
        if other is not None:  # a fallback branch's partition: read with that branch's schemas
            yield from (batch.cast(schema) for batch in other.read_split(split))
            return
        picked = self._picked_chunks(split) if split.needs_merge else None
        if picked is not None:
            for rows in picked:
                if self._post_merge is not None:
                    rows = rows.filter(self._post_merge.to_arrow())
                if rows.num_rows:
                    yield from (
                        rows.select(self.columns).cast(schema).to_batches(max_chunksize=self.batch_rows)
                    )
            return
        drop = split.merge or any(f.delete_row_count != 0 for f in split.files)
        for kv in self._kv_chunks(split):
            # Files read without a merge were planned that way because they hold no retractions.
            if drop:
                kv = drop_retracted(kv)
            if self._post_merge is not None:
                kv = kv.filter(self._post_merge.to_arrow())
            if kv.num_rows:
                yield from kv.select(self.columns).cast(schema).to_batches(max_chunksize=self.batch_rows)

    def _other(self, split: Split) -> Any:
        """The reader of ``split`` when it belongs to another branch (:attr:`Split.branch`)."""
        return self._branches.reader(split, self.batch_rows)

    def _picked_chunks(self, split: Split) -> Iterator[pa.Table] | None:
        """The live merged rows of ``split`` (the requested and post-merge filter columns only),
        chunk by chunk in key order, when the table's engine keeps whole rows (deduplicate);
        else None. The key, sequence and row-kind columns pick each key's row, and only the
        picked rows of the wanted columns are taken (none at all, zero-copy, when they are one
        run's consecutive rows). When the runs' sequence number ranges are disjoint and ascend
        from the oldest run to the newest, the runs' order is merge order: no sequence numbers
        are read."""
        ctx = self._merge_ctx
        mf = self._merge_function(ctx)
        if self._lookup_merge or getattr(mf, "pick_rows", None) is None:
            return None
        file_runs = sorted_runs(split.files, self._key_of())
        ordered = not ctx.sequence_fields and runs_in_sequence_order(file_runs)
        runs = [
            _chain(
                self._file_batches(split, f, self._read_columns, False, sequence_numbers=not ordered)
                for f in run
            )
            for run in file_runs
        ]
        wanted = list(self.columns)
        if self._post_merge is not None:
            wanted += sorted(self._post_merge.columns())
        return self._pick(runs, ctx, mf, ordered, list(dict.fromkeys(wanted)))

    @staticmethod
    def _pick(
        runs: Sequence[Iterator[pa.Table]],
        ctx: MergeContext,
        mf: MergeFunction,
        ordered: bool,
        wanted: list[str],
    ) -> Iterator[pa.Table]:
        for chunk in key_complete_chunks(runs, ctx.key_names):
            rows = picked_rows(chunk, ctx, mf, ordered, live_only=True)
            assert rows is not None
            yield take_rows(chunk.select(wanted), rows)

    def picks_by_position(self, split: Split) -> bool:
        """Whether :meth:`superseded_positions` can describe ``split``'s merge: the split merges,
        the table's engine keeps whole rows (deduplicate), and no file has a deletion vector (so
        a row's position in its file is its count)."""
        if not split.needs_merge or split.deletion_files or self._lookup_merge or split.branch is not None:
            return False
        return getattr(self._merge_function(self.table.merge_context), "pick_rows", None) is not None

    def superseded_positions(self, split: Split) -> Iterator[pa.RecordBatch]:
        """The rows of ``split``'s files that its merged read does *not* return, as batches of
        (``file``: index in ``split.files``, ``pos``: row position in that file): every record
        that a newer one of its key replaces, and the newest record of a deleted key. Reading the
        files whole and dropping those rows yields exactly :meth:`read_split`'s rows without a
        filter (in file order instead of key order). Only the key, sequence and row-kind columns
        are read; the k-way merge streams as in :meth:`read_split`. Requires
        :meth:`picks_by_position`.
        """
        if not self.picks_by_position(split):
            raise ValueError(
                f"table {self.table.identifier}: split of bucket {split.bucket} is not merged by picking rows"
            )
        ctx = self.table.merge_context
        mf = self._merge_function(ctx)
        file_runs = sorted_runs(split.files, self._key_of())
        ordered = not ctx.sequence_fields and runs_in_sequence_order(file_runs)
        columns = merge_columns(ctx, [])  # the key and sequence-field columns
        index = {f.file_name: i for i, f in enumerate(split.files)}
        key_names = list(ctx.key_names)
        int_key = is_int_key(self.table.arrow_schema(), key_names)
        # No retractions and the runs' order is merge order: the key column alone decides.
        keys_only = ordered and int_key and all(f.delete_row_count == 0 for f in split.files)

        schema = superseded_schema()
        if keys_only:
            # A record is superseded exactly when a newer run holds its key.
            def numbered_keys(f: DataFileMeta) -> Iterator[IntKeyBatch]:
                start = 0
                file = index[f.file_name]
                for kv in self._file_batches(
                    split, f, key_names, False, filtered=False, system_columns=False
                ):
                    keys = kv.column(key_names[0]).to_numpy()
                    yield keys, file, start
                    start += len(keys)

            key_runs = [itertools.chain.from_iterable(numbered_keys(f) for f in run) for run in file_runs]
            for parts in int_key_parts(key_runs):
                if len(parts) == 1:
                    continue
                replaced = replaced_in_newer_parts([keys for keys, _, _ in parts])
                for (_, file, start), hits in zip(parts, replaced, strict=True):
                    if hits.size:
                        files = pa.repeat(pa.scalar(file, pa.int32()), hits.size)
                        out = pa.table([files, pa.array((hits + start).astype(np.int32))], schema=schema)
                        yield from out.to_batches(max_chunksize=self.batch_rows)
            return

        def positions(f: DataFileMeta) -> Iterator[pa.Table]:
            start = 0
            file_id = pa.scalar(index[f.file_name], pa.int32())
            batches = self._file_batches(
                split,
                f,
                columns,
                levels=False,
                filtered=False,
                sequence_numbers=not ordered,
            )
            for kv in batches:
                n = kv.num_rows
                kv = kv.append_column(SUPERSEDED_FILE, pa.repeat(file_id, n))
                kv = kv.append_column(SUPERSEDED_POS, pa.array(np.arange(start, start + n, dtype=np.int32)))
                start += n
                yield kv

        runs = [_chain(positions(f) for f in run) for run in file_runs]
        for chunk in key_complete_chunks(runs, key_names):
            rows = picked_rows(chunk, ctx, mf, ordered, live_only=True)
            assert rows is not None
            if len(rows) == chunk.num_rows:
                continue  # (one run left, every row live)
            dropped = np.ones(chunk.num_rows, dtype=bool)
            dropped[rows] = False
            out = chunk.select([SUPERSEDED_FILE, SUPERSEDED_POS]).filter(pa.array(dropped))
            yield from out.cast(schema).to_batches(max_chunksize=self.batch_rows)

    def count_split(self, split: Split) -> int:
        """The number of rows :meth:`read_split` returns for ``split``, reading only what that needs.

        Without a filter, and when no file of the split holds a retraction (their
        ``delete_row_count`` is 0, not unknown), every key with a record is live (no merge engine
        drops a key without a retraction), so the count is the number of distinct keys: the key
        columns alone are read, streamed through the k-way merge's key-complete chunks, and no
        value is merged. Otherwise the split is merged as :meth:`read_split` does.
        """
        other = self._other(split)
        if other is not None:
            return int(other.count_split(split))
        if self.predicate is not None or any(f.delete_row_count != 0 for f in split.files):
            return sum(batch.num_rows for batch in self.read_split(split))
        key_names = list(self.table.schema().trimmed_primary_keys)

        def keys_of(f: DataFileMeta) -> Iterator[pa.Table]:
            return self._file_batches(split, f, key_names, levels=False, system_columns=False)

        if not split.needs_merge:
            return sum(kv.num_rows for kv in _chain(keys_of(f) for f in split.files))
        file_runs = sorted_runs(split.files, self._key_of())
        if is_int_key(self.table.arrow_schema(), key_names):
            # Each run holds a key once: the distinct keys are the records minus those a newer
            # run holds again.
            key_runs = [
                ((kv.column(key_names[0]).to_numpy(), 0, 0) for kv in _chain(keys_of(f) for f in run))
                for run in file_runs
            ]
            count = 0
            for parts in int_key_parts(key_runs):
                keys = [k for k, _, _ in parts]
                count += sum(len(k) for k in keys) - sum(h.size for h in replaced_in_newer_parts(keys))
            return count
        runs = [_chain(keys_of(f) for f in run) for run in file_runs]
        return sum(count_distinct_keys(chunk, key_names) for chunk in key_complete_chunks(runs, key_names))

    def read_split_keys(self, split: Split) -> Iterator[pa.Table]:
        """The trimmed primary keys of the rows :meth:`read_split` returns for ``split`` (no
        filter), each chunk in key order, reading only what that needs: a split read without a
        merge whose files hold no retraction gives its files' key columns, vectors applied, and
        no sequence number or row kind is decoded."""
        key_names = list(self.table.schema().trimmed_primary_keys)
        if self._other(split) is not None or split.needs_merge or any(f.delete_row_count != 0 for f in split.files):
            yield from (pa.Table.from_batches([b]).select(key_names) for b in self.read_split(split))
            return
        for f in split.files:
            yield from self._file_batches(split, f, key_names, levels=False, system_columns=False)

    def read_split_table(self, split: Split) -> pa.Table:
        """:meth:`read_split` as one table."""
        return pa.Table.from_batches(list(self.read_split(split)), schema=self.output_schema())

    def _kv_chunks(self, split: Split) -> Iterator[pa.Table]:
        """KV rows of ``split`` (merged if it needs a merge, retractions kept), chunk by chunk."""
        columns = self._read_columns if split.needs_merge else self._raw_read_columns
        if not split.needs_merge:
            for f in split.files:
                yield from self._file_batches(split, f, columns, levels=False)
            return
        levels = self._lookup_merge
        runs = [
            _chain(self._file_batches(split, f, columns, levels) for f in run)
            for run in sorted_runs(split.files, self._key_of())
        ]
        ctx = self._merge_ctx
        mf = self._merge_function(ctx)
        yield from merge_sorted_runs(runs, ctx.key_names, lambda kv: merge_kv(kv, ctx, mf))

    def _file_batches(
        self,
        split: Split,
        f: DataFileMeta,
        columns: Sequence[str] | None,
        levels: bool,
        filtered: bool = True,
        system_columns: bool = True,
        sequence_numbers: bool = True,
    ) -> Iterator[pa.Table]:
        """A data file's live rows batch by batch: deletion vector applied by file position
        (before any filter), then (``filtered``) the pre-merge filter; with ``levels``, plus the
        file's level; without ``system_columns``, only ``columns`` (no sequence numbers, kinds);
        without ``sequence_numbers``, no sequence numbers."""
        table = self.table
        directory = bucket_dir(
            table.location, table.partition_codec.path(split.partition_values), split.bucket
        )
        deletion_file = split.deletion_file(f.file_name)
        dv = (
            read_deletion_vector(table.file_io, deletion_file, f.row_count)
            if deletion_file is not None
            else None
        )
        offset = 0
        batches = iter_kv_file(
            table.file_io,
            data_file_path(directory, f),
            table.file_schema(f.schema_id),
            table.schema(),
            columns,
            self.batch_rows,
            expected_rows=f.row_count,
            system_columns=system_columns,
            sequence_numbers=sequence_numbers,
        )
        for kv in batches:
            n = kv.num_rows
            if dv is not None:
                keep = dv_keep_mask(dv.positions, offset, n)
                if keep is not None:
                    kv = kv.filter(pa.array(keep))
            offset += n
            if filtered and self._pre_merge is not None:
                kv = kv.filter(self._pre_merge.to_arrow())
            yield with_level(kv, f.level) if levels else kv

    def _key_of(self) -> KeyOf:
        if self._key_decoder is None:
            self._key_decoder = key_decoder(self.table.schema())
        return self._key_decoder

    def iter_kv_split(self, split: Split) -> Iterator[pa.Table]:
        """The merged KV rows of a split including retractions (for changelog and compaction),
        chunk by chunk in key order, in bounded memory."""
        other = self._other(split)
        if other is not None:
            yield from other.iter_kv_split(split)
            return
        schema = self.table.schema()
        if not split.merge:  # deletion-vector splits: files hold disjoint live keys
            for f in split.files:
                yield from self._file_batches(split, f, None, levels=False, filtered=False)
            return
        runs = [
            _chain(self._file_batches(split, f, None, self._lookup_merge, filtered=False) for f in run)
            for run in sorted_runs(split.files, self._key_of())
        ]
        ctx = self.table.merge_context
        mf = self._merge_function(ctx)
        yield from merge_sorted_runs(runs, schema.trimmed_primary_keys, lambda kv: merge_kv(kv, ctx, mf))

    def read_kv_split(self, split: Split) -> pa.Table:
        """:meth:`iter_kv_split` as one table."""
        chunks = list(self.iter_kv_split(split))
        if not chunks:
            return kv_schema(self.table.schema()).empty_table()
        return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]

    def _merge_function(self, ctx: MergeContext) -> MergeFunction:
        inner = create_merge_function(ctx)
        return LookupMergeFunction(inner) if self._lookup_merge else inner

    def read_splits(self, splits: Sequence[Split]) -> pa.Table:
        """Read splits concurrently: Parquet decoding, sorting and takes release the GIL."""
        workers = min(len(splits), os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                tables = list(pool.map(self.read_split_table, splits))
        else:
            tables = [self.read_split_table(s) for s in splits]
        if not tables:
            return self.output_schema().empty_table()
        return pa.concat_tables(tables)


# Columns of :meth:`TableRead.superseded_positions`.
SUPERSEDED_FILE = "_stratalake_file"
SUPERSEDED_POS = "_stratalake_pos"


def superseded_schema() -> pa.Schema:
    """The schema of :meth:`TableRead.superseded_positions` batches."""
    return pa.schema(
        [pa.field(SUPERSEDED_FILE, pa.int32(), False), pa.field(SUPERSEDED_POS, pa.int32(), False)]
    )


__all__ = [
    "SEQUENCE_NUMBER",
    "SUPERSEDED_FILE",
    "SUPERSEDED_POS",
    "VALUE_KIND",
    "TableRead",
    "superseded_schema",
]


def _chain(parts: Iterable[Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """The batches of a sorted run's files, one file after the other (opened lazily)."""
    for part in parts:
        yield from part
