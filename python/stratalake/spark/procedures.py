"""``CALL lake.sys.<name>(...)`` procedures, with Paimon's names, parameters and result columns.

The JVM shim asks :func:`describe` for a procedure's parameters and calls :func:`call` with the
arguments by name (unset optional ones are None). A call answers ``{"schema", "rows"}``, or, for a
distributed job, ``{"job": {"options": ...}, "state": ...}``: the shim then reads the ``stratalake``
data source with those options (:class:`CompactJobReader`: tasks planned on the driver, one Spark
task per bucket, each returning a pickled commit message) and calls again with the results, which
are committed once, or, when the job failed, with ``job_aborted`` in the state. Either way the
files of the task attempts whose results are not committed are deleted (``spark/job_attempts.py``).

Example (SQL)::

    CALL lake.sys.compact(table => 'db.t', compact_strategy => 'full')
    CALL lake.sys.compact(table => 'db.t', where => "dt >= '2024-01-01' AND hr IN (0, 12)")
    CALL lake.sys.expire_snapshots('db.t', 2)
    CALL lake.sys.create_tag(table => 'db.t', tag => 'v1', snapshot => 3)
    CALL lake.sys.create_tag(table => 'db.t', tag => 'daily', time_retained => '1 d')
    CALL lake.sys.rollback(table => 'db.t', version => 'v1')
    CALL lake.sys.rename_tag(table => 'db.t', tag => 'v1', target_tag => 'v1-final')
    CALL lake.sys.rollback_to_timestamp(table => 'db.t', timestamp => 1718000000000)
    CALL lake.sys.reset_consumer(table => 'db.t', consumerId => 'job1', nextSnapshotId => 5)
    CALL lake.sys.clear_consumers(table => 'db.t', includingConsumers => 'job.*')
    CALL lake.sys.create_branch(table => 'db.t', branch => 'b', tag => 'v1')
    CALL lake.sys.fast_forward(table => 'db.t', branch => 'b')
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import pickle
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from stratalake.exceptions import (
    BranchNotFoundError,
    InvalidOptionError,
    StrataLakeError,
    TagNotFoundError,
    UnsupportedError,
)
from stratalake.identifiers import split_table_identifier
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.maintenance.tags import expire_tags
from stratalake.operation.commit import CommitMessage, partition_expire
from stratalake.operation.compact import check_partitions, plan
from stratalake.options import parse_duration_ms
from stratalake.spark import job_attempts
from stratalake.spark.partition_filter import parse_partition_filter
from stratalake.spark.read_options import parse_timestamp_ms
from stratalake.spark.source import load_table
from stratalake.spark.worker_memory import use_worker_allocator
from stratalake.store.tag_manager import check_tag_name
from stratalake.table.compaction import run_task

if TYPE_CHECKING:
    from stratalake.catalog import Catalog
    from stratalake.table.table import Table

JOB = "stratalake.job"  # data source option naming a job instead of a table read
JOB_FULL = "stratalake.job.full"
JOB_PARTITIONS = "stratalake.job.partitions"  # JSON list of partition specs
JOB_WHERE = "stratalake.job.where"  # a SQL condition on partition columns (compact's 'where')
JOB_TABLE_OPTIONS = "stratalake.job.table-options"  # JSON: compact's dynamic table options
#: In a compaction job's staging directory while the job runs (see spark/job_attempts.py).
_JOB_RUNNING = "job"
NAMESPACE = "sys"


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # Spark DDL type
    required: bool = False


Answer = dict[str, Any]


@dataclass(frozen=True)
class Procedure:
    name: str
    description: str
    params: tuple[Param, ...]
    output: tuple[tuple[str, str], ...]  # (column, Spark type name)
    run: Callable[[Catalog, Mapping[str, Any], Mapping[str, Any]], Answer]

    def describe(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "parameters": [{"name": p.name, "type": p.type, "required": p.required} for p in self.params],
        }

    def rows(self, rows: Sequence[Sequence[Any]]) -> Answer:
        schema = {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in self.output],
        }
        return {"schema": schema, "rows": [list(r) for r in rows]}


# ---- arguments ----------------------------------------------------------------------------------


def table_identifier(text: object, current_database: str) -> tuple[str, str]:
    """``(database, table)`` of a procedure's ``table`` argument: ``'db.t'``, or a bare ``'t'`` in
    the session's current database (Paimon resolves procedure arguments against it). Parts may be
    quoted as in SQL (``'db.`t$branch_b`'``), since Paimon parses the argument as an identifier."""
    ident = str(text).strip()
    if "`" in ident:
        parts = _identifier_parts(ident)
        if len(parts) == 1:
            return split_table_identifier(f"{current_database}.{parts[0]}")
        if len(parts) == 2 and "." not in parts[0] + parts[1]:
            return split_table_identifier(".".join(parts))
        raise InvalidOptionError(f"procedure argument table = {ident!r} is not 'database.table' or 'table'")
    return split_table_identifier(ident if "." in ident else f"{current_database}.{ident}")


def _identifier_parts(text: str) -> list[str]:
    """The parts of a dotted identifier whose parts may be quoted with backticks (``` `` ``` is one)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and text[i + 1 : i + 2] == "`":
                current.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    if quoted:
        raise InvalidOptionError(f"procedure argument table = {text!r} has an unclosed backtick")
    parts.append("".join(current))
    return parts


