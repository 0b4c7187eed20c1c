"""The runtime: open a .urna file with mmap, search it, cite it (03-runtime)."""

from .file import BatchResult, UrnaFile, open_file
from .hits import RetrieveHit, SearchExplain, SearchHit, SearchResult

__all__ = ["BatchResult", "RetrieveHit", "SearchExplain", "SearchHit", "SearchResult",
           "UrnaFile", "open_file"]
