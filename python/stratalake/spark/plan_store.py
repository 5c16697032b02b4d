"""A scan plan's entries kept out of the driver's memory while the plan is made and sent.

A plan of a large table has one entry per split (its pickled Python partition, its native files)
and the driver's bridge would hold them all until the reply is written, then the reply's JSON as
well: ~0.4 KB a planned file, the last part of planning that grew with the table. Here each entry
goes, pickled and compressed, to a spooled temporary file (memory until it is large, then an
anonymous local file), and only what packing decides with stays in memory: bucket and weights.
The reply's splits (:class:`SpilledSplits`) are read back one at a time as the bridge writes them
(``bridge_handlers.handle_to``).
"""

from __future__ import annotations

import pickle
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: Bytes of compressed entries kept in memory before the file goes to local disk.
SPOOL_BYTES = 8 * 1024 * 1024


class PlanEntries:
    """Plan entries (dicts) appended in plan order, stored compressed; per entry in memory: its
    bucket, its weight, the weight of its native files (None: not read natively) and whether it
    is read natively after a key merge in Python (``superseded_``)."""

    def __init__(self) -> None:
        # Open for the plan's lifetime: closed with it (or by :meth:`close`).
        self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
        self._end = 0
        self._spans: list[tuple[int, int]] = []
        self.buckets: list[int] = []
        self.weights: list[int] = []
        self.native_weights: list[int | None] = []
        self.key_merged: list[bool] = []
        self._drop_key_merged = False

    def __len__(self) -> int:
        return len(self._spans)

    def append(self, entry: dict[str, Any], weight: int, native_weight: int | None) -> None:
        data = zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), 1)
        self._file.seek(self._end)
        self._file.write(data)
        self._spans.append((self._end, len(data)))
        self._end += len(data)
        self.buckets.append(int(entry["bucket"]))
        self.weights.append(weight)
        self.native_weights.append(native_weight)
        self.key_merged.append(bool(entry.get("superseded_")))

    def drop_key_merged_reads(self) -> None:
        """Entries read natively after a key merge go through the Python reader instead (it
        merges them in key order): the scan reports an order that those reads would break."""
        self._drop_key_merged = True
        for i, merged in enumerate(self.key_merged):
            if merged:
                self.native_weights[i] = None
                self.key_merged[i] = False

    def get(self, i: int) -> dict[str, Any]:
        offset, length = self._spans[i]
        self._file.seek(offset)
        entry: dict[str, Any] = pickle.loads(zlib.decompress(self._file.read(length)))
        if self._drop_key_merged and entry.pop("superseded_", None):
            del entry["native_files"]
        return entry

    def close(self) -> None:
        self._file.close()


class SpilledSplits(Sequence[dict[str, Any]]):
    """A plan's reply splits, made one at a time from :class:`PlanEntries` by ``make(group)``
    for each group of entry indices (an input partition each), in order. Iterating streams them;
    indexing or comparing makes them all (tests, small plans)."""

    def __init__(
        self,
        entries: PlanEntries,
        groups: list[tuple[int, list[int]]],
        make: Callable[[list[dict[str, Any]], int], dict[str, Any]],
    ) -> None:
        self._entries = entries
        self._groups = groups
        self._make = make

    def __len__(self) -> int:
        return len(self._groups)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for key, group in self._groups:
            yield self._make([self._entries.get(i) for i in group], key)

    def __getitem__(self, index: Any) -> Any:
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SpilledSplits | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SpilledSplits({len(self)} splits)"
