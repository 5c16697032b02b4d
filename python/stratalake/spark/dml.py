"""Row-level DML rules and the deletes that need no row-level rewrite.

Spark plans ``DELETE`` / ``UPDATE`` / ``MERGE INTO`` itself; the JVM shim only asks here:

- which statements a table accepts (:func:`row_level_rules`, sent with every table description);
- whether a ``DELETE`` condition can run without reading rows (:func:`delete_plan`), and runs it
  (:func:`delete_where`): ``DELETE FROM t`` truncates, a condition on partition columns only drops
  the matching partitions (an OVERWRITE commit, no data file is rewritten), and equalities on the
  whole primary key write ``-D`` records for exactly those keys without scanning the table.

Spark gives the condition as V2 predicates, which the shim sends as JSON:
``{"name": "=", "children": [{"ref": "dt"}, {"literal": "20230503", "type": "string"}]}``, literal
values being Catalyst's internal values printed (days for dates, microseconds for timestamps).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.expressions import Compare, In, Predicate, conjunction, split_conjuncts
from stratalake.expressions import field as col
from stratalake.options import MergeEngine
from stratalake.types import to_arrow

if TYPE_CHECKING:
    from stratalake.table.table import Table

ROW_KIND_COLUMN = "_row_kind"  # the change-record column the shim's rewrite adds for the writer
_MAX_POINT_KEYS = 10_000


# ---- which statements a table accepts ---------------------------------------------------------


def update_error(table: Table) -> str | None:
    """Why UPDATE / MERGE INTO cannot run on ``table``, or None."""
    schema = table.schema()
    if not schema.primary_keys:
        return f"table {table.identifier} has no primary key; UPDATE and MERGE INTO need one"
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
        return (
            f"table {table.identifier} has no primary key; DELETE needs one (or a partition-only condition)"
        )
    if opts.ignore_delete:
        return (
            f"table {table.identifier} ignores deletes ('ignore-delete'='true'), so DELETE would change "
            "nothing; delete whole partitions instead or unset the option"
        )
    if opts.sequence_fields:
        # A delete knows only the key; a -D without the sequence value loses to the stored row.
        return (
            f"table {table.identifier}: DELETE is not supported on tables with 'sequence.field' "
            f"({', '.join(opts.sequence_fields)}); delete whole partitions, or write -D records "
            "carrying the sequence value with the Python API"
        )
    engine = opts.merge_engine
    if engine is MergeEngine.FIRST_ROW:
        return f"table {table.identifier}: the first-row merge engine cannot delete rows; delete whole partitions"
    if engine is MergeEngine.PARTIAL_UPDATE and not opts.get_bool("partial-update.remove-record-on-delete"):
        return (
            f"table {table.identifier}: DELETE on a partial-update table needs "
            "'partial-update.remove-record-on-delete'='true'"
        )
    if engine is MergeEngine.AGGREGATE and not opts.get_bool("aggregation.remove-record-on-delete"):
        return (
            f"table {table.identifier}: DELETE on an aggregation table needs "
            "'aggregation.remove-record-on-delete'='true'"
        )
    return None


def row_level_rules(table: Table) -> dict[str, str | None]:
    return {"update_error": update_error(table), "delete_error": delete_error(table)}


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
    """How ``DELETE WHERE conjuncts`` runs without reading rows: 'truncate' | 'partitions' |
    'keys', or None when it needs Spark's row-level plan."""
    if conjuncts is None:
        return None
    if not conjuncts:
        return "truncate"
    partition_keys = set(table.schema().partition_keys)
    if partition_keys and all(p.columns() <= partition_keys for p in conjuncts):
        return "partitions"
    if delete_error(table) is None and _point_keys(table, conjuncts) is not None:
        return "keys"
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
    columns: dict[str, pa.Array] = {}
    for f in schema.fields:
        arrow_type = to_arrow(f.type)
        if f.name in key_names:
            i = key_names.index(f.name)
            columns[f.name] = pa.array([k[i] for k in keys]).cast(arrow_type)
        else:
            columns[f.name] = pa.nulls(len(keys), arrow_type)
    columns[ROW_KIND_COLUMN] = pa.array(["-D"] * len(keys))
    return table.write(pa.table(columns), row_kind=ROW_KIND_COLUMN)
