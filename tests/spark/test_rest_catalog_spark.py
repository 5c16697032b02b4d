"""Spark SQL on a catalog with ``metastore = rest``: its databases and tables are registered by a
stratalake REST server running in this process (on an ephemeral 127.0.0.1 port)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stratalake
from stratalake.server import RestCatalogServer

pytestmark = pytest.mark.spark

TOKEN = "spark-token"


@pytest.fixture
def rest_server(tmp_path: Path) -> Iterator[RestCatalogServer]:
    with RestCatalogServer(stratalake.Catalog(str(tmp_path / "served")), token=TOKEN) as srv:
        yield srv


def test_create_insert_select_show_through_a_rest_catalog(
    spark: Any, rest_server: RestCatalogServer, tmp_path: Path
) -> None:
    from stratalake.spark.session import CATALOG_CLASS

    name = f"rest{rest_server.httpd.server_address[1]}"  # a new Spark catalog per server
    spark.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", "lake")  # the name sent to /v1/config
    spark.conf.set(f"spark.sql.catalog.{name}.metastore", "rest")
    spark.conf.set(f"spark.sql.catalog.{name}.uri", rest_server.url)
    spark.conf.set(f"spark.sql.catalog.{name}.token.provider", "bear")
    spark.conf.set(f"spark.sql.catalog.{name}.token", TOKEN)

    spark.sql(f"CREATE DATABASE {name}.shop")
    spark.sql(f"CREATE TABLE {name}.shop.orders (id BIGINT, item STRING, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {name}.shop.orders VALUES (1, 'apple'), (2, 'pear')")
    spark.sql(f"INSERT INTO {name}.shop.orders VALUES (2, 'plum')")
    rows = [tuple(r) for r in spark.sql(f"SELECT id, item FROM {name}.shop.orders ORDER BY id").collect()]
    assert rows == [(1, "apple"), (2, "plum")]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {name}.shop").collect()] == ["orders"]
    # The server registered them in its warehouse; its snapshots came through its commit endpoint.
    served = stratalake.Catalog(str(tmp_path / "served")).get_table("shop.orders")
    assert sorted(served.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "item": "apple"},
        {"id": 2, "item": "plum"},
    ]
    assert served.latest_snapshot().id == 2  # type: ignore[union-attr]
