"""Workload 6 - bounded memory (issue 14): merge-on-read and full compaction of one big bucket.

One bucket holds 10M written rows (``--quick``: 1M) in 5 sorted runs: a load of 60% of the rows,
then 4 upserts of 10% each (half updates, half new keys), written with ``write-only`` so nothing
compacts. Each measurement runs in a fresh process:

- ``streaming read``: ``TableRead.read_split`` of the bucket's split, consuming its batches (the
  k-way streaming merge of :mod:`stratalake.lsm.merge_reader`);
- ``in-memory read``: the pre-issue-14 path in the same run, for the ratio: read every file whole,
  concatenate, ``merge_kv``, drop retractions;
- ``full compaction``: ``Table.compact(full=True)`` of a copy of the table (streamed into rolling
  files at ``target-file-size``).

Goals: peak RSS growth <= 512 MiB for the streaming read and for the compaction; streaming read time
within 1.2x of the in-memory merge. Run alone: ``.venv/bin/python -m bench.streaming_merge [--quick]``
"""

from __future__ import annotations

import shutil
from typing import Any

import pyarrow as pa

from bench.common import Goal, cli, cpu_med, med, ratio_goal, save_workload
from bench.config import Config
from bench.data import Commits, expected_digest
from bench.harness import WORK_DIR, repeat_many, run_worker

NAME = "streaming_merge"
MEMORY_LIMIT_MIB = 512
#: One bucket, no compaction while building; one flush, so one level-0 file, per commit (5 sorted
#: runs). ``target-file-size`` keeps its default: the compaction rolls its output at 128 MiB.
BUILD_OPTIONS = {"bucket": "1", "write-only": "true", "write-buffer-size": "4 gb"}


