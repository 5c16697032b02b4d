"""Row-level DML rules and the deletes that need no row-level rewrite.

Spark plans ``DELETE`` / ``UPDATE`` / ``MERGE INTO`` itself; the JVM shim only asks here:

- which statements a table accepts (:func:`row_level_rules`, sent with every table description);
- whether a ``DELETE`` condition can run without reading rows (:func:`delete_plan`), and runs it
  (:func:`delete_where`): ``DELETE FROM t`` truncates, a condition on partition columns only drops
  the matching partitions (an OVERWRITE commit, no data file is rewritten; unless
  ``delete.force-produce-changelog`` asks for change records), and equalities on the
  whole primary key write ``-D`` records for exactly those keys without scanning the table; on
  append tables any such condition deletes the matching rows' positions (deletion vectors, or
  copy-on-write of their files: ``append/dml.py``) without Spark's row-level plan, and so it does
  on primary-key tables that cannot take a ``-D`` record (first-row; partial-update and
  aggregation without their remove options: ``table/row_delete.py``, as Paimon's DELETE); other
  conditions on those tables run in Spark's row-level plan with rows addressed by data file and
  position (:func:`row_level_rules`' ``delete_by_position``), as on append tables;
- whether a ``DELETE ... WHERE (k, ...) IN (SELECT ...)`` may skip Spark's scan of the table
  (:func:`delete_key_columns`): the listed keys reach the writer, which keeps the live ones
  (``table/key_delete.py``);
- which stored values a ``-D`` record must carry (:func:`delete_filler`): on a table with
  ``sequence.field`` a retraction is ordered by its sequence-field values like any record, so a
  key-only ``-D`` (null sequence values sort oldest) would lose to the row it deletes. As Paimon,
  whose DELETE writes the matching stored rows with the ``-D`` kind, such records take the stored
  row's values (looked up by key), so they tie with the row on the sequence fields and win on the
  later system sequence number. Tables with NOT NULL value columns need them too: a key-only
  record could not be written.

Spark gives the condition as V2 predicates, which the shim sends as JSON:
``{"name": "=", "children": [{"ref": "dt"}, {"literal": "20230503", "type": "string"}]}``, literal
values being Catalyst's internal values printed (days for dates, microseconds for timestamps).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.append.dml import delete_rows
from stratalake.exceptions import UnsupportedError
from stratalake.expressions import Compare, In, Predicate, conjunction, split_conjuncts
from stratalake.expressions import field as col
from stratalake.options import MergeEngine
from stratalake.read.fallback import fallback_branch
from stratalake.table.row_delete import delete_stored_rows, deletes_by_rewrite

if TYPE_CHECKING:
    from stratalake.table.table import Table

ROW_KIND_COLUMN = "_row_kind"  # the change-record column the shim's rewrite adds for the writer
_MAX_POINT_KEYS = 10_000


# ---- which statements a table accepts ---------------------------------------------------------


def update_error(table: Table) -> str | None:
    """Why UPDATE / MERGE INTO cannot run on ``table``, or None."""
    schema = table.schema()
    if not schema.primary_keys:
        return None  # append tables: deleted positions plus new rows (append/dml.py)
    engine = table.core_options.merge_engine
    if engine not in (MergeEngine.DEDUPLICATE, MergeEngine.PARTIAL_UPDATE):
        return (
            f"table {table.identifier}: UPDATE and MERGE INTO are supported on 'deduplicate' and "
            f"'partial-update' tables, not with 'merge-engine'='{engine.value}'"
        )
    return None


def delete_error(table: Table) -> str | None:
    """Why a row-level DELETE cannot run on ``table``, or None (partition drops always can)."""
    opts = table.core_options
    if not table.schema().primary_keys:
        return None  # append tables: deleted positions plus new rows (append/dml.py)
    if deletes_by_rewrite(table):
        # Column-vs-literal conditions run in delete_plan ('rows'); others in Spark's row-level
        # plan, rows addressed by data file and position (row_delete.py).
        return None
    if opts.ignore_delete:
        return (
            f"table {table.identifier} ignores deletes ('ignore-delete'='true'), so DELETE would change "
            "nothing; delete whole partitions instead or unset the option"
        )
    # Left: deduplicate, and partial-update / aggregation tables whose -D records remove rows
    # ('*.remove-record-on-delete', or 'partial-update.remove-record-on-sequence-group': a -D
    # carrying the stored row's sequence values retracts its groups and so removes the row, as
    # Paimon's DELETE writes it).
    return None


def delete_key_columns(table: Table) -> list[str] | None:
    """The key columns ``DELETE ... WHERE (k, ...) IN (SELECT ...)`` must list for ``table`` to
    check the listed keys itself (``table/key_delete.py``) instead of Spark's row-level plan
    scanning every stored key; None when it cannot.

    The list's keys become key-only ``-D`` records of the live keys, the records Spark's plan
    writes for this table: so the table has fixed buckets (a listed key's bucket follows from the
    key), takes a key-only ``-D`` (no stored values needed, not deleted by position), and reads
    no fallback branch. The list names at least the trimmed primary key and the bucket key; a
    partition column it does not name matches every partition.
    """
    schema = table.schema()
    if not schema.primary_keys or table.unsupported_features or table.core_options.bucket <= 0:
        return None
    if delete_error(table) is not None or deletes_by_rewrite(table) or needs_stored_values(table):
        return None
    if fallback_branch(table) is not None or not set(schema.bucket_keys) <= set(schema.primary_keys):
        return None
    trimmed = list(schema.trimmed_primary_keys)
    return trimmed + [k for k in schema.bucket_keys if k not in trimmed]


def row_level_rules(table: Table) -> dict[str, str | bool | list[str] | None]:
    """Which row-level statements ``table`` refuses (null: none), whether Spark's row-level
    DELETE addresses its rows by data file and position (append tables always do) instead of
    by primary key, and :func:`delete_key_columns`."""
    if table.unsupported_features:  # DESCRIBE still works; every statement says why not
        try:
            table.check_supported("write")
        except UnsupportedError as e:
            return {"update_error": str(e), "delete_error": str(e), "delete_by_position": False}
    return {
        "update_error": update_error(table),
        "delete_error": delete_error(table),
        "delete_by_position": deletes_by_rewrite(table),
        "delete_key_columns": delete_key_columns(table),
    }


# ---- V2 predicates from the shim ----------------------------------------------------------------


def literal_value(value: str | None, type_name: str) -> Any:
    """A Catalyst internal value, printed, as the Python value the core uses."""
    if value is None:
        return None
    if type_name in ("byte", "short", "integer", "long"):
        return int(value)
    if type_name == "boolean":
        return value == "true"
    if type_name == "date":  # days since the epoch
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if type_name in ("timestamp", "timestamp_ntz"):  # microseconds since the epoch
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
    if type_name.startswith("decimal"):
        return Decimal(value)
    if type_name in ("float", "double"):
        return float(value)
    return value


class _Untranslatable(Exception):
    pass


def _operand(node: Mapping[str, Any]) -> tuple[str, Any]:
    if "ref" in node:
        return "ref", node["ref"]
    if "type" in node:
        return "lit", literal_value(node.get("literal"), node["type"])
    raise _Untranslatable


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}


def _predicate(node: Mapping[str, Any]) -> Predicate | None:
    """None stands for ALWAYS_TRUE."""
    name = str(node.get("name", "")).upper()
    children = list(node.get("children") or [])
    if name == "ALWAYS_TRUE":
        return None
    if name in ("AND", "OR"):
        parts = [_predicate(c) for c in children]
        if name == "AND":
            return conjunction([p for p in parts if p is not None])
        if any(p is None for p in parts):
            return None
        left, right = parts
        assert left is not None and right is not None
        return left | right
    if name == "NOT":
        inner = _predicate(children[0])
        if inner is None:
            raise _Untranslatable
        return ~inner
    if name in ("IS_NULL", "IS_NOT_NULL"):
        kind, column = _operand(children[0])
        if kind != "ref":
            raise _Untranslatable
        return col(column).is_null() if name == "IS_NULL" else col(column).is_not_null()
    if name == "IN":
        kind, column = _operand(children[0])
        values = [_operand(c) for c in children[1:]]
        if kind != "ref" or any(k != "lit" for k, _ in values):
            raise _Untranslatable
        return col(column).isin([v for _, v in values])
    if name in ("=", "<=>", "<>", "<", "<=", ">", ">="):
        (lk, lv), (rk, rv) = _operand(children[0]), _operand(children[1])
        op = name
        if lk == "lit" and rk == "ref":
            (lk, lv), (rk, rv), op = (rk, rv), (lk, lv), _FLIPPED.get(op, op)
        if lk != "ref" or rk != "lit":
            raise _Untranslatable
        c = col(lv)
        if op == "<=>":
            return c.is_null() if rv is None else c == rv
        if rv is None:  # "x = NULL" is never true
            raise _Untranslatable
        return Compare(str(lv), "!=" if op == "<>" else op, rv)
    raise _Untranslatable


def parse_predicates(nodes: Sequence[Mapping[str, Any]]) -> list[Predicate] | None:
    """The conjuncts of a DELETE condition (ALWAYS_TRUE dropped), or None if not translatable."""
    try:
        parts = [_predicate(n) for n in nodes]
    except (_Untranslatable, KeyError, IndexError, ValueError, TypeError):
        return None
    return [c for p in parts if p is not None for c in split_conjuncts(p)]


# ---- deletes without a row-level rewrite ------------------------------------------------------


def _point_keys(table: Table, conjuncts: Sequence[Predicate]) -> list[tuple[Any, ...]] | None:
    """Every primary-key tuple the conjuncts pin down exactly, or None."""
    keys = list(table.schema().primary_keys)
    values: dict[str, tuple[Any, ...]] = {}
    for p in conjuncts:
        if isinstance(p, Compare) and p.op in ("=", "==") and p.column in keys and p.column not in values:
            values[p.column] = (p.value,)
        elif isinstance(p, In) and p.column in keys and p.column not in values:
            values[p.column] = tuple(p.values)
        else:
            return None
    if set(values) != set(keys):
        return None
    combos = 1
    for k in keys:
        combos *= len(values[k])
    if combos > _MAX_POINT_KEYS:
        return None
    return list(itertools.product(*(values[k] for k in keys)))


def delete_plan(table: Table, conjuncts: Sequence[Predicate] | None) -> str | None:
    """How ``DELETE WHERE conjuncts`` runs without Spark's row-level plan: 'truncate' |
    'partitions' | 'keys' (no row is read), 'rewrite' (append tables) or 'rows' (stored rows of
    :func:`deletes_by_rewrite` tables), or None when it needs Spark's row-level plan."""
    if conjuncts is None:
        return None
    if not conjuncts:
        return "truncate"
    partition_keys = set(table.schema().partition_keys)
    # 'delete.force-produce-changelog': dropping partitions commits no change records, so (as
    # Paimon) a partition-only condition deletes row by row and changelog readers see '-D' rows.
    # A DELETE without condition still truncates, as Paimon's does.
    force_changelog = table.core_options.get_bool("delete.force-produce-changelog")
    if partition_keys and not force_changelog and all(p.columns() <= partition_keys for p in conjuncts):
        return "partitions"
    if fallback_branch(table) is not None and table.schema().primary_keys:
        # Paimon deletes the rows its (fallback) read finds by writing their -D records to this
        # branch; deleting keys unread could create a partition here that hides the fallback's.
        # The row-level plan refuses it by name (spark/planning.py).
        return None
    if deletes_by_rewrite(table):
        # Stored rows are removed (a -D record would not delete them), whatever the condition.
        return None if table.unsupported_features else "rows"
    if delete_error(table) is None and _point_keys(table, conjuncts) is not None:
        return "keys"
    if not table.schema().primary_keys and not table.unsupported_features:
        return "rewrite"  # append table: delete the matching rows by position (append_dml)
    return None


