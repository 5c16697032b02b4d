"""A DELETE the table evaluates itself, run as a distributed Spark job.

``DELETE FROM t WHERE <column-vs-literal comparisons>`` on an append table, or on a primary-key
table whose rows a ``-D`` record cannot remove (``table/row_delete.py``), needs no Spark
row-level plan: the table prunes its files by partition values and statistics, reads only the
condition's columns and rewrites what matched. Spark hands such a DELETE to the shim's
``deleteWhere`` on the driver; the work itself runs here, in Spark tasks:

1. the bridge answers ``deleteWhere`` with this job's data source options (:func:`job_options`);
2. the shim reads the ``stratalake`` source with them: :class:`DeleteJobReader` plans the
   DELETE's units on the driver (``append/dml.py`` ``DeleteUnit``: a bucket's candidate files,
   packed by ``source.split.*`` where files are rewritten one by one), and each Spark task finds
   its unit's matching rows and writes the new files or deletion vectors, returning a pickled
   ``DeleteResult`` (nothing is visible yet);
3. the shim calls the bridge again with the results, which commit as one snapshot
   (:func:`commit`), failing unchanged on a conflict; or, when the job failed, with ``abort``.

Spark's own row-level plan (conditions the table cannot evaluate, UPDATE, MERGE INTO) finds the
rows in its tasks and sends their positions to the driver; where the touched files must be
rewritten (copy-on-write), that is a second job of the same shape (:func:`row_level_commit`): the
driver groups the positions into units, stages each unit's positions as a file under the table's
``.stratalake-staging/<statement>/`` (a task reads its own), the tasks rewrite, and the driver
commits the statement's inserted files and the rewrites as one snapshot, then drops the staging
directory. Deletion vectors are metadata: they are written where the statement commits.

Every job has a staging directory under the table (``.stratalake-staging/<uuid>``, named in the
answer's ``state``, which the shim sends back). Before writing, each task attempt records there
the uuid its data files' names carry and their directory. A retried or speculative attempt's
files never reach the driver, and none of a failed job's do: :func:`finish` deletes the files of
every attempt whose result is not being committed, which no commit can reference, whatever its
outcome, then the directory. (A copy-on-write bucket that still holds deletion vectors writes new
index files too; a lost attempt's are left to ``remove_orphan_files``.)
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from stratalake.append.dml import DeleteResult, DeleteUnit, RowDeletes, commit_results, position_units
from stratalake.exceptions import UnsupportedError
from stratalake.expressions import Predicate, conjunction
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.operation.commit import CommitMessage, delete_uncommitted
from stratalake.spark.dml import parse_predicates
from stratalake.spark.source import load_table
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
DELETE = "delete"
REWRITE = "rewrite"
PREDICATES = "stratalake.job.predicates"  # the DELETE's V2 predicates (JSON, as the shim sent them)
STAGING = "stratalake.job.staging"  # the job's staging directory
STAGING_DIR = ".stratalake-staging"
_ATTEMPT = "attempt-"


# ---- staging: which task attempts wrote what ------------------------------------------------------


def new_staging(table: Table) -> str:
    return f"{table.location}/{STAGING_DIR}/{uuid.uuid4().hex}"


def _attempt(table: Table, staging: str, unit: DeleteUnit, run: Callable[[FileNamer], DeleteResult | None]) -> Iterator[pa.RecordBatch]:
    """Run ``unit`` in this task attempt, recorded first (see the module docstring)."""
    namer = FileNamer("data")
    entry = unit.entries[0]
    codec = table.partition_codec
    directory = bucket_dir(table.location, codec.path(codec.from_bytes(entry.partition)), entry.bucket)
    table.file_io.write_bytes(
        f"{staging}/{_ATTEMPT}{namer.uuid}", json.dumps({"uuid": namer.uuid, "dir": directory}).encode()
    )
    result = run(namer)
    if result is not None:
        yield pa.RecordBatch.from_pydict({"result": pa.array([pickle.dumps(result)], pa.binary())})


def _check_staging(table: Table, staging: str) -> None:
    """A staging directory comes back from the shim: only one of this table's is accepted."""
    prefix = f"{table.location}/{STAGING_DIR}/"
    name = staging[len(prefix) :] if staging.startswith(prefix) else ""
    if len(name) != 32 or any(c not in "0123456789abcdef" for c in name):
        raise ValueError(f"table {table.identifier}: {staging!r} is not one of its staging directories")


