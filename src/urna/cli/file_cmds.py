"""File verbs: ``inspect``, ``validate``, ``cite`` (04-surface §2.3).

``validate`` runs ``runtime.validation.validate_bytes``, the one list of validate's steps
(``VALIDATE_STEPS``): the reference's validate refuses what its open refuses, so a file with
optional sections gets the open's own steps (its index decodes) before the content hash.
"""

from __future__ import annotations

# The reader, the verdicts and the checks are imported inside each verb, after the CLI has
# started the file's head start (runtime.mapping): their import then runs beside its digest.
from ._output import echo, emit_json, labelled
from .command import argument, command, option
from .options import input_file

# a directory is bad input (exit 1), not usage; text paths: pathlib stays unimported
FILE = input_file(as_path=False, shown=True)


def read_file(path: str) -> bytes | memoryview:
    """The whole file's bytes, mapped read-only (inspect, cite and validate hash all of them).

    A map costs a third of a read here: the page cache is not copied into a fresh buffer
    whose every page faults on first touch. An empty or unmappable file is read instead.
    The CLI's head start (``runtime.mapping``) may have mapped it already.
    """
    import mmap

    from ..runtime.mapping import take_map

    started = take_map(path)
    if started is not None:
        return memoryview(started.mm)
    with open(path, "rb") as fh:
        try:
            return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        except (OSError, ValueError):  # empty, a pipe, a device: the plain read decides
            return fh.read()


def simd_backend() -> str:
    """The exact-search backend name reported by inspect (a CPU probe: no numpy import)."""
    from ..index.cpu import simd_backend as backend

    return backend()


@command("inspect")
@argument("file", type=FILE)
@option("--json", "as_json", is_flag=True, help="Print the inspect document as JSON.")
def inspect_cmd(file: str, as_json: bool) -> None:
    """Show the header, section table and manifest of FILE.

    Example: urna inspect corpus.urna --json
    """
    import json

    from ..format.inspect import inspect_view
    from ..format.layout import ENCODING_NAMES, SECTION_METADATA
    from ..runtime import verdicts
    from ..runtime.stats import SECTION_ENCODING_LABELS, display_section_name, metadata_schema

    data = read_file(file)
    view = verdicts.checked_view(str(file), data)
    # The kernels' label is only in the JSON document; finding it imports the kernels (numpy).
    doc = inspect_view(view, simd_backend() if as_json else None)
    verdicts.keep_view(str(file), data, view)  # the content hash is known now: keep it
    if view.entry(SECTION_METADATA) is not None:  # ours: the reference's document says unknown
        doc["sections"] = [{**s, "name": display_section_name(s["section_id"])}
                           for s in doc["sections"]]
        doc["metadata"] = metadata_schema(view)
    if as_json:
        emit_json(doc)
        return
    echo(f'Magic: "{doc["magic"]}"')
    echo(f"Version: {doc['version_major']}.{doc['version_minor']}")
    echo(f"File size: {doc['file_size']} bytes")
    echo(f"Sections: {len(doc['sections'])}")
    for s in doc["sections"]:
        enc = SECTION_ENCODING_LABELS.get(s["encoding"],
                                          ENCODING_NAMES.get(s["encoding"], "unknown"))
        name = display_section_name(s["section_id"])
        echo(f"0x{s['section_id']:02x} {name:<24} encoding={enc} offset={s['offset']} "
                   f"size={s['size']} checksum={s['checksum']}")
    echo("Manifest:")
    echo(json.dumps(doc["manifest"], indent=2, ensure_ascii=False))
    if "metadata" in doc:
        schema = doc["metadata"]
        echo("Metadata: " + ("unreadable" if schema is None else
                                   ", ".join(f"{k} ({t})" for k, t in schema.items())))
    echo(f"File hash: {doc['file_hash']}")
    echo(f"Content hash: {doc['content_hash']}")


@command("validate")
@argument("file", type=FILE)
@option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate_cmd(file: str, as_json: bool) -> None:
    """Check every checksum, the manifest, the contract, the values and inlined blobs of FILE.

    Example: urna validate corpus.urna
    """
    from ..runtime.validation import validate_bytes

    result = validate_bytes(read_file(file), path=str(file))
    if as_json:
        emit_json({"ok": True, "file": str(file), "sections": result.n_sections,
                   "blobs_verified": result.blobs_verified, "file_hash": result.file_hash,
                   "content_hash": result.content_hash})
        return
    w = 20
    echo(f"OK: {file} is a valid .urna v1 file")
    echo("  " + labelled("Header checksum:", "valid", w))
    echo("  " + labelled("Section checksums:", f"{result.n_sections} sections OK", w))
    echo("  " + labelled("Footer hash:", "valid", w))
    echo("  " + labelled("Manifest:", "valid (contract enforced)", w))
    echo("  " + labelled("Required sections:", "all present", w))
    echo("  " + labelled("Embedding values:", "no NaN/Inf", w))
    if result.blobs_verified is not None:
        blobs = f"{result.blobs_verified} verified against blob_refs"
        echo("  " + labelled("Inlined blobs:", blobs, w))
    echo("  " + labelled("File hash:", result.file_hash, w))
    echo("  " + labelled("Content hash:", result.content_hash, w))


def shard_for_citation(catalog: str, citation: str) -> str:
    """The shard of ``catalog`` (checked against it) whose content_hash the citation names."""
    from pathlib import Path  # the shard's path as cite has always printed it

    from ..errors import CitationError
    from ..format.identity import parse_citation
    from ..runtime.catalog import open_catalog

    expected, _ = parse_citation(citation)
    with open_catalog(catalog) as cat:
        for shard in cat.shard_info:
            if shard.content_hash == expected:
                return str(Path(shard.file))
    raise CitationError(f"content_hash {expected} is not a shard of this catalog")


@command("cite")
@argument("file", type=FILE)
@argument("citation")
@option("--json", "as_json", is_flag=True, help="Print the resolved citation as JSON.")
def cite_cmd(file: str, citation: str, as_json: bool) -> None:
    """Resolve CITATION (urna://<content_hash>/<chunk_id>) to its stored text and span.

    Example: urna cite corpus.urna 'urna://sha256:.../sha256:...'
    """
    from ..format.citation import resolve_citation
    from ..runtime import verdicts
    from ..runtime.catalog_paths import is_catalog_path

    if is_catalog_path(file):
        from .living_cmds import cite_living

        if cite_living(file, citation, as_json):  # a living catalog answers for its versions
            return
        file = shard_for_citation(file, citation)
    data = read_file(file)
    view, known = verdicts.checked(str(file), data)
    hit = resolve_citation(view, citation, records_checked=verdicts.CITE_RECORDS in known)
    verdicts.keep_view(str(file), data, view, frozenset({verdicts.CITE_RECORDS}))
    # the footer check's body digest, extended by the footer: no second pass over the file
    fields = {"citation_id": citation, "file": str(file), "file_hash": view.file_hash(),
              "content_hash": hit.content_hash, "chunk_id": hit.chunk_id,
              "source_uri": hit.source_uri, "byte_start": hit.byte_start, "byte_end": hit.byte_end}
    if "#page=" in hit.source_uri.lower():  # a PDF page span; others skip the forge import
        from ..forge.sources.pdf import span_meaning

        meaning = span_meaning(hit.source_uri)
        if meaning is not None:
            fields["span_of"] = meaning
    if as_json:
        emit_json({**fields, "text": hit.text})
        return
    for key, value in fields.items():
        echo(labelled(f"{key}:", value, 14))
    echo("text:")
    echo(hit.text)


COMMANDS = [inspect_cmd, validate_cmd, cite_cmd]
