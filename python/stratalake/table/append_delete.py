"""Copy-on-write DELETE of append tables (no primary key).

Paimon deletes rows of an append table without deletion vectors by rewriting the data files that
hold them. Here: the live files the condition may touch (partition values, then value statistics:
``table/append_read.py``) are read batch by batch; a file with matching rows is rewritten without
them (its rows keep their order and its sequence range start), and the statement commits the
replaced and new files as one snapshot through the common committer. A concurrent commit that
replaced one of the same files first makes it fail with
:class:`~stratalake.exceptions.CommitConflictError`, leaving the table unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stratalake.expressions import Predicate, split_conjuncts
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.spec.manifest import DataFileMeta, FileSource
from stratalake.table.append_file import AppendFileWriter, iter_append_file
from stratalake.table.append_read import file_may_match
from stratalake.table.commit import CommitMessage

if TYPE_CHECKING:
    from stratalake.table.table import Table

_ROW = "__stratalake_row__"


def _matching(rows: pa.Table, predicate: Predicate) -> np.ndarray:
    """Positions of the rows the condition is true for (a null condition keeps the row, as SQL)."""
    index = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    hit = rows.append_column(_ROW, index).filter(predicate.to_arrow()).column(_ROW)
    return np.asarray(hit.to_numpy(), dtype=np.int64)


def delete_rows(table: Table, predicate: Predicate) -> int | None:
    """Delete the rows of append table ``table`` matching ``predicate`` as one snapshot; returns
    its id, or None when no row matched."""
    snap = table.latest_snapshot()
    if snap is None:
        return None
    schema = table.schema()
    codec = table.partition_codec
    conjuncts = split_conjuncts(predicate)
    part_keys = set(schema.partition_keys)
    part_preds = [p for p in conjuncts if p.columns() <= part_keys]
    value_preds = [p for p in conjuncts if not p.columns() <= part_keys]
    columns = sorted(predicate.columns())
    namer = FileNamer("data")
    replaced: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    written: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    totals: dict[tuple[bytes, int], int] = {}
    paths: list[str] = []
    try:
        for e in table.live_entries(snap):
            values = codec.to_dict(e.partition)
            if any(p.eval_values(values) is False for p in part_preds):
                continue
            if not file_may_match(table, e.file, value_preds):
                continue
            directory = bucket_dir(table.location, codec.path(codec.from_bytes(e.partition)), e.bucket)
            path = f"{directory}/{e.file.file_name}"
            file_schema = table.file_schema(e.file.schema_id)
            # First pass reads only the condition's columns: most files keep every row.
            if not any(
                len(_matching(rows, predicate))
                for rows in iter_append_file(table.file_io, path, file_schema, schema, columns)
            ):
                continue
            writer = AppendFileWriter(
                table.file_io,
                schema,
                table.core_options,
                directory,
                namer,
                e.file.min_sequence_number,
                file_source=FileSource.APPEND,
            )
            try:
                for rows in iter_append_file(table.file_io, path, file_schema, schema):
                    keep = np.ones(rows.num_rows, dtype=bool)
                    keep[_matching(rows, predicate)] = False
                    writer.write(rows.filter(pa.array(keep)))
                new_files = writer.close()
            except BaseException:
                writer.abort()
                raise
            paths += writer.paths
            key = (e.partition, e.bucket)
            replaced[key].append(e.file)
            written[key] += new_files
            totals[key] = e.total_buckets
        if not replaced:
            return None
        messages = [
            CommitMessage(
                partition=p,
                bucket=b,
                total_buckets=totals[(p, b)],
                compact_before=tuple(files),
                compact_after=tuple(written[(p, b)]),
            )
            for (p, b), files in replaced.items()
        ]
        return table.new_commit().commit(messages)
    except BaseException:
        for path in paths:
            table.file_io.delete_quietly(path)
        raise