def finish(table: Table, staging: str, kept: Sequence[DeleteResult]) -> None:
    """Delete the data files of every task attempt other than ``kept``'s, then the staging
    directory. Best effort: the statement's outcome is decided by then (leftovers are orphans)."""
    _check_staging(table, staging)
    winners = {r.attempt for r in kept}
    io = table.file_io
    try:
        names = io.list_names(staging) if io.exists(staging) else []
        for name in names:
            if not name.startswith(_ATTEMPT):
                continue
            attempt = json.loads(io.read_bytes(f"{staging}/{name}"))
            inside = str(attempt["dir"]).startswith(f"{table.location}/") and ".." not in attempt["dir"]
            if attempt["uuid"] in winners or not inside or not io.exists(attempt["dir"]):
                continue
            namer_prefix = f"data-{attempt['uuid']}-"
            for f in io.list_names(attempt["dir"]):
                if f.startswith(namer_prefix):
                    io.delete_quietly(f"{attempt['dir']}/{f}")
        io.delete_dir(staging)
    except Exception as e:  # the outcome stands; orphan removal reclaims what is left
        _LOG.warning("table %s: could not clean up %s (%s: %s)", table.identifier, staging, type(e).__name__, e)


def _results(job_results: Sequence[str]) -> list[DeleteResult]:
    return [pickle.loads(base64.b64decode(r)) for r in job_results]


# ---- a DELETE the table evaluates ------------------------------------------------------------------


def job_options(source_options: Mapping[str, str], predicates: Sequence[Any], staging: str) -> dict[str, str]:
    """The data source options of the job running a DELETE with ``predicates``."""
    options = dict(source_options)
    options.update({JOB: DELETE, PREDICATES: json.dumps(list(predicates)), STAGING: staging})
    return options


def condition(table: Table, predicates: Sequence[Any]) -> Predicate:
    conjuncts = parse_predicates(predicates)
    predicate = conjunction(list(conjuncts)) if conjuncts else None
    if predicate is None:  # the bridge sends no job for these
        raise UnsupportedError(f"table {table.identifier}: this DELETE condition cannot be evaluated")
    return predicate


def commit(table: Table, job_results: Sequence[str] | None, staging: str) -> int | None:
    """Commit the tasks' results (base64 pickles) as one snapshot; returns its id, or None when
    no row matched. ``job_results`` None: the job failed, nothing is committed."""
    results = _results(job_results) if job_results is not None else []
    try:
        return commit_results(table, results) if job_results is not None else None
    finally:
        finish(table, staging, results)


class DeleteJobReader(DataSourceReader):
    """Plans a DELETE's units on the driver; each Spark task runs one and returns what it wrote."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def _predicate(self, table: Table) -> Predicate:
        return condition(table, json.loads(self.options[PREDICATES]))

    def partitions(self) -> list[InputPartition]:
        table = load_table(self.options)
        return [InputPartition(pickle.dumps(u)) for u in delete_units(table, self._predicate(table))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # no unit: Spark still runs one empty task
            return
        table = load_table(self.options)
        unit: DeleteUnit = pickle.loads(partition.value)
        predicate = self._predicate(table)
        yield from _attempt(
            table, self.options[STAGING], unit, lambda namer: run_delete_unit(table, unit, predicate, namer)
        )


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
    or None, no job, no state); or, on the first call of a copy-on-write statement, (None, the
    options of the job rewriting the touched files, its staging directory as ``state``). The
    shim then calls again with the job's results and the state, or with ``abort`` if the job
    failed (nothing was committed: what the statement wrote is deleted)."""
    deletes, inserts = _statement(messages)
    if state is not None:
        if abort:
            finish(table, state, [])
            delete_uncommitted(table, inserts)
            return None, None, None
        results = _results(job_results or [])
        try:
            return commit_results(table, results, inserts=inserts), None, None
        finally:
            finish(table, state, results)
    if not rewrites_in_tasks(table, deletes):
        return commit_positions(table, deletes, inserts), None, None
    staging = new_staging(table)
    try:
        for i, (unit, positions) in enumerate(position_units(table, deletes)):
            table.file_io.write_bytes(f"{staging}/unit-{i:06d}", pickle.dumps((unit, positions)))
    except BaseException:
        finish(table, staging, [])
        delete_uncommitted(table, inserts)
        raise
    options = dict(source_options)
    options.update({JOB: REWRITE, STAGING: staging})
    return None, options, staging


class RewriteJobReader(DataSourceReader):
    """Each Spark task rewrites the files of one staged unit and returns what it wrote."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def partitions(self) -> list[InputPartition]:
        table = load_table(self.options)
        staging = self.options[STAGING]
        names = [n for n in table.file_io.list_names(staging) if n.startswith("unit-")]
        return [InputPartition(f"{staging}/{n}") for n in names]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return
        table = load_table(self.options)
        unit, positions = pickle.loads(table.file_io.read_bytes(partition.value))
        yield from _attempt(
            table, self.options[STAGING], unit, lambda namer: run_rewrite_unit(table, unit, positions, namer)
        )
