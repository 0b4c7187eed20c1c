"""A catalog of shards searched as one corpus (``<name>.catalog.json``).

Three modules, one job each: ``document`` (the catalog JSON: build, hash, write, read, check),
``fanout`` (every shard opened and checked; calls run on threads or on Ray actors behind one
interface) and ``searcher`` (the :class:`Catalog`, a ``Searcher`` that merges the shards' hits
by exact score). The names below are the package's public surface.
"""

from ...errors import CatalogError
from ..catalog_paths import CATALOG_SUFFIX, is_catalog_path
from .document import (
    CATALOG_SCHEMA_VERSION,
    MAX_CATALOG_BYTES,
    SHARD_KEYS,
    catalog_document,
    catalog_hash,
    read_catalog,
    write_catalog,
)
from .fanout import ShardInfo, open_checked
from .searcher import Catalog, merge, open_catalog

__all__ = ["CATALOG_SCHEMA_VERSION", "CATALOG_SUFFIX", "MAX_CATALOG_BYTES", "SHARD_KEYS",
           "Catalog", "CatalogError", "ShardInfo", "catalog_document", "catalog_hash",
           "is_catalog_path", "merge", "open_catalog", "open_checked", "read_catalog",
           "write_catalog"]
