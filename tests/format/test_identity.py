"""chunk_id, content_hash independence, citations (01-container §9)."""

from __future__ import annotations

import pytest

from urna.errors import CitationError
from urna.format.identity import chunk_id, format_citation, parse_citation

H = "sha256:982e986094ae9c3f14ccdb19faf0d27d8f9155bfc53b025b37b0624fab78a378"
C = "sha256:186d842224fbbee05b4ae5d2851ef966c7da8a54372517c450c2a5d35dd213c3"


@pytest.mark.parametrize("args, expected", [
    (("hello", "doc.txt", 0, 5, "v1"),
     "sha256:105aadc3e479df537fdbbd78badf3261a585a001c631772673f8590a5f5d40af"),
    (("HELLO", "doc.txt", 0, 5, "v1"),
     "sha256:0bce1526e036f0d099cd6edc677e7a70ee411d64290c4f8326c445bb94680655"),
    (("", "", 0, 0, "v1"),
     "sha256:f329ba83edbe2edfb5bd0cf4403a748a4681f60f8a1c2bfe9de4df2957ec70fd"),
])
def test_chunk_id_vectors(args, expected):
    assert chunk_id(*args) == expected


def test_citation_round_trip_and_published_form():
    citation = format_citation(H, C)
    assert citation == f"urna://{H}/{C}" and len(citation) == 150
    assert parse_citation(citation) == (H, C)


def test_citation_prefix_optional_and_suffix_ignored():
    bare = H[len("sha256:"):]
    assert parse_citation(f"urna://{bare}/{C}/extra/parts") == (H, C)


@pytest.mark.parametrize("text, message", [
    ("nest://x/y", "citation must start with 'urna://': nest://x/y"),
    ("urna://abc", "citation missing chunk_id: urna://abc"),
])
def test_bad_citations_are_refused(text, message):
    with pytest.raises(CitationError) as info:
        parse_citation(text)
    assert str(info.value) == message
