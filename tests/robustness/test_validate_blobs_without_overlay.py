"""``urna validate`` on blob files without a span overlay (0x16) ends as the open ends.

The open reads 0x14 whenever the manifest says blobs are present and refuses a 0x17 that is not
raw or whose entry count is not 0x14's; the format-level check alone does not ask either, so
such files take the open's steps too. The expected texts are the reference wheel's (urna 0.5.1
``urna validate`` on these very files, whose own validate is its open), and the open's here.
"""

from __future__ import annotations

import struct

import pytest
import zstandard

import urna
from helpers.cli_runner import invoke
from helpers.mutate import find_entry, poke_entry, replace_payload, reseal, source_bytes
from urna.errors import UrnaError


def _without(buf: bytes | bytearray, *section_ids: int) -> bytearray:
    """The file with these sections' entries renamed to a second 0x05, which the reader skips."""
    out = bytearray(buf)
    for section_id in section_ids:
        poke_entry(out, section_id, "section_id", 0x05)
    return reseal(out)


def _payload(buf: bytes | bytearray, section_id: int) -> bytes:
    _, _, entry = find_entry(buf, section_id)
    return bytes(buf[entry.offset:entry.offset + entry.size])


def _cases() -> dict[str, tuple[bytes, str | None]]:
    no_overlay = _without(source_bytes("quickstart-blobs.urna"), 0x16)
    data = _payload(no_overlay, 0x17)
    refs_only = _without(no_overlay, 0x17)
    refs = _payload(refs_only, 0x14)
    return {
        "no overlay": (bytes(no_overlay), None),
        "0x17 zstd": (bytes(replace_payload(
            no_overlay, 0x17, zstandard.ZstdCompressor(level=3).compress(data), encoding=1)),
            "malformed section payload: section=23 reason=blob_data must be raw, found encoding 1"),
        "0x17 count": (bytes(replace_payload(
            no_overlay, 0x17, data[:4] + struct.pack("<Q", 1) + data[12:])),
            "malformed section payload: section=23 reason=blob_data has 1 entries but blob_refs "
            "has 2 records"),
        "0x14 version": (bytes(replace_payload(refs_only, 0x14, struct.pack("<I", 2) + refs[4:])),
                         "unsupported section payload version: section=20 version=2"),
        "0x14 cut": (bytes(replace_payload(refs_only, 0x14, refs[:-3])),
                     "malformed section payload: section=20 reason=unexpected EOF"),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_ends_as_the_open_and_the_reference(name: str, tmp_path) -> None:
    data, message = CASES[name]
    path = tmp_path / "blobs.urna"
    path.write_bytes(data)
    result = invoke(["validate", str(path)])
    try:
        urna.open(path).close()
        opened = None
    except UrnaError as exc:
        opened = str(exc)
    assert opened == message
    if message is None:
        assert result.exit_code == 0 and result.stdout.startswith("OK: "), result.output
    else:
        assert result.exit_code == 1 and result.stderr.rstrip("\n").endswith(message)
