from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.metastore import postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[postgres.Server]:
    with postgres.running() as server:
        yield server
