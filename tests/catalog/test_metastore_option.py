"""The ``metastore`` catalog option picks the catalog class; an unknown one is refused by name."""

from __future__ import annotations

import re

import pytest

import stratalake
from stratalake.catalog import registry
from stratalake.catalog.filesystem import Catalog as FileSystemCatalog
from stratalake.exceptions import InvalidOptionError


def test_default_and_explicit_filesystem(tmp_path):
    assert type(stratalake.Catalog(str(tmp_path))) is FileSystemCatalog
    assert type(stratalake.Catalog(str(tmp_path), {"metastore": "FileSystem"})) is FileSystemCatalog


def test_unknown_metastore_is_refused_by_name(tmp_path):
    with pytest.raises(InvalidOptionError, match=r"'metastore' = 'nosuch'.*filesystem"):
        stratalake.Catalog(str(tmp_path), {"metastore": "nosuch"})
    assert not any(tmp_path.iterdir())


def test_every_registered_metastore_is_served_by_its_class():
    for name in registry.metastores():
        assert registry.catalog_class({"metastore": name}).__name__.endswith("Catalog")


@pytest.mark.parametrize("key, value", [("uri", "jdbc:sqlite:/tmp/x.db"), ("lock.enabled", "true")])
def test_metastore_options_on_the_filesystem_catalog_are_refused(tmp_path, key, value):
    with pytest.raises(InvalidOptionError, match=rf"'{re.escape(key)}'.*needs a metastore catalog"):
        stratalake.Catalog(str(tmp_path), {key: value})
    assert type(stratalake.Catalog(str(tmp_path), {"lock.enabled": "false"})) is FileSystemCatalog
