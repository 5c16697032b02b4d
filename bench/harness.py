"""Measurement harness: every measurement runs in a fresh subprocess.

A measurement is a JSON *spec* (``{"op": ..., "peer": ..., ...}``) handed to ``python -m bench.worker``.
The worker does its untimed setup (imports, opening tables, an in-process warm-up on a tiny table),
resets the kernel's peak-RSS counter, runs the timed operation and prints one result line. The parent
waits for it with ``os.wait4`` so it also gets the child's own ``ru_maxrss``.

Why a process per measurement: no peer can profit from another's caches or allocator state, the peak
memory of one operation is isolated, and a crash or leak stays in its sample. The page cache is shared,
so reads get harness-level warm-up runs whose samples are discarded.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
WORK_DIR = RESULTS_DIR / "work"  # tables written by setup steps; git-ignored with results/

RESULT_MARKER = "BENCH_RESULT "


class MeasurementError(RuntimeError):
    """A worker subprocess failed; carries its stderr tail."""


@dataclass
class Sample:
    """One measurement: wall and CPU seconds per phase, plus memory of the subprocess."""

    phases: dict[str, float]
    cpu: dict[str, float]
    op_peak_rss: int  # bytes: VmHWM reached during the timed part (counter reset before it)
    baseline_rss: int  # bytes: resident set just before the timed part (interpreter, imports, setup)
    process_maxrss: int  # bytes: ru_maxrss of the whole child process as seen by wait4
    info: dict[str, Any] = field(default_factory=dict)


def python_for(peer: str) -> str:
    """Interpreter for a peer's measurements.

    Every peer runs in the project venv today (pypaimon-rust 0.4.0 leaves pyarrow alone). If a peer ever
    needs its own environment, point ``BENCH_PYTHON_<PEER>`` (``-`` -> ``_``, upper case) at it.
    """
    env_key = "BENCH_PYTHON_" + peer.upper().replace("-", "_")
    return os.environ.get(env_key, sys.executable)


def run_worker(spec: dict[str, Any], python: str | None = None, timeout_s: float = 3600) -> Sample:
    """Run one measurement in a fresh interpreter and return its sample."""
    python = python or python_for(str(spec.get("peer", "")))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_DIR), str(REPO_DIR / "python"), env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.Popen(
        [python, "-m", "bench.worker", json.dumps(spec)],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise MeasurementError(f"{spec} timed out after {timeout_s}s") from None
    # communicate() already reaped the child; its rusage is in RUSAGE_CHILDREN, but that is a running max
    # over all children, so the worker reports its own ru_maxrss as well (below) and we use that.
    if proc.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-25:])
        raise MeasurementError(f"worker failed (rc={proc.returncode}) for {spec}:\n{tail}")
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_MARKER):
            raw = json.loads(line[len(RESULT_MARKER) :])
            return Sample(
                phases=raw["phases"],
                cpu=raw["cpu"],
                op_peak_rss=raw["op_peak_rss"],
                baseline_rss=raw["baseline_rss"],
                process_maxrss=raw["process_maxrss"],
                info=raw.get("info", {}),
            )
    raise MeasurementError(f"worker printed no result for {spec}:\n{out[-2000:]}\n{err[-2000:]}")


def summarize(values: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "samples": values,
    }


def repeat_many(
    specs: list[dict[str, Any]], reps: int, warmups: int = 0, log: bool = True
) -> list[dict[str, Any]]:
    """Measure several specs (typically one per peer) round-robin: rep 1 of each, then rep 2 of each...

    On a shared machine load comes in bursts; interleaving spreads them over all peers instead of
    penalising whichever peer happened to run during one, so ratios from one run stay fair.
    """
    samples: list[list[Sample]] = [[] for _ in specs]
    failed: dict[int, str] = {}
    for i in range(warmups + reps):
        for j, spec in enumerate(specs):
            if j in failed:
                continue
            t0 = time.perf_counter()
            try:
                s = run_worker(spec)
            except MeasurementError as e:  # one peer failing must not lose the others' figures
                print(f"  FAILED: {e}", flush=True)
                failed[j] = str(e)[-3000:]
                continue
            if i >= warmups:
                samples[j].append(s)
            if log:
                tag = "warm-up" if i < warmups else f"rep {i - warmups + 1}/{reps}"
                phases = ", ".join(f"{k}={v:.3f}s" for k, v in s.phases.items())
                print(
                    f"    {spec.get('peer', '')} {spec['op']} {tag}: {phases} "
                    f"peak +{(s.op_peak_rss - s.baseline_rss) / 2**20:.0f}MiB "
                    f"({time.perf_counter() - t0:.1f}s incl. startup)",
                    flush=True,
                )
    return [
        {"error": failed[j]} if j in failed else _summary(spec, samples[j]) for j, spec in enumerate(specs)
    ]


def repeat(spec: dict[str, Any], reps: int, warmups: int = 0, log: bool = True) -> dict[str, Any]:
    """Run ``warmups`` discarded and ``reps`` kept measurements; return medians/min/max per phase."""
    return repeat_many([spec], reps, warmups, log)[0]


def _summary(spec: dict[str, Any], samples: list[Sample]) -> dict[str, Any]:
    phase_names = list(samples[0].phases)
    return {
        "spec": spec,
        "phases": {p: summarize([s.phases[p] for s in samples]) for p in phase_names},
        "cpu": {p: summarize([s.cpu[p] for s in samples]) for p in phase_names},
        "op_peak_rss": summarize([float(s.op_peak_rss) for s in samples]),
        "op_rss_growth": summarize([float(s.op_peak_rss - s.baseline_rss) for s in samples]),
        "process_maxrss": summarize([float(s.process_maxrss) for s in samples]),
        "info": samples[-1].info,
    }


# ---------------------------------------------------------------------------------------------------------
# Machine and package facts recorded with every result


def _pkg_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    mem_total = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_total = int(line.split()[1]) * 1024
    except OSError:
        pass
    cpu_model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    java = None
    with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
        java = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=30
        ).stderr.splitlines()[0]
    return {
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_bytes": mem_total,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": java,
        "packages": {
            name: _pkg_version(name)
            for name in (
                "stratalake",
                "pyarrow",
                "numpy",
                "pypaimon",
                "pypaimon-rust",
                "pyspark",
                "matplotlib",
            )
        },
    }


def save_results(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path


def load_results(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
