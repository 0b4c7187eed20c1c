"""The files an MCP server answers from, opened once and named by their stem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import CitationError, InvalidInput
from ..format.identity import parse_citation
from ..runtime.catalog import CATALOG_SUFFIX
from ..runtime.searcher import open_searcher


def corpus_name(path: str | os.PathLike) -> str:
    """``docs/quickstart.urna`` -> ``quickstart``; ``big.catalog.json`` -> ``big``."""
    name = Path(path).name
    return name[: -len(CATALOG_SUFFIX)] if name.endswith(CATALOG_SUFFIX) else Path(name).stem


class OpenCorpora:
    """Open files or catalogs by name; the one to query when a request names none."""

    def __init__(self, paths: list[str | os.PathLike]) -> None:
        if not paths:
            raise InvalidInput("give at least one .urna file or .catalog.json")
        self.by_name: dict[str, Any] = {}
        self.paths: dict[str, str] = {}
        try:
            for p in paths:
                name = corpus_name(p)
                if name in self.by_name:
                    raise InvalidInput(f"two files share the corpus name {name!r}: "
                                       f"{self.paths[name]} and {os.fspath(p)}")
                self.by_name[name] = open_searcher(p)
                self.paths[name] = os.fspath(p)
        except BaseException:
            self.close()
            raise

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
