"""Servers that expose a stratalake catalog to other engines: Paimon's REST catalog protocol."""

from stratalake.server.rest import RestCatalogServer, serve

__all__ = ["RestCatalogServer", "serve"]
