"""The systems under test, behind one small interface.

``PEERS[name]()`` gives a :class:`Peer`; ``peer.unavailable()`` says why it cannot run here (or None),
``peer.create(location, options)`` makes an empty primary-key table with :data:`bench.data.SCHEMA` and
returns a :class:`Handle` whose ``write(table)`` is one commit and ``read()`` is the merged read to Arrow.

- ``stratalake``: this project (``stratalake.Catalog``).
- ``pypaimon``: pypaimon's pure-Python reader and writer.
- ``pypaimon-rust``: pypaimon with ``write.native.enabled`` / ``read.native.enabled`` /
  ``commit.native.enabled``, i.e. the pypaimon-rust (DataFusion/Rust) path. pypaimon falls back to
  Python *silently* when a route is unsupported, so the adapter asserts the native writer is in use and
  counts read fallbacks.
- ``pyarrow``: the floor. A write is one Parquet file (zstd level 1, Paimon's default codec); a read is
  read-all + sort by (key, run descending) + keep the first row per key.

To add a peer, subclass :class:`Peer` and register it in :data:`PEERS`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any, ClassVar

import pyarrow as pa

from bench.data import PRIMARY_KEY, SCHEMA

TABLE = "db.t"


class Handle:
    def write(self, table: pa.Table) -> None:
        raise NotImplementedError

    def read(self) -> pa.Table:
        raise NotImplementedError


class Peer:
    name = ""
    #: whether this peer writes a Paimon table (so pypaimon can inspect its layout)
    paimon_layout = True

    def unavailable(self) -> str | None:
        return None

    def create(self, location: str, options: dict[str, str]) -> Handle:
        raise NotImplementedError

    def open(self, location: str) -> Handle:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        return {}


def _fresh(location: str) -> None:
    shutil.rmtree(location, ignore_errors=True)
    os.makedirs(location, exist_ok=True)


# ---------------------------------------------------------------------------------------------------------
# stratalake


class _StrataHandle(Handle):
    def __init__(self, table: Any) -> None:
        self.t = table

    def write(self, table: pa.Table) -> None:
        self.t.write(table)

    def read(self) -> pa.Table:
        result: pa.Table = self.t.read()
        return result


class StrataLake(Peer):
    name = "stratalake"

    def unavailable(self) -> str | None:
        try:
            import stratalake
        except ImportError as e:
            return f"stratalake does not import: {e}"
        if not hasattr(stratalake, "Catalog"):
            return "stratalake.Catalog does not exist yet (Table API not merged)"
        return None

    def create(self, location: str, options: dict[str, str]) -> Handle:
        import stratalake

        _fresh(location)
        cat = stratalake.Catalog(location)
        cat.create_database("db", ignore_if_exists=True)
        t = cat.create_table(
            TABLE, schema=SCHEMA, primary_key=PRIMARY_KEY, partition_keys=[], options=options
        )
        return _StrataHandle(t)

    def open(self, location: str) -> Handle:
        import stratalake

        return _StrataHandle(stratalake.Catalog(location).get_table(TABLE))


# ---------------------------------------------------------------------------------------------------------
# pypaimon, pure Python and Rust-native


class _PaimonHandle(Handle):
    def __init__(self, table: Any, native: bool) -> None:
        self.t = table
        self.native = native

    def write(self, table: pa.Table) -> None:
        wb = self.t.new_batch_write_builder()
        w = wb.new_write()
        c = wb.new_commit()
        if self.native and type(w).__name__ != "NativeTableWrite":
            raise RuntimeError(f"pypaimon chose {type(w).__name__}, not the native writer")
        try:
            w.write_arrow(table)
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def read(self) -> pa.Table:
        rb = self.t.new_read_builder()
        splits = rb.new_scan().plan().splits()
        result: pa.Table = rb.new_read().to_arrow(splits)
        return result


class PyPaimon(Peer):
    name = "pypaimon"
    native = False
    native_options: ClassVar[dict[str, str]] = {
        "write.native.enabled": "true",
        "read.native.enabled": "true",
        "commit.native.enabled": "true",
    }

    def __init__(self) -> None:
        self.read_fallbacks: list[str] = []

    def unavailable(self) -> str | None:
        try:
            import pypaimon  # noqa: F401
        except ImportError as e:
            return f"pypaimon is not installed: {e}"
        if self.native:
            try:
                import pypaimon_rust.datafusion  # noqa: F401
            except ImportError as e:
                return f"pypaimon-rust is not installed (pip install -r bench/requirements.txt): {e}"
        return None

    def _catalog(self, location: str) -> Any:
        from pypaimon import CatalogFactory

        if self.native:
            self._watch_fallbacks()
        return CatalogFactory.create({"warehouse": location})

    def _watch_fallbacks(self) -> None:
        import pypaimon.read.table_read as tr

        if getattr(tr.TableRead, "_bench_wrapped", False):
            return
        orig = tr.TableRead._native_fallback
        fallbacks = self.read_fallbacks

        def wrapped(self_: Any, reason: str, error: Exception | None = None, log: bool = False) -> Any:
            fallbacks.append(reason)
            return orig(self_, reason, error, log)

        tr.TableRead._native_fallback = wrapped
        tr.TableRead._bench_wrapped = True

    def create(self, location: str, options: dict[str, str]) -> Handle:
        from pypaimon import Schema

        _fresh(location)
        cat = self._catalog(location)
        cat.create_database("db", True)
        opts = dict(options)
        if self.native:
            opts.update(self.native_options)
        cat.create_table(
            TABLE, Schema.from_pyarrow_schema(SCHEMA, primary_keys=PRIMARY_KEY, options=opts), False
        )
        return _PaimonHandle(cat.get_table(TABLE), self.native)

    def open(self, location: str) -> Handle:
        return _PaimonHandle(self._catalog(location).get_table(TABLE), self.native)

    def info(self) -> dict[str, Any]:
        return {"native_read_fallbacks": sorted(set(self.read_fallbacks))} if self.native else {}


class PyPaimonRust(PyPaimon):
    name = "pypaimon-rust"
    native = True


# ---------------------------------------------------------------------------------------------------------
# plain pyarrow: the floor


class _ArrowHandle(Handle):
    def __init__(self, location: str) -> None:
        self.location = location

    def _files(self) -> list[str]:
        return sorted(
            os.path.join(self.location, f) for f in os.listdir(self.location) if f.endswith(".parquet")
        )

    def write(self, table: pa.Table) -> None:
        import pyarrow.parquet as pq

        path = os.path.join(self.location, f"run-{len(self._files()):05d}.parquet")
        pq.write_table(table, path, compression="zstd", compression_level=1)

    def read(self) -> pa.Table:
        import numpy as np
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        parts = [pq.read_table(f) for f in self._files()]
        run = np.repeat(np.arange(len(parts), dtype=np.int32), [p.num_rows for p in parts])
        all_rows = pa.concat_tables(parts).append_column("_run", pa.array(run))
        order = pc.sort_indices(all_rows, sort_keys=[("id", "ascending"), ("_run", "descending")])
        ids = all_rows.column("id").take(order).to_numpy()
        first = np.empty(len(ids), dtype=bool)
        first[:1] = True
        np.not_equal(ids[1:], ids[:-1], out=first[1:])
        return all_rows.drop_columns(["_run"]).take(order.filter(pa.array(first)))


class PyArrowFloor(Peer):
    name = "pyarrow"
    paimon_layout = False

    def create(self, location: str, options: dict[str, str]) -> Handle:
        _fresh(location)
        return _ArrowHandle(location)

    def open(self, location: str) -> Handle:
        return _ArrowHandle(location)


PEERS: dict[str, Callable[[], Peer]] = {
    "stratalake": StrataLake,
    "pypaimon": PyPaimon,
    "pypaimon-rust": PyPaimonRust,
    "pyarrow": PyArrowFloor,
}


def runs_per_bucket(location: str) -> dict[str, Any]:
    """Files (= sorted runs, no compaction here) per bucket of the latest snapshot, as pypaimon plans them.

    Also an interoperability check: pypaimon must be able to plan a stratalake table.
    """
    try:
        from pypaimon import CatalogFactory

        t = CatalogFactory.create({"warehouse": location}).get_table(TABLE)
        splits = t.new_read_builder().new_scan().plan().splits()
        per_bucket: dict[int, int] = {}
        for s in splits:
            per_bucket[s.bucket] = per_bucket.get(s.bucket, 0) + len(s.files)
        return {"files_per_bucket": [per_bucket[b] for b in sorted(per_bucket)]}
    except Exception as e:  # report, do not fail the benchmark
        return {"files_per_bucket_error": f"{type(e).__name__}: {e}"[:300]}
