"""The files an MCP server answers from, opened once and named by their stem."""

from __future__ import annotations

import os
from typing import Any

from ..errors import CitationError, InvalidInput
from ..format.identity import parse_citation
from ..runtime.corpora import corpus_name, open_named
from ..runtime.searcher import open_searcher


class OpenCorpora:
    """Open files or catalogs by name; the one to query when a request names none."""

    def __init__(self, paths: list[str | os.PathLike]) -> None:
        if not paths:
            raise InvalidInput("give at least one .urna file or .catalog.json")
        self.paths: dict[str, str] = {corpus_name(p): os.fspath(p) for p in paths}
        self.by_name: dict[str, Any] = open_named(
            paths, lambda _name, path: open_searcher(path), lambda f: f.close())

    def get(self, name: str | None) -> tuple[str, Any]:
        """(name, corpus) for ``name``, or the only corpus when ``name`` is None."""
        if name is None:
            if len(self.by_name) != 1:
                raise InvalidInput(f"several corpora are served ({', '.join(self.by_name)}); "
                                   "pass corpus=<name>")
            name = next(iter(self.by_name))
        f = self.by_name.get(name)
        if f is None:
            raise InvalidInput(f"no corpus named {name!r} (served: {', '.join(self.by_name)})")
        return name, f

    def resolve(self, citation: str) -> tuple[str, Any, Any]:
        """(name, corpus, ResolvedCitation) of the served corpus holding ``citation``."""
        parse_citation(citation)  # a malformed citation fails here, with its message
        error: CitationError | None = None
        for name, f in self.by_name.items():
            try:
                return name, f, f.cite(citation)
            except CitationError as e:  # another corpus may hold it
                error = e
        assert error is not None
        raise error

    def close(self) -> None:
        """Close every file (idempotent)."""
        for f in self.by_name.values():
            f.close()