def delete_where(table: Table, conjuncts: Sequence[Predicate]) -> int | None:
    """Run a DELETE that :func:`delete_plan` accepted; returns the new snapshot id, if any."""
    plan = delete_plan(table, conjuncts)
    if plan == "truncate":
        snap = table.latest_snapshot()
        if snap is None or not table.live_entries(snap):
            return None
        return table.new_commit().commit([], overwrite=True)
    if plan == "partitions":
        return _drop_partitions(table, conjuncts)
    if plan == "keys":
        keys = _point_keys(table, conjuncts)
        assert keys is not None
        return _delete_keys(table, keys)
    if plan == "rewrite":
        predicate = conjunction(list(conjuncts))
        assert predicate is not None
        return delete_rows(table, predicate)
    if plan == "rows":
        predicate = conjunction(list(conjuncts))
        assert predicate is not None
        return delete_stored_rows(table, predicate)
    raise ValueError(f"table {table.identifier}: this DELETE needs a row-level plan")


def _drop_partitions(table: Table, conjuncts: Sequence[Predicate]) -> int | None:
    snap = table.latest_snapshot()
    if snap is None:
        return None
    codec = table.partition_codec
    predicate = conjunction(list(conjuncts))
    assert predicate is not None
    doomed: dict[bytes, dict[str, Any]] = {}
    for e in table.live_entries(snap):
        if e.partition not in doomed:
            values = codec.to_dict(e.partition)
            if predicate.eval_values(values) is True:
                doomed[e.partition] = values
    if not doomed:
        return None
    # Metadata only: DELETE entries for the partitions' files, no data file is read or written.
    return table.new_commit().commit([], overwrite=True, overwrite_partitions=list(doomed.values()))


