"""Run the benchmark workloads of issue #6 and append a section to BENCHMARKS.md.

    .venv/bin/python -m bench.run --quick          # sizes / 10, ~3 minutes (make bench-quick)
    .venv/bin/python -m bench.run                  # full sizes (make bench)
    .venv/bin/python -m bench.run --only core_write,core_read --no-append

Results: ``bench/results/[quick-]<workload>.json``; chart: ``bench/growth[-quick].png``; the markdown
section is also kept in ``bench/results/last-section.md``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import (
    cdc_cross_partition,
    core_read,
    core_write,
    growth,
    merge_engines,
    spark_scale,
    spark_sql,
    streaming_merge,
)
from bench.common import Goal, available_peers, location
from bench.config import TABLE_OPTIONS, Config
from bench.harness import REPO_DIR, RESULTS_DIR, WORK_DIR, MeasurementError, machine_info, run_worker

#: name -> module with run(cfg) -> payload, goals(payload), figures(payload). Add new workloads here.
WORKLOADS: dict[str, ModuleType] = {
    "core_write": core_write,
    "core_read": core_read,
    "growth": growth,
    "spark_sql": spark_sql,
    "merge_engines": merge_engines,
    "streaming_merge": streaming_merge,
    "spark_scale": spark_scale,
    "cdc_cross_partition": cdc_cross_partition,
}


def _profile_specs(cfg: Config) -> dict[str, dict[str, Any]]:
    big_rows, many_runs = cfg.growth_rows[-1], cfg.growth_runs[-1]
    return {
        "core_write": {
            "op": "write",
            "peer": "stratalake",
            "commits": cfg.core.to_json(),
            "location": location("stratalake", cfg.core) + ".profile",
            "options": TABLE_OPTIONS,
        },
        "core_read": {
            "op": "read",
            "peer": "stratalake",
            "commits": cfg.core.to_json(),
            "location": location("stratalake", cfg.core),
        },
        "growth_rows": {
            "op": "read",
            "peer": "stratalake",
            "commits": big_rows.to_json(),
            "location": location("stratalake", big_rows),
        },
        "growth_runs": {
            "op": "read",
            "peer": "stratalake",
            "commits": many_runs.to_json(),
            "location": location("stratalake", many_runs),
        },
    }


def profile_missed(cfg: Config, goals: list[Goal]) -> dict[str, Path]:
    keys = {g.profile_key for g in goals if g.status == "MISSED" and g.profile_key}
    specs = _profile_specs(cfg)
    out = {}
    for key in sorted(keys & set(specs)):
        path = RESULTS_DIR / f"{'quick-' if cfg.quick else ''}profile-{key}.json"
        print(f"== profiling stratalake for {key}", flush=True)
        try:
            run_worker({**specs[key], "profile": str(path)})
            out[key] = path
        except MeasurementError as e:
            print(f"  profile failed: {e}", flush=True)
    return out


def sizes_text(cfg: Config) -> str:
    c = cfg.core
    return (
        f"core: load {c.load_rows:,} + {c.upserts} x {c.upsert_rows:,} upserts ({c.live_keys:,} live keys, "
        f"{c.runs} runs/bucket, bucket=4), {cfg.write_reps} write reps, {cfg.read_reps} read reps "
        f"(+{cfg.read_warmups} warm-up); growth: runs {[x.runs for x in cfg.growth_runs]} over "
        f"{cfg.growth_runs[0].total_rows:,} rows, rows {[x.total_rows for x in cfg.growth_rows]} over 6 runs, "
        f"{cfg.growth_reps} reps; spark: insert {cfg.spark_rows:,} rows, {cfg.spark_reps} reps; "
        f"merge engines: {cfg.fold_rows:,} rows; streaming merge: one bucket, "
        f"{streaming_merge.commits(cfg).total_rows:,} rows in 5 runs; spark scale: "
        f"{spark_scale.rows_for(cfg):,} rows, 8 buckets x 4 partitions, one run; cdc cross-partition: "
        f"{cdc_cross_partition.sizes(cfg)}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes / 10 and fewer repetitions")
    p.add_argument("--only", help=f"comma-separated workloads among {','.join(WORKLOADS)}")
    p.add_argument("--peers", help="comma-separated subset of stratalake,pypaimon-rust,pypaimon,pyarrow")
    p.add_argument("--no-append", action="store_true", help="do not append to BENCHMARKS.md")
    p.add_argument("--no-profile", action="store_true", help="do not profile stratalake on missed goals")
    args = p.parse_args(argv)

    cfg = Config.for_mode(args.quick)
    if args.peers:
        cfg.peers = [x for x in args.peers.split(",") if x]
        cfg.growth_peers = [x for x in cfg.growth_peers if x in cfg.peers]
    names = [x for x in args.only.split(",") if x] if args.only else list(WORKLOADS)
    unknown = set(names) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose among {list(WORKLOADS)}")

    t0 = time.perf_counter()
    # Tables written by earlier runs were made by older code: start clean (they stay after the run for
    # inspection; a full run leaves ~1.7 GB there).
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    machine = machine_info()
    print(
        f"machine: {machine['cores']} cores, {(machine['memory_bytes'] or 0) / 2**30:.1f} GiB; "
        f"packages: {machine['packages']}",
        flush=True,
    )
    _, skipped = available_peers(cfg.peers)
    goals: list[Goal] = []
    figures: list[tuple[str, str, dict[str, Any] | None]] = []
    chart = None
    for name in names:
        mod = WORKLOADS[name]
        t_w = time.perf_counter()
        payload = mod.run(cfg)
        print(f"  ({name} took {time.perf_counter() - t_w:.0f}s)", flush=True)
        goals += mod.goals(payload)
        figures += mod.figures(payload)
        if name == "growth" and payload.get("chart"):
            chart = str(Path(payload["chart"]).relative_to(REPO_DIR))
    profiles = {} if args.no_profile else profile_missed(cfg, goals)

    command = ".venv/bin/python -m bench.run " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    from bench.report import append, section, write_last

    text = section(
        quick=cfg.quick,
        command=command.strip(),
        machine=machine,
        goals=goals,
        figures=figures,
        chart=chart,
        sizes=sizes_text(cfg),
        profiles=profiles,
        skipped=skipped,
        elapsed_s=time.perf_counter() - t0,
        load_after=os.getloadavg(),
    )
    last = write_last(text)
    print("\n" + text)
    if not args.no_append:
        append(text)
        print(f"appended to {REPO_DIR / 'BENCHMARKS.md'} (also in {last})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
