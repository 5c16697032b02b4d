"""``merge-engine = partial-update``: per column, the newest non-null value wins.

Sequence groups (``fields.<seq>[,<seq>].sequence-group = <col>,...``) update their columns only
from records whose group sequence is not older than the newest seen; such a record sets every
column of the group (nulls too), and a -U/-D that is not older nulls them. Columns of a group may
carry an aggregate function, applied in group-sequence order.

Vectorized: per sequence group, a dense rank of its sequence columns and a segmented running
maximum find the "winning" records; each column then takes one row per key (``last_where``), or
goes through its aggregator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from stratalake.exceptions import MergeError
from stratalake.merge.aggregation import retract_error
from stratalake.merge.aggregators import FieldAggregator, canonical_name, create_aggregator
from stratalake.merge.context import SEQUENCE_NUMBER, MergeContext, RowKind
from stratalake.merge.field_options import (
    SequenceGroup,
    bool_option,
    explicit_agg_function,
    field_bool,
    ignore_delete,
    sequence_groups,
)
from stratalake.merge.kernels import (
    Groups,
    any_where,
    as_array,
    dense_rank,
    kinds_of,
    last_where,
    null_where,
    retract_mask,
    row_index,
    segment_cummax,
    take_or_null,
    valid_mask,
)

REMOVE_ON_DELETE = "partial-update.remove-record-on-delete"
REMOVE_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"


@dataclass(frozen=True)
class _Group:
    spec: SequenceGroup
    removes_on_delete: bool
    aggregators: tuple[tuple[FieldAggregator, bool], ...]  # (aggregator, ignore-retract)
    plain: tuple[str, ...]  # protected columns without an aggregator


def protected_aggregate_function(ctx: MergeContext, column: str) -> str | None:
    """The aggregate function of a sequence-group column, if any."""
    name = explicit_agg_function(ctx, column)
    return canonical_name(name) if name is not None else None


class PartialUpdateMergeFunction:
    """Partial update with optional sequence groups and per-group-column aggregation."""

    def __init__(self, ctx: MergeContext) -> None:
        self._ctx = ctx
        self._ignore_delete = ignore_delete(ctx)
        self._remove_on_delete = bool_option(ctx, REMOVE_ON_DELETE)
        removing = {
            f.strip() for f in (ctx.options.get(REMOVE_ON_SEQUENCE_GROUP) or "").split(",") if f.strip()
        }
        keys = set(ctx.schema.primary_keys)
        grouped: set[str] = set()
        self._groups: list[_Group] = []
        for spec in sequence_groups(ctx):
            aggs, plain = [], []
            for col in spec.fields:
                function = protected_aggregate_function(ctx, col)
                if function is None:
                    plain.append(col)
                else:
                    aggs.append(
                        (create_aggregator(function, col, ctx), field_bool(ctx, col, "ignore-retract"))
                    )
            grouped.update(spec.fields, spec.sequence)
            self._groups.append(_Group(spec, bool(removing & set(spec.sequence)), tuple(aggs), tuple(plain)))
        self._keys = [c for c in ctx.value_names if c in keys]
        self._free = [c for c in ctx.value_names if c not in keys and c not in grouped]

    def _reject_retractions(self) -> MergeError:
        return MergeError(
            f"table {self._ctx.table_name}: the partial-update merge engine cannot accept -U/-D "
            "records by default. Set 'ignore-delete'='true' to skip them, "
            f"'{REMOVE_ON_DELETE}'='true' to remove the whole row on -D, or declare sequence groups "
            "('fields.<seq-col>.sequence-group'='<cols>') to retract their columns"
        )

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        n = sorted_kv.num_rows
        if n == 0:
            return sorted_kv
        groups = Groups(starts, n)
        kinds = kinds_of(sorted_kv)
        retract = retract_mask(kinds)
        idx = row_index(n)
        if self._ignore_delete:
            active = ~retract
        elif not retract.any() or self._groups:
            active = np.ones(n, dtype=bool)
        elif self._remove_on_delete:
            active = ~retract | (kinds == RowKind.DELETE)  # -U changes nothing here
        else:
            raise self._reject_retractions()

        # Ranks of every group's sequence; rows with an all-null group sequence leave it alone.
        ranks = [self._rank(sorted_kv, g.spec) for g in self._groups]

        # A "reset" row (-D removing the whole record) restarts its key: earlier rows no longer
        # count and its own values become the base (Paimon re-initialises the row from the -D).
        reset = np.zeros(n, dtype=bool)
        if not self._ignore_delete:
            if self._remove_on_delete and not self._groups:
                reset = kinds == RowKind.DELETE
            for g, (rank, nonempty) in zip(self._groups, ranks, strict=True):
                if g.removes_on_delete:
                    winner = self._winners(groups, rank, nonempty & active, np.zeros(n, dtype=bool))
                    reset |= (kinds == RowKind.DELETE) & winner
        last_reset = last_where(reset, groups)
        base_row = last_reset[groups.gid]
        is_base = idx == base_row
        active &= idx >= base_row
        adds = active & ~retract

        keep = any_where(active, groups)
        last_active = last_where(active, groups)
        has_add = any_where(adds & ~is_base, groups)
        kind = np.where(
            has_add & (last_reset != last_active),
            RowKind.INSERT,
            np.where(last_reset >= 0, RowKind.DELETE, RowKind.UPDATE_BEFORE),
        ).astype(np.int8)

        out: dict[str, pa.Array] = {}
        for col in self._keys:
            out[col] = take_or_null(as_array(sorted_kv.column(col)), starts)
        for col in self._free:
            values = as_array(sorted_kv.column(col))
            out[col] = take_or_null(values, last_where((adds & valid_mask(values)) | is_base, groups))
        # A key with only retractions folds to a -U that a later merge applies as one retraction,
        # so its aggregated columns must hold the retracted values themselves, not their negation.
        only_retracts = (kind == RowKind.UPDATE_BEFORE)[groups.gid]
        for g, (rank, nonempty) in zip(self._groups, ranks, strict=True):
            self._merge_group(
                sorted_kv, groups, g, rank, nonempty & active, is_base, retract, only_retracts, out
            )

        columns = [out[c] for c in self._ctx.value_names]
        seq = np.maximum.reduceat(np.asarray(sorted_kv.column(SEQUENCE_NUMBER).to_numpy()), starts)
        columns += [pa.array(seq, pa.int64()), pa.array(kind, pa.int8())]
        result = pa.Table.from_arrays(columns, schema=sorted_kv.schema)
        return result if keep.all() else result.filter(pa.array(keep))

    @staticmethod
    def _rank(kv: pa.Table, spec: SequenceGroup) -> tuple[np.ndarray, np.ndarray]:
        cols = [as_array(kv.column(c)) for c in spec.sequence]
        nonempty = np.zeros(kv.num_rows, dtype=bool)
        for c in cols:
            nonempty |= valid_mask(c)
        return dense_rank(cols), nonempty

    @staticmethod
    def _winners(
        groups: Groups, rank: np.ndarray, participant: np.ndarray, is_base: np.ndarray
    ) -> np.ndarray:
        """Rows not older than every earlier participant of their key (ties: newer wins)."""
        r = np.where(participant, rank, -1)
        r[is_base] = np.where(participant[is_base], rank[is_base], -1)
        running = segment_cummax(r, groups)
        winners: np.ndarray = (participant | is_base) & (r == running)
        return winners

    def _merge_group(
        self,
        kv: pa.Table,
        groups: Groups,
        g: _Group,
        rank: np.ndarray,
        participant: np.ndarray,
        is_base: np.ndarray,
        retract: np.ndarray,
        only_retracts: np.ndarray,
        out: dict[str, pa.Array],
    ) -> None:
        winner = self._winners(groups, rank, participant, is_base)
        last_win = last_where(winner, groups)
        has_win = last_win >= 0
        retracted = np.zeros(groups.count, dtype=bool)
        retracted[has_win] = retract[last_win[has_win]] & ~is_base[last_win[has_win]]
        for col in g.spec.sequence:
            out[col] = take_or_null(as_array(kv.column(col)), last_win)
        for col in g.plain:
            out[col] = null_where(take_or_null(as_array(kv.column(col)), last_win), retracted)
        if not g.aggregators:
            return
        # Aggregate in group-sequence order (the base first), as if records came in that order.
        order_rank = np.where(is_base, -2, np.where(participant, rank, -1))
        perm = np.lexsort((row_index(groups.n_rows), order_rank, groups.gid))
        use = (participant | is_base)[perm]
        retract_p = (retract & ~is_base)[perm]
        as_add = only_retracts[perm]
        take = pa.array(perm)
        for agg, ignore_retract in g.aggregators:
            col_use = use & ~retract_p if ignore_retract else use
            if not ignore_retract and not agg.retractable and (retract_p & use).any():
                raise retract_error(self._ctx, agg.column, agg.name)
            values = as_array(kv.column(agg.column)).take(take)
            out[agg.column] = agg.aggregate(values, groups, col_use, retract_p & col_use & ~as_add)
