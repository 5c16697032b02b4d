"""Runs issue 31's workloads for every system, one process each, back to back; writes one JSON.

    .venv/bin/python -m bench.spark_peers.run --peer-python .venv-peers-4.0/bin/python \\
        --jars .bench-peers/jars [--rows N | --quick] [--only stratalake,delta] [--report]

(``make bench-peers`` / ``make bench-peers-quick`` prepare the peers' venv and jars first.)
Systems: stratalake and Spark's Parquet source (with the clustered, sorted write) on this venv's
pyspark, then both loads again alternated in one process (``load-pairs``); Paimon's own Spark connector (when its jar, ``paimon-spark-*.jar``, is in ``--jars``:
``build_paimon.sh`` builds it from Paimon's released source), Delta, Iceberg and Spark's Parquet
source on the peers' pyspark. Results:
``bench/results/peers-<rows>.json``; ``--report`` also rewrites the latest-run section of
BENCHMARKS.md (``bench.spark_peers.report``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO_DIR, RESULTS_DIR, WORK_DIR

#: Paimon's Spark connector was refused by Maven Central for every artifact tried (2026-11-26);
#: kept here so the report says so. The connector is therefore built from Paimon's released source
#: tag (build_paimon.sh, ``make bench-peers PAIMON_SOURCE=...``) into the jars folder; without it
#: Paimon is not measured and the report says why.
PAIMON_TRIED = [
    "org.apache.paimon:paimon-spark-4.1_2.13:2.0.0",
    "org.apache.paimon:paimon-spark-4.0_2.13:1.3.1",
    "org.apache.paimon:paimon-spark-4.0_2.13:1.2.0",
    "org.apache.paimon:paimon-spark-4.0:1.3.1",
    "org.apache.paimon:paimon-spark-4.0:1.2.0",
    "org.apache.paimon:paimon-spark-3.5_2.13:1.3.1",
    "org.apache.paimon:paimon-spark-3.5:1.3.1",
    "org.apache.paimon:paimon-spark-common_2.13:1.3.1",
]


def _systems(peer_python: str, jar_dir: Path) -> list[dict[str, Any]]:
    jars = sorted(str(p.resolve()) for p in jar_dir.glob("*.jar"))
    delta = [j for j in jars if os.path.basename(j).startswith("delta-")]
    iceberg = [j for j in jars if os.path.basename(j).startswith("iceberg-")]
    paimon = [j for j in jars if os.path.basename(j).startswith("paimon-spark-")]
    return [
        {"key": "stratalake", "system": "stratalake", "python": sys.executable, "jars": []},
        *([{"key": "paimon", "system": "paimon", "python": peer_python, "jars": paimon}] if paimon else []),
        {
            "key": "parquet-own",
            "system": "parquet",
            "python": sys.executable,
            "jars": [],
            "sorted_floor": True,
        },
        # stratalake's load and the sorted floor again, alternated in one process: the load goal's
        # ratio, free of the minutes between the two processes above (workload.run_load_pairs)
        {"key": "load-pairs", "system": "load-pairs", "python": sys.executable, "jars": []},
        {"key": "delta", "system": "delta", "python": peer_python, "jars": delta},
        {"key": "iceberg", "system": "iceberg", "python": peer_python, "jars": iceberg},
        {"key": "parquet-peers", "system": "parquet", "python": peer_python, "jars": []},
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", required=True, help="python of the venv with the peers' pyspark")
    p.add_argument("--jars", required=True, help="folder with the peers' jars (prepare.sh)")
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--quick", action="store_true", help="200k rows (13 minutes here, 2-6 per system)")
    p.add_argument("--reps", type=int, default=7, help="runs of each read (median reported)")
    p.add_argument(
        "--only",
        help="comma-separated keys among stratalake,parquet-own,paimon,load-pairs,delta,iceberg,parquet-peers",
    )
    p.add_argument("--report", action="store_true", help="rewrite the latest-run section of BENCHMARKS.md")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error(f"--reps must be at least 1 (runs of each read), got {args.reps}")
    rows = 200_000 if args.quick else args.rows
    systems = _systems(args.peer_python, Path(args.jars))
    paimon_jars = sorted(Path(args.jars).glob("paimon-spark-*.jar"))
    if len(paimon_jars) > 1:
        p.error(f"more than one Paimon connector in {args.jars}: {', '.join(j.name for j in paimon_jars)}")
    if paimon_jars:
        # build_paimon.sh's note: the tag, commit and command the jar was built with
        built = Path(f"{paimon_jars[0]}.txt")
        paimon_note = built.read_text().strip() if built.exists() else paimon_jars[0].name
    else:
        paimon_note = (
            f"no paimon-spark-*.jar in {args.jars} (Maven Central does not serve Paimon's "
            "Spark connector here; `make bench-peers PAIMON_SOURCE=<Paimon git repository>` builds it "
            "from Paimon's released source tag with bench/spark_peers/build_paimon.sh)"
        )
        print(f"Paimon is not measured: {paimon_note}", flush=True)
    if args.only:
        keep = set(args.only.split(","))
        systems = [s for s in systems if s["key"] in keep]
    out_path = RESULTS_DIR / f"peers-{rows}.json"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out_path.read_text()) if out_path.exists() and args.only else {}
    results: dict[str, Any] = {
        **previous,
        "rows": rows,
        "reps": args.reps,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_DIR, capture_output=True, text=True
        ).stdout.strip(),
        "command": "make bench-peers" + (" (quick)" if args.quick else f" BENCH_PEERS_ARGS='--rows {rows}'"),
        "load_before": os.getloadavg(),
        "paimon_tried": PAIMON_TRIED,
        "paimon": paimon_note,
        "systems": previous.get("systems", {}),
    }
    for s in systems:
        print(f"== {s['key']}: {rows:,} rows ({s['python']})", flush=True)
        part = WORK_DIR / "peers" / f"{s['key']}.json"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.unlink(missing_ok=True)
        cmd = [
            s["python"], "-m", "bench.spark_peers.workload", s["system"], str(rows), str(part),
            "--jars", ",".join(s["jars"]), "--reps", str(args.reps), "--work", str(WORK_DIR / "peers" / s["key"]),
        ]  # fmt: skip
        if s.get("sorted_floor"):
            cmd.append("--sorted-floor")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO_DIR, env={**os.environ, "PYSPARK_PYTHON": s["python"]})
        took = time.perf_counter() - t0
        if proc.returncode != 0 or not part.exists():
            results["systems"][s["key"]] = {"error": f"exited {proc.returncode} after {took:.0f}s"}
        else:
            results["systems"][s["key"]] = {**json.loads(part.read_text()), "process_seconds": took}
        print(f"  ({s['key']} took {took:.0f}s)", flush=True)
    results["load_after"] = os.getloadavg()
    out_path.write_text(json.dumps(results, indent=1, default=str))
    print(f"results: {out_path}")
    from bench.spark_peers import report

    text = report.section(results)
    print(text)
    if args.report:
        report.update_benchmarks(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
