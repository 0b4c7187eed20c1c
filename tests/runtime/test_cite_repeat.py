"""``urna cite`` on a verified body (a verdict with ``CITE_RECORDS``) = a full resolution.

A repeat cite hashes the body once and, on the verified bytes, reads 0x02 / 0x03 only up to
the cited record; a zstd-encoded one is decoded only that far (``UrnaView.decoded_prefix``).
Claims: every chunk of files with raw, zstd and deduplicated tables resolves to the same
citation, text and span as a full check's resolution; a zstd 0x02 is not decoded whole to
cite an early chunk; an unknown chunk or another corpus fails with the same error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.outcomes import outcome
from helpers.vectors import REF
from urna.format.citation import resolve_citation
from urna.format.encodings.repack import DigestIds
from urna.format.identity import format_citation
from urna.format.layout import (
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
)
from urna.format.reader import UrnaView
from urna.format.sections.canonical import decode_chunk_ids
from urna.runtime import verdicts

FILES = ["synthetic-hybrid.urna", "synthetic-compressed.urna", "dedup-hybrid.urna",
         "synthetic-blobs.urna", "quickstart-tiny.urna"]


def _repeat_view(path: Path) -> UrnaView:
    """What a repeat ``urna cite`` sees: the kept verdict's trusted view and its records."""
    data = path.read_bytes()
    view, known = verdicts.checked(str(path), data)
    verdicts.keep_view(str(path), data, view, frozenset({verdicts.CITE_RECORDS}))
    view, known = verdicts.checked(str(path), data)
    assert view.trusted and verdicts.CITE_RECORDS in known
    return view


@pytest.mark.parametrize("name", FILES)
def test_every_chunk_resolves_as_a_full_check_does(name: str, verdict_cache: Path) -> None:
    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    full = UrnaView.from_bytes(path.read_bytes())
    ids = decode_chunk_ids(full.decoded(SECTION_CHUNK_IDS), full.header.n_chunks)
    step = max(1, len(ids) // 60)
    for i in [*range(0, len(ids), step), len(ids) - 1]:
        citation = format_citation(full.content_hash(), ids[i])
        view = _repeat_view(path)  # a fresh process's view: nothing decoded yet
        assert (resolve_citation(view, citation, records_checked=True)
                == resolve_citation(full, citation))


def test_an_early_chunk_decodes_only_a_prefix(verdict_cache: Path) -> None:
    path = verdict_cache / "synthetic-compressed.urna"
    shutil.copyfile(REF / path.name, path)
    view = _repeat_view(path)
    ids = decode_chunk_ids(view.decoded(SECTION_CHUNK_IDS), view.header.n_chunks)
    hit = resolve_citation(view, format_citation(view.content_hash(), ids[0]),
                           records_checked=True)
    assert hit.ordinal == 0
    assert SECTION_CHUNKS_CANONICAL not in view._decoded  # never decoded whole
    assert SECTION_CHUNKS_ORIGINAL_SPANS not in view._decoded


@pytest.mark.parametrize("wrong", ["chunk", "corpus"])
def test_a_wrong_citation_fails_alike(wrong: str, verdict_cache: Path) -> None:
    path = verdict_cache / "synthetic-hybrid.urna"
    shutil.copyfile(REF / path.name, path)
    full = UrnaView.from_bytes(path.read_bytes())
    ids = decode_chunk_ids(full.decoded(SECTION_CHUNK_IDS), full.header.n_chunks)
    content, chunk = full.content_hash(), ids[3]
    if wrong == "chunk":
        chunk = "sha256:" + "0" * 64
    else:
        content = "sha256:" + "1" * 64
    citation = format_citation(content, chunk)
    view = _repeat_view(path)
    repeat = outcome(lambda: resolve_citation(view, citation, records_checked=True))
    assert repeat[0] == "CitationError"
    assert repeat == outcome(resolve_citation, full, citation)


# digests alike but for a few bytes, and ones whose halves recur across a record boundary
DIGEST = st.sampled_from([bytes([a] * 16 + [b] * 16) for a in (0, 1, 255) for b in (0, 1)])


@settings(max_examples=150, deadline=None)
@given(st.lists(DIGEST, max_size=30), st.lists(DIGEST, max_size=3), st.data())
def test_digest_search_is_the_decoded_ids_index(digests: list[bytes], others: list[bytes],
                                                data: st.DataObject) -> None:
    from urna.format.encodings.repack import decode_repack, digest_ids, encode_chunk_ids

    ids = ["sha256:" + d.hex() for d in digests]
    payload = encode_chunk_ids(ids)
    found = digest_ids(payload)
    assert found is not None
    decoded = decode_chunk_ids(decode_repack(payload), len(ids))
    wanted = ids + ["sha256:" + d.hex() for d in others]
    if ids:  # other spellings of a stored id, and a digest across two records
        one = data.draw(st.sampled_from(ids))
        wanted += [one.upper(), one[:-1], one + "0", one.replace("sha256:", "sha256-")]
        if len(ids) > 1:
            wanted.append("sha256:" + (digests[0][16:] + digests[1][:16]).hex())
    for w in wanted:
        assert _index(found, w) == _index(decoded, w)
    stop = data.draw(st.integers(-1, len(ids) + 1))
    below = decoded[:max(stop, 0)]
    for w in wanted:  # the reads a search's hits and the text-by-id map take
        assert found.find(w, stop) == _index(below, w, -1)
        assert found.find(w, stop, last=True) == (
            len(below) - 1 - below[::-1].index(w) if w in below else -1)
    assert len(found) == len(ids) and [found.text(i) for i in range(len(ids))] == decoded


def _index(ids, wanted: str, missing: int | None = None) -> int | None:
    """``ids.index(wanted)``, ``missing`` for its ValueError."""
    try:
        return ids.index(wanted)
    except ValueError:
        return missing


@pytest.mark.parametrize("name", ["synthetic-hybrid.urna", "dedup-hybrid.urna",
                                  "quickstart-compressed.urna"])
def test_a_verified_open_reads_its_ids_from_the_digests(name: str, verdict_cache: Path) -> None:
    import urna

    path = verdict_cache / name
    shutil.copyfile(REF / name, path)
    with urna.open(path) as f:
        full = f.chunk_ids()
    with urna.open(path) as f:
        assert f._state.view.trusted
        lazy = f._state.chunk_ids
        assert isinstance(lazy._records, DigestIds)  # these files repack their ids
        assert list(lazy) == full
        for cid in {full[0], full[-1], full[len(full) // 2]}:
            assert lazy.index(cid) == full.index(cid)
            assert lazy.last_index(cid, len(full)) == len(full) - 1 - full[::-1].index(cid)


def test_only_a_whole_kind_0_body_is_searched_as_digests() -> None:
    from urna.format.encodings.repack import digest_ids

    assert digest_ids(b"") is None
    assert digest_ids(b"\x01" + bytes(36)) is None  # a spans body
    assert digest_ids(b"\x00" + (2).to_bytes(4, "little") + bytes(63)) is None  # short
