"""Fixed-bucket assignment (docs/format.md section 8), vectorized over all rows with numpy.

``bucket = abs(h % N)`` (Java remainder) where ``h`` is Paimon's MurmurHash3_x86_32 (seed 42,
words only, no tail) of the bucket key's BinaryRow bytes without the arity prefix. The hash
walks the words column by column across all rows of equal length at once.

>>> import pyarrow as pa
>>> from stratalake.types import BigIntType
>>> bucket_ids([pa.array(range(1, 9))], [BigIntType()], 4).tolist()
[2, 0, 1, 2, 0, 0, 3, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stratalake.exceptions import InvalidOptionError
from stratalake.spec.binary_row import encode_arrow_rows, encode_row_body
from stratalake.types import DataType

__all__ = ["bucket_ids", "bucket_of_hash", "bucket_of_values", "hash_bytes", "hash_rows", "hash_words"]

SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def hash_words(words: npt.NDArray[np.uint32], seed: int = SEED) -> npt.NDArray[np.int32]:
    """Paimon's word-wise MurmurHash3_x86_32 of each row of ``words`` (shape (rows, n_words)).

    Row ``r``'s bytes are ``words[r]`` read as little-endian uint32; its length is ``4 * n_words``.
    """
    rows, n_words = words.shape
    if rows * 16 < n_words:
        return _hash_few_long_rows(words, seed)
    h = np.full(rows, seed, dtype=np.uint32)
    k = np.empty(rows, dtype=np.uint32)
    t = np.empty(rows, dtype=np.uint32)
    # A column at a time in a contiguous copy: strided reads over wide rows are slower.
    cols = np.ascontiguousarray(words.T) if n_words > 1 else words.reshape(n_words, rows)
    for j in range(n_words):
        # k1 = rotl(k1 * C1, 15) * C2  (uint32 arithmetic wraps like Java int)
        np.multiply(cols[j], np.uint32(_C1), out=k)
        np.left_shift(k, np.uint32(15), out=t)
        np.right_shift(k, np.uint32(17), out=k)
        np.bitwise_or(k, t, out=k)
        np.multiply(k, np.uint32(_C2), out=k)
        # h1 = rotl(h1 ^ k1, 13) * 5 + 0xe6546b64
        np.bitwise_xor(h, k, out=h)
        np.left_shift(h, np.uint32(13), out=t)
        np.right_shift(h, np.uint32(19), out=h)
        np.bitwise_or(h, t, out=h)
        np.multiply(h, np.uint32(5), out=h)
        np.add(h, np.uint32(0xE6546B64), out=h)
    return _fmix(h, n_words)


def _hash_few_long_rows(words: npt.NDArray[np.uint32], seed: int) -> npt.NDArray[np.int32]:
    """:func:`hash_words` for a few very long rows (e.g. a megabyte string key): a dozen numpy
    calls per word would take seconds there. The words are mixed all at once, then folded into
    each row's hash in a plain loop, the one step that is sequential."""
    k = words.astype(np.uint32) * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= np.uint32(_C2)
    h = np.empty(words.shape[0], dtype=np.uint32)
    for r in range(words.shape[0]):
        acc = seed
        for word in k[r].tolist():
            acc ^= word
            acc = ((acc << 13) | (acc >> 19)) & 0xFFFFFFFF
            acc = (acc * 5 + 0xE6546B64) & 0xFFFFFFFF
        h[r] = acc
    return _fmix(h, words.shape[1])


def _fmix(h: npt.NDArray[np.uint32], n_words: int) -> npt.NDArray[np.int32]:
    """Murmur3's final mix with the byte length, in place; the result viewed as Java ints."""
    np.bitwise_xor(h, np.uint32((4 * n_words) & 0xFFFFFFFF), out=h)
    np.bitwise_xor(h, h >> np.uint32(16), out=h)
    np.multiply(h, np.uint32(0x85EBCA6B), out=h)
    np.bitwise_xor(h, h >> np.uint32(13), out=h)
    np.multiply(h, np.uint32(0xC2B2AE35), out=h)
    np.bitwise_xor(h, h >> np.uint32(16), out=h)
    return h.view(np.int32)


def hash_bytes(data: bytes) -> int:
    """Hash of one BinaryRow body (length a multiple of 4), as a signed int32 (Java hashCode)."""
    if len(data) % 4:
        raise ValueError(f"BinaryRow bytes must be word aligned, got {len(data)} bytes")
    words = np.frombuffer(data, dtype="<u4").reshape(1, -1)
    return int(hash_words(words)[0])


def hash_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> npt.NDArray[np.int32]:
    """``BinaryRow.hashCode()`` of every row built from ``columns`` (int32, one per row)."""
    n = len(columns[0]) if columns else 0
    if not columns:
        return np.full(0, 0, dtype=np.int32)
    out = np.empty(n, dtype=np.int32)
    for group in encode_arrow_rows(columns, types):
        out[group.rows] = hash_words(group.words)
    return out


def bucket_of_hash(hashes: npt.NDArray[np.int32], num_buckets: int) -> npt.NDArray[np.int32]:
    """``abs(hash % num_buckets)`` with Java's truncating remainder."""
    if num_buckets <= 0:
        raise InvalidOptionError(f"option 'bucket' must be > 0 for fixed buckets, got {num_buckets}")
    return np.abs(np.fmod(hashes.astype(np.int64), num_buckets)).astype(np.int32)


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int
) -> npt.NDArray[np.int32]:
    """Fixed bucket of every row, from its bucket-key columns (in bucket-key order)."""
    return bucket_of_hash(hash_rows(columns, types), num_buckets)


def bucket_of_values(values: Sequence[object], types: Sequence[DataType], num_buckets: int) -> int:
    """Bucket of one key given as Python values (for metadata and tests)."""
    h = np.array([hash_bytes(encode_row_body(values, types))], dtype=np.int32)
    return int(bucket_of_hash(h, num_buckets)[0])
