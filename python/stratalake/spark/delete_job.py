"""DELETE, UPDATE and MERGE INTO work on data files, run as distributed Spark jobs.

Two kinds of statement rewrite data files:

- a DELETE the table evaluates itself (``DELETE FROM t WHERE <column-vs-literal comparisons>`` on
  an append table, or on a primary-key table whose rows a ``-D`` record cannot remove,
  ``table/row_delete.py``), which Spark hands to the shim's ``deleteWhere`` whole: its units
  (``append/dml.py`` ``DeleteUnit``: a bucket's candidate files, packed by ``source.split.*``
  where each file is rewritten on its own) find their matching rows and rewrite them
  (:func:`delete_where`);
- Spark's own row-level plan (other conditions, UPDATE, MERGE INTO), whose tasks find the rows and
  send their positions to the driver: where the touched files are copy-on-write, units rewrite
  them (:func:`row_level_commit`). Deletion vectors are metadata, written where the statement
  commits.

Where the work runs: a statement whose files fit one split (``source.split.target-size``, the
work of one Spark task) runs where it is committed, in the driver's bridge process, saving a
job's start-up; a larger one runs as a job, one Spark task per unit:

1. the bridge stages each unit (with its condition or its positions) as a file under the
   table's ``.stratalake-staging/<uuid>/`` and answers with the job's data source options and
   that directory as ``state``;
2. the shim reads the ``stratalake`` source with those options (:class:`StagedUnitsReader`): each
   task runs one staged unit and returns a pickled ``DeleteResult`` (nothing is visible yet);
3. the shim calls the bridge again with the results and the state, which commit as one
   snapshot, failing unchanged on a conflict; or, when the job failed, with ``abort``.

Each task attempt records, before it writes, the uuid its files' names carry; when the job ends
(committed, refused, unknown or failed), the files of every attempt whose result is not being
committed are deleted, attempts still running included (``spark/job_attempts.py``).
"""

from __future__ import annotations

import base64
import logging
import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from stratalake.append.dml import (
    DeleteResult,
    DeleteUnit,
    RowDeletes,
    commit_results,
    position_units,
    run_units,
)
from stratalake.exceptions import UnsupportedError
from stratalake.expressions import Predicate, conjunction
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.operation.commit import CommitMessage, delete_uncommitted
from stratalake.spark import job_attempts
from stratalake.spark.dml import parse_predicates
from stratalake.spark.source import load_table
from stratalake.spark.worker_memory import use_worker_allocator
from stratalake.table.row_delete import (
    commit_positions,
    delete_units,
    rewrites_in_tasks,
    run_delete_unit,
    run_rewrite_unit,
)

if TYPE_CHECKING:
    from stratalake.table.table import Table

_LOG = logging.getLogger(__name__)

JOB = "stratalake.job"
UNITS = "units"  # the job's kind: run the staged units
STAGING = job_attempts.STAGING_OPTION  # the job's staging directory
_UNIT = "unit-"

# A staged unit: ("find", unit, the DELETE's V2 predicates) or ("rewrite", unit, positions by file).
Staged = tuple[str, DeleteUnit, Any]


# ---- where the work runs ---------------------------------------------------------------------------


def fits_one_split(table: Table, units: Sequence[DeleteUnit]) -> bool:
    """Whether the units' files add up to at most one split (``source.split.target-size``)."""
    target = table.core_options.get_int("source.split.target-size") or 128 * 1024 * 1024
    return sum(e.file.file_size for u in units for e in u.entries) <= target


