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

Before writing, each task attempt records in the staging directory the uuid its data files'
names carry and their directory. A retried or speculative attempt's files never reach the
driver, and none of a failed job's do: :func:`finish` deletes the files of every attempt whose
result is not being committed, which no commit can reference, whatever its outcome, then the
directory. (A copy-on-write bucket that still holds deletion vectors writes new index files too;
a lost attempt's are left to ``remove_orphan_files``.)

An attempt may still be running when :func:`finish` runs: Spark fails a job when one task fails
and kills the others without waiting, and a killed task's Python worker finishes the unit it is
writing. So :func:`finish` first writes an ``ended`` marker, and each attempt, after writing,
checks whether the job ended (the marker, or its unit gone) and if so deletes its own files.
Either the check comes after the marker (the attempt cleans up) or the attempt's files and record
were written before it (:func:`finish`, which lists after it, deletes them). :func:`finish`
deletes the units before the marker, so an ended job reads as ended until the directory is gone.
(The shim also waits for a failed job's tasks to end before the abort: ``JobTasks``.)
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import pickle
import time
import uuid
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
from stratalake.spark.dml import parse_predicates
from stratalake.spark.source import load_table
from stratalake.store.files import STAGING_DIR
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
STAGING = "stratalake.job.staging"  # the job's staging directory
_ATTEMPT = "attempt-"
_UNIT = "unit-"
_ENDED = "ended"  # written by finish before it lists the attempts (see the module docstring)

# A staged unit: ("find", unit, the DELETE's V2 predicates) or ("rewrite", unit, positions by file).
Staged = tuple[str, DeleteUnit, Any]


# ---- where the work runs ---------------------------------------------------------------------------


def fits_one_split(table: Table, units: Sequence[DeleteUnit]) -> bool:
    """Whether the units' files add up to at most one split (``source.split.target-size``)."""
    target = table.core_options.get_int("source.split.target-size") or 128 * 1024 * 1024
    return sum(e.file.file_size for u in units for e in u.entries) <= target


def stage(table: Table, staged: Sequence[Staged], source_options: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """Write the units into a new staging directory: (the job's options, the directory)."""
    staging = f"{table.location}/{STAGING_DIR}/{uuid.uuid4().hex}"
    try:
        for i, item in enumerate(staged):
            table.file_io.write_bytes(f"{staging}/{_UNIT}{i:06d}", pickle.dumps(item))
    except BaseException:
        finish(table, staging, [])
        raise
    options = dict(source_options)
    options.update({JOB: UNITS, STAGING: staging})
    return options, staging


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
        if not io.exists(staging):
            return
        io.write_bytes(f"{staging}/{_ENDED}", b"")  # before the listing: attempts still running see it
        for name in io.list_names(staging):
            if not name.startswith(_ATTEMPT):
                continue
            try:
                attempt = json.loads(io.read_bytes(f"{staging}/{name}"))
            except FileNotFoundError:  # a late attempt saw the marker and deleted its files itself
                continue
            directory = str(attempt["dir"])
            inside = directory.startswith(f"{table.location}/") and ".." not in directory
            if attempt["uuid"] not in winners and inside:
                _delete_attempt_files(table, directory, str(attempt["uuid"]))
        _delete_staging(table, staging)
    except Exception as e:  # the outcome stands; orphan removal reclaims what is left
        _LOG.warning("table %s: could not clean up %s (%s: %s)", table.identifier, staging, type(e).__name__, e)


def _delete_staging(table: Table, staging: str, tries: int = 5) -> None:
    """Delete the staging directory: the units first, then the rest (the marker last of all
    files :func:`_job_ended` reads, so that an attempt still running reads one of them as ended).
    Late attempts may add or remove their records meanwhile (each cleans up after itself), which
    fails a try: retried."""
    io = table.file_io
    for name in io.list_names(staging):
        if name.startswith(_UNIT):
            io.delete_quietly(f"{staging}/{name}")
    for _ in range(tries - 1):
        try:
            io.delete_dir(staging)
            return
        except OSError:
            time.sleep(0.01)
    io.delete_dir(staging)


def _delete_attempt_files(table: Table, directory: str, attempt: str) -> None:
    prefix = f"data-{attempt}-"
    for f in table.file_io.list_names(directory):
        if f.startswith(prefix):
            table.file_io.delete_quietly(f"{directory}/{f}")


def _job_ended(table: Table, staging: str, unit: str) -> bool:
    """Whether :func:`finish` has begun: its marker is there, or it has deleted the unit.
    Once true it stays true: finish writes the marker before it deletes anything, and deletes
    every unit before the marker."""
    return table.file_io.exists(f"{staging}/{_ENDED}") or not table.file_io.exists(unit)


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
        table = load_table(self.options)
        staging, unit = self.options[STAGING], str(partition.value)
        item: Staged = pickle.loads(table.file_io.read_bytes(unit))
        if _job_ended(table, staging, unit):
            raise _ended(table, staging)
        # Recorded before anything is written (see the module docstring).
        namer = FileNamer("data")
        entry = item[1].entries[0]
        codec = table.partition_codec
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(entry.partition)), entry.bucket)
        record = f"{staging}/{_ATTEMPT}{namer.uuid}"
        table.file_io.write_bytes(record, json.dumps({"uuid": namer.uuid, "dir": directory}).encode())
        try:
            result = _run_staged(table, item, namer)
        except BaseException as e:
            _clean_up_if_ended(table, staging, unit, directory, record, namer.uuid, e)
            raise
        _clean_up_if_ended(table, staging, unit, directory, record, namer.uuid, None)
        if result is not None:
            yield pa.RecordBatch.from_pydict({"result": pa.array([pickle.dumps(result)], pa.binary())})


def _ended(table: Table, staging: str) -> RuntimeError:
    return RuntimeError(
        f"table {table.identifier}: the job of {staging} ended before this task attempt finished "
        "(Spark failed or finished it without waiting); the attempt's files were deleted"
    )


def _clean_up_if_ended(
    table: Table, staging: str, unit: str, directory: str, record: str, attempt: str, error: BaseException | None
) -> None:
    """After an attempt wrote (or failed writing): if the job has ended, finish may have listed
    the attempts before this one's files existed, so the attempt deletes them itself."""
    if not _job_ended(table, staging, unit):
        return
    try:
        _delete_attempt_files(table, directory, attempt)
        table.file_io.delete_quietly(record)
        # Its record may have made the directory again after finish deleted it. Only an empty
        # one goes: finish deletes the units and the marker, which other attempts still read.
        if not table.file_io.list_names(staging):
            with contextlib.suppress(FileNotFoundError):  # finish or another attempt was first
                table.file_io.delete_dir(staging)
    except OSError as e:  # what is left is an orphan
        _LOG.warning("table %s: a late attempt could not clean up (%s: %s)", table.identifier, type(e).__name__, e)
    raise _ended(table, staging) from error


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

