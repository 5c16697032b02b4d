"""Sizes and repetitions of a benchmark run (issue #6). ``--quick`` divides every size by 10."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.data import Commits

ALL_PEERS = ["stratalake", "pypaimon-rust", "pypaimon", "pyarrow"]
#: write-only: stratalake compacts on write like Java Paimon (num-sorted-run.compaction-trigger = 5),
#: pypaimon never does; without it the 6th commit would compact stratalake's table, so the writes would do
#: different work and the read would not see 6 runs per bucket. Compaction gets its own workload.
TABLE_OPTIONS = {"bucket": "4", "write-only": "true"}


@dataclass
class Config:
    quick: bool = False
    peers: list[str] = field(default_factory=lambda: list(ALL_PEERS))
    #: peers of the growth sweep; pure pypaimon would take ~10 minutes there and says nothing new
    growth_peers: list[str] = field(default_factory=lambda: ["stratalake", "pypaimon-rust", "pyarrow"])
    write_reps: int = 3
    read_reps: int = 5
    read_warmups: int = 1
    growth_reps: int = 3
    spark_reps: int = 5
    profile_misses: bool = True

    @property
    def scale(self) -> int:
        return 10 if self.quick else 1

    @property
    def core(self) -> Commits:
        """Workload 1 and 2: load 1M, then 5 upserts of 200k (half updates, half new keys)."""
        return Commits(load_rows=1_000_000 // self.scale, upsert_rows=200_000 // self.scale, upserts=5)

    @property
    def growth_runs(self) -> list[Commits]:
        """Workload 3a: 2M written rows (workload 1's volume) split into 1, 5, 10, 20 equal commits."""
        return [Commits.equal_runs(2_000_000 // self.scale, r) for r in (1, 5, 10, 20)]

    @property
    def growth_rows(self) -> list[Commits]:
        """Workload 3b: workload 1's shape (6 runs) with 1M, 2M, 4M written rows."""
        return [Commits.core(n // self.scale) for n in (1_000_000, 2_000_000, 4_000_000)]

    @property
    def spark_rows(self) -> int:
        return 2_000_000 // self.scale

    @property
    def fold_rows(self) -> int:
        return 1_000_000 // self.scale

    @staticmethod
    def for_mode(quick: bool) -> Config:
        if quick:
            return Config(quick=True, write_reps=3, read_reps=3, read_warmups=0, growth_reps=2, spark_reps=2)
        return Config()
