"""Workload 2 - core merged read: the table of workload 1 (1.5M live keys, 6 sorted runs per bucket)
read whole into one Arrow table.

Goals: stratalake within 1.5x of pypaimon-rust and of the pyarrow floor (read all files, sort, keep
the last row per key); peak memory within 2x of the floor's. That "floor" is a naive merge, which
stratalake beats; the true floor is the decode floor: pyarrow reading stratalake's own live data
files (the schema's columns) with no merge at all, measured in the same rounds, which stratalake's
merged read must not beat (ratio >= 1x: otherwise the floor is not one). Peak memory is the growth of the
subprocess's resident set during the read (VmHWM reset just before it), so interpreter and import
sizes, which differ between peers, do not count. Every read is checked against the expected digest.

Run alone: ``.venv/bin/python -m bench.core_read [--quick] [--peers a,b]``
"""

from __future__ import annotations

from typing import Any

from bench.common import (
    DECODE_FLOOR,
    Goal,
    available_peers,
    cli,
    cpu_med,
    measure_reads,
    med,
    ratio_goal,
    save_workload,
)
from bench.config import Config
from bench.data import expected_digest

NAME = "core_read"


def run(cfg: Config) -> dict[str, Any]:
    print(f"== {NAME}: {cfg.core.key()}", flush=True)
    ok, skipped = available_peers(cfg.peers)
    expect = expected_digest(cfg.core)
    results: dict[str, Any] = {p: {"skipped": r} for p, r in skipped.items()}
    results.update(measure_reads(ok, cfg.core, cfg.read_reps, cfg.read_warmups, expect, decode_floor=True))
    payload = {"commits": cfg.core.to_json(), "expect": expect, "peers": results}
    save_workload(NAME, cfg, payload)
    return payload


def _mem(summary: dict[str, Any] | None) -> float | None:
    if not summary or "op_rss_growth" not in summary:
        return None
    return float(summary["op_rss_growth"]["median"])


def goals(payload: dict[str, Any]) -> list[Goal]:
    p = payload["peers"]
    s, rust, floor = p.get("stratalake"), p.get("pypaimon-rust"), p.get("pyarrow")
    return [
        ratio_goal(
            "2 read",
            "merged read: stratalake / pypaimon-rust",
            med(s, "read"),
            med(rust, "read"),
            1.5,
            profile_key=NAME,
            cpu=(cpu_med(s, "read"), cpu_med(rust, "read")),
        ),
        ratio_goal(
            "2 read",
            "merged read: stratalake / pyarrow floor",
            med(s, "read"),
            med(floor, "read"),
            1.5,
            profile_key=NAME,
            cpu=(cpu_med(s, "read"), cpu_med(floor, "read")),
        ),
        ratio_goal(
            "2 read",
            "merged read: stratalake / decode floor (pyarrow reads the same files, no merge)",
            med(s, "read"),
            med(p.get(DECODE_FLOOR), "read"),
            1.0,
            at_least=True,
            profile_key=NAME,
            cpu=(cpu_med(s, "read"), cpu_med(p.get(DECODE_FLOOR), "read")),
        ),
        ratio_goal(
            "2 read",
            "peak memory growth: stratalake / pyarrow floor",
            _mem(s),
            _mem(floor),
            2.0,
            profile_key=NAME,
        ),
    ]


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [("merged read", peer, (r if "phases" in r else None)) for peer, r in payload["peers"].items()]


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} (target {g.target})")
