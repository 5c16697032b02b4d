"""Writes of primary-key tables: the writer, the per-bucket compaction and the commit protocol
(:mod:`~stratalake.operation.commit`)."""
