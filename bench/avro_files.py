"""Avro data files (issue 33): stratalake's column-by-column Avro against Paimon's Java Avro format
and record-by-record decoding (fastavro: pypaimon's Avro reader, and stratalake's before).

    .venv/bin/python -m bench.avro_files [--rows 1000000] [--repeats 3] [--fastavro-repeats 1] [--json out.json]

One file of ``--rows`` rows of every column type Paimon stores in Avro (17 columns: integers,
floating point, strings, bytes, dates, timestamps, decimals of 18 and 38 digits, an array, two maps,
a row; some nullable), zstd level 1 as Paimon writes by default. Paimon Java
(``tests/interop_java/PaimonAvroFiles.java``, Paimon's bundle from Maven Central as ``make
test-paimon-java`` fetches it) writes the file; stratalake reads it and writes the rows again;
fastavro writes and reads them too. Each system's write and read of every column run ``--repeats``
times (fastavro ``--fastavro-repeats``); the medians are reported, with rows a second. Checked on the way, so the figures are of
correct work: Paimon Java reads stratalake's file to the same checksum of every value as its own;
stratalake and fastavro read back the rows they wrote.

Paimon Java runs in one JVM per phase (its first run warms it up; all runs are in the JSON).
Memory: for the Python systems, the peak RSS growth of this process over an operation's runs (the
table being written, or read back, included); for Paimon Java, the JVM's peak RSS (its default
heap, a quarter of the machine's memory, so not a bound on what it needs).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

PAIMON_RELEASE = "1.3.1"


PEAKS: dict[str, float] = {}


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def timed(fn: Callable[[], Any], repeats: int, name: str | None = None) -> tuple[list[float], Any]:
    """Wall times of ``repeats`` runs of ``fn``, and its last result; with ``name``, the peak RSS
    growth of this process over the runs goes to ``PEAKS[name]`` (VmHWM reset first)."""
    times, out = [], None
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM from here on
    base = _status_mib("VmRSS")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    if name is not None:
        PEAKS[name] = _status_mib("VmHWM") - base
    return times, out


# -- stratalake ------------------------------------------------------------------------------------


def stratalake_write(path: str, table: pa.Table) -> None:
    from stratalake.io import FileIO
    from stratalake.lsm.file_format import file_format

    file_format("avro").write(FileIO.get(path), path, table, "zstd", 1)


def stratalake_read(path: str) -> pa.Table:
    from stratalake.io import FileIO
    from stratalake.lsm.file_format import open_data_file

    return open_data_file(FileIO.get(path), path).read()


# -- fastavro, record by record --------------------------------------------------------------------


def fastavro_write(path: str, table: pa.Table) -> None:
    """Temporal values as the integers Avro stores, maps as fastavro takes them."""
    import fastavro

    from stratalake.lsm.file_format import _raw_for_avro, avro_schema

    def py(value: Any, t: pa.DataType) -> Any:
        if value is None:
            return None
        if pa.types.is_map(t):
            if pa.types.is_string(t.key_type):
                return {e["key"]: e["value"] for e in value}
            return value
        return value

    names = table.column_names
    raw = [[py(v, c.type) for v in _raw_for_avro(c.combine_chunks()).to_pylist()] for c in table.columns]
    records = (dict(zip(names, values, strict=True)) for values in zip(*raw, strict=True))
    with open(path, "wb") as f:
        fastavro.writer(
            f,
            fastavro.parse_schema(avro_schema(table.schema)),
            records,
            codec="zstandard",
            codec_compression_level=1,
        )


def fastavro_read(path: str, schema: pa.Schema) -> pa.Table:
    """As pypaimon's Avro reader (and stratalake's before): fastavro's records, then a list a
    column, then Arrow (maps as key/value pairs)."""
    import fastavro

    def py(value: Any, t: pa.DataType) -> Any:
        if value is None:
            return None
        if pa.types.is_map(t):
            items = value.items() if isinstance(value, dict) else ((e["key"], e["value"]) for e in value)
            return list(items)
        return value

    with open(path, "rb") as f:
        records: list[Any] = list(fastavro.reader(io.BytesIO(f.read())))
    return pa.table(
        {f.name: pa.array([py(r[f.name], f.type) for r in records], type=f.type) for f in schema},
        schema=schema,
    )


# -- Paimon Java -----------------------------------------------------------------------------------


def paimon(*args: str) -> dict[str, Any]:
    from tests.interop_java.paimon_java import avro_files

    return avro_files(PAIMON_RELEASE, *args)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--fastavro-repeats", type=int, default=1, help="fastavro's runs (each takes ~40x stratalake's)"
    )
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-avro-")
    out: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats}
    try:
        java = os.path.join(work, "paimon-java.avro")
        written = paimon("write", java, str(args.rows), str(args.repeats))
        out["paimon_java_write_s"] = written["seconds"]
        out["paimon_java_write_peak_rss_mib"] = written["max_rss_mib"]
        out["paimon_java_file_bytes"] = os.path.getsize(java)
        times, table = timed(lambda: stratalake_read(java), args.repeats, "stratalake_read_paimon_java_file")
        out["stratalake_read_paimon_java_file_s"] = times
        assert table.num_rows == args.rows

        ours = os.path.join(work, "stratalake.avro")
        out["stratalake_write_s"], _ = timed(
            lambda: stratalake_write(ours, table), args.repeats, "stratalake_write"
        )
        out["file_bytes"] = os.path.getsize(ours)
        times, got = timed(lambda: stratalake_read(ours), args.repeats, "stratalake_read")
        out["stratalake_read_s"] = times
        assert got.equals(table), "stratalake read back other rows than it wrote"
        theirs, mine = paimon("read", java, str(args.repeats)), paimon("read", ours, str(args.repeats))
        assert theirs["rows"] == mine["rows"] == args.rows and theirs["checksum"] == mine["checksum"], (
            theirs,
            mine,
        )
        out["paimon_java_read_s"] = mine["seconds"]
        out["paimon_java_read_peak_rss_mib"] = mine["max_rss_mib"]

        slow = os.path.join(work, "fastavro.avro")
        out["fastavro_write_s"], _ = timed(
            lambda: fastavro_write(slow, table), args.fastavro_repeats, "fastavro_write"
        )
        times, got = timed(lambda: fastavro_read(slow, table.schema), args.fastavro_repeats, "fastavro_read")
        out["fastavro_read_s"] = times
        assert got.equals(table), "fastavro read back other rows"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out.update({f"{k}_peak_rss_growth_mib": v for k, v in PEAKS.items()})
    report(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return out


def report(out: dict[str, Any]) -> None:
    n = out["rows"]
    base = {
        "write": statistics.median(out["stratalake_write_s"]),
        "read": statistics.median(out["stratalake_read_s"]),
    }
    print(
        f"{n:,} rows, 17 columns; stratalake's file {out['file_bytes'] / 1e6:.1f} MB, Paimon Java's "
        f"{out['paimon_java_file_bytes'] / 1e6:.1f} MB (zstd 1); medians of {out['repeats']}"
    )
    print(f"{'system':<40} {'op':<6} {'median s':>9} {'rows/s':>12} {'vs stratalake':>14} {'peak MiB':>9}")
    for system, key in (
        ("stratalake (columns)", "stratalake"),
        ("Paimon Java " + PAIMON_RELEASE, "paimon_java"),
        ("fastavro records (pypaimon; before)", "fastavro"),
    ):
        for op in ("write", "read"):
            times = out.get(f"{key}_{op}_s")
            if not times:
                continue
            m = statistics.median(times)
            # Python: this process's RSS growth over the runs; Paimon Java: the JVM's peak RSS.
            peak = out.get(f"{key}_{op}_peak_rss_growth_mib", out.get(f"{key}_{op}_peak_rss_mib", 0.0))
            print(f"{system:<40} {op:<6} {m:>9.3f} {n / m:>12,.0f} {m / base[op]:>13.2f}x {peak:>9.0f}")
    m = statistics.median(out["stratalake_read_paimon_java_file_s"])
    peak = out.get("stratalake_read_paimon_java_file_peak_rss_growth_mib", 0.0)
    print(
        f"{'stratalake reads Paimon Java file':<40} {'read':<6} {m:>9.3f} {n / m:>12,.0f} "
        f"{m / base['read']:>13.2f}x {peak:>9.0f}"
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
