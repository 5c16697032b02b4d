"""Choosing the compaction rewriter (and so the changelog producer) of a bucket.

``input`` needs no rewriter: the writer copies its input into changelog files at flush time.
``lookup`` and ``full-compaction`` produce changelog while compacting, by wrapping the table's
merge function; without a producer compaction only merges. Tables that need lookup (deletion
vectors, first-row, force-lookup) always compact with the lookup rewriter.
"""

from __future__ import annotations

from stratalake.changelog.full_compaction import FullChangelogRewriter
from stratalake.changelog.lookup import LookupChangelogRewriter
from stratalake.lsm.compaction import BucketFiles, MergeTreeCompactRewriter, needs_lookup
from stratalake.lsm.levels import Levels
from stratalake.lsm.lookup import LookupLevels, memory_cache
from stratalake.merge import MergeContext
from stratalake.options import ChangelogProducer, MergeEngine


def lookup_merge_enabled(ctx: MergeContext) -> bool:
    """Whether merges of this table use only the newest high-level record of a key (see
    :class:`stratalake.lsm.lookup.LookupMergeFunction`); first-row needs no such rule."""
    return needs_lookup(ctx.options) and ctx.options.merge_engine is not MergeEngine.FIRST_ROW


def create_rewriter(files: BucketFiles, ctx: MergeContext, levels: Levels) -> MergeTreeCompactRewriter:
    """The rewriter for one bucket of a table, by its ``changelog-producer``."""
    options = ctx.options
    producer = options.changelog_producer
    row_dedup = options.get_bool("changelog-producer.row-deduplicate")
    if producer is ChangelogProducer.FULL_COMPACTION:
        return FullChangelogRewriter(files, ctx, levels.max_level, row_dedup, lookup_merge_enabled(ctx))
    dvs = files.deletion_vectors
    if needs_lookup(options):
        cache = memory_cache(options.get_int("lookup.cache-max-memory-size") or 0)
        lookup_levels = LookupLevels(
            levels,
            ctx.key_names,
            files.read_raw,  # cached whole; deletion vectors are applied per lookup
            cache,
            cache_prefix=f"{files.directory}@{files.schema.id}",
            deletion_vector_of=dvs.deletion_vector_of if dvs is not None else None,
            iter_read=files.iter_raw,  # files too large for the cache are probed batch by batch
        )
        # Paimon's needLookup tables compact level 0 with a lookup whatever the producer: deletion
        # vectors need it to find the rows to mask, first-row to drop keys already stored (so
        # level >= 1 holds each key once and batch reads skip level 0), force-lookup to merge
        # with the newest stored value.
        return LookupChangelogRewriter(
            files, ctx, lookup_levels, row_dedup, produce_changelog=producer is ChangelogProducer.LOOKUP
        )
    return MergeTreeCompactRewriter(files, ctx, lookup_merge=lookup_merge_enabled(ctx))