def stage(table: Table, staged: Sequence[Staged], source_options: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """Write the units into a new staging directory: (the job's options, the directory)."""
    staging = job_attempts.new_staging(table)
    try:
        for i, item in enumerate(staged):
            table.file_io.write_bytes(f"{staging}/{_UNIT}{i:06d}", pickle.dumps(item))
    except BaseException:
        finish(table, staging, [])
        raise
    options = dict(source_options)
    options.update({JOB: UNITS, STAGING: staging})
    return options, staging


def finish(table: Table, staging: str, kept: Sequence[DeleteResult]) -> None:
    """Delete the files of every task attempt other than ``kept``'s, then the staging directory
    (:func:`stratalake.spark.job_attempts.finish`)."""
    job_attempts.finish(table, staging, {r.attempt for r in kept if r.attempt is not None})


def _after_job(
    table: Table, state: str, job_results: Sequence[str] | None, abort: bool, inserts: Sequence[CommitMessage]
) -> int | None:
    """The second call: commit the job's results (base64 pickles) with the statement's
    ``inserts`` as one snapshot, or, when the job failed (``abort``: nothing was committed),
    delete what the statement wrote; then :func:`finish` the staging directory."""
    if abort:
        finish(table, state, [])
        delete_uncommitted(table, inserts)
        return None
    results: list[DeleteResult] = [pickle.loads(base64.b64decode(r)) for r in job_results or []]
    try:
        return commit_results(table, results, inserts=inserts)
    finally:
        finish(table, state, results)


def _run_staged(table: Table, item: Staged, namer: FileNamer | None = None) -> DeleteResult | None:
    kind, unit, payload = item
    if kind == "find":
        return run_delete_unit(table, unit, condition(table, payload), namer)
    return run_rewrite_unit(table, unit, payload, namer)


class StagedUnitsReader(DataSourceReader):
    """Each Spark task runs one staged unit and returns what it wrote (a pickled result)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def partitions(self) -> list[InputPartition]:
        table = load_table(self.options)
        staging = self.options[STAGING]
        names = [n for n in table.file_io.list_names(staging) if n.startswith(_UNIT)]
        return [InputPartition(f"{staging}/{n}") for n in names]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # no unit: Spark still runs one empty task
            return
        use_worker_allocator()
        table = load_table(self.options)
        staging, unit = self.options[STAGING], str(partition.value)
        item: Staged = pickle.loads(table.file_io.read_bytes(unit))
        if job_attempts.job_ended(table, staging, unit):
            raise job_attempts.ended_error(table, staging)
        # Recorded before anything is written (see the module docstring).
        namer = FileNamer("data")
        entry = item[1].entries[0]
        codec = table.partition_codec
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(entry.partition)), entry.bucket)
        record = job_attempts.record_attempt(table, staging, namer.uuid, directory)
        try:
            result = _run_staged(table, item, namer)
        except BaseException as e:
            job_attempts.clean_up_if_ended(table, staging, unit, directory, record, namer.uuid, e)
            raise
        job_attempts.clean_up_if_ended(table, staging, unit, directory, record, namer.uuid, None)
        if result is not None:
            yield pa.RecordBatch.from_pydict({"result": pa.array([pickle.dumps(result)], pa.binary())})


# ---- a DELETE the table evaluates ------------------------------------------------------------------


def condition(table: Table, predicates: Sequence[Any]) -> Predicate:
    """The DELETE's condition from the V2 predicates the shim sent."""
    conjuncts = parse_predicates(predicates)
    predicate = conjunction(list(conjuncts)) if conjuncts else None
    if predicate is None:  # the bridge sends no job for these
        raise UnsupportedError(f"table {table.identifier}: this DELETE condition cannot be evaluated")
    return predicate


def delete_where(
    table: Table,
    predicates: Sequence[Any],
    job_results: Sequence[str] | None,
    state: str | None,
    abort: bool,
    source_options: Mapping[str, str],
) -> tuple[int | None, dict[str, str] | None, str | None]:
    """Run a DELETE the table evaluates: (the new snapshot's id or None, None, None); or, when
    its files exceed one split, (None, the job's options, its staging directory), after which
    the shim calls again with the job's results and that state, or with ``abort``."""
    if state is not None:
        return _after_job(table, state, job_results, abort, []), None, None
    predicate = condition(table, predicates)
    units = delete_units(table, predicate)
    if fits_one_split(table, units):
        results = run_units(table, units, lambda u: run_delete_unit(table, u, predicate))
        return commit_results(table, results), None, None
    options, staging = stage(table, [("find", u, list(predicates)) for u in units], source_options)
    return None, options, staging


# ---- Spark's row-level plan: the rewrites of copy-on-write files ---------------------------------


def _statement(messages: Sequence[str]) -> tuple[RowDeletes, list[CommitMessage]]:
    """The write tasks' messages (base64 pickles of ``StrataLakeCommitMessage``): the positions
    they found and the files they inserted."""
    deletes = RowDeletes()
    inserts: list[CommitMessage] = []
    for raw in messages:
        m = pickle.loads(base64.b64decode(raw))
        inserts.extend(m.messages)
        if m.deletes is not None:
            deletes.merge(m.deletes)
    return deletes, inserts


def row_level_commit(
    table: Table,
    messages: Sequence[str],
    job_results: Sequence[str] | None,
    state: str | None,
    abort: bool,
    source_options: Mapping[str, str],
) -> tuple[int | None, dict[str, str] | None, str | None]:
    """Commit a row-level statement from its write tasks' ``messages``: (the new snapshot's id
    or None, None, None); or, for copy-on-write files exceeding one split, (None, the options of
    the job rewriting them, its staging directory), after which the shim calls again with the
    job's results and that state, or with ``abort`` (nothing was committed: what the statement
    wrote is deleted)."""
    deletes, inserts = _statement(messages)
    if state is not None:
        return _after_job(table, state, job_results, abort, inserts), None, None
    if not rewrites_in_tasks(table, deletes):
        return commit_positions(table, deletes, inserts), None, None
    try:
        units = position_units(table, deletes)
        if fits_one_split(table, [u for u, _ in units]):
            positions = dict((id(u), p) for u, p in units)
            results = run_units(table, [u for u, _ in units], lambda u: run_rewrite_unit(table, u, positions[id(u)]))
        else:
            options, staging = stage(table, [("rewrite", u, p) for u, p in units], source_options)
            return None, options, staging
    except BaseException:
        delete_uncommitted(table, inserts)
        raise
    return commit_results(table, results, inserts=inserts), None, None

