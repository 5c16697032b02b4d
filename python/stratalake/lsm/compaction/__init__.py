"""Compaction of a bucket's LSM tree: strategy (which runs, no I/O), task plan (merge or re-level),
rewriter (the I/O) and manager (scheduling)."""

from stratalake.lsm.compaction.manager import CompactIncrement, MergeTreeCompactManager
from stratalake.lsm.compaction.rewriter import BucketFiles, CompactResult, MergeTreeCompactRewriter
from stratalake.lsm.compaction.strategy import (
    CompactionOptions,
    CompactStrategy,
    CompactUnit,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    create_strategy,
    drop_delete,
    needs_lookup,
    pick_full_compaction,
)
from stratalake.lsm.compaction.task import Rewrite, Upgrade, plan_steps

__all__ = [
    "BucketFiles",
    "CompactIncrement",
    "CompactResult",
    "CompactStrategy",
    "CompactUnit",
    "CompactionOptions",
    "ForceUpLevel0Compaction",
    "MergeTreeCompactManager",
    "MergeTreeCompactRewriter",
    "Rewrite",
    "UniversalCompaction",
    "Upgrade",
    "create_strategy",
    "drop_delete",
    "needs_lookup",
    "pick_full_compaction",
    "plan_steps",
]
