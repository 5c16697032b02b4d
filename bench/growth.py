"""Workload 3 - growth of the merged read.

(a) runs sweep: 2M written rows (workload 1's volume) split into 1, 5, 10, 20 equal commits, i.e. that
    many sorted runs per bucket; the first commit is all new keys, later ones half updates.
(b) rows sweep: workload 1's shape (a load, then 5 upserts of a fifth of it; 6 runs) with 1M, 2M, 4M
    written rows.

Goals: time grows no worse than n log n in rows (t(4M)/t(1M) <= 4 ln(4M)/ln(1M) = 4.4) and no worse than
linearly in runs (t(20)/t(1) <= 20; a k-way merge should stay close to flat here, since the row
count is fixed). The chart (``bench/growth.png``, ``bench/growth-quick.png`` for --quick) plots both.

Run alone: ``.venv/bin/python -m bench.growth [--quick] [--peers a,b]``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import Goal, available_peers, cli, measure_reads, med, nlogn_ratio, save_workload
from bench.config import Config
from bench.data import expected_digest
from bench.harness import BENCH_DIR

NAME = "growth"


def run(cfg: Config) -> dict[str, Any]:
    print(f"== {NAME}", flush=True)
    ok, skipped = available_peers(cfg.growth_peers)
    sweeps: dict[str, Any] = {"runs": [], "rows": []}
    for sweep, datasets, xs in (
        ("runs", cfg.growth_runs, [c.runs for c in cfg.growth_runs]),
        ("rows", cfg.growth_rows, [c.total_rows for c in cfg.growth_rows]),
    ):
        for c, x in zip(datasets, xs, strict=True):
            expect = expected_digest(c)
            point: dict[str, Any] = {"x": x, "commits": c.to_json(), "peers": {}}
            point["peers"] = measure_reads(ok, c, cfg.growth_reps, 0, expect)
            sweeps[sweep].append(point)
    payload: dict[str, Any] = {"sweeps": sweeps, "skipped": skipped}
    payload["chart"] = str(chart(payload, cfg.quick))
    save_workload(NAME, cfg, payload)
    return payload


def _series(payload: dict[str, Any], sweep: str, peer: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for point in payload["sweeps"][sweep]:
        t = med(point["peers"].get(peer), "read")
        if t is not None:
            xs.append(point["x"])
            ys.append(t)
    return xs, ys


def chart(payload: dict[str, Any], quick: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = BENCH_DIR / ("growth-quick.png" if quick else "growth.png")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    peers = sorted({p for sw in payload["sweeps"].values() for pt in sw for p in pt["peers"]})
    for ax, sweep, xlabel in (
        (
            axes[0],
            "runs",
            "sorted runs per bucket (2M written rows)"
            if not quick
            else "sorted runs per bucket (200k written rows)",
        ),
        (axes[1], "rows", "written rows (6 runs per bucket)"),
    ):
        for peer in peers:
            xs, ys = _series(payload, sweep, peer)
            if xs:
                ax.plot(xs, ys, marker="o", label=peer)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("merged read, median seconds")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    # reference curves anchored at stratalake's first point
    for ax, sweep, ref, label in (
        (axes[0], "runs", lambda x0, x: x / x0, "linear in runs"),
        (axes[1], "rows", lambda x0, x: nlogn_ratio(x0, x), "n log n"),
    ):
        xs, ys = _series(payload, sweep, "stratalake")
        if xs:
            ax.plot(xs, [ys[0] * ref(xs[0], x) for x in xs], "k:", label=f"{label} (bound)")
            ax.legend()
    fig.suptitle("stratalake merged read growth" + (" (--quick sizes)" if quick else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def goals(payload: dict[str, Any]) -> list[Goal]:
    out = []
    xs, ys = _series(payload, "rows", "stratalake")
    if len(xs) >= 2:
        bound = nlogn_ratio(int(xs[0]), int(xs[-1]))
        r = ys[-1] / ys[0]
        out.append(
            Goal(
                "3 growth",
                f"rows {xs[0]:,.0f} -> {xs[-1]:,.0f}: t ratio vs n log n bound",
                f"{r:.2f}x",
                f"<= {bound:.2f}x",
                "met" if r <= bound else "MISSED",
                profile_key="growth_rows",
            )
        )
    else:
        out.append(Goal("3 growth", "rows sweep vs n log n", "-", "", "n/a", "stratalake not measured"))
    xs, ys = _series(payload, "runs", "stratalake")
    if len(xs) >= 2:
        bound = xs[-1] / xs[0]
        r = ys[-1] / ys[0]
        out.append(
            Goal(
                "3 growth",
                f"runs {xs[0]:.0f} -> {xs[-1]:.0f}: t ratio vs linear bound",
                f"{r:.2f}x",
                f"<= {bound:.0f}x",
                "met" if r <= bound else "MISSED",
                profile_key="growth_runs",
            )
        )
    else:
        out.append(Goal("3 growth", "runs sweep vs linear", "-", "", "n/a", "stratalake not measured"))
    return out


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    rows = []
    for sweep, unit in (("runs", "runs"), ("rows", "rows")):
        for point in payload["sweeps"][sweep]:
            for peer, r in point["peers"].items():
                rows.append((f"growth read, {point['x']:,} {unit}", peer, (r if "phases" in r else None)))
    return rows


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} (target {g.target})")
