"""Living-corpus verbs: ``add``, ``remove``, ``log``, ``compact``, ``squash`` on
``<name>.catalog.json``.

Each write takes the catalog's writer lock and commits one new version atomically
(``urna.runtime.catalog.living``); ``log`` reads the version log. A catalog written by
``urna build --shards`` becomes living on its first write (its shards are version 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._output import echo, emit_json
from .command import argument, command, option
from .options import COUNT, PathType

CATALOG = PathType(dir_okay=False, as_path=True)


def _echo(result: dict[str, Any] | None, as_json: bool, nothing: str) -> None:
    if as_json:
        emit_json(result)
    elif result is None:
        echo(nothing)
    else:
        extra = "".join(f" {k}={result[k]}" for k in ("added", "removed") if k in result
                        and not isinstance(result[k], list))
        gone = result.get("removed")
        if isinstance(gone, list):
            extra += f" removed={len(gone)}"
        echo(f"version {result['version']} {result['op']}: {result['chunks']} live "
                   f"chunks in {result['segments']} segments{extra} ({result['version_hash']})")


@command("add")
@argument("catalog", type=CATALOG)
@argument("files", nargs=-1, type=PathType(dir_okay=False, exists=True,
                                                   as_path=True))
@option("--spec", "spec_path", default=None, type=PathType(dir_okay=False),
              help="Embed every row of this spec's source as the new segment.")
@option("--json", "as_json", is_flag=True, help="The new version as JSON.")
def add_cmd(catalog: Path, files: tuple[Path, ...], spec_path: str | None,
            as_json: bool) -> None:
    """Add documents as one new segment: a spec's source, or the rows of .urna FILES.

    Example: urna add out/docs.catalog.json extra.urna
    """
    if bool(files) == bool(spec_path):
        raise UsageError("give either --spec or one or more .urna FILES")
    if spec_path:
        from urna.forge.spec import load_spec
        from urna.forge.update import add_from_spec

        result = add_from_spec(catalog, load_spec(spec_path))
    else:
        from ..runtime.catalog.living import writing
        from ..runtime.catalog.versions import summary
        from ..runtime.file import open_file

        with writing(catalog) as w:
            for path in files:
                with open_file(path) as f:
                    w.add_file(f)
            result = summary(w.commit("add", f"add: {', '.join(p.name for p in files)}"))
    _echo(result, as_json, "")


@command("remove")
@argument("catalog", type=CATALOG)
@option("--chunk-id", "chunk_ids", multiple=True, help="Remove this chunk (repeatable).")
@option("--source", "sources", multiple=True,
              help="Remove every chunk of this source_uri (repeatable).")
@option("--source-glob", default=None, help="Remove chunks whose source_uri matches.")
@option("--where", default=None,
              help='A filter (JSON, urna.index.filter) on source_uri, chunk_id, byte_start, '
                   'byte_end, e.g. \'{"source_uri": {"$glob": "old/**"}}\'.')
@option("--json", "as_json", is_flag=True, help="The new version as JSON.")
def remove_cmd(catalog: Path, chunk_ids: tuple[str, ...], sources: tuple[str, ...],
               source_glob: str | None, where: str | None, as_json: bool) -> None:
    """Tombstone chunks in a new version (their segments stay; citations say removed).

    Example: urna remove out/docs.catalog.json --source docs/old.md
    """
    if not (chunk_ids or sources or source_glob or where):
        raise UsageError("give --chunk-id, --source, --source-glob or --where")
    from ..index.filter import parse_where_json
    from ..runtime.catalog import open_catalog

    flt = parse_where_json(where) if where else None
    with open_catalog(catalog) as cat:
        result = cat.remove(chunk_ids=chunk_ids, sources=sources, source_glob=source_glob,
                            where=flt)
    _echo(result, as_json, "")


@command("log")
@argument("catalog", type=CATALOG)
@option("--json", "as_json", is_flag=True, help="Every version as JSON.")
def log_cmd(catalog: Path, as_json: bool) -> None:
    """Print the version log of a catalog, oldest first.

    Example: urna log out/docs.catalog.json
    """
    from ..runtime.catalog import read_catalog
    from ..runtime.catalog.versions import records_of, summary

    rows = [summary(r) for r in records_of(read_catalog(catalog))]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        echo(f"{r['version']:>4}  {r['op']:<8} {r['chunks']:>8} chunks "
                   f"{r['segments']:>3} segments {r['tombstones']:>6} tombstones  "
                   f"{r['version_hash'][:19]}  {r['note']}")


@command("compact")
@argument("catalog", type=CATALOG)
@option("--min-rows", type=COUNT, default=None,
              help="Merge only segments with tombstones or fewer rows than this.")
@option("--json", "as_json", is_flag=True, help="The new version as JSON.")
def compact_cmd(catalog: Path, min_rows: int | None, as_json: bool) -> None:
    """Merge segments into one without their removed rows; old citations map to new ones.

    Example: urna compact out/docs.catalog.json
    """
    from ..runtime.catalog import open_catalog

    with open_catalog(catalog) as cat:
        result = cat.compact(min_rows=min_rows)
    _echo(result, as_json, "nothing to compact")


@command("squash")
@argument("catalog", type=CATALOG)
@option("--keep", type=COUNT, required=True,
              help="How many of the newest versions stay openable.")
@option("--json", "as_json", is_flag=True, help="The new first version as JSON.")
def squash_cmd(catalog: Path, keep: int, as_json: bool) -> None:
    """Fold every version before the newest KEEP into one; the log stops growing with them.

    Versions before them no longer open; every citation still resolves (a chunk removed and
    compacted away before them answers removed, without its version).

    Example: urna squash out/docs.catalog.json --keep 10
    """
    from ..runtime.catalog import open_catalog

    with open_catalog(catalog) as cat:
        result = cat.squash(keep)
    _echo(result, as_json, f"nothing to squash: the log holds at most {keep} versions")


def cite_living(catalog: Path | str, citation: str, as_json: bool) -> bool:
    """``urna cite`` on a living catalog (live, compacted or removed); False for a plain one."""
    from ..runtime.catalog import open_catalog, read_catalog
    from ..runtime.catalog.versions import is_living

    if not is_living(read_catalog(catalog)):
        return False
    with open_catalog(catalog) as cat:
        fields = cat.cite(citation).as_dict()
        fields["version"] = cat.version
    text = fields.pop("text")
    if as_json:
        emit_json({**fields, "text": text})
        return True
    for key, value in fields.items():
        if value is not None:
            echo(f"{key + ':':<16}{value}")
    echo("text:")
    echo(text)
    return True


COMMANDS = [add_cmd, remove_cmd, log_cmd, compact_cmd, squash_cmd]
