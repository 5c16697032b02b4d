"""Workload 1 - core write: load 1M rows, then 5 upsert commits of 200k (half updates, half new keys).

Goals: stratalake within 1.5x of pypaimon-rust per phase, and >= 15x faster than pure pypaimon.
Each repetition is a fresh subprocess writing a fresh table (after an in-process warm-up on a tiny
table); the 'upsert' figure is the median over the 5 upsert commits of one repetition, then the median
over repetitions.

Run alone: ``.venv/bin/python -m bench.core_write [--quick] [--peers a,b]``
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.common import Goal, available_peers, cli, cpu_med, location, med, ratio_goal, save_workload
from bench.config import TABLE_OPTIONS, Config
from bench.harness import repeat_many, summarize

NAME = "core_write"


def _add_upsert_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """Add 'upsert' (per-rep median of the upsert commits) and 'upserts_total' phases."""
    if "phases" not in summary:
        return summary
    ups = [p for p in summary["phases"] if p.startswith("upsert_")]
    reps = summary["phases"][ups[0]]["n"]
    per_rep = [statistics.median(summary["phases"][p]["samples"][i] for p in ups) for i in range(reps)]
    totals = [sum(summary["phases"][p]["samples"][i] for p in ups) for i in range(reps)]
    summary["phases"]["upsert"] = summarize(per_rep)
    summary["phases"]["upserts_total"] = summarize(totals)
    cpu_rep = [statistics.median(summary["cpu"][p]["samples"][i] for p in ups) for i in range(reps)]
    summary["cpu"]["upsert"] = summarize(cpu_rep)
    summary["cpu"]["upserts_total"] = summarize(
        [sum(summary["cpu"][p]["samples"][i] for p in ups) for i in range(reps)]
    )
    return summary


def run(cfg: Config) -> dict[str, Any]:
    print(f"== {NAME}: {cfg.core.key()}", flush=True)
    ok, skipped = available_peers(cfg.peers)
    results: dict[str, Any] = {p: {"skipped": r} for p, r in skipped.items()}
    specs: list[dict[str, Any]] = [
        {
            "op": "write",
            "peer": peer,
            "commits": cfg.core.to_json(),
            "location": location(peer, cfg.core) + ".write",
            "options": TABLE_OPTIONS,
        }
        for peer in ok
    ]
    for spec, summary in zip(specs, repeat_many(specs, cfg.write_reps), strict=True):
        results[spec["peer"]] = _add_upsert_summary(summary)
    payload = {"commits": cfg.core.to_json(), "peers": results}
    save_workload(NAME, cfg, payload)
    return payload


def goals(payload: dict[str, Any]) -> list[Goal]:
    p = payload["peers"]
    s, rust, pure = p.get("stratalake"), p.get("pypaimon-rust"), p.get("pypaimon")
    c = payload["commits"]
    out = []
    for phase, label in (
        ("load", f"load {c['load_rows']:,}"),
        ("upsert", f"upsert {c['upsert_rows']:,} (median commit)"),
    ):
        out.append(
            ratio_goal(
                "1 write",
                f"{label}: stratalake / pypaimon-rust",
                med(s, phase),
                med(rust, phase),
                1.5,
                profile_key=NAME,
                cpu=(cpu_med(s, phase), cpu_med(rust, phase)),
            )
        )
        out.append(
            ratio_goal(
                "1 write",
                f"{label}: pypaimon / stratalake",
                med(pure, phase),
                med(s, phase),
                15,
                at_least=True,
                profile_key=NAME,
                cpu=(cpu_med(pure, phase), cpu_med(s, phase)),
            )
        )
    return out


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(row label, peer, summary) for the figures table."""
    c = payload["commits"]
    labels = {
        "load": f"write: load {c['load_rows']:,}",
        "upsert": f"write: upsert {c['upsert_rows']:,} (median commit)",
        "upserts_total": f"write: {c['upserts']} upserts total",
    }
    return [
        (labels[ph], peer, ({**r, "phases": {ph: r["phases"][ph]}} if "phases" in r else None))
        for ph in ("load", "upsert", "upserts_total")
        for peer, r in payload["peers"].items()
    ]


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} (target {g.target})")
