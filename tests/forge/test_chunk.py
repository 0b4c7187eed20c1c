"""Chunkers: reference character windows and the paragraph chunker (04-surface §4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.forge.sources.chunk import ChunkSpec, chunk, chunk_paragraphs, chunk_text

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=400)


def test_windows_and_byte_spans() -> None:
    got = chunk_text("ab\u00e9cd\U0001f600ef", "u", max_chars=3)
    assert [(c.canonical_text, c.byte_start, c.byte_end) for c in got] == [
        ("ab\u00e9", 0, 4), ("cd\U0001f600", 4, 10), ("ef", 10, 12)]
    assert chunk_text("", "u") == []


def test_overlap_steps_back() -> None:
    got = chunk_text("abcdefg", "u", max_chars=4, overlap=2)
    assert [(c.canonical_text, c.byte_start, c.byte_end) for c in got] == [
        ("abcd", 0, 4), ("cdef", 2, 6), ("efg", 4, 7)]


@pytest.mark.parametrize("max_chars,overlap", [(0, 0), (-1, 0), (4, 4), (4, -1)])
def test_bad_windows_are_refused(max_chars: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("abc", "u", max_chars=max_chars, overlap=overlap)


def test_chunk_id_matches_the_reference_quickstart_id() -> None:
    # row 7 of the quickstart spec build (04-surface §8.4(a)), spans = ordinals
    text = ("because the citation points at content, two people who build the same logical "
            "corpus on two machines get the same citation, and a stored corpus and a "
            "compressed one cite identically. resolving a citation returns the exact canonical "
            "text and the original byte span it came from, which is what lets an agent quote a "
            "source it can prove.")
    spec = ChunkSpec(text, "demo/03-citations.md", 7, 8)
    assert spec.chunk_id("quickstart/1") == (
        "sha256:b5dfeb09a643f6f0afde3f361316dde3ea503ff86c525d297e6ba79b5781a4be")


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(1, 50), st.data())
def test_window_spans_index_the_utf8_bytes(text: str, max_chars: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, max_chars - 1))
    got = chunk_text(text, "u", max_chars=max_chars, overlap=overlap)
    raw = text.encode("utf-8")
    for c in got:
        assert raw[c.byte_start:c.byte_end].decode("utf-8") == c.canonical_text
        assert 0 < len(c.canonical_text) <= max_chars
    if overlap == 0:
        assert "".join(c.canonical_text for c in got) == text
    assert got == chunk_text(text, "u", max_chars=max_chars, overlap=overlap)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab é.!?\n\u00a0漢", max_size=80), max_size=8), st.integers(5, 60))
def test_paragraph_chunks_are_exact_substrings(parts: list[str], max_chars: int) -> None:
    text = "\n\n".join(parts)
    got = chunk_paragraphs(text, "u", max_chars=max_chars)
    raw = text.encode("utf-8")
    last_end = 0
    for c in got:
        assert raw[c.byte_start:c.byte_end].decode("utf-8") == c.canonical_text
        assert 0 < len(c.canonical_text) <= max_chars
        assert c.canonical_text == c.canonical_text.strip()
        assert c.byte_start >= last_end  # in order, no overlap
        last_end = c.byte_end
    # every non-space character of the text is in some chunk
    assert sum(len("".join(c.canonical_text.split())) for c in got) == len("".join(text.split()))


def test_paragraph_chunker_packs_paragraphs_and_splits_long_ones() -> None:
    text = "One.\n\nTwo two.\n\n" + "Long sentence here. " * 6 + "\n\nEnd."
    got = chunk_paragraphs(text, "doc.md", max_chars=45)
    assert got[0].canonical_text.startswith("One.\n\nTwo two.\n\nLong sentence here.")
    assert all(len(c.canonical_text) <= 45 for c in got)
    assert got[-1].canonical_text.endswith("End.")
    assert any(c.canonical_text.startswith("Long sentence here.") for c in got)


def test_dispatch() -> None:
    assert chunk("abc", "u", chunker="chars", max_chars=2) == chunk_text("abc", "u", max_chars=2)
    with pytest.raises(ValueError, match="unknown chunker"):
        chunk("abc", "u", chunker="tokens")
