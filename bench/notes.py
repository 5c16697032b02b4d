"""Hand-written analysis of missed goals, printed under the goal in BENCHMARKS.md when it is missed.

Keys are ``Goal.goal`` prefixes (the text before the first ':'), e.g. ``"load"`` or ``"merged read"``.
Say where the time goes (from the profile the run records) and what would close the gap; update the
note when the code changes. The run adds the measured profile itself.
"""

from __future__ import annotations

NOTES: dict[str, str] = {
    "upsert": (
        "Seen at --quick sizes only (20k-row commits; full runs measured 25-53x). A stratalake commit has a "
        "fixed cost of ~25-30 ms on this machine: 4 Parquet files (one per bucket, written in a thread "
        "pool), ~5 fsyncs, the manifest, manifest list and snapshot, whatever the row count; pure "
        "pypaimon's cost is mostly per row (~16 us/row), so at 20k rows the ratio drops to ~10-15x. To "
        "close it at small commits: skip fsync of data files until the commit (one fsync pass or none "
        "for local scratch warehouses), and write the 4 bucket files in parallel with the manifest "
        "encoding. Judge this goal on full runs."
    ),
    "SELECT * / SELECT one column": (
        "At --quick sizes (200k rows) both statements cost mostly the per-query fixed part (planning, "
        "the bridge round trip, task launch: ~0.15 s), so the ratio shrinks toward 1; full runs (2M rows) "
        "measured 2.2-2.5x. What the one-column read saves is Parquet decoding and the JVM's Arrow-to-row "
        "conversion of the other columns (Spark 4.3's Python reader has no columnar path). Judge this goal "
        "on full runs."
    ),
    "bucket-key join": (
        "At --quick sizes (200k rows per table) the shuffle that the storage-partitioned join avoids is "
        "small next to the fixed cost of two scans and the job (~0.3 s); full runs (2M rows) measured "
        "1.6-2.4x (narrow) and 1.57-1.76x (wide). The wide join's margin is thin because both sides are "
        "dominated by the scans (Arrow-to-row conversion in the JVM). Judge this goal on full runs."
    ),
    "merged read": (
        "Where the time goes (profile of 2026-11-22, git 9d2df89): about 55% in "
        "`merge/sort.py:_sort_indices`, 20% reading Parquet, 15% in two `take`s per bucket. The sort is "
        "`np.lexsort((_SEQUENCE_NUMBER, key))` over the concatenated files of a bucket: the files are not "
        "concatenated oldest-first, so the sequence column is not monotonic and the cheap key-only path is "
        "skipped; and inside a file the sequence numbers are in input (random) order, so lexsort's first "
        "pass sorts 500k random int64s (250-600 ms per bucket here, vs 5-20 ms for a stable key-only "
        "argsort of the same rows). What would close it: concatenate a split's files ordered by "
        "`min_sequence_number` (oldest first); when overlapping files have disjoint sequence ranges "
        "(always true for level-0 files of separate commits; check it from the file metas), sort by the "
        "key alone with a stable sort (`np.argsort(key, kind='stable')`, whose timsort merges the k "
        "already-sorted runs in O(n log k)); fall back to lexsort otherwise. Then pick the last row of each "
        "key group from the sorted key array and `take` the winners once instead of sorting the whole "
        "table and taking again. Expected: the read drops to roughly the Parquet decode plus one take, "
        "below both pypaimon-rust and the floor."
    ),
}