def _delete_keys(table: Table, keys: Sequence[tuple[Any, ...]]) -> int | None:
    schema = table.schema()
    key_names = list(schema.primary_keys)
    arrow_schema = table.arrow_schema()
    key_table = pa.table(
        {
            k: pa.array([key[i] for key in keys]).cast(arrow_schema.field(k).type)
            for i, k in enumerate(key_names)
        }
    )
    if needs_stored_values(table):
        # A lookup by key (partition, bucket and key-statistics pruning), not a table scan.
        stored = stored_rows(table, key_table)
        if stored.num_rows == 0:
            return None
        records = stored.append_column(ROW_KIND_COLUMN, pa.array(["-D"] * stored.num_rows))
        return table.write(records, row_kind=ROW_KIND_COLUMN)
    return table.write(key_only_deletes(table, key_table, ROW_KIND_COLUMN), row_kind=ROW_KIND_COLUMN)


def key_only_deletes(table: Table, keys: pa.Table, row_kind: str) -> pa.Table:
    """The ``-D`` change records of ``keys`` (the primary-key columns, in the table's types): the
    other columns null, the kind in column ``row_kind``."""
    n = keys.num_rows
    columns = {
        f.name: keys.column(f.name) if f.name in keys.column_names else pa.nulls(n, f.type)
        for f in table.arrow_schema()
    }
    columns[row_kind] = pa.repeat(pa.scalar("-D"), n)
    return pa.table(columns)