def _table(cat: Catalog, args: Mapping[str, Any]) -> Table:
    # ``call`` qualified the argument with the current database already.
    return cat.get_table(str(args["table"]))


def _unquote(value: str) -> str:
    """``"p1"`` or ``'p1'`` -> ``p1``: Paimon accepts partition values quoted or bare."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_partitions(text: str | None) -> list[dict[str, str]] | None:
    """Paimon's partition argument: 'k1=v1,k2=v2;k1=v3,k2=v4' (values may be quoted: k1="v1")."""
    if not text or not text.strip():
        return None
    out = []
    for part in text.split(";"):
        spec = {}
        for pair in part.split(","):
            if "=" not in pair:
                raise InvalidOptionError(f"partition '{part}' must look like 'k1=v1,k2=v2'")
            key, value = pair.split("=", 1)
            spec[key.strip()] = _unquote(value.strip())
        out.append(spec)
    return out


# ---- procedures ---------------------------------------------------------------------------------


def _compact(cat: Catalog, args: Mapping[str, Any], state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    strategy = (args.get("compact_strategy") or "full").lower()
    if strategy not in ("full", "minor"):
        raise InvalidOptionError(f"compact_strategy must be 'full' or 'minor', got '{strategy}'")
    _check_order(table, args)
    where = str(args.get("where") or "").strip() or None
    if where is not None and str(args.get("partitions") or "").strip():
        raise InvalidOptionError("compact: 'partitions' and 'where' cannot be used together")
    if where is not None:
        parse_partition_filter(where, table)  # a bad condition fails before any job runs
    dynamic = dynamic_options(table.identifier, args.get("options"))
    table = table.copy(dynamic)  # refused here, before any job, as ALTER TABLE ... SET would be
    if "job_results" not in state and not state.get("job_aborted"):  # the first call: plan the job
        partitions: list[dict[str, Any]] | None = parse_partitions(args.get("partitions"))
        if partitions:
            check_partitions(table, partitions)  # a spec matching nothing fails before any job
        idle = str(args.get("partition_idle_time") or "").strip()
        if idle:
            partitions = idle_partitions(table, parse_duration_ms(idle), partitions)
            if not partitions:
                return COMPACT.rows([[True]])  # no partition has been idle that long: nothing to do
        # The data source options that name this table (computed by the bridge for the catalog).
        source_options: Callable[[Table], dict[str, str]] = state["source_options_of"]
        options = source_options(table)
        options.update(
            {
                JOB: "compact",
                JOB_FULL: str(strategy == "full").lower(),
                JOB_PARTITIONS: json.dumps(partitions or []),
                JOB_TABLE_OPTIONS: json.dumps(dynamic),
            }
        )
        if where is not None:
            options[JOB_WHERE] = where
        staging = job_attempts.new_staging(table)
        table.file_io.write_bytes(f"{staging}/{_JOB_RUNNING}", b"")
        options[job_attempts.STAGING_OPTION] = staging
        return {"job": {"options": options}, "state": {"staging": staging}}
    staging = str(state.get("staging") or "")
    job_attempts.check_staging(table, staging)
    if state.get("job_aborted"):  # the job failed: nothing is committed, no attempt's file stays
        job_attempts.finish(table, staging, ())
        return COMPACT.rows([[False]])
    results: list[tuple[str, CommitMessage]] = [pickle.loads(base64.b64decode(r)) for r in state["job_results"]]
    messages = [m for _, m in results]
    try:
        if messages:
            commit = table.new_commit(str(uuid.uuid4()))
            try:
                commit.commit(messages)
            except BaseException:
                commit.abort(messages)  # removes the outputs only if known not committed
                raise
    finally:  # the other attempts' files, whatever the outcome (no commit can reference them)
        job_attempts.finish(table, staging, {attempt for attempt, _ in results})
    return COMPACT.rows([[True]])


def dynamic_options(what: str, text: Any) -> dict[str, str]:
    """Paimon's ``options`` argument of its compact procedures: ``'k1=v1,k2=v2'``, table options
    for this compaction only (``ParameterUtils.parseCommaSeparatedKeyValues``)."""
    out: dict[str, str] = {}
    for item in str(text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(
                f"compact of {what}: 'options' item {item.strip()!r} is not 'key=value'; give table options "
                "as 'key1=value1,key2=value2'"
            )
        out[key.strip()] = value.strip()
    return out


def idle_partitions(
    table: Table, idle_ms: int, among: Sequence[dict[str, Any]] | None = None, now_ms: int | None = None
) -> list[dict[str, Any]]:
    """Paimon's ``partition_idle_time``: the partitions (of ``among``, if given) whose newest live
    file was written more than ``idle_ms`` ago."""
    codec = table.partition_codec
    if not codec.is_partitioned:
        raise InvalidOptionError(
            f"compact of table {table.identifier}: 'partition_idle_time' needs a partitioned table"
        )
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return []
    newest: dict[bytes, int] = {}
    for e in table.live_entries(snapshot):
        created = e.file.creation_time if e.file.creation_time is not None else snapshot.time_millis
        newest[e.partition] = max(newest.get(e.partition, created), created)
    wanted = None
    if among:
        wanted = {codec.to_bytes(codec.spec_to_values(p, table.identifier)) for p in among}
    now = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    cutoff = now - idle_ms
    return [
        {k: None if v is None else str(v) for k, v in codec.to_dict(p).items()}
        for p, last in sorted(newest.items())
        if last < cutoff and (wanted is None or p in wanted)
    ]


def _compact_database(cat: Catalog, args: Mapping[str, Any], state: Mapping[str, Any]) -> Answer:
    """Paimon's compact_database: a full compaction of every table the patterns select, one table
    (one Spark job) after another. ``including_tables`` / ``excluding_tables`` are matched against
    ``db.table`` (Paimon's rule) or the bare table name (as Paimon's examples write them)."""
    dynamic_text = str(args.get("options") or "")
    dynamic_options("compact_database", dynamic_text)  # a malformed list fails before any table
    progress = dict(state.get("compact_database") or {})
    if not progress:
        try:
            databases = re.compile(str(args.get("including_databases") or ".*"))
            including = re.compile(str(args.get("including_tables") or ".*"))
            excluded = str(args.get("excluding_tables") or "").strip()
            excluding = re.compile(excluded) if excluded else None
        except re.error as e:
            raise InvalidOptionError(f"compact_database: a pattern is not a regular expression: {e}") from e

        def wanted(db: str, name: str) -> bool:
            names = (f"{db}.{name}", name)
            if not any(including.fullmatch(n) for n in names):
                return False
            return excluding is None or not any(excluding.fullmatch(n) for n in names)

        queue = [
            f"{db}.{name}"
            for db in cat.list_databases()
            if databases.fullmatch(db)
            for name in cat.list_tables(db)
            if wanted(db, name)
        ]
        progress = {"queue": queue, "current": None, "success": 0, "failed": []}
    current = progress.get("current")
    if current is not None:
        # The job of ``current`` ran: commit its results (the second step of compact).
        try:
            _compact(
                cat,
                {"table": current, "options": dynamic_text},
                {
                    "job_results": state.get("job_results") or [],
                    "staging": progress.get("staging"),
                    "job_aborted": bool(state.get("job_aborted")),
                },
            )
            if state.get("job_aborted"):  # the job failed: the shim raises its error
                return COMPACT_DATABASE.rows([["aborted"]])
            progress["success"] += 1
        except StrataLakeError as e:
            progress["failed"].append(f"{current}: {e}")
        progress["current"] = None
    while progress["queue"]:
        name = progress["queue"].pop(0)
        try:
            answer = _compact(
                cat, {"table": name, "options": dynamic_text}, {"source_options_of": state["source_options_of"]}
            )
        except StrataLakeError as e:  # e.g. a table stratalake cannot compact: counted, as Paimon
            progress["failed"].append(f"{name}: {e}")
            continue
        progress["current"] = name
        progress["staging"] = answer["state"]["staging"]
        return {"job": answer["job"], "state": {"compact_database": progress}}
    failed = progress["failed"]
    text = f"Compact database finished. Success: {progress['success']}, Failed: {len(failed)}"
    if failed:
        text += " (" + "; ".join(failed) + ")"
    return COMPACT_DATABASE.rows([[text]])


def _check_order(table: Table, args: Mapping[str, Any]) -> None:
    """Paimon's rules for sort compaction ('order_strategy' / 'order_by')."""
    strategy = str(args.get("order_strategy") or "").strip().lower()
    order_by = [c.strip() for c in str(args.get("order_by") or "").split(",") if c.strip()]
    if strategy in ("", "none"):
        if order_by:
            raise InvalidOptionError("compact: order_strategy 'none' cannot work with order_by columns")
        return
    if strategy not in ("order", "zorder", "hilbert"):
        raise InvalidOptionError(
            f"compact: unknown order_strategy '{strategy}'; Paimon's are 'order', 'zorder', 'hilbert', 'none'"
        )
    if not order_by:
        raise InvalidOptionError(f"compact: order_strategy '{strategy}' needs order_by columns")
    partition_keys = list(table.schema().partition_keys)
    if set(order_by) & set(partition_keys):
        raise InvalidOptionError(
            f"compact: order_by should not contain partition columns (it is meaningless): order_by "
            f"{order_by}, partition columns {partition_keys}"
        )
    # Paimon sorts only append tables with unaware buckets (bucket = -1), rewriting their files in
    # the new order. A primary-key table's files are sorted by its key, which merges rely on, so
    # Paimon refuses sort compaction for it; stratalake does not sort append tables yet.
    if not table.schema().primary_keys:
        raise UnsupportedError(
            f"compact: order_strategy '{strategy}' (sort compaction) of append table {table.identifier} "
            "is not supported yet; compact it without order_strategy/order_by"
        )
    raise UnsupportedError(
        f"compact: order_strategy '{strategy}' (sort compaction) is only supported for append tables "
        f"with 'bucket' = '-1' (Paimon's unaware-bucket mode); table {table.identifier} is a "
        "primary-key table, whose data files must stay sorted by the primary key. Compact it "
        "without order_strategy/order_by"
    )


def _expire_snapshots(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    older = args.get("older_than")
    retain_max, retain_min = args.get("retain_max"), args.get("retain_min")
    if retain_max is not None and retain_min is None:
        # As Paimon: an explicit maximum below the table's minimum lowers the minimum with it.
        configured = table.core_options.get_int("snapshot.num-retained.min")
        retain_min = min(10 if configured is None else configured, retain_max)
    n = table.expire_snapshots(
        retain_max=retain_max,
        retain_min=retain_min,
        older_than_ms=parse_timestamp_ms(older) if older else None,
        max_deletes=args.get("max_deletes"),
    )
    return EXPIRE_SNAPSHOTS.rows([[n]])


def _retained(args: Mapping[str, Any]) -> str | None:
    retained = args.get("time_retained")
    return str(retained) if retained else None


def _create_tag(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    tag = str(args["tag"])
    # if_not_exists: stratalake's, for ALTER TABLE ... CREATE TAG IF NOT EXISTS (Paimon's DDL).
    if not (args.get("if_not_exists") and table.tag_manager.exists(tag)):
        table.create_tag(tag, args.get("snapshot"), _retained(args))
    return CREATE_TAG.rows([[True]])


def _replace_tag(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    tag = str(args["tag"])
    # create_if_missing: stratalake's, for ALTER TABLE ... CREATE OR REPLACE TAG (Paimon's DDL).
    if args.get("create_if_missing") and not table.tag_manager.exists(tag):
        table.create_tag(tag, args.get("snapshot"), _retained(args))
    else:
        table.replace_tag(tag, args.get("snapshot"), _retained(args))
    return REPLACE_TAG.rows([[True]])


def _rename_tag(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    table.rename_tag(str(args["tag"]), str(args["target_tag"]))
    return RENAME_TAG.rows([[True]])


def _create_tag_from_timestamp(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    if args.get("timestamp") is None:
        raise InvalidOptionError(
            f"create_tag_from_timestamp of table {table.identifier} needs 'timestamp' "
            "(epoch milliseconds): the tag points at the first snapshot committed at or after it"
        )
    tag = str(args["tag"])
    snap = table.create_tag_from_timestamp(tag, int(args["timestamp"]), _retained(args))
    watermark = "null" if snap.watermark is None else str(snap.watermark)  # Paimon prints a Long
    return CREATE_TAG_FROM_TIMESTAMP.rows([[tag, snap.id, snap.time_millis, watermark]])


def _expire_tags(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    older = args.get("older_than")
    older_than = dt.datetime.fromtimestamp(parse_timestamp_ms(str(older)) / 1000) if older else None
    expired = expire_tags(table, older_than=older_than)
    return EXPIRE_TAGS.rows([[name] for name in expired] or [["No expired tags."]])


def _delete_tag(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    names = [name.strip() for name in str(args["tag"]).split(",")]  # Paimon accepts a list
    # if_exists: stratalake's, for ALTER TABLE ... DELETE TAG IF EXISTS (Paimon's DDL). Without
    # it every tag must exist, checked before any is deleted, so a typo deletes nothing.
    for name in names:
        check_tag_name(name, table.identifier)  # a path-like name is refused, never looked up
    existing = set(table.tag_manager.names())
    missing = [n for n in names if n not in existing]
    if missing and not args.get("if_exists"):
        raise TagNotFoundError(
            f"table {table.identifier}: tag(s) {', '.join(repr(n) for n in missing)} do not exist, "
            f"so nothing was deleted; tags are {sorted(existing)}"
        )
    for name in names:
        if name in existing:
            table.delete_tag(name)
    return DELETE_TAG.rows([[True]])


def _rollback(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    version = args.get("version")
    if version is None:
        version = args.get("snapshot") if args.get("snapshot") is not None else args.get("tag")
    if version is None:
        raise InvalidOptionError("rollback needs 'version' (a snapshot id or a tag name)")
    previous = table.latest_snapshot()
    current = table.rollback_to(version)
    return ROLLBACK.rows([[previous.id if previous else None, current.id]])


def _rollback_to_timestamp(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    if args.get("timestamp") is None:
        raise InvalidOptionError(
            f"rollback_to_timestamp of table {table.identifier} needs 'timestamp' (epoch milliseconds)"
        )
    snap = table.rollback_to_timestamp(int(args["timestamp"]))
    return ROLLBACK_TO_TIMESTAMP.rows([[f"Success roll back to snapshot: {snap.id} ."]])  # Paimon's text


def _trigger_tag_automatic_creation(
    cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]
) -> Answer:
    _table(cat, args).trigger_tag_automatic_creation()
    return TRIGGER_TAG_AUTOMATIC_CREATION.rows([[True]])


def _rollback_to_watermark(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    if args.get("watermark") is None:
        raise InvalidOptionError(f"rollback_to_watermark of table {table.identifier} needs 'watermark'")
    snap = table.rollback_to_watermark(int(args["watermark"]))
    return ROLLBACK_TO_WATERMARK.rows([[f"Success roll back to snapshot: {snap.id} ."]])  # Paimon's text


def _create_branch(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    flag = args.get("ignoreIfExists")
    text = "false" if flag is None else str(flag).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(
            f"create_branch of table {table.identifier}: 'ignoreIfExists' must be 'true' or 'false', "
            f"got {flag!r}"
        )
    tag = args.get("tag")
    table.create_branch(str(args["branch"]), None if tag is None else str(tag), text == "true")
    return CREATE_BRANCH.rows([[True]])


def _delete_branch(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    names = [name.strip() for name in str(args["branch"]).split(",")]  # Paimon accepts a list
    # Every branch must exist, checked before any is deleted, so a typo deletes nothing.
    existing = set(table.branches())
    missing = [n for n in names if n not in existing]
    if missing:
        raise BranchNotFoundError(
            f"table {table.identifier}: branch(es) {', '.join(repr(n) for n in missing)} do not exist, "
            f"so nothing was deleted; branches are {sorted(existing)}"
        )
    for name in names:
        table.delete_branch(name)
    return DELETE_BRANCH.rows([[True]])


def _rename_branch(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    _table(cat, args).rename_branch(str(args["from_branch"]), str(args["to_branch"]))
    return RENAME_BRANCH.rows([[True]])


def _fast_forward(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    _table(cat, args).fast_forward(str(args["branch"]))
    return FAST_FORWARD.rows([[True]])


def _reset_consumer(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    consumer_id = args.get("consumerId")
    if consumer_id is None:
        raise InvalidOptionError(f"reset_consumer of table {table.identifier} needs 'consumerId'")
    next_id = args.get("nextSnapshotId")
    table.reset_consumer(str(consumer_id), None if next_id is None else int(next_id))
    return RESET_CONSUMER.rows([[True]])


def _clear_consumers(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    table.clear_consumers(args.get("includingConsumers"), args.get("excludingConsumers"))
    return CLEAR_CONSUMERS.rows([[True]])


def _purge_files(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    _table(cat, args).purge_files()
    return PURGE_FILES.rows([["Success"]])


def _remove_unexisting_files(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    if args.get("parallelism") is not None:
        raise UnsupportedError(
            "remove_unexisting_files: 'parallelism' is not supported (the check lists each bucket directory "
            "once, on the driver); leave it out"
        )
    paths = table.remove_unexisting_files(dry_run=bool(args.get("dry_run")))
    return REMOVE_UNEXISTING_FILES.rows([[p] for p in paths])


def _mark_partition_done(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    specs = parse_partitions(args.get("partitions"))
    if not specs:
        raise InvalidOptionError(
            f"mark_partition_done of table {table.identifier} needs 'partitions' ('k1=v1,k2=v2;k1=v3,k2=v4')"
        )
    table.mark_partitions_done(specs)
    return MARK_PARTITION_DONE.rows([[True]])


def _repair(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    """Paimon's ``repair``: blank repairs the whole catalog, else 'db' / 'db.table' names."""
    value = args.get("database_or_table")
    cat.repair(None if value is None else str(value))
    return REPAIR.rows([[True]])


def _remove_orphan_files(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    older = args.get("older_than")
    paths = table.remove_orphan_files(
        older_than_ms=parse_timestamp_ms(older) if older else None, dry_run=bool(args.get("dry_run"))
    )
    return REMOVE_ORPHAN_FILES.rows([[len(paths), None]])  # sizes are gone with the files


def _analyze(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    table = _table(cat, args)
    columns = args.get("columns")
    names: list[str] | None = None
    if columns is not None:
        parsed = json.loads(str(columns))
        if not isinstance(parsed, list) or not all(isinstance(c, str) for c in parsed):
            raise InvalidOptionError(
                f"procedure sys.analyze: argument 'columns' must be a JSON list of column names, got {columns!r}"
            )
        names = parsed
    table.analyze(columns=names, all_columns=bool(args.get("all_columns")))
    return ANALYZE.rows([])


def _expire_partitions(cat: Catalog, args: Mapping[str, Any], _state: Mapping[str, Any]) -> Answer:
    """Paimon's ``expire_partitions``: the 'values-time' strategy; arguments not given come from
    the table's ``partition.*`` options (``operation/commit/partition_expire.py``)."""
    table = _table(cat, args)
    expiration = args.get("expiration_time") or table.core_options.get(partition_expire.EXPIRATION_TIME)
    if not expiration:
        raise InvalidOptionError(
            f"expire_partitions of table {table.identifier} needs 'expiration_time' (or the table option "
            f"'{partition_expire.EXPIRATION_TIME}')"
        )
    max_expires = args.get("max_expires")
    specs = partition_expire.expire_partitions(
        table,
        lambda chunk: table.new_commit().commit([], overwrite=True, overwrite_partitions=chunk),
        str(expiration),
        args.get("timestamp_formatter"),
        args.get("timestamp_pattern"),
        args.get("expire_strategy"),
        int(max_expires) if max_expires is not None else None,
    )
    return EXPIRE_PARTITIONS.rows([[text] for text in partition_expire.describe(specs)])


COMPACT = Procedure(
    "compact",
    "Compact buckets (all, of 'partitions', or of the partitions a 'where' condition selects) as one "
    "COMPACT snapshot, one Spark task per bucket",
    (
        Param("table", "STRING", True),
        Param("partitions", "STRING"),
        Param("compact_strategy", "STRING"),
        Param("order_strategy", "STRING"),
        Param("order_by", "STRING"),
        Param("where", "STRING"),
        Param("options", "STRING"),
        Param("partition_idle_time", "STRING"),
    ),
    (("result", "boolean"),),
    _compact,
)
COMPACT_DATABASE = Procedure(
    "compact_database",
    "Fully compact every table of the databases and tables the regular expressions select",
    (
        Param("including_databases", "STRING"),
        Param("including_tables", "STRING"),
        Param("excluding_tables", "STRING"),
        Param("options", "STRING"),
    ),
    (("result", "string"),),
    _compact_database,
)
EXPIRE_SNAPSHOTS = Procedure(
    "expire_snapshots",
    "Expire snapshots and delete the files only they referenced",
    (
        Param("table", "STRING", True),
        Param("retain_max", "INT"),
        Param("retain_min", "INT"),
        Param("older_than", "STRING"),
        Param("max_deletes", "INT"),
    ),
    (("deleted_snapshots_count", "integer"),),
    _expire_snapshots,
)
CREATE_TAG = Procedure(
    "create_tag",
    "Tag a snapshot (default: the latest)",
    (
        Param("table", "STRING", True),
        Param("tag", "STRING", True),
        Param("snapshot", "BIGINT"),
        Param("time_retained", "STRING"),
        Param("if_not_exists", "BOOLEAN"),
    ),
    (("result", "boolean"),),
    _create_tag,
)
REPLACE_TAG = Procedure(
    "replace_tag",
    "Point an existing tag at another snapshot (default: the latest), with a new retention",
    (
        Param("table", "STRING", True),
        Param("tag", "STRING", True),
        Param("snapshot", "BIGINT"),
        Param("time_retained", "STRING"),
        Param("create_if_missing", "BOOLEAN"),
    ),
    (("result", "boolean"),),
    _replace_tag,
)
RENAME_TAG = Procedure(
    "rename_tag",
    "Rename a tag",
    (Param("table", "STRING", True), Param("tag", "STRING", True), Param("target_tag", "STRING", True)),
    (("result", "boolean"),),
    _rename_tag,
)
CREATE_TAG_FROM_TIMESTAMP = Procedure(
    "create_tag_from_timestamp",
    "Tag the first snapshot (or tagged snapshot) committed at or after 'timestamp' (epoch millis)",
    (
        Param("table", "STRING", True),
        Param("tag", "STRING", True),
        Param("timestamp", "BIGINT"),
        Param("time_retained", "STRING"),
    ),
    (("tagName", "string"), ("snapshot", "long"), ("commit_time", "long"), ("watermark", "string")),
    _create_tag_from_timestamp,
)
ROLLBACK_TO_TIMESTAMP = Procedure(
    "rollback_to_timestamp",
    "Roll back to the newest snapshot committed at or before 'timestamp' (epoch millis)",
    (Param("table", "STRING", True), Param("timestamp", "BIGINT", True)),
    (("result", "string"),),
    _rollback_to_timestamp,
)
EXPIRE_TAGS = Procedure(
    "expire_tags",
    "Delete tags whose 'time_retained' has passed, and with 'older_than' those created before it",
    (Param("table", "STRING", True), Param("older_than", "STRING")),
    (("expired_tags", "string"),),
    _expire_tags,
)
DELETE_TAG = Procedure(
    "delete_tag",
    "Delete tags (comma-separated) and the files only they referenced",
    (Param("table", "STRING", True), Param("tag", "STRING", True), Param("if_exists", "BOOLEAN")),
    (("result", "boolean"),),
    _delete_tag,
)
ROLLBACK = Procedure(
    "rollback",
    "Make a snapshot id or tag the latest again, deleting newer snapshots",
    (
        Param("table", "STRING", True),
        Param("version", "STRING"),
        Param("snapshot", "BIGINT"),
        Param("tag", "STRING"),
    ),
    (("previous_snapshot_id", "long"), ("current_snapshot_id", "long")),
    _rollback,
)
ROLLBACK_TO_WATERMARK = Procedure(
    "rollback_to_watermark",
    "Roll back to the newest snapshot whose watermark is at most 'watermark'",
    (Param("table", "STRING", True), Param("watermark", "BIGINT", True)),
    (("result", "string"),),
    _rollback_to_watermark,
)
CREATE_BRANCH = Procedure(
    "create_branch",
    "Create a branch: from 'tag', or empty with the latest schema; 'ignoreIfExists' ('true') skips an existing one",
    (
        Param("table", "STRING", True),
        Param("branch", "STRING", True),
        Param("tag", "STRING"),
        Param("ignoreIfExists", "STRING"),
    ),
    (("result", "boolean"),),
    _create_branch,
)
DELETE_BRANCH = Procedure(
    "delete_branch",
    "Delete branches (comma-separated); their data files stay until remove_orphan_files",
    (Param("table", "STRING", True), Param("branch", "STRING", True)),
    (("result", "boolean"),),
    _delete_branch,
)
RENAME_BRANCH = Procedure(
    "rename_branch",
    "Rename a branch",
    (
        Param("table", "STRING", True),
        Param("from_branch", "STRING", True),
        Param("to_branch", "STRING", True),
    ),
    (("result", "boolean"),),
    _rename_branch,
)
FAST_FORWARD = Procedure(
    "fast_forward",
    "Make the table's main branch the state of 'branch' (its snapshots, schemas and tags replace main's newer ones)",
    (Param("table", "STRING", True), Param("branch", "STRING", True)),
    (("result", "boolean"),),
    _fast_forward,
)
RESET_CONSUMER = Procedure(
    "reset_consumer",
    "Set a consumer's next snapshot ('nextSnapshotId', which must exist); without it, delete the consumer",
    (Param("table", "STRING", True), Param("consumerId", "STRING", True), Param("nextSnapshotId", "BIGINT")),
    (("result", "boolean"),),
    _reset_consumer,
)
CLEAR_CONSUMERS = Procedure(
    "clear_consumers",
    "Delete the consumers whose id matches 'includingConsumers' (default: all) and not 'excludingConsumers'",
    (Param("table", "STRING", True), Param("includingConsumers", "STRING"), Param("excludingConsumers", "STRING")),
    (("result", "boolean"),),
    _clear_consumers,
)
TRIGGER_TAG_AUTOMATIC_CREATION = Procedure(
    "trigger_tag_automatic_creation",
    "Create the automatic tags now due ('tag.automatic-creation') and expire tags past their retention",
    (Param("table", "STRING", True),),
    (("result", "boolean"),),
    _trigger_tag_automatic_creation,
)
PURGE_FILES = Procedure(
    "purge_files",
    "Empty the table: rows, tags, changelogs, old snapshots and unused files (the schema stays)",
    (Param("table", "STRING", True),),
    (("result", "string"),),
    _purge_files,
)
REMOVE_UNEXISTING_FILES = Procedure(
    "remove_unexisting_files",
    "Remove the entries of data files storage no longer holds (their rows are lost); 'dry_run' only lists them",
    (Param("table", "STRING", True), Param("dry_run", "BOOLEAN"), Param("parallelism", "INT")),
    (("fileName", "string"),),
    _remove_unexisting_files,
)
MARK_PARTITION_DONE = Procedure(
    "mark_partition_done",
    "Run 'partition.mark-done-action' (success-file, done-partition, mark-event) for 'k1=v1,k2=v2;...' partitions",
    (Param("table", "STRING", True), Param("partitions", "STRING", True)),
    (("result", "boolean"),),
    _mark_partition_done,
)
REMOVE_ORPHAN_FILES = Procedure(
    "remove_orphan_files",
    "Delete files no snapshot, tag or changelog uses, older than 'older_than' (default: 1 day)",
    (Param("table", "STRING", True), Param("older_than", "STRING"), Param("dry_run", "BOOLEAN")),
    (("deletedFileCount", "long"), ("deletedFileTotalLenInBytes", "long")),
    _remove_orphan_files,
)
REPAIR = Procedure(
    "repair",
    "Re-register in the Hive Metastore the tables and partitions storage holds ('db', 'db.t'; '': all)",
    (Param("database_or_table", "STRING", True),),
    (("result", "boolean"),),
    _repair,
)
EXPIRE_PARTITIONS = Procedure(
    "expire_partitions",
    "Drop partitions whose time value is older than 'expiration_time' (values-time strategy)",
    (
        Param("table", "STRING", True),
        Param("expiration_time", "STRING"),
        Param("timestamp_formatter", "STRING"),
        Param("timestamp_pattern", "STRING"),
        Param("expire_strategy", "STRING"),
        Param("max_expires", "INT"),
    ),
    (("expired_partitions", "string"),),
    _expire_partitions,
)

# Spark's ANALYZE TABLE statement on a stratalake table (the shim's AnalyzeStatements rule calls
# it); not listed among the procedures, as Paimon has no such procedure.
ANALYZE = Procedure(
    "analyze",
    "ANALYZE TABLE: commit the statistics of the latest snapshot (columns: a JSON list of names)",
    (Param("table", "STRING", True), Param("columns", "STRING"), Param("all_columns", "BOOLEAN")),
    (),
    _analyze,
)

PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        COMPACT,
        COMPACT_DATABASE,
        EXPIRE_SNAPSHOTS,
        CREATE_TAG,
        REPLACE_TAG,
        RENAME_TAG,
        CREATE_TAG_FROM_TIMESTAMP,
        DELETE_TAG,
        EXPIRE_TAGS,
        ROLLBACK,
        ROLLBACK_TO_TIMESTAMP,
        ROLLBACK_TO_WATERMARK,
        RESET_CONSUMER,
        CLEAR_CONSUMERS,
        CREATE_BRANCH,
        DELETE_BRANCH,
        RENAME_BRANCH,
        FAST_FORWARD,
        TRIGGER_TAG_AUTOMATIC_CREATION,
        PURGE_FILES,
        REMOVE_UNEXISTING_FILES,
        MARK_PARTITION_DONE,
        REMOVE_ORPHAN_FILES,
        EXPIRE_PARTITIONS,
        REPAIR,
    )
}


_INTERNAL: dict[str, Procedure] = {ANALYZE.name: ANALYZE}


def lookup(namespace: Sequence[str], name: str) -> Procedure:
    proc = PROCEDURES.get(name.lower()) or _INTERNAL.get(name.lower())
    if list(namespace) != [NAMESPACE] or proc is None:
        raise UnsupportedError(
            f"unknown procedure {'.'.join([*namespace, name])}; procedures are "
            f"{', '.join(f'{NAMESPACE}.{n}' for n in PROCEDURES)}"
        )
    return proc


def call(
    cat: Catalog,
    name: str,
    args: Mapping[str, Any],
    state: Mapping[str, Any],
    current_database: str = "default",
) -> Answer:
    """Runs procedure ``name``; a bare table name in ``args`` is one of ``current_database``."""
    args = dict(args)
    if args.get("table") is not None:
        args["table"] = ".".join(table_identifier(args["table"], current_database))
    return lookup([NAMESPACE], name).run(cat, args, state)


# ---- the compact job, run through the data source ---------------------------------------------


class CompactJobReader(DataSourceReader):
    """Plans one compaction task per bucket on the driver; each Spark task compacts one bucket and
    returns its attempt's uuid and commit message pickled (nothing is visible until the procedure
    commits)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def _table(self) -> Table:
        return load_table(self.options).copy(json.loads(self.options.get(JOB_TABLE_OPTIONS) or "{}"))

    def partitions(self) -> list[InputPartition]:
        table = self._table()
        specs = json.loads(self.options.get(JOB_PARTITIONS) or "[]")
        where = self.options.get(JOB_WHERE)
        selected = None
        if where:
            selected = parse_partition_filter(where, table)
        return [InputPartition(pickle.dumps(t)) for t in plan(table, specs or None, selected)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return
        use_worker_allocator()
        task = pickle.loads(partition.value)
        full = self.options.get(JOB_FULL, "true") == "true"
        table = self._table()
        staging = self.options[job_attempts.STAGING_OPTION]
        running = f"{staging}/{_JOB_RUNNING}"
        if job_attempts.job_ended(table, staging, running):
            raise job_attempts.ended_error(table, staging)
        # Recorded before anything is written: the procedure deletes the files of every attempt
        # whose result it does not commit (a retry's, a failed job's).
        namer = FileNamer("data")
        directory = bucket_dir(table.location, table.partition_codec.path(task.partition_values), task.bucket)
        record = job_attempts.record_attempt(table, staging, namer.uuid, directory)
        try:
            message = run_task(table, task, full, namer)
        except BaseException as e:
            job_attempts.clean_up_if_ended(table, staging, running, directory, record, namer.uuid, e)
            raise
        job_attempts.clean_up_if_ended(table, staging, running, directory, record, namer.uuid, None)
        if message is None:  # nothing written: nothing for the procedure to clean up either
            table.file_io.delete_quietly(record)
            return
        result = pickle.dumps((namer.uuid, message))
        yield pa.RecordBatch.from_pydict({"result": pa.array([result], pa.binary())})
