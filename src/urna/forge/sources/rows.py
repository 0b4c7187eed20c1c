"""Table sources (jsonl, csv, sqlite) and the rows -> chunks rules of 04-surface §3.4.

One row is one chunk: rows are derived, checked for a unique ``order_by`` key, sorted by
the string form of that key, optionally sampled, then rendered through the text template.
The chunk span is the row ordinal (``byte_start = ordinal``, ``byte_end = ordinal + 1``),
as the reference forge stores it.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import sqlite3
import string
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from urna.errors import IngestError, SpecError
from urna.forge.sources.item import Row, item_input_hash
from urna.forge.spec import CorpusSpec

# ------------------------------------------------------------------------ loading


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        fh = path.open("r", encoding="utf-8")
    except OSError as e:
        raise IngestError(f"source.path: cannot read {path}: {e.strerror}") from e
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as e:
                    raise IngestError(f"{path}:{lineno}: not a JSON object: {e}") from e
                if not isinstance(obj, dict):
                    raise IngestError(f"{path}:{lineno}: not a JSON object")
                rows.append(obj)
        except UnicodeDecodeError as e:
            raise IngestError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from e
    return rows


def _load_csv(path: Path) -> list[dict[str, Any]]:
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:
            return [dict(r) for r in csv.DictReader(fh)]
    except OSError as e:
        raise IngestError(f"source.path: cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise IngestError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from e
    except csv.Error as e:
        raise IngestError(f"{path}: bad CSV: {e}") from e


def _sqlite_rows(db: Path, query: str) -> list[dict[str, Any]]:
    if not db.is_file():
        raise IngestError(f"source.db: no such file {db}")
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise IngestError(f"source.db: cannot open {db}: {e}") from e
    try:
        cur = conn.execute(query)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    except sqlite3.Error as e:
        raise IngestError(f"source.query: {e}") from e
    finally:
        conn.close()


def _apply_joins(spec: CorpusSpec, rows: list[dict[str, Any]]) -> None:
    db = Path(spec.source.db)
    for i, join in enumerate(spec.source.joins):
        extra = _sqlite_rows(db, join.query)
        by_key: dict[str, dict[str, Any]] = {}
        for r in extra:
            if join.on not in r:
                raise SpecError(f"source.joins[{i}].on: column '{join.on}' not in the join query")
            by_key.setdefault(str(r[join.on]), r)
        matched = 0
        for row in rows:
            hit = by_key.get(str(row.get(join.on)))
            if hit is not None:
                matched += 1
                for k, v in hit.items():
                    row.setdefault(k, v)
        if matched == 0:
            raise SpecError(f"source.joins[{i}]: 0 of {len(rows)} rows matched on '{join.on}'")
        if matched < len(rows):
            print(f"[forge] source.joins[{i}]: {matched} of {len(rows)} rows matched",
                  file=sys.stderr)


_DERIVE: dict[str, Callable[[str], str]] = {
    "basename_stem": lambda v: Path(v.replace("\\", "/").rsplit("/", 1)[-1]).stem,
    "lower": lambda v: v.lower(),
}


def _derive(spec: CorpusSpec, rows: list[dict[str, Any]]) -> None:
    for col, expr in spec.source.derive.items():
        m = re.fullmatch(r"(\w+)\((\w+)\)", expr)
        if m is None or m.group(1) not in _DERIVE:
            raise SpecError(f"source.derive.{col}: use basename_stem(col) or lower(col)")
        fn, src = _DERIVE[m.group(1)], m.group(2)
        for row in rows:
            value = row.get(src)
            row[col] = "" if value is None else fn(str(value))


def load_records(spec: CorpusSpec) -> list[dict[str, Any]]:
    """Read the raw records of a jsonl / csv / sqlite source (joins and derive applied)."""
    kind = spec.source.kind
    if kind == "jsonl":
        rows = _load_jsonl(Path(spec.source.path))
    elif kind == "csv":
        rows = _load_csv(Path(spec.source.path))
    elif kind == "sqlite":
        rows = _sqlite_rows(Path(spec.source.db), spec.source.query)
        _apply_joins(spec, rows)
    else:
        raise SpecError(f"source.kind: '{kind}' has no row loader")
    _derive(spec, rows)
    return rows


# ------------------------------------------------------------------------ rendering


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class _Formatter(string.Formatter):
    """str.format where a missing column or None renders empty."""

    def get_value(self, key: int | str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        """A column's value; missing or None renders empty."""
        value = kwargs.get(str(key)) if isinstance(key, str) else None
        return "" if value is None else value

    def format_field(self, value: Any, format_spec: str) -> str:
        """Apply the spec; a spec that does not fit the value falls back to ``str``."""
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


_FMT = _Formatter()


_EMPTY_PARENS = re.compile(r"\(\s*\)|\[\s*\]")
_COMMA_BRACKET = re.compile(r",\s*\]")
_DASHES = "\u2014\u2013"


