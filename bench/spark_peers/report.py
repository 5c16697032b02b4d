"""Markdown for a run of ``bench.spark_peers.run``: goals, figures, memory and where the time goes.

    .venv/bin/python -m bench.spark_peers.report bench/results/peers-200000.json [--update]

``--update`` replaces the latest-run section of BENCHMARKS.md (between the ``peers:latest`` marks).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO_DIR

START, END = "<!-- peers:latest:start -->", "<!-- peers:latest:end -->"
PHASES = (" before compaction", " after compaction")
#: (label in the table, statement, Parquet statement to compare with or None)
ROWS: list[tuple[str, str, str | None]] = [
    ("load N rows into an empty table", "load", "load"),
    ("upsert N/4 rows (a quarter of every partition's keys)", "upsert", "upsert"),
    ("changelog of the upsert", "changelog", None),
    (
        "changelog floor: Spark's Parquet source counting the kind byte of the same change files",
        "changelog floor",
        None,
    ),
    ("delete 1% of the keys by a key list", "delete", None),
    *[
        (f"{name}{phase}", f"{stmt}{phase}", stmt)
        for phase in PHASES
        for name, stmt in (
            ("count(*)", "count"),
            ("full-scan aggregate", "aggregate"),
            ("point lookup by key", "point lookup"),
            ("key-range filter (N/1000 keys)", "key range"),
        )
    ],
    ("full compaction", "compaction", None),
]
PEERS = ("delta", "iceberg")
NAMES = {"stratalake": "stratalake", "paimon": "Paimon", "delta": "Delta", "iceberg": "Iceberg"}
#: process kinds of the memory goal (workload.TreeSampler.KINDS)
KINDS = {"jvm": "JVM", "driver_python": "driver Python", "python_workers": "Spark's Python workers"}


def _s(res: dict[str, Any], key: str, stmt: str | None) -> float | None:
    sys_res = res["systems"].get(key, {})
    st = sys_res.get("statements", {}).get(stmt) if stmt else None
    return float(st["seconds"]) if st else None


def _first(res: dict[str, Any], key: str, stmt: str) -> float | None:
    """The first of a statement's runs when it ran more than once (the first finds the JIT colder)."""
    st = res["systems"].get(key, {}).get("statements", {}).get(stmt)
    return float(st["runs"][0]) if st and len(st.get("runs", [])) > 1 else None


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _fmt_mib(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def _parquet_key(system: str) -> str:
    return "parquet-own" if system == "stratalake" else "parquet-peers"


def _version(res: dict[str, Any], key: str) -> str:
    return str(res["systems"].get(key, {}).get("spark", "?"))


def _peers_version(res: dict[str, Any]) -> str:
    """The peers' pyspark, from whichever peer ran."""
    for key in ("delta", "iceberg", "paimon", "parquet-peers"):
        if "spark" in res["systems"].get(key, {}):
            return _version(res, key)
    return "?"


def _label(label: str, rows: int) -> str:
    return label.replace("N/4", f"{rows // 4:,}").replace("N ", f"{rows:,} ")


def _paimon_measured(res: dict[str, Any]) -> bool:
    return bool(res["systems"].get("paimon", {}).get("statements"))


def paimon_workload_goals(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """stratalake / Paimon on every workload, each <= 1.0x."""
    if not _paimon_measured(res):
        why = res["systems"].get("paimon", {}).get("error") or "see the run's notes"
        return [
            (
                "every workload: stratalake <= Paimon on Spark",
                f"Paimon not measured ({why})",
                "<= 1.0x",
                "n/a",
            )
        ]
    out = []
    for label, stmt, _pq in ROWS:
        if stmt == "changelog floor":  # stratalake's run only
            continue
        a, b = _s(res, "stratalake", stmt), _s(res, "paimon", stmt)
        goal = f"{_label(label, int(res['rows']))}: stratalake / Paimon"
        if a is None or b is None or b == 0:
            out.append((goal, "-", "<= 1.0x", "n/a"))
        else:
            out.append(
                (goal, f"{a / b:.2f}x ({a:.2f} s vs {b:.2f} s)", "<= 1.0x", "met" if a <= b else "MISSED")
            )
    return out


def paimon_memory_goals(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Peak RSS of each process kind (over all statements): stratalake's <= Paimon's."""
    if not _paimon_measured(res):
        return [("peak memory of every process <= Paimon's", "Paimon not measured", "<= Paimon", "n/a")]
    out = []
    ours, theirs = _peak(res, "stratalake"), _peak(res, "paimon")
    for kind, name in KINDS.items():
        a, b = ours.get(kind, 0.0), theirs.get(kind, 0.0)
        goal = f"peak memory, {name}: stratalake / Paimon"
        if b == 0:
            # Paimon's run has no such process (its statements start no Python worker): MiB against none
            pss = ours.get(f"{kind}_pss")
            shared = "" if pss is None else f" (summed PSS: {pss:.0f} MiB)"
            out.append((goal, f"{a:.0f} MiB{shared} vs none", "<= Paimon", "met" if a == 0 else "MISSED"))
        else:
            measured = f"{a / b:.2f}x ({a:.0f} vs {b:.0f} MiB)"
            own, peers = _peak(res, "parquet-own").get(kind), _peak(res, "parquet-peers").get(kind)
            if kind == "driver_python" and own and peers:
                # The driver holds pyspark and what it imports, which differ by pyspark version.
                measured += (
                    f"; Spark's Parquet runs: {own:.0f} MiB on stratalake's pyspark, {peers:.0f} on Paimon's"
                )
            out.append((goal, measured, "<= 1.0x", "met" if a <= b else "MISSED"))
    # The systems split their work between processes differently (stratalake's write buffers and
    # merges live in Python workers, Paimon's in the JVM): all of a system's processes at once.
    a, b = ours.get("all"), theirs.get("all")
    if a is not None and b:  # runs before the sampler summed the kinds have no figure
        out.append(
            (
                "peak memory, all processes at once (summed RSS): stratalake / Paimon",
                f"{a / b:.2f}x ({a:.0f} vs {b:.0f} MiB)",
                "<= 1.0x",
                "met" if a <= b else "MISSED",
            )
        )
    return out


def goals(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(goal, measured, target, status) of issue 31's goals."""
    out = paimon_workload_goals(res)
    for label, stmt in (
        ("upsert", "upsert"),
        ("delete", "delete"),
        ("point lookup before compaction", "point lookup before compaction"),
        ("point lookup after compaction", "point lookup after compaction"),
        ("changelog read", "changelog"),
    ):
        for peer in PEERS:
            a, b = _s(res, "stratalake", stmt), _s(res, peer, stmt)
            if a is None or b is None:
                out.append((f"{label}: stratalake / {NAMES[peer]}", "-", "<= 0.5x", "n/a"))
                continue
            r = a / b
            fa, fb = _first(res, "stratalake", stmt), _first(res, peer, stmt)
            first = "" if fa is None or fb is None else f"; first runs {fa:.2f} s vs {fb:.2f} s"
            out.append(
                (
                    f"{label}: stratalake / {NAMES[peer]}",
                    f"{r:.2f}x ({a:.2f} s vs {b:.2f} s{first})",
                    "<= 0.5x",
                    "met" if r <= 0.5 else "MISSED",
                )
            )
    out += load_goal(res)
    for name, stmt in (("count(*)", "count"), ("full-scan aggregate", "aggregate")):
        a, b = _s(res, "stratalake", f"{stmt} after compaction"), _s(res, "parquet-own", stmt)
        if a is not None and b is not None:
            out.append(
                (
                    f"{name} after compaction: stratalake / Spark Parquet",
                    f"{a / b:.2f}x ({a:.2f} s vs {b:.2f} s)",
                    "<= 1.1x",
                    "met" if a / b <= 1.1 else "MISSED",
                )
            )
    out += paimon_memory_goals(res)
    return out


def load_pairs(res: dict[str, Any]) -> list[tuple[float, float]] | None:
    """(stratalake's load, the sorted floor) of each pair of the ``load-pairs`` process, or None."""
    st = res["systems"].get("load-pairs", {}).get("statements", {})
    n = int(res["systems"].get("load-pairs", {}).get("pairs", 0))
    pairs = [(st.get(f"load #{i}"), st.get(f"load sorted floor #{i}")) for i in range(1, n + 1)]
    if not pairs or any(a is None or f is None for a, f in pairs):
        return None
    return [(float(a["seconds"]), float(f["seconds"])) for a, f in pairs if a and f]


def load_goal(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The load against the sorted floor: the medians of the alternated pairs when they ran (the
    main run's single loads, minutes apart, are shown with them), else the single loads."""
    a, f, pq = (
        _s(res, "stratalake", "load"),
        _s(res, "parquet-own", "load sorted floor"),
        _s(res, "parquet-own", "load"),
    )
    single = (
        None
        if a is None or f is None or pq is None
        else f"{a / f:.2f}x ({a:.2f} s vs {f:.2f} s; plain `df.write.parquet`: {a / pq:.2f}x)"
    )
    pairs = load_pairs(res)
    goal = "load: stratalake / Spark's clustered, sorted Parquet write (the fair floor)"
    if pairs:
        ml = statistics.median(p[0] for p in pairs)
        mf = statistics.median(p[1] for p in pairs)
        each = ", ".join(f"{x / y:.2f}x" for x, y in pairs)
        measured = (
            f"{ml / mf:.2f}x alternated in one process (medians of {len(pairs)}: {ml:.2f} s vs {mf:.2f} s; "
            f"each pair {each})" + (f"; single runs in their own processes: {single}" if single else "")
        )
        return [(goal, measured, "<= 1.25x", "met" if ml / mf <= 1.25 else "MISSED")]
    if single is None or a is None or f is None:
        return []
    return [(goal, single, "<= 1.25x", "met" if a / f <= 1.25 else "MISSED")]


def _peak(res: dict[str, Any], key: str) -> dict[str, float]:
    peak: dict[str, float] = {}
    for st in res["systems"].get(key, {}).get("statements", {}).values():
        for k, v in st["peak_mib"].items():
            peak[k] = max(peak.get(k, 0.0), v)
    return peak


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(a)), abs(float(b)), 1.0)
    return bool(a == b)


def agreement(res: dict[str, Any]) -> list[str]:
    """Statements whose answers differ between systems (each compared with stratalake's, and the reads
    also with the Parquet copy of the expected rows)."""
    ref = res["systems"].get("stratalake", {}).get("answers")
    if not ref:
        return ["stratalake has no answers"]
    bad = []
    if "changelog floor" in ref and not _close(ref["changelog floor"], ref.get("changelog")):
        bad.append(
            f"stratalake changelog floor: {ref['changelog floor']} vs its changelog {ref.get('changelog')}"
        )
    for key, sys_res in res["systems"].items():
        answers = sys_res.get("answers")
        if not answers or key == "stratalake":
            continue
        for label, value in answers.items():
            if label == "_rows":
                continue
            targets = (
                [label] if key not in ("parquet-own", "parquet-peers") else [f"{label}{p}" for p in PHASES]
            )
            for t in targets:
                if t in ref and not _close(ref[t], value):
                    bad.append(f"{key} {t}: {value} vs stratalake {ref[t]}")
    return bad


def section(res: dict[str, Any]) -> str:
    rows = int(res["rows"])
    systems = res["systems"]
    lines = [
        f"## Latest run: stratalake vs Paimon, Delta Lake and Iceberg on Spark (issue 31), {res['started']}",
        "",
        f"- Command: `{res['command']}`, at {res['commit']}; {rows:,} rows (bench.spark_scale's data), `local[2]`, "
        f"4 shuffle partitions for every system; reads (the changelog's too): median of {res['reps']}, every "
        "write once"
        + (
            f", and stratalake's load and the sorted floor again in {len(load_pairs(res) or [])} alternated pairs "
            "in a process of their own (`load-pairs`)."
            if load_pairs(res)
            else "."
        ),
        f"- Spark: stratalake and its Parquet on pyspark {_version(res, 'stratalake')}; Paimon "
        f"({', '.join(systems.get('paimon', {}).get('jars', [])) or '-'}), Delta "
        f"({', '.join(systems.get('delta', {}).get('jars', [])) or '-'}), Iceberg "
        f"({', '.join(systems.get('iceberg', {}).get('jars', [])) or '-'}) and their Parquet on pyspark "
        f"{_peers_version(res)}.",
        f"- Load average (1/5/15 min) before / after: {'/'.join(f'{x:.1f}' for x in res['load_before'])} / "
        f"{'/'.join(f'{x:.1f}' for x in res.get('load_after', []))}: the 2 cores were shared with other sessions; "
        "compare ratios of this run only.",
        "- Tables: stratalake `PRIMARY KEY (id, p)`, partitioned by `p`, `'bucket' = '8'`, "
        "`'changelog-producer' = 'lookup'`, `'deletion-vectors.enabled' = 'true'`; Paimon the same table "
        "(its Spark connector takes the key as `'primary-key' = 'id,p'`) and stratalake's statements "
        "(upsert by `INSERT INTO`, delete by the key list's subquery, changelog from `$audit_log` with "
        "`incremental-between`, `sys.compact` full); Delta partitioned by `p`, "
        "change data feed and deletion vectors on (its DELETE takes no subquery: the key list is deleted with "
        "`MERGE ... WHEN MATCHED THEN DELETE`); Iceberg format v2, partitioned by `p, bucket(8, id)`, "
        "merge-on-read for MERGE, DELETE and UPDATE.",
        "- Paimon on Spark: "
        + (
            "its own connector, built from Paimon's released source (bench/spark_peers/build_paimon.sh), "
            "since Maven Central served none of "
            if _paimon_measured(res)
            else "not measured. Maven Central served none of "
        )
        + ", ".join(f"`{a}`" for a in res.get("paimon_tried", []))
        + " (`mvn dependency:get`, forced update)"
        # build_paimon.sh's note: its first line names the tag, commit and build time, its last the jar's hash
        + "".join(
            f"; {line.strip().rstrip(':')}"
            for line in res.get("paimon", "").splitlines()
            if not line.startswith(" ")
        )
        + ".",
    ]
    errors = {k: v["error"] for k, v in systems.items() if "error" in v}
    errors.update(
        {
            f"{k} changelog": v["answers"]["changelog_error"]
            for k, v in systems.items()
            if "changelog_error" in v.get("answers", {})
        }
    )
    if errors:
        lines += [f"- Failed: {k}: `{v}`" for k, v in errors.items()]
    lines += ["", "### Goals", "", "| goal | measured | target | status |", "|---|---|---|---|"]
    lines += [f"| {g} | {m} | {t} | {s} |" for g, m, t, s in goals(res)]
    bad = agreement(res)
    lines.append(
        f"| every system's answers agree (counts, sums, lookups, changelog kinds) | {'yes' if not bad else '; '.join(bad)} | yes | {'met' if not bad else 'MISSED'} |"
    )
    lines += [
        "",
        "### Seconds (ratio to Spark's Parquet on the same Spark)",
        "",
        "| workload | stratalake | Paimon | Delta | Iceberg | stratalake / Paimon | stratalake / Delta | "
        f"stratalake / Iceberg | Parquet {_version(res, 'parquet-own')} | Parquet {_version(res, 'parquet-peers')} |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, stmt, pq in ROWS:
        cells = []
        for key in ("stratalake", "paimon", "delta", "iceberg"):
            s = _s(res, key, stmt)
            own = _s(res, _parquet_key(key), pq)
            cells.append(_fmt(s) + (f" ({_ratio(s, own)})" if pq and s is not None else ""))
        a = _s(res, "stratalake", stmt)
        cells += [_ratio(a, _s(res, peer, stmt)) for peer in ("paimon", "delta", "iceberg")]
        cells += [_fmt(_s(res, "parquet-own", pq)), _fmt(_s(res, "parquet-peers", pq))]
        lines.append(f"| {_label(label, rows)} | " + " | ".join(cells) + " |")
    f = _s(res, "parquet-own", "load sorted floor")
    lines.append(
        f"| load: Spark's clustered, sorted Parquet write (fair floor) | - | - | - | - | - | - | - | {_fmt(f)} | - |"
    )
    pairs = load_pairs(res)
    if pairs:
        ml, mf = statistics.median(x for x, _ in pairs), statistics.median(y for _, y in pairs)
        lines.append(
            f"| load and the fair floor again, alternated in one process (median of {len(pairs)} pairs; "
            f"stratalake's load / the floor: {', '.join(f'{x:.2f} / {y:.2f}' for x, y in pairs)} s) "
            f"| {_fmt(ml)} ({_ratio(ml, mf)} the floor) | - | - | - | - | - | - | {_fmt(mf)} | - |"
        )
    q = "query floor"
    lines.append(
        "| a collected query with nothing to read (`SELECT 1`): the floor of the short reads "
        f"| - | - | - | - | - | - | - | {_fmt(_s(res, 'parquet-own', q))} | {_fmt(_s(res, 'parquet-peers', q))} |"
    )
    lines += [
        "",
        "### Peak resident memory (MiB, over all statements; `local[2]`: the driver JVM runs the tasks)",
        "",
        "The driver Python holds pyspark and what it imports; its ratio to the Parquet run on the same "
        "pyspark separates what a system adds from what its pyspark version costs.",
        "",
        "| system | JVM | driver Python | driver Python / Parquet on its Spark | Spark's Python workers "
        "(summed RSS) | (summed PSS) | all processes at once (summed RSS) |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in ("stratalake", "paimon", "delta", "iceberg", "parquet-own", "parquet-peers"):
        pk = _peak(res, key)
        if pk:
            pss = f"{pk['python_workers_pss']:.0f}" if "python_workers_pss" in pk else "-"  # older runs
            own = _peak(res, key if key.startswith("parquet") else _parquet_key(key)).get("driver_python")
            lines.append(
                f"| {key} | {pk.get('jvm', 0):.0f} | {pk.get('driver_python', 0):.0f} "
                f"| {_ratio(pk.get('driver_python'), own)} | {pk.get('python_workers', 0):.0f} | {pss} "
                f"| {_fmt_mib(pk.get('all'))} |"
            )
    lines += [
        "",
        "### Where stratalake's time goes (per statement, per run; CPU from /proc of the process tree, task "
        "times from Spark's REST API)",
        "",
        "| statement | wall s | stages | task run s | task JVM CPU s | JVM CPU s | Python workers CPU s | driver Python CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, st in systems.get("stratalake", {}).get("statements", {}).items():
        cpu = st["cpu_seconds"]
        lines.append(
            f"| {label} | {st['seconds']:.2f} | {st['stages']:.0f} | {st['task_run_seconds']:.2f} | "
            f"{st['task_jvm_cpu_seconds']:.2f} | {cpu['jvm']:.2f} | {cpu['python_workers']:.2f} | {cpu['driver_python']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def update_benchmarks(text: str, path: Path | None = None) -> None:
    """Replaces the latest-run section of BENCHMARKS.md (between the marks) with ``text``."""
    path = path or REPO_DIR / "BENCHMARKS.md"
    page = path.read_text()
    if START not in page or END not in page:
        raise SystemExit(f"{path} has no {START} ... {END} marks")
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{text}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("results")
    p.add_argument("--update", action="store_true")
    args = p.parse_args(argv)
    text = section(json.loads(Path(args.results).read_text()))
    print(text)
    if args.update:
        update_benchmarks(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
