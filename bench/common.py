"""Pieces the workload scripts share: peer checks, builds of tables to read, goal rows."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.config import TABLE_OPTIONS, Config
from bench.data import Commits
from bench.harness import WORK_DIR, MeasurementError, repeat_many, run_worker

_builds: dict[tuple[str, str], dict[str, Any]] = {}


def available_peers(names: list[str]) -> tuple[list[str], dict[str, str]]:
    """Split peers into (runnable, {name: reason it is skipped})."""
    from bench.peers import PEERS

    ok, skipped = [], {}
    for name in names:
        reason = PEERS[name]().unavailable()
        if reason is None:
            ok.append(name)
        else:
            skipped[name] = reason
            print(f"  SKIP {name}: {reason}", flush=True)
    return ok, skipped


def location(peer: str, commits: Commits) -> str:
    return str(WORK_DIR / peer / commits.key())


def build(peer: str, commits: Commits) -> dict[str, Any]:
    """Write ``commits`` with ``peer`` once per process run (builds are not reused across runs: the
    code under test changes between runs)."""
    key = (peer, commits.key())
    if key not in _builds:
        spec = {
            "op": "build",
            "peer": peer,
            "commits": commits.to_json(),
            "location": location(peer, commits),
            "options": TABLE_OPTIONS,
        }
        s = run_worker(spec)
        info = {"build_s": s.phases["build"], **s.info}
        print(
            f"    {peer} build {commits.key()}: {s.phases['build']:.2f}s {json.dumps(s.info)[:160]}",
            flush=True,
        )
        _builds[key] = info
    return _builds[key]


#: the decode floor's name among the read results (``measure_reads(..., decode_floor=True)``)
DECODE_FLOOR = "pyarrow-decode"


def measure_reads(
    peers: list[str],
    commits: Commits,
    reps: int,
    warmups: int,
    expect: dict[str, int],
    decode_floor: bool = False,
) -> dict[str, dict[str, Any]]:
    """Build ``commits`` with every peer, then time their merged reads interleaved (see repeat_many).

    With ``decode_floor``, also pyarrow's decode of stratalake's own live data files without any
    merge (worker op ``decode``), timed in the same rounds, as :data:`DECODE_FLOOR`."""
    builds: dict[str, dict[str, Any]] = {}
    specs: list[dict[str, Any]] = []
    for peer in peers:
        try:
            builds[peer] = build(peer, commits)
        except MeasurementError as e:
            print(f"  FAILED: {e}", flush=True)
            builds[peer] = {"error": str(e)[-3000:]}
            continue
        specs.append(
            {
                "op": "read",
                "peer": peer,
                "commits": commits.to_json(),
                "location": location(peer, commits),
                "expect": expect,
            }
        )
    names = list(peers)
    if decode_floor and "stratalake" in builds and "error" not in builds["stratalake"]:
        specs.append({"op": "decode", "peer": DECODE_FLOOR, "location": location("stratalake", commits)})
        builds[DECODE_FLOOR] = builds["stratalake"]
        names.append(DECODE_FLOOR)
    results: dict[str, dict[str, Any]] = {p: b for p, b in builds.items() if "error" in b}
    for spec, summary in zip(specs, repeat_many(specs, reps, warmups), strict=True):
        summary["build"] = builds[spec["peer"]]
        results[spec["peer"]] = summary
    return {p: results[p] for p in names if p in results}


def guarded(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Run one peer's measurement; a failure is recorded, not fatal (other peers still run)."""
    try:
        result: dict[str, Any] = fn(*args, **kwargs)
        return result
    except MeasurementError as e:
        print(f"  FAILED: {e}", flush=True)
        return {"error": str(e)[-3000:]}


@dataclass
class Goal:
    workload: str
    goal: str
    measured: str  # the ratio or figure, as shown
    target: str
    status: str  # "met", "MISSED", "n/a" (a peer is missing), "report" (no numeric target)
    note: str = ""
    profile_key: str = ""  # which stratalake op to profile when missed
    cpu: str = ""  # the same ratio on CPU seconds (all threads): less sensitive to a busy machine

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def med(summary: dict[str, Any] | None, phase: str) -> float | None:
    if not summary or "phases" not in summary or phase not in summary["phases"]:
        return None
    return float(summary["phases"][phase]["median"])


def cpu_med(summary: dict[str, Any] | None, phase: str) -> float | None:
    if not summary or "cpu" not in summary or phase not in summary["cpu"]:
        return None
    return float(summary["cpu"][phase]["median"])


def ratio_goal(
    workload: str,
    goal: str,
    num: float | None,
    den: float | None,
    limit: float,
    *,
    at_least: bool = False,
    profile_key: str = "",
    cpu: tuple[float | None, float | None] = (None, None),
) -> Goal:
    """A goal 'num/den <= limit' (or '>= limit' with at_least); ``cpu`` gives the same ratio's CPU seconds."""
    target = f"{'>=' if at_least else '<='} {limit:g}x"
    if num is None or den is None or den == 0:
        return Goal(workload, goal, "-", target, "n/a", "a peer was not measured", profile_key)
    r = num / den
    ok = r >= limit if at_least else r <= limit
    cpu_text = f"{cpu[0] / cpu[1]:.2f}x" if cpu[0] is not None and cpu[1] else ""
    return Goal(workload, goal, f"{r:.2f}x", target, "met" if ok else "MISSED", "", profile_key, cpu_text)


def nlogn_ratio(n_small: int, n_big: int) -> float:
    return (n_big * math.log(n_big)) / (n_small * math.log(n_small))


def cli(description: str) -> tuple[Config, argparse.Namespace]:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="sizes / 10 and fewer repetitions")
    p.add_argument("--peers", help="comma-separated subset of: stratalake,pypaimon-rust,pypaimon,pyarrow")
    args = p.parse_args()
    cfg = Config.for_mode(args.quick)
    if args.peers:
        cfg.peers = [x for x in args.peers.split(",") if x]
        cfg.growth_peers = [x for x in cfg.growth_peers if x in cfg.peers]
    return cfg, args


def save_workload(name: str, cfg: Config, payload: dict[str, Any]) -> Path:
    from bench.harness import save_results

    payload = {"workload": name, "quick": cfg.quick, **payload}
    path = save_results(("quick-" if cfg.quick else "") + name, payload)
    print(f"  results -> {path}", flush=True)
    return path