def _clean_line(line: str) -> str:
    # each regex only where its characters occur (most rendered lines have no brackets)
    if "(" in line or "[" in line:
        line = _EMPTY_PARENS.sub("", line)
    if "]" in line:
        line = _COMMA_BRACKET.sub("]", line)
    # = re.sub(r"\s+", " ", line).strip(): str.split and \s are the same whitespace
    # (Py_UNICODE_ISSPACE; tests/forge/test_ingest.py checks every code point)
    line = " ".join(line.split())
    # a dash left dangling by an empty placeholder ("{a} \u2014 {b}" with b empty); string
    # ops, not a regex, so a long line never backtracks
    while line and line[0] in _DASHES:
        line = line[1:].lstrip()
    while line and line[-1] in _DASHES:
        line = line[:-1].rstrip()
    return line


@functools.lru_cache(maxsize=64)
def _template_lines(template: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each line of ``template`` with the row fields its placeholders read (parsed once, not
    once a row)."""
    out = []
    for line in template.strip().splitlines():
        try:
            names = [f for _, f, _, _ in _FMT.parse(line) if f]
        except ValueError as e:
            raise SpecError(f"source.text.template: {e}") from e
        out.append((line, tuple(n.split(".")[0].split("[")[0] for n in names)))
    return tuple(out)


def render_template(template: str, row: Mapping[str, Any]) -> str:
    """Render the text template over a row with the §3.4 line-cleaning rules."""
    kept: list[str] = []
    for line, fields in _template_lines(template):
        if fields and all(_blank(row.get(f)) for f in fields):
            continue
        try:
            rendered = _FMT.vformat(line, (), row)
        except (IndexError, KeyError, AttributeError, ValueError, TypeError) as e:
            raise SpecError(f"source.text.template: {e!r} in line {line!r}") from e
        cleaned = _clean_line(rendered)
        if cleaned:
            kept.append(cleaned)
    return "\n".join(kept)


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _metadata_value(col: str, type_: str | None, value: Any, key: str) -> Any:
    """A column value as metadata: blank text is null; declared types parse CSV text."""
    if value is None or (isinstance(value, str) and not value.strip() and type_ != "string"):
        return None
    if not isinstance(value, str) or type_ in (None, "string", "timestamp"):
        return value
    text = value.strip()
    try:
        if type_ == "int":
            return int(text)
        if type_ == "float":
            return float(text)
        if type_ == "bool" and text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        if type_ == "string_list":
            return [part.strip() for part in text.split(",") if part.strip()]
    except ValueError:
        pass
    raise IngestError(f"row {key!r}: source.metadata column '{col}' = {value!r} is not of type "
                      f"{type_}")


def check_metadata_columns(spec: CorpusSpec, records: list[dict[str, Any]]) -> None:
    """Check that every ``source.metadata`` column exists in some record (SpecError naming it)."""
    for col in spec.source.metadata:
        if not any(col in rec for rec in records):
            raise SpecError(f"source.metadata: column '{col}' is not in the source")


def _metadata_of(spec: CorpusSpec, rec: dict[str, Any], key: str) -> dict[str, Any] | None:
    cols = spec.source.metadata
    if not cols:
        return None
    types = spec.source.metadata_types
    out = {c: _metadata_value(c, types.get(c), rec.get(c), key) for c in cols}
    return {c: v for c, v in out.items() if v is not None}


def rows_to_items(spec: CorpusSpec, records: list[dict[str, Any]], *,
                  sample: int | None = None) -> list[Row]:
    """Order, sample and render records into Rows (§3.4 steps 1-7)."""
    cols = spec.source.order_by
    check_metadata_columns(spec, records)
    keyed: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    for i, rec in enumerate(records):
        missing = [c for c in cols if c not in rec]
        if missing:
            raise SpecError(f"source.order_by: column '{missing[0]}' missing in row {i}")
        keyed.append((tuple("" if rec[c] is None else str(rec[c]) for c in cols), rec))
    seen: set[tuple[str, ...]] = set()
    for k, _ in keyed:
        if k in seen:
            raise SpecError(f"source.order_by: {cols} is not unique (duplicate key "
                            f"{'|'.join(k)!r}); append a unique column to order_by")
        seen.add(k)
    keyed.sort(key=lambda kr: kr[0])
    if sample is not None and 0 < sample < len(keyed):
        n = len(keyed)
        keyed = [keyed[int(i * n / sample)] for i in range(sample)]
    template = spec.source.text.template
    out: list[Row] = []
    for ordinal, (k, rec) in enumerate(keyed):
        key = "|".join(k)
        label = ""
        text = render_template(template, rec) if template else ""
        if not text:
            text = label or key
        uri = rec.get("source_uri")
        source_uri = str(uri) if not _blank(uri) else f"item://{spec.name}/{key}"
        for what, value in (("text", text), ("source_uri", source_uri)):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:  # a lone surrogate from a JSON "\ud800" escape
                raise IngestError(f"row {key!r}: {what} is not valid Unicode ({e.reason} at "
                                  f"character {e.start})") from None
        out.append(Row(ordinal, key, label, text, source_uri, ordinal, ordinal + 1,
                       item_input_hash(text, label, spec.chunker_version),
                       _metadata_of(spec, rec, key)))
    return out