# ---- retractions carrying the stored row ------------------------------------------------------


def needs_stored_values(table: Table) -> bool:
    """Whether a ``-D`` record of ``table`` must carry the stored row's values: to take effect
    (``sequence.field``), or to be written at all (a NOT NULL value column, which a key-only
    record would leave null; Paimon's DELETE writes the stored row too). A partial-update table's
    sequence groups take a -D by their sequence fields, so it carries the stored ones."""
    schema = table.schema()
    if not schema.primary_keys:
        return False
    sequence_groups = any(k.endswith(".sequence-group") for k in schema.options)
    return bool(table.core_options.sequence_fields) or sequence_groups or _has_not_null_values(table)


def _has_not_null_values(table: Table) -> bool:
    schema = table.schema()
    keys = set(schema.primary_keys)
    return any(not f.type.nullable for f in schema.fields if f.name not in keys)


def stored_rows(table: Table, keys: pa.Table) -> pa.Table:
    """The live rows of ``table`` (latest snapshot) whose primary key is one of ``keys``' rows.

    ``keys`` holds the primary-key columns. The read is filtered by the keys' values, which prunes
    partitions, buckets and files by key statistics; the exact key match is a join afterwards.
    """
    key_names = list(table.schema().primary_keys)
    arrow_schema = table.arrow_schema()
    if keys.num_rows == 0:
        return arrow_schema.empty_table()
    keys = pa.table({k: keys.column(k).cast(arrow_schema.field(k).type) for k in key_names})
    predicate = conjunction([col(k).isin(pc.unique(keys.column(k)).to_pylist()) for k in key_names])
    latest = table.latest_snapshot()
    if latest is None:
        return arrow_schema.empty_table()
    # The latest snapshot by id: a stored 'scan.snapshot-id' must not redirect a row-level command.
    stored = table.read(filter=predicate, snapshot_id=latest.id)
    if stored.num_rows == 0 or len(key_names) == 1:
        return stored  # one key column: the filter was exact
    wanted = keys.group_by(key_names).aggregate([])  # distinct keys: the join never duplicates rows
    position = "__stratalake_position"
    numbered = stored.append_column(position, pa.array(np.arange(stored.num_rows, dtype=np.int64)))
    matched = numbered.select([*key_names, position]).join(wanted, keys=key_names, join_type="inner")
    indices = np.sort(matched.column(position).to_numpy())
    return stored.take(pa.array(indices, type=pa.int64()))


