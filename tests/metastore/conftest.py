"""One real server of each metastore per test session: a Hive Metastore (tests/metastore/hive_server.py)
and a PostgreSQL (tests/metastore/postgres.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.metastore import hive_server, postgres

# Locks outlive a dead holder by this long (the metastore's 'metastore.txn.timeout'): short, so
# the test of a killed holder runs in seconds; commits in these tests hold a lock far shorter.
LOCK_TIMEOUT_S = 8


@pytest.fixture(scope="session")
def hive_metastore() -> Iterator[hive_server.HiveMetastore]:
    server = hive_server.start(txn_timeout_s=LOCK_TIMEOUT_S)
    logging.getLogger(__name__).warning("Hive Metastore started in %.1f s at %s", server.started_in_s, server.uri)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[postgres.Server]:
    with postgres.running() as server:
        yield server
