"""The runtime: open a .urna file with mmap, search it, cite it (03-runtime).

Every search returns one ``SearchResult`` (a list of hits with its envelope); the route of a
routed query is decided in ``routing``; ``UrnaFile`` and ``catalog.Catalog`` both satisfy the
``Searcher`` protocol; ``stats`` and ``benchmark`` hold what the CLI reports.
"""

from .file import BatchResult, UrnaFile, open_file
from .hits import RetrieveHit, SearchExplain, SearchHit, SearchResult
from .searcher import Searcher, open_searcher

__all__ = ["BatchResult", "RetrieveHit", "SearchExplain", "SearchHit", "SearchResult",
           "Searcher", "UrnaFile", "open_file", "open_searcher"]
