"""Writers killed at random points leave the table at its last committed snapshot.

A child process writes, compacts and expires, and dies abruptly (``os._exit``, as SIGKILL would)
at a chosen file operation: while writing a data file, a manifest, the snapshot, the LATEST hint,
or deleting files; other rounds SIGKILL it at a random time. After each death the table must read
exactly the last committed state (all of a commit or none of it), and a new writer must commit
normally. At the end ``remove_orphan_files`` must remove every leftover and nothing else.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from stratalake.spec.manifest import ManifestEntry
from stratalake.table import Table
from tests.reliability.procs import Worker
from tests.reliability.workload import (
    CRASH_KINDS,
    batch,
    check_rows,
    create_table,
    live_files_unique,
    open_table,
)

CRASH_MODES = ("before", "partial", "after")


def referenced_files(t: Table) -> tuple[set[str], set[str]]:
    """Relative paths (needed, mentioned): the manifests and live data files retained snapshots
    read, and those plus the files their DELETE entries name (which may already be gone)."""
    mio, codec = t.manifest_io, t.partition_codec
    needed: set[str] = set()
    mentioned: set[str] = set()

    def data_path(e: ManifestEntry) -> str:
        part = codec.path(codec.from_bytes(e.partition))
        return f"{part + '/' if part else ''}bucket-{e.bucket}/{e.file.file_name}"

    for snap in t.snapshots():
        metas = []
        for lst in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
            if lst is not None:
                needed.add(f"manifest/{lst}")
                metas += mio.read_list(lst)
        entries = []
        for meta in metas:
            needed.add(f"manifest/{meta.file_name}")
            entries += mio.read_entries(meta.file_name)
        mentioned |= {data_path(e) for e in entries}
        needed |= {data_path(e) for e in t.live_entries(snap)}
    return needed, mentioned | needed


def disk_files(t: Table) -> set[str]:
    root = Path(t.location)
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if rel.parts and rel.parts[0] == "schema":
            continue
        for f in files:
            if rel.parts and rel.parts[0] == "snapshot" and not f.endswith(".tmp"):
                continue  # snapshot files and hints themselves
            out.add(str(rel / f))
    return out


def _crash_round(tmp_path: Path, wh: str, i: int, rng: random.Random) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "warehouse": wh,
        "writer": i,
        "commits": 6,
        "rows": 10,
        "seed": i,
        "max_seconds": 60,
    }
    kill_after = None
    if rng.random() < 0.25:
        kill_after = rng.uniform(0.3, 2.5)
        cfg["commits"] = 200
    else:
        kind = rng.choice(CRASH_KINDS)
        nth = rng.randint(1, 4 if kind in ("snapshot", "hint") else 12)
        cfg["crash"] = f"{kind}:{nth}:{rng.choice(CRASH_MODES)}"
    w = Worker("crash_writer", cfg, tmp_path / f"crash-{i}.jsonl")
    if kill_after is not None:
        time.sleep(kill_after)
        w.kill()
        code = w.proc.returncode
    else:
        code = w.wait(90)
    return {
        "cfg": cfg,
        "code": code,
        "records": w.records(),
        "killed_after": kill_after,
        "stderr": getattr(w, "stderr", ""),
    }


def run_crashes(tmp_path: Path, rounds: int, seed: int) -> dict[str, int]:
    wh = str(tmp_path / "wh")
    t = create_table(wh, **{"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "6"})
    rng = random.Random(seed)
    expected: dict[int, int] = {}  # writer -> newest commit that must be visible
    stats = {"rounds": 0, "died": 0, "sigkill": 0, "commits_ok": 0, "in_flight_visible": 0}
    for i in range(rounds):
        r = _crash_round(tmp_path, wh, i, rng)
        stats["rounds"] += 1
        if r["killed_after"] is not None:
            stats["sigkill"] += 1
        elif r["code"] == 86:
            stats["died"] += 1
            kind = r["cfg"]["crash"].split(":")[0]
            stats[f"died_in_{kind}"] = stats.get(f"died_in_{kind}", 0) + 1
        else:
            assert r["code"] == 0, (r["cfg"], r["code"], r["stderr"][-3000:])
        oks = [x["commit"] for x in r["records"] if x["event"] == "ok"]
        begun = [x["commit"] for x in r["records"] if x["event"] == "begin"]
        stats["commits_ok"] += len(oks)

        # The table reads a complete, committed state (reopened, as a new process would).
        t = open_table(wh)
        rows = t.read()
        newest = check_rows(rows)
        live_files_unique(t)
        last_ok = max(oks, default=-1)
        got = newest.pop(i, -1)
        # The commit in flight when the writer died is either fully there or not at all.
        allowed = {last_ok} | ({max(begun)} if begun and max(begun) > last_ok else set())
        assert got in allowed, (r["cfg"], got, allowed)
        stats["in_flight_visible"] += got != last_ok
        assert newest == expected, (r["cfg"], newest, expected)
        if got >= 0:
            expected[i] = got

        # A new writer commits normally afterwards.
        recovery = 10_000 + i
        t.write(batch(recovery, 0, 3))
        expected[recovery] = 0
        after = t.read()
        assert check_rows(after) == expected

    # Leftovers of the dead writers are orphans; removing them keeps exactly the table.
    t = open_table(wh)
    before = t.read().sort_by("k")
    needed, mentioned = referenced_files(t)
    leftovers = disk_files(t) - mentioned
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 1000)
    stats["leftovers"] = len(leftovers)
    stats["orphans_removed"] = len(removed)
    on_disk = disk_files(t)
    assert needed <= on_disk, sorted(needed - on_disk)[:10]
    assert on_disk <= mentioned, sorted(on_disk - mentioned)[:10]
    assert len(removed) >= len(leftovers)
    assert t.read().sort_by("k").equals(before)
    t.write(batch(99_999, 0, 3))
    check_rows(t.read())
    return stats


def test_killed_writers_leave_the_last_committed_snapshot(tmp_path: Path) -> None:
    stats = run_crashes(tmp_path, rounds=10, seed=7)
    assert stats["died"] + stats["sigkill"] >= 6, stats


@pytest.mark.slow
def test_killed_writers_many_rounds(tmp_path: Path) -> None:
    stats = run_crashes(tmp_path, rounds=50, seed=2024)
    print(stats)
    assert stats["died"] + stats["sigkill"] >= 30, stats
