"""Turn a run's results into a markdown section of BENCHMARKS.md (goals, figures, chart, profiles)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

from bench.common import Goal
from bench.harness import REPO_DIR, RESULTS_DIR
from bench.notes import NOTES

PEER_ORDER = ["stratalake", "pypaimon-rust", "pypaimon", "floor"]
#: figure columns: the floor is plain pyarrow, Spark's Parquet source, or pyarrow sort+take
FLOORS = {"pyarrow", "parquet", "pyarrow sort+take"}


def _git_rev() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_DIR, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _cell(summary: dict[str, Any] | None, with_mem: bool) -> str:
    if not summary:
        return "-"
    ph = next(iter(summary["phases"].values()))
    text = f"{_fmt_s(ph['median'])} s"
    if ph.get("n", 1) > 1:
        text += f" [{_fmt_s(ph['min'])}-{_fmt_s(ph['max'])}]"
    if with_mem and "op_rss_growth" in summary:
        text += f", +{summary['op_rss_growth']['median'] / 2**20:.0f} MiB"
    return text


def figures_table(rows: list[tuple[str, str, dict[str, Any] | None]]) -> list[str]:
    """rows: (measurement, peer, summary restricted to one phase)."""
    rows = [(label, "floor" if peer in FLOORS else peer, s) for label, peer, s in rows]
    peers = [p for p in PEER_ORDER if any(r[1] == p for r in rows)]
    peers += sorted({r[1] for r in rows} - set(peers))
    labels: list[str] = []
    cells: dict[tuple[str, str], str] = {}
    for label, peer, summary in rows:
        if label not in labels:
            labels.append(label)
        cells[(label, peer)] = _cell(summary, with_mem=not label.startswith("spark"))
    header = [("floor (pyarrow / Spark Parquet)" if p == "floor" else p) for p in peers]
    out = ["| measurement | " + " | ".join(header) + " |", "|---|" + "---|" * len(peers)]
    for label in labels:
        out.append(f"| {label} | " + " | ".join(cells.get((label, p), "-") for p in peers) + " |")
    return out


def _profile_lines(path: Path, top: int = 8) -> list[str]:
    if not path.exists():
        return []
    prof = json.loads(path.read_text())
    out = [
        f"Profile of one stratalake run (`{path.relative_to(REPO_DIR)}`, {prof['total_s']:.2f} s "
        "of Python-visible time; native pyarrow work shows under the call that started it):",
        "",
        "| own time s | cumulative s | calls | function |",
        "|---:|---:|---:|---|",
    ]
    for r in prof["by_tottime"][:top]:
        out.append(f"| {r['tottime']:.3f} | {r['cumtime']:.3f} | {r['ncalls']} | `{r['function']}` |")
    return out


def _load_line(before: Any, after: tuple[float, ...] | None) -> str:
    def fmt(x: Any) -> str:
        return "/".join(f"{v:.1f}" for v in x) if x else "?"

    return (
        f"- Load average (1/5/15 min) at start {fmt(before)}, at end {fmt(after)}: other work on the "
        "machine competes for its cores, so only ratios from this run are comparable"
    )


def section(
    *,
    quick: bool,
    command: str,
    machine: dict[str, Any],
    goals: list[Goal],
    figures: list[tuple[str, str, dict[str, Any] | None]],
    chart: str | None,
    sizes: str,
    profiles: dict[str, Path],
    skipped: dict[str, str],
    elapsed_s: float,
    load_after: tuple[float, ...] | None = None,
) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    pk = machine["packages"]
    mem = (machine.get("memory_bytes") or 0) / 2**30
    lines = [
        f"## {when} - {'quick' if quick else 'full'} run",
        "",
        f"- Command: `{command}` (took {elapsed_s / 60:.1f} min)",
        f"- Machine: {machine['cores']} cores ({machine.get('cpu_model') or 'unknown CPU'}), "
        f"{mem:.1f} GiB memory, {machine['platform']}, Python {machine['python']}, {machine.get('java') or 'no java'}",
        _load_line(machine.get("load_average"), load_after),
        "- Packages: "
        + ", ".join(f"{k} {v}" for k, v in pk.items() if v)
        + f"; stratalake at git {_git_rev()}",
        f"- Sizes: {sizes}",
        "- Every figure is the median over fresh subprocesses [min-max]; memory is the growth of the "
        "process's resident set during the timed part (peak minus the size before it). Ratios compare "
        "figures from this same run.",
    ]
    for peer, reason in skipped.items():
        lines.append(f"- Skipped {peer}: {reason}")
    lines += [
        "",
        "### Goals (issue #6)",
        "",
        "Status is judged on wall time (medians); the CPU column is the same ratio on CPU seconds of all "
        "threads, a check that is less sensitive to other load on the machine."
        + (
            " Quick sizes (/10) inflate fixed per-commit and per-read costs: goals are judged on full runs."
            if quick
            else ""
        ),
        "",
        "| workload | goal | measured (wall) | CPU | target | status |",
        "|---|---|---|---|---|---|",
    ]
    for g in goals:
        status = "**MISSED**" if g.status == "MISSED" else g.status
        if quick and g.status == "MISSED":
            status += " at quick sizes"
        note = f" ({g.note})" if g.note else ""
        lines.append(
            f"| {g.workload} | {g.goal} | {g.measured} | {g.cpu or '-'} | {g.target} | {status}{note} |"
        )
    lines += ["", "### Figures", "", *figures_table(figures)]
    if chart:
        lines += ["", "### Growth of the merged read", "", f"![merged read growth]({chart})"]
    missed = [g for g in goals if g.status == "MISSED"]
    if missed:
        lines += ["", "### Missed goals: where the time goes"]
        seen_profiles: set[str] = set()
        for g in missed:
            lines += ["", f"**{g.workload}: {g.goal}** - {g.measured}, target {g.target}.", ""]
            analysis = next((v for k, v in NOTES.items() if g.goal.startswith(k)), None)
            lines.append(analysis if analysis else "_No analysis written yet: add one to `bench/notes.py`._")
            if g.profile_key in profiles and g.profile_key not in seen_profiles:
                seen_profiles.add(g.profile_key)
                lines += ["", *_profile_lines(profiles[g.profile_key])]
    return "\n".join(lines) + "\n"


def append(section_text: str, path: Path = REPO_DIR / "BENCHMARKS.md") -> None:
    header = (
        "# Benchmarks\n\nProduced by `bench/` (see `bench/README.md`): each run appends a section below.\n"
        "Goals and workloads are those of issue #6.\n"
    )
    existing = path.read_text() if path.exists() else header
    path.write_text(existing.rstrip("\n") + "\n\n" + section_text)


def write_last(section_text: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    p = RESULTS_DIR / "last-section.md"
    p.write_text(section_text)
    return p
