"""Apache Paimon's Java implementation as a reader of stratalake's tables.

Its jars come from Maven Central (``mvn dependency:get`` into the local Maven repository, so a
fresh machine fetches them once): ``org.apache.paimon:paimon-bundle`` of a release, with the
Hadoop client and SLF4J API it needs on the class path. ``PaimonRead.java`` (beside this file) is
compiled against each release's bundle with ``javac`` and run in one JVM per warehouse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = HERE.parents[1] / ".paimon-java"  # compiled readers, per release (git-ignored)
M2 = Path(os.environ.get("MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))

#: Releases served by Maven Central whose readers are checked (oldest first).
RELEASES = ("0.9.0", "1.0.1", "1.2.0", "1.3.1")
#: Releases whose BatchTableCommit has no updateStatistics (PaimonStats.java is not built for them).
STATS_UNSUPPORTED = ("0.9.0", "1.0.1")
#: Releases PaimonAvroFiles.java is built for (older ones' FileFormat.createReaderFactory takes
#: other arguments).
AVRO_FILES_RELEASES = ("1.3.1",)
_SUPPORT = (
    "org.apache.hadoop:hadoop-client-api:3.3.6",
    "org.apache.hadoop:hadoop-client-runtime:3.3.6",
    "org.slf4j:slf4j-api:1.7.36",
    "commons-logging:commons-logging:1.2",  # ORC's Hadoop configuration logs through it
    "org.xerial.snappy:snappy-java:1.1.8.4",  # Avro's snappy codec (Flink and Spark ship it)
)


class JavaUnavailable(RuntimeError):
    """No ``java``/``javac``/``mvn`` on this machine, or Maven could not fetch an artifact."""


def _jar(coordinates: str) -> Path:
    group, artifact, version = coordinates.split(":")
    path = M2.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")
    if not path.exists():
        if shutil.which("mvn") is None:
            raise JavaUnavailable("mvn is not installed")
        proc = subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinates}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not path.exists():
            raise JavaUnavailable(f"mvn could not fetch {coordinates}: {proc.stdout[-2000:]}")
    return path


def class_path(release: str) -> str:
    """The class path of the reader for ``release``, compiling it once."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise JavaUnavailable(f"{tool} is not installed")
    jars = [_jar(f"org.apache.paimon:paimon-bundle:{release}"), *(_jar(c) for c in _SUPPORT)]
    out = CACHE / release
    services = out / "META-INF" / "services" / "org.apache.paimon.fs.FileIOLoader"
    if not services.exists():
        services.parent.mkdir(parents=True, exist_ok=True)
        services.write_text("HookedFileIO$Loader\n")
    names = ["PaimonRead", "PaimonWrite", "PaimonTag", "PaimonConsumer", "PaimonBranch", "HookedFileIO"]
    if release in AVRO_FILES_RELEASES:
        names.append("PaimonAvroFiles")
    if release not in STATS_UNSUPPORTED:
        names.append("PaimonStats")
    for name in names:
        source = HERE / f"{name}.java"
        compiled = out / f"{name}.class"
        if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
            out.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["javac", "-d", str(out), "-cp", str(jars[0]), str(source)], check=True, timeout=300
            )
    return os.pathsep.join([*(str(j) for j in jars), str(out)])


def write_command(
    release: str,
    warehouse: str,
    identifier: str,
    primary_key: bool,
    ids: range,
    prefix: str,
    options: dict[str, str],
) -> list[str]:
    """The command of one batch commit by Paimon ``release`` into ``identifier`` (created if
    missing): rows ``(id, prefix + id)`` for ``ids`` (v null when id % 7 == 0); see
    ``PaimonWrite.java``. A ``hooked://`` warehouse publishes through ``HookedFileIO.java``."""
    args = [warehouse, identifier, "pk" if primary_key else "append", str(ids.start), str(ids.stop), prefix]
    args += [f"{k}={v}" for k, v in options.items()]
    return ["java", "-cp", class_path(release), "PaimonWrite", *args]


