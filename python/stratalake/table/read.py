"""Merge-on-read of splits: read a bucket's files, merge by key, drop retractions, filter."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from stratalake.changelog.producers import lookup_merge_enabled
from stratalake.exceptions import SchemaError
from stratalake.expressions import FilterLike, Predicate, conjunction, split_conjuncts, to_predicate
from stratalake.lsm.data_file import bucket_dir, kv_schema, read_kv_file
from stratalake.lsm.deletion_vector import read_deletion_vector
from stratalake.lsm.lookup import LookupMergeFunction, with_level
from stratalake.merge import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    MergeContext,
    create_merge_function,
    drop_retracted,
    merge_kv,
)
from stratalake.merge.projection import merge_columns, project
from stratalake.table.scan import Split

if TYPE_CHECKING:
    from stratalake.table.table import Table


class TableRead:
    """Reads splits into Arrow batches of the requested columns."""

    def __init__(self, table: Table, columns: Sequence[str] | None = None, filter: FilterLike = None) -> None:
        self.table = table
        schema = table.schema()
        names = [f.name for f in schema.fields]
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise SchemaError(f"table {table.identifier}: unknown column(s) {unknown}; columns are {names}")
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
        """Merged, filtered rows of one split as record batches of :meth:`output_schema`."""
        result = self.read_split_table(split)
        yield from result.to_batches(max_chunksize=64 * 1024)

    def read_split_table(self, split: Split) -> pa.Table:
        table = self.table
        schema = table.schema()
        directory = bucket_dir(table.location, table.partition_codec.path(split.partition_values), split.bucket)
        parts = []
        columns = self._read_columns if split.needs_merge else self._raw_read_columns
        for f in split.files:
            kv = read_kv_file(
                table.file_io,
                f"{directory}/{f.file_name}",
                table.file_schema(f.schema_id),
                schema,
                columns,
            )
            kv = self._apply_deletion_vector(kv, split, f.file_name)  # positions: before any filter
            if self._pre_merge is not None:
                kv = kv.filter(self._pre_merge.to_arrow())
            parts.append(with_level(kv, f.level) if self._lookup_merge and split.needs_merge else kv)
        if not parts:
            return self.output_schema().empty_table()
        kv = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if split.needs_merge:
            kv = self._merge(kv, self._merge_ctx)
        # Files read without a merge were planned that way because they hold no retractions.
        if split.merge or any(f.delete_row_count != 0 for f in split.files):
            kv = drop_retracted(kv)
        if self._post_merge is not None:
            kv = kv.filter(self._post_merge.to_arrow())
        out = kv.select(self.columns)
        return out.cast(self.output_schema())

    def read_kv_split(self, split: Split) -> pa.Table:
        """The merged KV rows of a split including retractions (for changelog and compaction)."""
        table = self.table
        schema = table.schema()
        directory = bucket_dir(table.location, table.partition_codec.path(split.partition_values), split.bucket)
        parts = [
            self._apply_deletion_vector(
                read_kv_file(
                    table.file_io, f"{directory}/{f.file_name}", table.file_schema(f.schema_id), schema
                ),
                split,
                f.file_name,
            )
            for f in split.files
        ]
        if not split.merge:  # deletion-vector splits: files hold disjoint live keys
            return pa.concat_tables(parts) if parts else kv_schema(schema).empty_table()
        if self._lookup_merge:
            parts = [with_level(kv, f.level) for kv, f in zip(parts, split.files, strict=True)]
        return self._merge(pa.concat_tables(parts))

    def _apply_deletion_vector(self, kv: pa.Table, split: Split, file_name: str) -> pa.Table:
        deletion_file = split.deletion_file(file_name)
        if deletion_file is None:
            return kv
        return read_deletion_vector(self.table.file_io, deletion_file).apply(kv)

    def _merge(self, kv: pa.Table, ctx: MergeContext | None = None) -> pa.Table:
        ctx = ctx if ctx is not None else self.table.merge_context
        if self._lookup_merge:
            return merge_kv(kv, ctx, LookupMergeFunction(create_merge_function(ctx)))
        return merge_kv(kv, ctx)

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


__all__ = ["SEQUENCE_NUMBER", "VALUE_KIND", "TableRead"]
