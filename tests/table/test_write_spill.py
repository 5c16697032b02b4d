"""write-buffer-spillable: a full write buffer becomes a sorted run on local disk, and a bucket's
runs are merged into one level-0 sorted run at the flush (Paimon's spillable write buffer)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake.lsm.levels import key_decoder

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.int64()), ("s", pa.string())])

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}


def _batches(seed: int, n_batches: int, rows: int) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_batches):
        ids = rng.integers(0, 20_000, rows)
        v = rng.integers(-1000, 1000, rows)
        nulls = rng.random(rows) < 0.2
        out.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "k": pa.array([f"k{i % 7}" for i in ids.tolist()]),
                    "v": pa.array(v, pa.int64(), mask=nulls),
                    "s": pa.array([f"s{x}" for x in v.tolist()]),
                },
                schema=SCHEMA,
            )
        )
    return out


def _table(root: Path, name: str, options: dict[str, str]) -> Any:
    cat = stratalake.Catalog(str(root))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(f"db.{name}", SCHEMA, primary_key=["id", "k"], options={"bucket": "2", **options})


def _level0_runs(t: Any) -> dict[int, int]:
    """Per bucket: how many sorted runs its level-0 files form (1 = disjoint key ranges)."""
    key_of = key_decoder(t.schema())
    files: dict[int, list[Any]] = {}
    for e in t.live_entries(t.latest_snapshot()):
        if e.file.level == 0:
            files.setdefault(e.bucket, []).append(e.file)
    out = {}
    for bucket, fs in files.items():
        ordered = sorted(fs, key=lambda f: key_of(f.min_key))
        disjoint = all(key_of(a.max_key) < key_of(b.min_key) for a, b in itertools.pairwise(ordered))
        out[bucket] = 1 if disjoint else len(fs)
    return out


@pytest.mark.parametrize("engine", list(ENGINES))
def test_spilled_runs_merge_into_one_level0_run_with_the_same_rows(tmp_path: Path, engine: str) -> None:
    batches = _batches(7, 12, 20_000)
    small = {"write-buffer-size": "512 kb", "write-only": "true", **ENGINES[engine]}
    plain = _table(tmp_path, "plain", small)
    spilled = _table(tmp_path, "spilled", {**small, "write-buffer-spillable": "true"})
    for t in (plain, spilled):
        with t.new_write() as w:
            for b in batches:
                w.write(b)
            w.commit()
    assert spilled.read().sort_by([("id", "ascending"), ("k", "ascending")]) == plain.read().sort_by(
        [("id", "ascending"), ("k", "ascending")]
    )
    # Without spilling the small buffer flushed many level-0 files per bucket; spilled, each
    # bucket got one sorted run (rolled files with disjoint key ranges).
    assert set(_level0_runs(spilled).values()) == {1}
    assert max(_level0_runs(plain).values()) > 1


def test_spill_files_are_removed_after_commit_and_abort(tmp_path: Path, monkeypatch: Any) -> None:
    spill_root = tmp_path / "spill"
    spill_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill_root))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    t = _table(tmp_path, "t", {"write-buffer-size": "256 kb", "write-buffer-spillable": "true"})
    batches = _batches(3, 6, 20_000)
    w = t.new_write()
    for b in batches:
        w.write(b)
    assert list(spill_root.iterdir()), "the writer spilled"
    w.commit()
    assert not list(spill_root.iterdir())
    w = t.new_write()
    for b in batches:
        w.write(b)
    assert list(spill_root.iterdir())
    before = t.latest_snapshot().id
    w.abort()
    assert not list(spill_root.iterdir())
    assert t.latest_snapshot().id == before


def test_disk_limit_falls_back_to_level0_files(tmp_path: Path) -> None:
    options = {"write-buffer-size": "256 kb", "write-buffer-spillable": "true", "write-only": "true"}
    limited = _table(tmp_path, "limited", {**options, "write-buffer-spill.max-disk-size": "1 b"})
    reference = _table(tmp_path, "reference", {"write-only": "true"})
    batches = _batches(5, 6, 20_000)
    for t in (limited, reference):
        with t.new_write() as w:
            for b in batches:
                w.write(b)
            w.commit()
    assert limited.read().sort_by("id").num_rows == reference.read().num_rows
    assert max(_level0_runs(limited).values()) > 1  # one run spilled, then flushes as files


def test_input_changelog_keeps_every_record_when_spilling(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        "log",
        {"write-buffer-size": "256 kb", "write-buffer-spillable": "true", "changelog-producer": "input"},
    )
    batches = _batches(11, 5, 20_000)
    with t.new_write() as w:
        for b in batches:
            w.write(b)
        w.commit()
    assert t.changelog().num_rows == sum(b.num_rows for b in batches)
