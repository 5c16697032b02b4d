"""Deterministic data for every peer: the same seed gives byte-identical Arrow tables.

Shape of a dataset (``Commits``): one *load* commit of ``load_rows`` new keys in random order, then
``upserts`` commits of ``upsert_rows`` rows each, ``update_fraction`` of them updates of keys already
written (sampled without replacement) and the rest new keys; each commit is shuffled. Rows are
``id BIGINT NOT NULL`` (primary key), ``v STRING`` (16-24 random lowercase letters, ~20 on average) and
``n BIGINT``. Nothing here is timed; generation of 1M rows takes well under a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int64()),
    ]
)
PRIMARY_KEY = ["id"]


@dataclass(frozen=True)
class Commits:
    load_rows: int
    upsert_rows: int = 0
    upserts: int = 0
    update_fraction: float = 0.5
    seed: int = 20240601

    @property
    def runs(self) -> int:
        return 1 + self.upserts

    @property
    def total_rows(self) -> int:
        return self.load_rows + self.upserts * self.upsert_rows

    @property
    def new_per_upsert(self) -> int:
        return self.upsert_rows - int(self.upsert_rows * self.update_fraction)

    @property
    def live_keys(self) -> int:
        return self.load_rows + self.upserts * self.new_per_upsert

    def key(self) -> str:
        return f"L{self.load_rows}-U{self.upsert_rows}x{self.upserts}-f{self.update_fraction:g}-s{self.seed}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Commits:
        return Commits(**d)

    @staticmethod
    def equal_runs(total_rows: int, runs: int, update_fraction: float = 0.5) -> Commits:
        """``runs`` commits of equal size summing to ``total_rows`` (the runs sweep)."""
        per = total_rows // runs
        return Commits(load_rows=per, upsert_rows=per, upserts=runs - 1, update_fraction=update_fraction)

    @staticmethod
    def core(total_rows: int) -> Commits:
        """Workload 1's shape scaled: a load of half the rows, then 5 upserts of a tenth each."""
        return Commits(load_rows=total_rows // 2, upsert_rows=total_rows // 10, upserts=5)


def random_strings(rng: np.random.Generator, n: int, lo: int = 16, hi: int = 24) -> pa.Array:
    lengths = rng.integers(lo, hi + 1, size=n, dtype=np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def _table(rng: np.random.Generator, ids: np.ndarray) -> pa.Table:
    n = len(ids)
    return pa.Table.from_arrays(
        [
            pa.array(ids, pa.int64()),
            random_strings(rng, n),
            pa.array(rng.integers(-(2**40), 2**40, size=n, dtype=np.int64)),
        ],
        schema=SCHEMA,
    )


def generate(c: Commits) -> Iterator[pa.Table]:
    """Yield the commits in order; identical for identical ``c``."""
    rng = np.random.default_rng(c.seed)
    yield _table(rng, rng.permutation(c.load_rows).astype(np.int64))
    next_key = c.load_rows
    n_upd = c.upsert_rows - c.new_per_upsert
    for _ in range(c.upserts):
        upd = rng.choice(next_key, size=n_upd, replace=False).astype(np.int64)
        new = np.arange(next_key, next_key + c.new_per_upsert, dtype=np.int64)
        next_key += c.new_per_upsert
        ids = np.concatenate([upd, new])
        rng.shuffle(ids)
        yield _table(rng, ids)


def tiny(n: int = 1000, seed: int = 7) -> pa.Table:
    """A small table for in-process warm-ups (imports, lazy initialisation)."""
    return _table(np.random.default_rng(seed), np.arange(n, dtype=np.int64))


def expected_digest(c: Commits) -> dict[str, int]:
    """The merged result's row count, sum of ``n`` and total ``v`` length: a cheap correctness check."""
    import pyarrow.compute as pc

    size = c.live_keys
    n_final = np.zeros(size, dtype=np.int64)
    v_len = np.zeros(size, dtype=np.int64)
    for t in generate(c):
        ids = t.column("id").to_numpy()
        n_final[ids] = t.column("n").to_numpy()
        v_len[ids] = pc.utf8_length(t.column("v")).to_numpy()
    return {"rows": size, "sum_n": int(n_final.sum()), "sum_v_len": int(v_len.sum())}


def digest(t: pa.Table) -> dict[str, int]:
    import pyarrow.compute as pc

    return {
        "rows": t.num_rows,
        "sum_n": int(pc.sum(t.column("n")).as_py() or 0),
        "sum_v_len": int(pc.sum(pc.utf8_length(t.column("v"))).as_py() or 0),
    }