def fill_deletes(table: Table, data: pa.Table | pa.RecordBatch, row_kind: str) -> pa.Table:
    """``data`` (change records, kinds in column ``row_kind``) with every ``-D`` record's columns
    replaced by the stored row of its key. A ``-D`` whose key has no live row (deleted meanwhile)
    deletes nothing: it is left as it is, or dropped where it could not be written (NOT NULL
    value columns)."""
    records = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    deletes = np.flatnonzero(
        pc.fill_null(pc.equal(records.column(row_kind), "-D"), False).to_numpy(zero_copy_only=False)
    )
    if len(deletes) == 0:
        return records
    key_names = list(table.schema().primary_keys)
    keys = pa.table({k: records.column(k).take(pa.array(deletes)) for k in key_names})
    stored = stored_rows(table, keys)
    drop_missing = _has_not_null_values(table)
    if stored.num_rows == 0:
        return records.filter(pc.not_equal(records.column(row_kind), "-D")) if drop_missing else records
    arrow_schema = table.arrow_schema()
    keys = pa.table({k: keys.column(k).cast(arrow_schema.field(k).type) for k in key_names})
    keys = keys.append_column("__stratalake_delete", pa.array(np.arange(len(deletes), dtype=np.int64)))
    numbered = stored.select(key_names).append_column(
        "__stratalake_stored", pa.array(np.arange(stored.num_rows, dtype=np.int64))
    )
    matched = keys.join(numbered, keys=key_names, join_type="inner")
    rows = deletes[matched.column("__stratalake_delete").to_numpy()]
    sources = matched.column("__stratalake_stored").to_numpy()
    # Row i takes its own value, or stored row j placed after the records' n rows.
    take = np.arange(records.num_rows, dtype=np.int64)
    take[rows] = records.num_rows + sources
    indices = pa.array(take)
    columns = []
    for name in records.column_names:
        column = records.column(name)
        if name == row_kind or name in key_names or name not in stored.column_names:
            columns.append(column)
            continue
        both = pa.chunked_array([*column.chunks, *stored.column(name).cast(column.type).chunks], column.type)
        columns.append(both.take(indices))
    filled = pa.Table.from_arrays(columns, schema=records.schema)
    if drop_missing and len(rows) < len(deletes):
        keep = np.ones(records.num_rows, dtype=bool)
        keep[np.setdiff1d(deletes, rows)] = False
        filled = filled.filter(pa.array(keep))
    return filled


def delete_filler(
    table: Table, row_kind: str | None
) -> Callable[[pa.Table | pa.RecordBatch], pa.Table] | None:
    """What a writer of row-level DML change records applies to each batch before writing it
    (None: write the records as they are). Spark's row-level plan sends a deleted row's key only."""
    if row_kind is None or not needs_stored_values(table):
        return None
    return lambda data: fill_deletes(table, data, row_kind)
