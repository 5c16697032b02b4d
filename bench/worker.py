"""Subprocess entry point: ``python -m bench.worker '<json spec>'`` runs one measurement.

Ops (``spec["op"]``):

- ``write``: fresh table at ``spec["location"]``; times the load commit and each upsert commit.
- ``build``: the same writes, untimed except as a whole, then checks the layout (files per bucket); the
  table stays for ``read`` measurements.
- ``read``: times one merged read of a built table to an Arrow table and checks its digest.
- ``decode``: the decode floor of that read: pyarrow reads the same live data files of a built
  stratalake table (the schema's columns), with no merge at all, into one Arrow table.
- ``fold``: workload 5's merge-engine kernels (see ``bench/merge_engines.py``).
- ``spark``: workload 4, all statements in one Spark session (see ``bench/spark_sql.py``).
- ``streaming_build`` / ``streaming``: workload 6, one big bucket's streaming read, in-memory read
  and full compaction (see ``bench/streaming_merge.py``).

With ``spec["profile"]`` set, the timed part runs under cProfile and the top functions are written to
that path (profiles are separate runs: profiling distorts timings).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.harness import RESULT_MARKER


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak covers only what follows."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Recorder:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.phase_peak: dict[str, int] = {}
        self.baseline_rss = 0
        self.op_peak = 0
        self.info: dict[str, Any] = {}
        self.profiler: Any = None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        import gc

        gc.collect()
        rss = _status_kb("VmRSS")
        if not self.phases:
            self.baseline_rss = rss
        _reset_peak()
        if self.profiler is not None:
            self.profiler.enable()
        c0, t0 = _cpu(), time.perf_counter()
        yield
        t1, c1 = time.perf_counter(), _cpu()
        if self.profiler is not None:
            self.profiler.disable()
        peak = _status_kb("VmHWM")
        self.phases[name] = t1 - t0
        self.cpu[name] = c1 - c0
        self.phase_peak[name] = peak
        self.op_peak = max(self.op_peak, peak)


def _commits(spec: dict[str, Any]) -> Any:
    from bench.data import Commits

    return Commits.from_json(spec["commits"])


def _warm_up(peer: Any, spec: dict[str, Any]) -> None:
    """Write and read a tiny table in this process, so lazy imports and one-off setup are not timed."""
    from bench.data import tiny

    h = peer.create(spec["location"] + ".warm", spec.get("options", {}))
    h.write(tiny())
    h.write(tiny(seed=8))
    h.read()


def op_write(spec: dict[str, Any], rec: Recorder) -> None:
    from bench.data import generate
    from bench.peers import PEERS

    peer = PEERS[spec["peer"]]()
    commits = list(generate(_commits(spec)))
    _warm_up(peer, spec)
    h = peer.create(spec["location"], spec.get("options", {}))
    for i, t in enumerate(commits):
        with rec.phase("load" if i == 0 else f"upsert_{i}"):
            h.write(t)
    rec.info.update(peer.info())


def op_build(spec: dict[str, Any], rec: Recorder) -> None:
    from bench.data import generate
    from bench.peers import PEERS, runs_per_bucket

    peer = PEERS[spec["peer"]]()
    h = peer.create(spec["location"], spec.get("options", {}))
    with rec.phase("build"):
        for t in generate(_commits(spec)):
            h.write(t)
    if peer.paimon_layout:
        rec.info.update(runs_per_bucket(spec["location"]))
    _warm_up(peer, spec)  # leaves location.warm for the read op's warm-up
    rec.info.update(peer.info())


def op_read(spec: dict[str, Any], rec: Recorder) -> None:
    from bench.data import digest
    from bench.peers import PEERS

    peer = PEERS[spec["peer"]]()
    peer.open(spec["location"] + ".warm").read()
    h = peer.open(spec["location"])
    with rec.phase("read"):
        result = h.read()
    got = digest(result)
    rec.info["digest"] = got
    want = spec.get("expect")
    if want is not None and got != want:
        raise AssertionError(f"{spec['peer']} read a wrong result: got {got}, expected {want}")
    rec.info.update(peer.info())


def op_decode(spec: dict[str, Any], rec: Recorder) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import stratalake
    from bench.data import SCHEMA
    from bench.peers import TABLE

    # Listing the live files (the table's own metadata) is not part of the floor: not timed.
    files = stratalake.Catalog(spec["location"]).get_table(TABLE).system_table("files")
    paths = files.column("file_path").to_pylist()
    pq.read_table(paths[0], columns=SCHEMA.names)  # imports and one-off setup, untimed
    with rec.phase("read"):
        result = pa.concat_tables([pq.read_table(f, columns=SCHEMA.names) for f in paths])
    want = sum(files.column("record_count").to_pylist())
    if result.num_rows != want:
        raise AssertionError(f"decode floor read {result.num_rows} rows of {want}")
    rec.info.update({"files": len(paths), "rows": result.num_rows})


def _load(module: str, fn: str) -> Callable[[dict[str, Any], Recorder], None]:
    import importlib

    return getattr(importlib.import_module(module), fn)  # type: ignore[no-any-return]


OPS: dict[str, Callable[[dict[str, Any], Recorder], None]] = {
    "write": op_write,
    "build": op_build,
    "read": op_read,
    "decode": op_decode,
    "fold": lambda spec, rec: _load("bench.merge_engines", "op_fold")(spec, rec),
    "spark": lambda spec, rec: _load("bench.spark_sql", "op_spark")(spec, rec),
    "streaming_build": lambda spec, rec: _load("bench.streaming_merge", "op_build")(spec, rec),
    "streaming": lambda spec, rec: _load("bench.streaming_merge", "op_streaming")(spec, rec),
}


def _serial_thread_pools() -> None:
    """For profiles only: run thread-pool work inline, since cProfile sees only the calling thread."""
    import concurrent.futures as cf

    class InlineExecutor(cf.Executor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
            f: cf.Future[Any] = cf.Future()
            try:
                f.set_result(fn(*args, **kwargs))
            except BaseException as e:
                f.set_exception(e)
            return f

    cf.ThreadPoolExecutor = InlineExecutor  # type: ignore[misc,assignment]


def _write_profile(profiler: Any, path: str, top: int = 15) -> None:
    """Top functions by own time and by cumulative time, as JSON (the report prints them)."""
    import pstats

    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if "site-packages/" in file:
            file = file.split("site-packages/", 1)[1]
        elif file.startswith("/"):
            file = os.path.relpath(file)
        where = func if file == "~" else f"{file}:{line}({func})"
        rows.append({"function": where, "ncalls": ncalls, "tottime": tottime, "cumtime": cumtime})
    out = {
        "total_s": total,
        "by_tottime": sorted(rows, key=lambda r: -r["tottime"])[:top],
        "by_cumtime": sorted(rows, key=lambda r: -r["cumtime"])[:top],
    }
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def main() -> None:
    spec = json.loads(sys.argv[1])
    rec = Recorder()
    if spec.get("profile"):
        import cProfile

        _serial_thread_pools()
        rec.profiler = cProfile.Profile()
    OPS[spec["op"]](spec, rec)
    if rec.profiler is not None:
        _write_profile(rec.profiler, spec["profile"])
    result = {
        "phases": rec.phases,
        "cpu": rec.cpu,
        "op_peak_rss": rec.op_peak,
        "baseline_rss": rec.baseline_rss,
        "process_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "info": {**rec.info, "phase_peak_rss": rec.phase_peak, "pid": os.getpid()},
    }
    sys.stdout.flush()
    print(RESULT_MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
