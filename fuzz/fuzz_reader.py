"""Coverage-guided fuzz target (atheris) for ``UrnaView.from_bytes`` and the codec decoders.

The first input byte picks the mode:

* even: the rest is a whole file. ``UrnaView.from_bytes``, then everything the reader offers
  on it: ``content_hash``, ``validate_embeddings_values``, ``search_contract``, the decoded
  bytes of every section and the section decoders on them (with the header's counts). When
  the byte is 2 mod 4 the file is first resealed (``tests/helpers/mutate.reseal``: checksums,
  header and footer recomputed), so mutations get past the integrity layer to the decoders.
* odd: the second byte picks one decoder and the rest is its payload (02-encodings codecs,
  section payload codecs, intpack), so libFuzzer can grow payloads without a container.

Contract: every input returns or raises an ``urna.errors.UrnaError``; anything else escapes
and atheris reports it as a crash with the input saved.

Run (``pip install atheris`` into the venv first)::

    .venv/bin/python fuzz/fuzz_reader.py fuzz/corpus -max_total_time=60 -rss_limit_mb=2048

``fuzz/corpus`` is created and seeded from ``tests/data`` on first run. Replay without atheris
(for a crash file or the whole corpus): ``.venv/bin/python fuzz/fuzz_reader.py --replay PATH...``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_FILES = sorted((ROOT / "tests" / "data").glob("*.urna")) + sorted(
    (ROOT / "tests" / "data" / "ref-0.5.1").glob("quickstart-*.urna"))
MAX_N = 1 << 16  # counts handed to decoders that take one; the payload bounds the rest


def _imports() -> None:
    global UrnaError, UrnaView, layout, enc, canonical, hnsw, bm25, graph, space_table, blobs
    global intpack, repack, dedup, fsst, textcontainer, vectors, vector_checks, reseal
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from helpers.mutate import reseal
    from urna.errors import UrnaError
    from urna.format import encodings as enc
    from urna.format import layout
    from urna.format.encodings import (
        dedup,
        fsst,
        intpack,
        repack,
        textcontainer,
        vector_checks,
        vectors,
    )
    from urna.format.reader import UrnaView
    from urna.format.sections import blobs, bm25, canonical, graph, hnsw, space_table


def _decoders(n: int, dim: int) -> list[Callable[[bytes], object]]:
    """Every payload decoder, with the counts a file would hand it."""
    return [
        lambda p: canonical.decode_chunk_ids(p, n),
        lambda p: canonical.decode_texts(p, n),
        lambda p: canonical.decode_spans(p, n),
        lambda p: canonical.decode_contract(p),
        lambda p: canonical.decode_provenance(p),
        lambda p: hnsw.decode_hnsw(p, n),
        lambda p: bm25.decode_bm25(p),
        lambda p: graph.decode_graph(p, n),
        lambda p: space_table.decode_space_table(p),
        lambda p: blobs.decode_blob_refs(p),
        lambda p: blobs.decode_overlay(p),
        lambda p: blobs.decode_blob_data(p),
        lambda p: intpack.unpack_u64s(p),
        lambda p: repack.decode_repack(p),
        lambda p: dedup.decode_map(p),
        lambda p: fsst.decode_fsst(p),
        lambda p: textcontainer.decode_txt_streams(p),
        lambda p: enc.decode_section(1, 1, p),
        lambda p: vectors.int8_view(p, n, dim),
        lambda p: vectors.int4_view(p, n, dim),
        lambda p: vector_checks.validate_embedding_values(4, 3, p, n, dim),
        lambda p: vector_checks.validate_embedding_values(4, 7, p, n, dim),
        lambda p: vectors.dequantize(3, p, n, dim),
    ]


def _section_decoder(section_id: int, n: int) -> Callable[[bytes], object] | None:
    return {
        layout.SECTION_CHUNK_IDS: lambda p: canonical.decode_chunk_ids(p, n),
        layout.SECTION_CHUNKS_CANONICAL: lambda p: canonical.decode_texts(p, n),
        layout.SECTION_CHUNKS_ORIGINAL_SPANS: lambda p: canonical.decode_spans(p, n),
        layout.SECTION_PROVENANCE: canonical.decode_provenance,
        layout.SECTION_SEARCH_CONTRACT: canonical.decode_contract,
        layout.SECTION_HNSW_INDEX: lambda p: hnsw.decode_hnsw(p, n),
        layout.SECTION_BM25_INDEX: bm25.decode_bm25,
        layout.SECTION_GRAPH_ADJACENCY: lambda p: graph.decode_graph(p, n),
        layout.SECTION_SPACE_TABLE: space_table.decode_space_table,
        layout.SECTION_BLOB_REFS: blobs.decode_blob_refs,
        layout.SECTION_BLOB_SPAN_OVERLAY: blobs.decode_overlay,
        layout.SECTION_BLOB_DATA: blobs.decode_blob_data,
    }.get(section_id)


def _whole_file(data: bytes) -> None:
    try:
        view = UrnaView.from_bytes(data)
    except UrnaError:
        return
    n = min(view.header.n_embeddings, MAX_N)
    for step in (view.content_hash, view.validate_embeddings_values, view.search_contract):
        try:
            step()
        except UrnaError:
            pass
    for entry in view.entries[:64]:
        try:
            raw = view.decoded(entry.section_id)
        except UrnaError:
            continue
        decode = _section_decoder(entry.section_id, n)
        if decode is not None:
            try:
                decode(bytes(raw))
            except UrnaError:
                pass


def one_input(data: bytes) -> None:
    """Feed one input to the reader; only ``UrnaError`` may escape (and is swallowed)."""
    if not data:
        return
    if data[0] % 2 == 0:
        _whole_file(bytes(reseal(bytearray(data[1:]))) if data[0] % 4 == 2 else data[1:])
        return
    if len(data) < 4:
        return
    decoders = _decoders(n=1 + data[2] % 64, dim=64 * (1 + data[3] % 4))
    try:
        decoders[data[1] % len(decoders)](data[4:])
    except UrnaError:
        pass


def _seed_corpus(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        return
    for f in SEED_FILES:
        (folder / f.name).write_bytes(b"\x00" + f.read_bytes())
        (folder / (f.name + ".sealed")).write_bytes(b"\x02" + f.read_bytes())


def main(argv: list[str]) -> int:
    """Run atheris (default) or replay files (``--replay``)."""
    sys.path.insert(0, str(ROOT / "src"))
    if argv[1:2] == ["--replay"]:
        _imports()
        for p in argv[2:]:
            paths = sorted(Path(p).iterdir()) if Path(p).is_dir() else [Path(p)]
            for f in paths:
                one_input(f.read_bytes())
        return 0
    import atheris

    with atheris.instrument_imports():
        _imports()
    corpus = [a for a in argv[1:] if not a.startswith("-")]
    if corpus:
        _seed_corpus(Path(corpus[0]))
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