def write_table(
    release: str,
    warehouse: str,
    identifier: str,
    primary_key: bool,
    ids: range,
    prefix: str,
    options: dict[str, str],
) -> None:
    """Run :func:`write_command` and wait for it."""
    cmd = write_command(release, warehouse, identifier, primary_key, ids, prefix, options)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s writer failed: {proc.stderr[-3000:]}")


def tag(
    release: str, warehouse: str, identifier: str, action: str, name: str, snapshot: int | None = None
) -> None:
    """Create (at ``snapshot``) or delete tag ``name`` of ``identifier`` with Paimon ``release``."""
    args = [warehouse, identifier, action, name, *([str(snapshot)] if snapshot is not None else [])]
    proc = subprocess.run(
        ["java", "-cp", class_path(release), "PaimonTag", *args], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s tag {action} failed: {proc.stderr[-3000:]}")


def consumer(release: str, warehouse: str, identifier: str, action: str, *args: str) -> str:
    """Run ``PaimonConsumer.java`` (``list``, ``reset ID NEXT`` or ``expire RETAIN``) with Paimon
    ``release`` on ``identifier``; returns what it printed."""
    proc = subprocess.run(
        ["java", "-cp", class_path(release), "PaimonConsumer", warehouse, identifier, action, *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s consumer {action} failed: {proc.stderr[-3000:]}")
    return proc.stdout


def statistics(release: str, warehouse: str, identifier: str, action: str) -> str:
    """Run ``PaimonStats.java`` (``read``: print ``table.statistics()``; ``commit``: commit fixed
    statistics) with Paimon ``release`` on ``identifier``; returns what it printed."""
    proc = subprocess.run(
        ["java", "-cp", class_path(release), "PaimonStats", warehouse, identifier, action],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s statistics {action} failed: {proc.stderr[-3000:]}")
    return proc.stdout


def branch(release: str, warehouse: str, identifier: str, action: str, *args: str) -> str:
    """Run ``PaimonBranch.java`` (``create NAME [TAG]``, ``delete NAME``, ``fastforward NAME``,
    ``list``, or ``write ID V`` on ``db.t$branch_b``) with Paimon ``release``; returns what it printed."""
    proc = subprocess.run(
        ["java", "-cp", class_path(release), "PaimonBranch", warehouse, identifier, action, *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s branch {action} failed: {proc.stderr[-3000:]}")
    return proc.stdout


def avro_files(release: str, *args: str) -> dict[str, Any]:
    """Run ``PaimonAvroFiles.java`` (``write FILE ROWS REPEATS`` or ``read FILE REPEATS``) with
    Paimon ``release``; returns the JSON object it printed (seconds; rows and checksum of a read),
    with the JVM's peak RSS (``max_rss_mib``, from its rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            ["java", "-cp", class_path(release), "PaimonAvroFiles", *args], stdout=out, stderr=err, text=True
        )
        _, status, usage = os.wait4(proc.pid, 0)  # not proc.wait(): its rusage is wanted
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"Paimon {release}'s Avro files {args[0]} failed: {err.read()[-3000:]}")
        result: dict[str, Any] = json.loads(out.read().strip().splitlines()[-1])
    result["max_rss_mib"] = usage.ru_maxrss / 1024  # KiB on Linux
    return result


def read_tables(
    release: str, warehouse: str, identifiers: list[str]
) -> dict[str, list[tuple[str, ...]] | str]:
    """Each table's rows as Paimon ``release`` reads them (fields as Java prints them, sorted), or
    the error text when that release fails to read the table."""
    proc = subprocess.run(
        ["java", "-cp", class_path(release), "PaimonRead", warehouse, *identifiers],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s reader failed: {proc.stderr[-3000:]}")
    out: dict[str, list[tuple[str, ...]] | str] = {}
    current: str | None = None
    rows: list[tuple[str, ...]] = []
    for line in proc.stdout.splitlines():
        if line.startswith("## "):
            if current is not None and current not in out:
                out[current] = sorted(rows)
            current, rows = line[3:], []
        elif line.startswith("!! ") and current is not None:
            out[current] = line[3:]
        elif current is not None:
            rows.append(tuple(line.split("\t")))
    if current is not None and current not in out:
        out[current] = sorted(rows)
    return out
