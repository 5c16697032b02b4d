"""The task attempts of a Spark job that writes table files, and the cleanup when the job ends.

DML jobs (``spark/delete_job.py``) and compaction jobs (``CALL sys.compact``,
``spark/procedures.py``) run one Spark task per unit of work; each returns what it wrote, and the
driver commits the results it received as one snapshot. Spark may run a task more than once (a
retry, a speculative twin) and keeps one result; a failed job returns none. The files of the
other attempts are known never to be committed, so they are deleted, here, when the job ends.

Each job has a staging directory, ``<table>/.stratalake-staging/<uuid>/``, that holds:

- what tells a late attempt that its job is still running: the DML units (``unit-*``) or, for a
  compaction, a ``job`` file; :func:`finish` deletes them before the rest;
- one record per attempt (``attempt-<uuid>``), written before the attempt writes anything: the
  uuid that every file it writes carries (``data-<uuid>-N``, ``changelog-<uuid>-N`` in its bucket
  directory, ``index-<uuid>-N`` in the table's index directory) and its bucket directory;
- the ``ended`` marker, written by :func:`finish` before it lists the records.

:func:`finish` deletes the files of every attempt whose result is not committed (whatever the
commit's outcome: no commit can reference them), then the directory. An attempt may still be
running then (Spark fails a job when one task fails and kills the others without waiting, and a
killed task's Python worker may finish its unit), so each attempt, after it wrote or failed, asks
:func:`job_ended` and if so deletes its own files (:func:`clean_up_if_ended`). Either that check
comes after the marker, or the attempt's record and files were there when :func:`finish` listed.
The shim also waits for a failed job's tasks to end before it reports the failure (``JobTasks``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Collection
from typing import TYPE_CHECKING

from stratalake.store.files import STAGING_DIR
from stratalake.store.index_manifest import index_dir

if TYPE_CHECKING:
    from stratalake.table.table import Table

_LOG = logging.getLogger(__name__)

#: The data source option naming a job's staging directory.
STAGING_OPTION = "stratalake.job.staging"
ATTEMPT = "attempt-"
ENDED = "ended"  # written by finish before it lists the attempts
#: The kinds of file an attempt writes in its bucket directory, each named ``<kind>-<uuid>-N``.
_BUCKET_FILE_KINDS = ("data", "changelog")


def new_staging(table: Table) -> str:
    """A new staging directory's path for one job of ``table`` (nothing is created)."""
    return f"{table.location}/{STAGING_DIR}/{uuid.uuid4().hex}"


def check_staging(table: Table, staging: str) -> None:
    """A staging directory comes back from the shim: only one of this table's is accepted."""
    prefix = f"{table.location}/{STAGING_DIR}/"
    name = staging[len(prefix) :] if staging.startswith(prefix) else ""
    if len(name) != 32 or any(c not in "0123456789abcdef" for c in name):
        raise ValueError(f"table {table.identifier}: {staging!r} is not one of its staging directories")


def record_attempt(table: Table, staging: str, attempt: str, directory: str) -> str:
    """Record, before it writes, that attempt ``attempt`` writes files in ``directory``; returns
    the record's path."""
    record = f"{staging}/{ATTEMPT}{attempt}"
    table.file_io.write_bytes(record, json.dumps({"uuid": attempt, "dir": directory}).encode())
    return record


def job_ended(table: Table, staging: str, alive: str) -> bool:
    """Whether :func:`finish` has begun: its marker is there, or it has deleted ``alive`` (the
    attempt's unit, or the compaction's ``job`` file). Once true it stays true: finish writes the
    marker before it deletes anything, and deletes every other file before the marker."""
    return table.file_io.exists(f"{staging}/{ENDED}") or not table.file_io.exists(alive)