def commits(cfg: Config) -> Commits:
    total = 10_000_000 // cfg.scale
    return Commits(load_rows=total * 6 // 10, upsert_rows=total // 10, upserts=4)


def _location(c: Commits) -> str:
    return str(WORK_DIR / "stratalake" / f"streaming-{c.key()}")


def _table(location: str) -> Any:
    import stratalake

    return stratalake.Catalog(location).get_table("db.t")


def op_build(spec: dict[str, Any], rec: Any) -> None:
    from bench.data import generate
    from bench.peers import PEERS

    h = PEERS["stratalake"]().create(spec["location"], BUILD_OPTIONS)
    with rec.phase("build"):
        for t in generate(Commits.from_json(spec["commits"])):
            h.write(t)
    (split,) = _table(spec["location"]).new_scan().plan()
    rec.info["files"] = len(split.files)
    rec.info["rows"] = split.row_count


def _warm_up(location: str) -> None:
    """Imports and one-off setup, outside the timed part: merge a tiny two-run table."""
    from bench.data import tiny
    from bench.peers import PEERS

    h = PEERS["stratalake"]().create(location + ".warm", BUILD_OPTIONS)
    h.write(tiny())
    h.write(tiny(seed=8))
    t = _table(location + ".warm")
    for split in t.new_scan().plan():
        for _ in t.new_read().read_split(split):
            pass


def op_streaming(spec: dict[str, Any], rec: Any) -> None:
    import pyarrow.compute as pc

    _warm_up(spec["location"])
    t = _table(spec["location"])
    mode = spec["mode"]
    if mode == "compact":
        copy = f"{spec['location']}.compact"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(spec["location"], copy)
        t = _table(copy)
        with rec.phase("compact"):
            t.compact(full=True)
        (split,) = t.new_scan().plan()
        rec.info["files_after"] = len(split.files)
        rec.info["digest"] = {"rows": split.row_count}
        shutil.rmtree(copy, ignore_errors=True)
        return
    (split,) = t.new_scan().plan()
    read = t.new_read()
    rows = sum_n = sum_v = 0
    with rec.phase("read"):
        if mode == "stream":
            for b in read.read_split(split):
                rows += b.num_rows
                sum_n += pc.sum(b.column("n")).as_py() or 0
                sum_v += pc.sum(pc.utf8_length(b.column("v"))).as_py() or 0
        else:
            out = _in_memory_read(t, split)
            rows = out.num_rows
            sum_n = pc.sum(out.column("n")).as_py() or 0
            sum_v = pc.sum(pc.utf8_length(out.column("v"))).as_py() or 0
    rec.info["digest"] = {"rows": rows, "sum_n": int(sum_n), "sum_v_len": int(sum_v)}
    want = spec.get("expect")
    if want is not None and rec.info["digest"] != want:
        raise AssertionError(f"{mode} read a wrong result: got {rec.info['digest']}, expected {want}")


def _in_memory_read(t: Any, split: Any) -> pa.Table:
    """The merged read as it was before streaming: every file whole, one concat, one merge."""
    from stratalake.lsm.data_file import bucket_dir, read_kv_file
    from stratalake.merge import drop_retracted, merge_kv

    schema = t.schema()
    directory = bucket_dir(t.location, t.partition_codec.path(split.partition_values), split.bucket)
    parts = [
        read_kv_file(t.file_io, f"{directory}/{f.file_name}", t.file_schema(f.schema_id), schema)
        for f in split.files
    ]
    kv = drop_retracted(merge_kv(pa.concat_tables(parts), t.merge_context))
    return kv.select([f.name for f in schema.fields])


def run(cfg: Config) -> dict[str, Any]:
    c = commits(cfg)
    location = _location(c)
    print(f"== {NAME}: one bucket, {c.total_rows:,} written rows in {c.runs} sorted runs", flush=True)
    s = run_worker(
        {"op": "streaming_build", "peer": "stratalake", "commits": c.to_json(), "location": location}
    )
    print(f"    build: {s.phases['build']:.1f}s {s.info}", flush=True)
    expect = expected_digest(c)
    reps = 2 if cfg.quick else 3
    base = {"op": "streaming", "peer": "stratalake", "location": location}
    stream, in_memory = repeat_many(
        [{**base, "mode": "stream", "expect": expect}, {**base, "mode": "in_memory", "expect": expect}], reps
    )
    (compact,) = repeat_many([{**base, "mode": "compact"}], 1 if cfg.quick else 2)
    payload = {
        "rows": c.total_rows,
        "live_keys": c.live_keys,
        "runs": c.runs,
        "build": {"s": s.phases["build"], **s.info},
        "peers": {"streaming read": stream, "in-memory read": in_memory, "full compaction": compact},
    }
    save_workload(NAME, cfg, payload)
    return payload


def _growth_mib(summary: dict[str, Any] | None) -> float | None:
    if not summary or "op_rss_growth" not in summary:
        return None
    return float(summary["op_rss_growth"]["max"]) / 2**20


def _memory_goal(what: str, summary: dict[str, Any] | None) -> Goal:
    mib = _growth_mib(summary)
    target = f"<= {MEMORY_LIMIT_MIB} MiB"
    if mib is None:
        return Goal("6 memory", f"{what}: peak RSS growth", "-", target, "n/a", "not measured")
    status = "met" if mib <= MEMORY_LIMIT_MIB else "MISSED"
    return Goal("6 memory", f"{what}: peak RSS growth (max of reps)", f"{mib:.0f} MiB", target, status)


def goals(payload: dict[str, Any]) -> list[Goal]:
    peers = payload["peers"]
    stream, in_memory = peers.get("streaming read"), peers.get("in-memory read")
    rows = f"{payload['rows'] / 1e6:g}M rows, {payload['runs']} runs"
    return [
        _memory_goal(f"streaming read ({rows})", stream),
        _memory_goal(f"full compaction ({rows})", peers.get("full compaction")),
        ratio_goal(
            "6 memory",
            f"streaming read / in-memory merge read ({rows})",
            med(stream, "read"),
            med(in_memory, "read"),
            1.2,
            cpu=(cpu_med(stream, "read"), cpu_med(in_memory, "read")),
        ),
    ]


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    label = f"one bucket, {payload['rows']:,} rows in {payload['runs']} runs"
    return [
        (f"{label}: {name}", "stratalake", r if r and "phases" in r else None)
        for name, r in payload["peers"].items()
    ]


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} {g.note}")
