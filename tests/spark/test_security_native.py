"""Issue 36, item 6, on the JVM side: a crafted deletion vector read by Spark's native reader.

The shim's ``DeletionVectors`` reads a vector's size from the index file and allocates that many
bytes; the size is checked against the index manifest and the file's length first, so a crafted
size fails the query with an error naming the vector instead of asking the JVM for gigabytes.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

pytestmark = pytest.mark.spark

NATIVE = "stratalake.read.native.enabled"
# Paimon's BitmapDeletionVector magic number, big-endian, as it precedes every 32-bit vector.
MAGIC = struct.pack(">i", 1581511376)


def _vector_sizes(index_file: Any) -> list[int]:
    """Offsets of the int32 size fields in a deletion-vector index file (one per vector)."""
    data = index_file.read_bytes()
    offsets, at = [], data.find(MAGIC)
    while at >= 0:
        offsets.append(at - 4)
        at = data.find(MAGIC, at + 1)
    return offsets


@pytest.mark.parametrize("size", [0x7FFFFFF0, 5])
def test_crafted_vector_size_fails_the_native_read_by_name(spark: Any, db: str, warehouse: Any, size: int) -> None:
    name = f"dv_size_{size}"
    table = f"{db}.{name}"
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1', 'deletion-vectors.enabled' = 'true')"""
    )
    spark.sql(f"INSERT INTO {table} SELECT id, concat('v', id) FROM range(5000)")
    spark.sql(f"DELETE FROM {table} WHERE k % 3 = 0")
    spark.conf.set(NATIVE, "true")
    try:
        # A value column, so the rows are read (a bare count(*) may come from metadata).
        query = f"SELECT count(*), max(length(v)) FROM {table} WHERE v IS NOT NULL"
        assert tuple(spark.sql(query).collect()[0]) == (5000 - 1667, 5)
        index_files = sorted((warehouse / f"{db.removeprefix('lake.')}.db" / name / "index").glob("index-*"))
        assert index_files, "the DELETE wrote no deletion vector"
        crafted = 0
        for f in index_files:
            data = bytearray(f.read_bytes())
            for at in _vector_sizes(f):
                data[at : at + 4] = struct.pack(">i", size)
                crafted += 1
            f.write_bytes(bytes(data))
        assert crafted
        with pytest.raises(Exception) as failure:
            spark.sql(query).collect()
        message = str(failure.value)
        # The JVM's own message, not an OutOfMemoryError or a wrong count.
        assert "deletion vector of" in message and "is corrupt: size" in message, message
        assert "OutOfMemoryError" not in message
    finally:
        spark.conf.unset(NATIVE)


def _relink(directory: Any, elsewhere: Any) -> None:
    """Move ``directory`` to ``elsewhere`` and leave a symbolic link to it in its place."""
    import os
    import shutil

    shutil.move(str(directory), str(elsewhere))
    os.symlink(elsewhere, directory)


def test_native_read_refuses_a_linked_bucket_directory(spark: Any, db: str, warehouse: Any, tmp_path: Any) -> None:
    table = f"{db}.linked_read"
    spark.sql(f"CREATE TABLE {table} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '1')")
    spark.sql(f"INSERT INTO {table} SELECT id, concat('v', id) FROM range(100)")
    query = f"SELECT count(*), max(length(v)) FROM {table} WHERE v IS NOT NULL"
    spark.conf.set(NATIVE, "true")
    try:
        assert tuple(spark.sql(query).collect()[0]) == (100, 3)
        _relink(warehouse / f"{db.removeprefix('lake.')}.db" / "linked_read" / "bucket-0", tmp_path / "elsewhere")
        for on in ("true", "false"):  # Spark's Parquet reader in the JVM, then the Python reader
            spark.conf.set(NATIVE, on)
            with pytest.raises(Exception, match=r"bucket-0 is a symbolic link; stratalake does not read"):
                spark.sql(query).collect()
    finally:
        spark.conf.unset(NATIVE)


def test_native_append_write_refuses_a_linked_bucket_directory(
    spark: Any, db: str, warehouse: Any, tmp_path: Any
) -> None:
    table = f"{db}.linked_write"
    spark.sql(f"CREATE TABLE {table} (k BIGINT, v STRING) PARTITIONED BY (v)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a')")
    elsewhere = tmp_path / "elsewhere_w"
    _relink(warehouse / f"{db.removeprefix('lake.')}.db" / "linked_write" / "v=a", elsewhere)
    before = sorted(p.name for p in elsewhere.rglob("*"))
    with pytest.raises(Exception, match=r"v=a is a symbolic link; stratalake does not write"):
        spark.sql(f"INSERT INTO {table} VALUES (2, 'a')")
    assert sorted(p.name for p in elsewhere.rglob("*")) == before
