"""Worker processes of the reliability tests, and the invariants they check.

Run as ``python -m tests.reliability.workload <role> <json-config>`` from the repository root.
Every role appends JSON lines to its own log file (flushed and fsynced, so that a killed process
still leaves what it had committed) and stops after a bounded number of iterations or seconds.

The data model makes a partial commit visible to any reader:

* commit ``c`` of writer ``w`` writes ``rows`` data rows with new keys ``w * 10**7 + c * 1000 + i``,
  all with ``tag = "w<w>c<c>"`` and ``cnt = rows``: a snapshot holds all of them or none;
* and overwrites the writer's *state row* (key ``-(w + 1)``, ``cnt = -1``) with ``commit = c``: in
  any snapshot it names the writer's newest visible commit, so merge order is checked as well;
* writer ``w`` commits 0, 1, 2, ... in order, so the visible commits of ``w`` are always ``0..m``.

Writers use disjoint keys: Paimon's contract is one writer per bucket *for a given key*; the
second of two concurrent writers of the same key in one bucket is refused at commit with
``CommitConflictError`` (see RELIABILITY.md). Their buckets and key ranges do overlap (the state
rows), so these tests also show that the check raises no false conflicts.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import stratalake
from stratalake.exceptions import CommitConflictError, SnapshotNotFoundError, StrataLakeError
from stratalake.table import Table

ROOT = Path(__file__).resolve().parents[2]
TABLE = "db.t"
SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("writer", pa.int32()),
        ("commit", pa.int32()),
        ("tag", pa.string()),
        ("cnt", pa.int32()),
        ("payload", pa.string()),
    ]
)
KEY_SPAN = 10**7


# ---------------------------------------------------------------------------------------------- table
def create_table(warehouse: str, catalog_options: Mapping[str, str] | None = None, **options: str) -> Table:
    cat = stratalake.Catalog(warehouse, dict(catalog_options or {}))
    if not cat.database_exists("db"):
        cat.create_database("db")
    opts = {"bucket": "2", "commit.max-retries": "200", **options}
    return cat.create_table(TABLE, schema=SCHEMA, primary_key=["k"], options=opts)


def open_table(warehouse: str, catalog_options: Mapping[str, str] | None = None) -> Table:
    return stratalake.Catalog(warehouse, dict(catalog_options or {})).get_table(TABLE)


def batch(writer: int, commit: int, rows: int, payload_bytes: int = 16) -> pa.Table:
    """One commit's rows: ``rows`` new keys tagged alike, plus the writer's state row."""
    keys = [writer * KEY_SPAN + commit * 1000 + i for i in range(rows)] + [-(writer + 1)]
    tag = f"w{writer}c{commit}"
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            "writer": pa.array([writer] * (rows + 1), pa.int32()),
            "commit": pa.array([commit] * (rows + 1), pa.int32()),
            "tag": pa.array([tag] * (rows + 1)),
            "cnt": pa.array([rows] * rows + [-1], pa.int32()),
            "payload": pa.array(["x" * payload_bytes] * (rows + 1)),
        },
        schema=SCHEMA,
    )


def check_rows(rows: pa.Table) -> dict[int, int]:
    """Check a snapshot's rows; returns each writer's newest visible commit (-1: none).

    Raises AssertionError naming the first violated invariant.
    """
    data = rows.filter(pc.greater_equal(rows.column("cnt"), 0))
    state = rows.filter(pc.equal(rows.column("cnt"), -1))
    keys = rows.column("k")
    assert keys.null_count == 0 and len(pc.unique(keys)) == rows.num_rows, "duplicate primary keys in a read"
    visible: dict[int, set[int]] = defaultdict(set)
    by_tag = data.group_by(["tag", "writer", "commit", "cnt"]).aggregate([("k", "count")])
    for r in by_tag.to_pylist():
        assert r["k_count"] == r["cnt"], (
            f"partial commit visible: {r['tag']} has {r['k_count']}/{r['cnt']} rows"
        )
        assert r["commit"] not in visible[r["writer"]], f"commit {r['tag']} appears with two row counts"
        visible[r["writer"]].add(r["commit"])
    newest: dict[int, int] = {}
    for w, commits in visible.items():
        m = max(commits)
        assert commits == set(range(m + 1)), f"writer {w}: visible commits {sorted(commits)} have a gap"
        newest[w] = m
    for r in state.to_pylist():
        w = r["writer"]
        assert r["k"] == -(w + 1), f"state row {r} has the wrong key"
        assert r["commit"] == newest.get(w, -1), (
            f"writer {w}: state row says commit {r['commit']} but commits 0..{newest.get(w, -1)} are visible "
            "(merge order wrong or partial commit)"
        )
    assert set(newest) == {r["writer"] for r in state.to_pylist()}, "a writer's state row is missing"
    return newest


def live_files_unique(t: Table, snapshot_id: int | None = None) -> None:
    """No data file is live twice (an ADD committed twice would double its rows)."""
    snap = t.snapshot(snapshot_id) if snapshot_id is not None else t.latest_snapshot()
    if snap is None:
        return
    mio = t.manifest_io
    metas = mio.read_list(snap.base_manifest_list) + mio.read_list(snap.delta_manifest_list)
    balance: dict[tuple[bytes, int, str], int] = defaultdict(int)
    for m in metas:
        for e in mio.read_entries(m.file_name):
            balance[e.identifier()] += 1 if e.kind.name == "ADD" else -1
    bad = {k[2]: v for k, v in balance.items() if v not in (0, 1)}
    assert not bad, f"files added more often than deleted: {bad}"


# ---------------------------------------------------------------------------------------------- logging
class Log:
    def __init__(self, path: str) -> None:
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115  (kept open for the process's life)

    def __call__(self, **record: Any) -> None:
        self._f.write(json.dumps(record) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # the last line of a killed process may be cut short
    return out


def _error(log: Log, what: str, e: BaseException, **extra: Any) -> None:
    log(
        event="error",
        what=what,
        type=type(e).__name__,
        message=str(e)[:2000],
        tb=traceback.format_exc(),
        **extra,
    )


def _stopped(cfg: Mapping[str, Any], started: float) -> bool:
    stop = cfg.get("stop_file")
    return time.monotonic() - started > cfg.get("max_seconds", 60) or bool(stop and os.path.exists(stop))


def _snapshot_gone(t: Table, snapshot_id: int) -> bool:
    return not t.file_io.exists(t.snapshot_manager.snapshot_path(snapshot_id))


# ---------------------------------------------------------------------------------------------- roles
def run_writer(cfg: Mapping[str, Any], log: Log) -> int:
    """Commit ``commits`` batches in order; a conflict retries the same batch (bounded)."""
    t = open_table(cfg["warehouse"], cfg.get("catalog_options"))
    w, started = int(cfg["writer"]), time.monotonic()
    rng = random.Random(cfg.get("seed", w))
    for c in range(int(cfg.get("first_commit", 0)), int(cfg["commits"])):
        data = batch(w, c, int(cfg.get("rows", 20)))
        for attempt in range(10):
            log(event="begin", writer=w, commit=c, attempt=attempt)
            try:
                sid = t.write(data)
            except CommitConflictError as e:
                log(event="conflict", writer=w, commit=c, message=str(e))
                continue
            except (StrataLakeError, OSError) as e:
                _error(log, "write", e, writer=w, commit=c)
                return 3
            log(event="ok", writer=w, commit=c, snapshot=sid)
            break
        else:
            log(event="gave_up", writer=w, commit=c)
            return 4
        if time.monotonic() - started > cfg.get("max_seconds", 60):
            log(event="timeout", writer=w, commit=c)
            return 5
        if cfg.get("compact_every") and rng.random() < 1 / int(cfg["compact_every"]):
            _compact_once(t, log, rng)
    return 0


def _compact_once(t: Table, log: Log, rng: random.Random) -> None:
    planned = t.snapshot_manager.latest_snapshot_id()
    try:
        sid = t.compact(full=rng.random() < 0.5)
        log(event="compacted", snapshot=sid)
    except CommitConflictError as e:
        log(event="compact_conflict", message=str(e))
    except (StrataLakeError, OSError) as e:
        if planned is not None and _snapshot_gone(t, planned):
            # Its input files were compacted away and expired meanwhile: a stale plan, not a bug.
            log(event="compact_stale", type=type(e).__name__, message=str(e)[:500])
        else:
            _error(log, "compact", e)


def run_compactor(cfg: Mapping[str, Any], log: Log) -> int:
    t = open_table(cfg["warehouse"], cfg.get("catalog_options"))
    rng, started = random.Random(cfg.get("seed", 0)), time.monotonic()
    for _ in range(int(cfg.get("iterations", 1000))):
        if _stopped(cfg, started):
            break
        _compact_once(t, log, rng)
        time.sleep(cfg.get("pause", 0.05))
    return 0


def run_expirer(cfg: Mapping[str, Any], log: Log) -> int:
    t = open_table(cfg["warehouse"], cfg.get("catalog_options"))
    started = time.monotonic()
    for _ in range(int(cfg.get("iterations", 1000))):
        if _stopped(cfg, started):
            break
        try:
            n = t.expire_snapshots(
                retain_max=int(cfg.get("retain_max", 3)), retain_min=1, older_than_ms=int(time.time() * 1000)
            )
            log(event="expired", count=n)
        except (StrataLakeError, OSError) as e:
            _error(log, "expire", e)
        time.sleep(cfg.get("pause", 0.05))
    return 0


def run_reader(cfg: Mapping[str, Any], log: Log) -> int:
    """Read the latest snapshot again and again and check every invariant."""
    t = open_table(cfg["warehouse"], cfg.get("catalog_options"))
    started = time.monotonic()
    previous: dict[int, int] = {}
    previous_sid = 0
    for _ in range(int(cfg.get("iterations", 10_000))):
        if _stopped(cfg, started):
            break
        sid = t.snapshot_manager.latest_snapshot_id()
        if sid is None:
            time.sleep(0.02)
            continue
        try:
            rows = t.read(snapshot_id=sid)
        except (StrataLakeError, OSError) as e:
            if _snapshot_gone(t, sid):
                log(event="expired_while_reading", snapshot=sid, type=type(e).__name__)
                continue
            _error(log, "read", e, snapshot=sid)
            continue
        try:
            newest = check_rows(rows)
            assert sid >= previous_sid, f"latest snapshot went back from {previous_sid} to {sid}"
            for w, m in previous.items():
                assert newest.get(w, -1) >= m, f"writer {w}: commit {m} vanished in snapshot {sid}"
        except AssertionError as e:
            log(event="violation", snapshot=sid, message=str(e))
            continue
        previous, previous_sid = newest, sid
        log(event="read", snapshot=sid, rows=rows.num_rows, newest=newest)
    return 0


# ---------------------------------------------------------------------------------------------- crashes
CRASH_KINDS = ("data", "manifest", "snapshot", "hint", "delete")


def install_crash_hook(spec: str) -> None:
    """Make this process die (``os._exit``, as abrupt as SIGKILL) at a chosen file operation.

    ``spec`` is ``<kind>:<nth>:<mode>``: ``kind`` one of :data:`CRASH_KINDS`, ``nth`` counts
    operations of that kind from 1, ``mode`` is ``before`` (the operation never happens),
    ``partial`` (half of the bytes land: a torn data file or temp file) or ``after`` (the operation
    completed, the next step never runs).
    """
    from stratalake.io import LocalFileIO

    kind, nth_text, mode = spec.split(":")
    nth, counter = int(nth_text), {"n": 0}

    def due(k: str) -> bool:
        if k != kind:
            return False
        counter["n"] += 1
        return counter["n"] == nth

    def die() -> None:
        sys.stdout.flush()
        os._exit(86)

    real_stream, real_write, real_create, real_delete = (
        LocalFileIO.open_output_stream,
        LocalFileIO.write_bytes,
        LocalFileIO.try_create_atomic,
        LocalFileIO.delete_quietly,
    )

    def open_output_stream(self: LocalFileIO, path: str) -> Any:
        if not due("data"):
            return real_stream(self, path)
        if mode == "before":
            die()
        stream = real_stream(self, path)
        if mode == "partial":
            stream.write(b"PAR1\x00\x01")  # a torn Parquet file under its final name
            stream.flush()
            die()
        return _DieOnClose(stream, die)

    def write_bytes(self: LocalFileIO, path: str, data: bytes) -> None:
        k = "hint" if path.rsplit("/", 1)[-1] in ("LATEST", "EARLIEST") else "manifest"
        if not due(k):
            return real_write(self, path, data)
        if mode == "before":
            die()
        if mode == "partial":
            self._write_temp(self.to_fs_path(path), data[: len(data) // 2])
            die()
        real_write(self, path, data)
        die()

    def try_create_atomic(
        self: LocalFileIO, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        if "/snapshot/" not in path or not due("snapshot"):
            return real_create(self, path, data, precondition)
        if mode == "before":
            die()
        if mode == "partial":
            self._write_temp(self.to_fs_path(path), data)  # temp written, never linked
            die()
        real_create(self, path, data, precondition)
        die()
        return True  # unreachable

    def delete_quietly(self: LocalFileIO, path: str) -> bool:
        if not due("delete"):
            return real_delete(self, path)
        if mode != "after":
            die()
        real_delete(self, path)
        die()
        return True  # unreachable

    LocalFileIO.open_output_stream = open_output_stream  # type: ignore[method-assign]
    LocalFileIO.write_bytes = write_bytes  # type: ignore[method-assign]
    LocalFileIO.try_create_atomic = try_create_atomic  # type: ignore[method-assign]
    LocalFileIO.delete_quietly = delete_quietly  # type: ignore[method-assign]


class _DieOnClose:
    """A stream proxy that lets the whole file be written, then dies before the writer returns."""

    def __init__(self, stream: Any, die: Callable[[], None]) -> None:
        self._stream, self._die = stream, die

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> Any:
        return self._stream.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._stream.__exit__(*exc)
        self._die()


def run_crash_writer(cfg: Mapping[str, Any], log: Log) -> int:
    """Writes, compacts and expires at random; dies where the crash hook says (or gets SIGKILLed)."""
    if cfg.get("crash"):
        install_crash_hook(cfg["crash"])
    t = open_table(cfg["warehouse"], cfg.get("catalog_options"))
    w, rng = int(cfg["writer"]), random.Random(cfg.get("seed", 0))
    c = 0
    for _ in range(int(cfg["commits"]) * 2):
        if c >= int(cfg["commits"]):
            break
        op = rng.choices(["write", "compact", "expire"], weights=[6, 2, 2])[0]
        if op == "compact":
            log(event="begin_compact")
            with contextlib.suppress(CommitConflictError):
                t.compact(full=rng.random() < 0.5)
            continue
        if op == "expire":
            log(event="begin_expire")
            t.expire_snapshots(retain_max=3, retain_min=1, older_than_ms=int(time.time() * 1000))
            continue
        log(event="begin", writer=w, commit=c)
        sid = t.write(batch(w, c, int(cfg.get("rows", 10))))
        log(event="ok", writer=w, commit=c, snapshot=sid)
        c += 1
    return 0


ROLES: dict[str, Callable[[Mapping[str, Any], Log], int]] = {
    "writer": run_writer,
    "compactor": run_compactor,
    "expirer": run_expirer,
    "reader": run_reader,
    "crash_writer": run_crash_writer,
}


def main(argv: list[str]) -> int:
    role, cfg = argv[0], json.loads(argv[1])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    log = Log(cfg["log"])
    try:
        return ROLES[role](cfg, log)
    except SnapshotNotFoundError as e:
        _error(log, role, e)
        return 2
    except BaseException as e:
        _error(log, role, e)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
