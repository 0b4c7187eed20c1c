"""Fuzz sources we build ourselves, to reach what no reference vector carries.

* ``built-all-<dtype>``: ``urna.build`` over the quickstart inputs with every optional section
  at once (HNSW, BM25, graph, blob refs / overlay / inlined data, two spaces, metadata 0x18),
  per stored dtype.
* ``built-0x02-<codec>``: quickstart-hybrid re-assembled with chunks_canonical stored as
  txt_streams (10), fsst (9) or zstd_dict (5, plus its 0x0A dictionary); the decoded bytes, and
  so the content_hash, stay the same.

Every source is checked to open before it is fuzzed (``test_untouched_source...``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from helpers.mutate import REF_DIR, source_bytes

BUILT = ["built-all-float32", "built-all-int8", "built-all-int4", "built-all-float16",
         "built-0x02-txt_streams", "built-0x02-fsst", "built-0x02-zstd_dict"]


@cache
def _inputs() -> tuple[dict, list[dict], dict]:
    corpus = json.loads((REF_DIR / "quickstart.chunks.json").read_text())
    files = json.loads((REF_DIR / "expected.json").read_text())["files"]
    return corpus["meta"], corpus["chunks"], files


def _build_all(dtype: str, out: Path) -> bytes:
    import urna
    from helpers.vectors import metadata_sample_rows

    meta, chunks, files = _inputs()
    blobs = dict(files["quickstart-blobs.urna"]["build_options"])
    blobs["blob_data_paths"] = [str(REF_DIR / p) if p else None for p in blobs["blob_data_paths"]]
    blobs.pop("preset", None)
    spaces = files["quickstart-spaces.urna"]["build_options"]["spaces"]
    urna.build(str(out), meta["embedding_model"], meta["embedding_dim"], meta["chunker_version"],
               meta["model_hash"], chunks, preset="hybrid", dtype=dtype, with_graph=True,
               graph_top_m=4, spaces=spaces, hnsw_ef_construction=64, reproducible=True,
               metadata=metadata_sample_rows(len(chunks)), **blobs)
    return out.read_bytes()


def _recode_canonical(codec: str) -> bytes:
    from urna.format.encodings import fsst, textcontainer, zstd_dict
    from urna.format.reader import UrnaView
    from urna.format.sections.canonical import decode_texts
    from urna.format.writer import EncodedSection, assemble

    base = source_bytes("quickstart-hybrid.urna")
    view = UrnaView.from_bytes(base)
    texts = decode_texts(view.decoded(0x02), view.header.n_chunks)
    sections = [EncodedSection(e.section_id, e.encoding, bytes(view.payload(e)))
                for e in view.entries if e.section_id != 0x02]
    if codec == "txt_streams":
        sections.append(EncodedSection(0x02, 10, textcontainer.encode_txt_streams(texts)))
    elif codec == "fsst":
        sections.append(EncodedSection(0x02, 9, fsst.encode_fsst(texts)))
    else:
        dictionary = zstd_dict.train_dict(texts)
        assert dictionary is not None
        sections.append(EncodedSection(0x02, 5, zstd_dict.encode_zstd_dict(texts, dictionary)))
        sections.append(EncodedSection(0x0A, 0, dictionary))
    h, m = view.header, view.header.manifest_offset
    return assemble(bytes(base[m:m + h.manifest_size]), h.embedding_dim, h.n_chunks,
                    h.n_embeddings, sections)


@cache
def built_source(name: str, folder: str) -> bytes:
    """The bytes of built source ``name`` (cached per session; ``folder`` holds the files)."""
    if name.startswith("built-all-"):
        return _build_all(name.removeprefix("built-all-"), Path(folder) / f"{name}.urna")
    return _recode_canonical(name.removeprefix("built-0x02-"))
