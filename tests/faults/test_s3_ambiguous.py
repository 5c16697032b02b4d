"""An object store that applies a snapshot PUT but loses the answer (moto on 127.0.0.1).

botocore retries a PUT whose response timed out; with ``If-None-Match: *`` the retry gets 412
for the object its own first attempt created. That 412 is not a lost race: the commit happened.
When not even a read-back can tell, the commit raises ``CommitStateUnknownError`` and keeps its
files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from botocore.exceptions import ReadTimeoutError

from stratalake.exceptions import CommitStateUnknownError
from stratalake.io import S3FileIO
from tests.faults.sweep import referenced_files
from tests.reliability.workload import batch, check_rows, create_table, open_table


def _lose_answer_of_first_snapshot_put(io: S3FileIO, calls: list[str], always: bool = False) -> None:
    """The next PUT of a snapshot file reaches the store, and its answer is lost (a read timeout);
    with ``always`` every later attempt times out too, without reaching the store."""
    client = io._boto()
    sender = S3FileIO(io._options)._boto()  # another client of the same configuration

    def before_send(request: Any, **_: Any) -> None:
        if "/snapshot/snapshot-" not in request.url:
            return
        calls.append(request.url)
        if len(calls) == 1:
            key = request.url.split("/", 4)[4].split("?")[0]
            bucket_name = request.url.split("/", 4)[3]
            sender.put_object(Bucket=bucket_name, Key=key, Body=request.body, IfNoneMatch="*")
        if len(calls) == 1 or always:
            raise ReadTimeoutError(endpoint_url=request.url)

    client.meta.events.register("before-send.s3.PutObject", before_send)


def test_retried_put_refused_by_its_own_first_attempt_is_a_commit(bucket: str, options: dict[str, str]) -> None:
    wh = f"s3://{bucket}/wh"
    t = create_table(wh, options)
    t.write(batch(0, 0, 5))
    t = open_table(wh, options)
    assert isinstance(t.file_io, S3FileIO)
    calls: list[str] = []
    _lose_answer_of_first_snapshot_put(t.file_io, calls)
    sid = t.write(batch(0, 1, 7))
    assert sid == 2
    assert len(calls) >= 2, calls  # botocore retried the PUT and met the object of its first try
    fresh = open_table(wh, options)
    assert fresh.latest_snapshot().id == 2
    check_rows(fresh.read())
    assert fresh.read().num_rows == 13  # 5 + 7 rows and the writer's state row
    for rel in referenced_files(fresh):
        assert fresh.file_io.exists(f"{fresh.location}/{rel}"), rel


def test_unresolvable_put_raises_commit_state_unknown_and_keeps_files(
    bucket: str, options: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    wh = f"s3://{bucket}/wh2"
    t = create_table(wh, options)
    t.write(batch(0, 0, 5))
    t = open_table(wh, options)
    assert isinstance(t.file_io, S3FileIO)
    calls: list[str] = []
    _lose_answer_of_first_snapshot_put(t.file_io, calls, always=True)

    def unreadable(*_: Any, **__: Any) -> Any:
        raise OSError("injected: the store does not answer reads either")

    # Once the PUT was sent, the read-back of the snapshot fails too: the outcome cannot be told.
    real_exists = t.file_io.exists
    monkeypatch.setattr(
        t.file_io, "exists", lambda p: unreadable() if calls and "/snapshot/snapshot-2" in p else real_exists(p)
    )
    with pytest.raises(CommitStateUnknownError, match="cannot tell whether snapshot 2") as info:
        t.write(batch(0, 1, 7))
    assert info.value.snapshot_id == 2 and info.value.commit_user
    assert "$snapshots" in str(info.value)
    monkeypatch.undo()
    fresh = open_table(wh, options)
    # The first attempt did land: the commit happened, and every file it references is there.
    assert fresh.latest_snapshot().id == 2
    assert fresh.latest_snapshot().commit_user == info.value.commit_user
    assert fresh.read().num_rows == 13  # 5 + 7 rows and the writer's state row
    for rel in referenced_files(fresh):
        assert fresh.file_io.exists(f"{fresh.location}/{rel}"), rel
