"""The retrieve model_hash gate speaks the reference's words."""

from __future__ import annotations

import pytest

import urna
from helpers.vectors import REF, corpus
from urna.errors import ModelHashMismatch


def test_retrieve_with_another_model_hash_is_refused_with_the_reference_text():
    _, query = corpus("quickstart")["queries"][0]  # [text, vector]
    with urna.open(REF / "quickstart-exact.urna") as f:
        with pytest.raises(ModelHashMismatch) as info:
            f.retrieve(query, 3, expected_model_hash="sha256:" + "1" * 64)
        assert str(info.value) == (
            f"model_hash mismatch: the query was embedded with sha256:{'1' * 64}, but the corpus "
            f"was built with {f.model_hash}. Results would be cosine-valid but semantically wrong. "
            "Pass expected_model_hash=None to bypass this check.")
