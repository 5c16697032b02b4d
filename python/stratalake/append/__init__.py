"""Append tables (no primary key): writer, row-level DML (deletion vectors or rewrites) and
small-file compaction. Reading them is :mod:`stratalake.read.append_read`."""
