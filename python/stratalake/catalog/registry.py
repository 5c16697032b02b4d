"""Which catalog class serves a ``metastore`` option, as Paimon's ``CatalogFactory`` chooses.

``stratalake.Catalog(warehouse, options)`` is the one entry point for every catalog: the
``metastore`` option (``filesystem`` by default, as in Paimon) picks the class. Each catalog
module registers itself here; a value no module registered is refused by name, never silently
served by the filesystem catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratalake.exceptions import InvalidOptionError

METASTORE = "metastore"
DEFAULT_METASTORE = "filesystem"

_CLASSES: dict[str, type[Any]] = {}


def register(metastore: str, cls: type[Any]) -> None:
    """Serve catalogs whose ``metastore`` option is ``metastore`` with ``cls``."""
    _CLASSES[metastore.lower()] = cls


def metastore_of(options: Mapping[str, str] | None) -> str:
    """The ``metastore`` option's value, lower-cased; ``filesystem`` when unset."""
    value = (options or {}).get(METASTORE, "") or DEFAULT_METASTORE
    return str(value).strip().lower()


def catalog_class(options: Mapping[str, str] | None) -> type[Any]:
    """The class serving ``options``; :class:`InvalidOptionError` for an unknown metastore."""
    name = metastore_of(options)
    cls = _CLASSES.get(name)
    if cls is None:
        raise InvalidOptionError(
            f"catalog option '{METASTORE}' = '{name}' is not a metastore stratalake serves; "
            f"use one of {sorted(_CLASSES)}"
        )
    return cls


def metastores() -> list[str]:
    """The registered metastore names."""
    return sorted(_CLASSES)
