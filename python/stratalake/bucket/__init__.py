"""Bucket assignment beyond the fixed hash: dynamic buckets (hash index files) and cross-partition
upserts (the key-to-partition index)."""