def finish(table: Table, staging: str, winners: Collection[str]) -> None:
    """Delete the files of every task attempt not in ``winners`` (the attempts whose results are
    being committed), then the staging directory. Best effort: the statement's outcome is decided
    by then (leftovers are orphans)."""
    check_staging(table, staging)
    io = table.file_io
    try:
        if not io.exists(staging):
            return
        io.write_bytes(f"{staging}/{ENDED}", b"")  # before the listing: attempts still running see it
        losers: dict[str, set[str]] = defaultdict(set)  # directory -> attempt uuids
        for name in io.list_names(staging):
            if not name.startswith(ATTEMPT) or name[len(ATTEMPT) :] in winners:
                continue  # a committed attempt's record names it: no read (one per task on a store)
            try:
                attempt = json.loads(io.read_bytes(f"{staging}/{name}"))
            except FileNotFoundError:  # a late attempt saw the marker and deleted its files itself
                continue
            directory = str(attempt["dir"])
            inside = directory.startswith(f"{table.location}/") and ".." not in directory
            if attempt["uuid"] not in winners and inside:
                losers[directory].add(str(attempt["uuid"]))
        for directory, attempts in losers.items():
            _delete_files(table, directory, _BUCKET_FILE_KINDS, attempts)
        if losers:
            _delete_files(table, index_dir(table), ("index",), set().union(*losers.values()))
        _delete_staging(table, staging)
    except Exception as e:  # the outcome stands; orphan removal reclaims what is left
        _LOG.warning("table %s: could not clean up %s (%s: %s)", table.identifier, staging, type(e).__name__, e)


def _delete_staging(table: Table, staging: str, tries: int = 5) -> None:
    """Delete the staging directory: what tells attempts their job runs first, then the rest (the
    marker last of all the files :func:`job_ended` reads, so that an attempt still running reads
    one of them as ended). Late attempts may add or remove their records meanwhile (each cleans
    up after itself), which fails a try: retried."""
    io = table.file_io
    for name in io.list_names(staging):
        if not name.startswith(ATTEMPT) and name != ENDED:
            io.delete_quietly(f"{staging}/{name}")
    for _ in range(tries - 1):
        try:
            io.delete_dir(staging)
            return
        except OSError:
            time.sleep(0.01)
    io.delete_dir(staging)


def _delete_files(table: Table, directory: str, kinds: Collection[str], attempts: Collection[str]) -> None:
    prefixes = tuple(f"{kind}-{a}-" for kind in kinds for a in attempts)
    for f in table.file_io.list_names(directory, ordered=False):
        if f.startswith(prefixes):
            table.file_io.delete_quietly(f"{directory}/{f}")


def delete_attempt_files(table: Table, directory: str, attempt: str) -> None:
    """Delete every file attempt ``attempt`` wrote: in its bucket ``directory`` and the index
    files (deletion vectors) in the table's index directory."""
    _delete_files(table, directory, _BUCKET_FILE_KINDS, (attempt,))
    _delete_files(table, index_dir(table), ("index",), (attempt,))


def ended_error(table: Table, staging: str) -> RuntimeError:
    return RuntimeError(
        f"table {table.identifier}: the job of {staging} ended before this task attempt finished "
        "(Spark failed or finished it without waiting); the attempt's files were deleted"
    )


def clean_up_if_ended(
    table: Table,
    staging: str,
    alive: str,
    directory: str,
    record: str,
    attempt: str,
    error: BaseException | None,
) -> None:
    """After an attempt wrote (or failed writing): if the job has ended, finish may have listed
    the attempts before this one's files existed, so the attempt deletes them itself and raises."""
    if not job_ended(table, staging, alive):
        return
    try:
        delete_attempt_files(table, directory, attempt)
        table.file_io.delete_quietly(record)
        # Its record may have made the directory again after finish deleted it. Only an empty
        # one goes: finish deletes the other files and the marker, which other attempts still read.
        if not table.file_io.list_names(staging):
            with contextlib.suppress(FileNotFoundError):  # finish or another attempt was first
                table.file_io.delete_dir(staging)
    except OSError as e:  # what is left is an orphan
        _LOG.warning("table %s: a late attempt could not clean up (%s: %s)", table.identifier, type(e).__name__, e)
    raise ended_error(table, staging) from error
