"""Tables on S3-compatible storage through the same FileIO, against a local moto server.

The server listens on 127.0.0.1 only. Commits go through ``S3FileIO.try_create_atomic``, a PUT
with ``If-None-Match: *``: of writers racing for one snapshot id exactly one wins.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

import stratalake  # noqa: E402
from stratalake.exceptions import UnsupportedError  # noqa: E402
from stratalake.io import FileIO, S3FileIO  # noqa: E402
from stratalake.io import s3 as s3_module  # noqa: E402
from tests.reliability.procs import Worker, wait_all  # noqa: E402
from tests.reliability.workload import batch, check_rows, create_table, live_files_unique, open_table  # noqa: E402


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def options(endpoint: str) -> dict[str, str]:
    return {
        "s3.endpoint": endpoint,
        "s3.access-key": "testing",
        "s3.secret-key": "testing",
        "s3.region": "us-east-1",
        "s3.path.style.access": "true",
    }


@pytest.fixture
def bucket(options: dict[str, str]) -> str:
    name = f"wh-{uuid.uuid4().hex[:12]}"
    io = FileIO.get(f"s3://{name}", options)
    assert isinstance(io, S3FileIO)
    io._boto().create_bucket(Bucket=name)
    return name


def test_conditional_create_has_exactly_one_winner(bucket: str, options: dict[str, str]) -> None:
    io = FileIO.get(f"s3://{bucket}", options)
    path = f"s3://{bucket}/t/snapshot/snapshot-1"
    results: list[bool] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        ok = io.try_create_atomic(path, f"writer-{i}".encode())
        with lock:
            results.append(ok)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert sorted(results) == [False] * 7 + [True]
    assert io.read_text(path).startswith("writer-")
    assert not io.try_create_atomic(path, b"late")
    # The support probe leaves nothing behind.
    assert [s.name for s in io.list_status(f"s3://{bucket}/t/snapshot")] == ["snapshot-1"]


def test_store_ignoring_if_none_match_is_refused(
    bucket: str, options: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    io = FileIO.get(f"s3://{bucket}", {**options, "s3.endpoint": options["s3.endpoint"] + "/"})
    assert isinstance(io, S3FileIO)
    client = io._boto()
    real = client.put_object

    def unconditional(**kwargs: Any) -> Any:
        kwargs.pop("IfNoneMatch", None)  # what an old S3-compatible store effectively does
        return real(**kwargs)

    monkeypatch.setattr(client, "put_object", unconditional)
    monkeypatch.setattr(s3_module, "_PROBED", set())
    with pytest.raises(UnsupportedError, match="ignores conditional writes"):
        io.try_create_atomic(f"s3://{bucket}/t/snapshot/snapshot-1", b"{}")
    assert not io.exists(f"s3://{bucket}/t/snapshot/snapshot-1")


def test_table_lifecycle_on_s3(bucket: str, options: dict[str, str]) -> None:
    wh = f"s3://{bucket}/wh"
    t = create_table(wh, options, **{"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"})
    assert isinstance(t.file_io, S3FileIO)
    for c in range(6):
        t.write(batch(0, c, 50))
        if c == 3:
            t.compact(full=True)
    t = open_table(wh, options)
    rows = t.read()
    assert check_rows(rows) == {0: 5}
    assert rows.num_rows == 6 * 50 + 1
    live_files_unique(t)
    assert len(t.snapshots()) <= 3  # expiration ran on S3 too
    # A stale LATEST hint is verified, not trusted.
    t.file_io.write_bytes(f"{t.location}/snapshot/LATEST", b"1")
    assert open_table(wh, options).latest_snapshot().id == t.latest_snapshot().id
    # A leftover of a dead writer is an orphan.
    leftover = f"{t.location}/bucket-0/data-{uuid.uuid4()}-0.parquet"
    t.file_io.write_bytes(leftover, b"PAR1")
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert leftover in removed
    assert check_rows(open_table(wh, options).read()) == {0: 5}


def test_racing_writer_processes_on_s3(bucket: str, options: dict[str, str], tmp_path: Any) -> None:
    wh = f"s3://{bucket}/wh"
    create_table(wh, options)
    writers, commits = 3, 4
    ws = [
        Worker(
            "writer",
            {
                "warehouse": wh,
                "catalog_options": options,
                "writer": i,
                "commits": commits,
                "rows": 5,
                "max_seconds": 120,
            },
            tmp_path / f"writer-{i}.jsonl",
        )
        for i in range(writers)
    ]
    codes = wait_all(ws, 180)
    records = [r for w in ws for r in w.records()]
    assert all(c == 0 for c in codes.values()), [r for r in records if r["event"] == "error"][:3]
    ok = [r for r in records if r["event"] == "ok"]
    assert Counter((r["writer"], r["commit"]) for r in ok) == Counter(
        (w, c) for w in range(writers) for c in range(commits)
    )
    # Exactly one writer won each snapshot id: every id is claimed once, and ids have no gaps.
    t = open_table(wh, options)
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(snaps[0].id, snaps[-1].id + 1))
    sids = [r["snapshot"] for r in ok]
    assert len(sids) == len(set(sids))
    assert check_rows(t.read()) == dict.fromkeys(range(writers), commits - 1)
    live_files_unique(t)


def test_catalog_on_s3_creates_each_table_once(bucket: str, options: dict[str, str]) -> None:
    cat = stratalake.Catalog(f"s3://{bucket}/wh", options)
    cat.create_database("db")
    create_table(f"s3://{bucket}/wh", options)
    with pytest.raises(stratalake.exceptions.TableAlreadyExistsError):
        create_table(f"s3://{bucket}/wh", options)
