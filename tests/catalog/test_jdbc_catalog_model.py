"""A model test of the JDBC catalog (SQLite): random sequences of database and table operations
agree with a dictionary model, and with pypaimon's JdbcCatalog reading the same metastore."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import stratalake
from stratalake.exceptions import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

DBS = st.sampled_from(["a", "it's"])
TABLES = st.sampled_from(["t", "x; --"])
SCHEMA = pa.schema([("id", pa.int64())])


class CatalogModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="jdbc-model-"))
        self.options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{self.dir / 'c.db'}"}
        self.cat = stratalake.Catalog(str(self.dir / "wh"), self.options)
        self.model: dict[str, set[str]] = {}

    @rule(db=DBS)
    def create_database(self, db: str) -> None:
        if db in self.model:
            with pytest.raises(DatabaseAlreadyExistsError):
                self.cat.create_database(db)
        else:
            self.cat.create_database(db)
            self.model[db] = set()

    @rule(db=DBS, cascade=st.booleans())
    def drop_database(self, db: str, cascade: bool) -> None:
        if db not in self.model:
            with pytest.raises(DatabaseNotFoundError):
                self.cat.drop_database(db, cascade=cascade)
        elif self.model[db] and not cascade:
            with pytest.raises(DatabaseNotEmptyError):
                self.cat.drop_database(db)
        else:
            self.cat.drop_database(db, cascade=cascade)
            del self.model[db]

    @rule(db=DBS, t=TABLES)
    def create_table(self, db: str, t: str) -> None:
        if db not in self.model:
            with pytest.raises(DatabaseNotFoundError):
                self.cat.create_table(f"{db}.{t}", SCHEMA)
        elif t in self.model[db]:
            with pytest.raises(TableAlreadyExistsError):
                self.cat.create_table(f"{db}.{t}", SCHEMA)
        else:
            self.cat.create_table(f"{db}.{t}", SCHEMA).write(pa.table({"id": pa.array([len(t)], pa.int64())}))
            self.model[db].add(t)

    @rule(db=DBS, t=TABLES)
    def drop_table(self, db: str, t: str) -> None:
        if t in self.model.get(db, set()):
            self.cat.drop_table(f"{db}.{t}")
            self.model[db].discard(t)
        else:
            with pytest.raises(TableNotFoundError):
                self.cat.drop_table(f"{db}.{t}")

    @rule(db=DBS, t=TABLES, new_db=DBS, new_t=TABLES)
    def rename_table(self, db: str, t: str, new_db: str, new_t: str) -> None:
        source, target = f"{db}.{t}", f"{new_db}.{new_t}"
        if t not in self.model.get(db, set()):
            with pytest.raises(TableNotFoundError):
                self.cat.rename_table(source, target)
        elif new_db not in self.model:
            with pytest.raises(DatabaseNotFoundError):
                self.cat.rename_table(source, target)
        elif new_t in self.model[new_db]:
            with pytest.raises(TableAlreadyExistsError):
                self.cat.rename_table(source, target)
        else:
            self.cat.rename_table(source, target)
            self.model[db].discard(t)
            self.model[new_db].add(new_t)

    @invariant()
    def agrees(self) -> None:
        assert self.cat.list_databases() == sorted(self.model)
        for db, tables in self.model.items():
            assert self.cat.list_tables(db) == sorted(tables)
            for t in tables:
                # the files moved with the table; its one row is there
                assert self.cat.get_table(f"{db}.{t}").read().num_rows == 1
                assert (self.dir / "wh" / f"{db}.db" / t / "snapshot" / "snapshot-1").exists()

    def teardown(self) -> None:
        # pypaimon's JdbcCatalog sees the same databases and tables.
        from pypaimon import CatalogFactory

        theirs = CatalogFactory.create({**self.options, "warehouse": str(self.dir / "wh")})
        try:
            assert theirs.list_databases() == sorted(self.model)
            for db, tables in self.model.items():
                assert theirs.list_tables(db) == sorted(tables)
        finally:
            theirs.close()
            self.cat.close()
            shutil.rmtree(self.dir, ignore_errors=True)


TestCatalogModel = CatalogModel.TestCase
TestCatalogModel.settings = settings(
    max_examples=15, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
