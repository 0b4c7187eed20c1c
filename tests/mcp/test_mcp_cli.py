"""``urna mcp`` usage: registered with help; HTTP on another interface needs --expose and a
token (refused before any file is opened or port bound)."""

from __future__ import annotations

from pathlib import Path

from helpers.cli_runner import invoke

FILE = Path(__file__).resolve().parents[1] / "data" / "ref-0.5.1" / "quickstart-exact.urna"


def _invoke(*args: str):
    return invoke(["mcp", *args], env={"URNA_TOKEN": None})


def test_mcp_is_registered_with_help_and_example() -> None:
    res = invoke(["mcp", "--help"])
    assert res.exit_code == 0 and "Example: urna mcp" in res.output
    assert "mcp" in invoke(["--help"]).output


def test_http_on_another_interface_needs_expose_and_a_token() -> None:
    res = _invoke(str(FILE), "--http", "--host", "0.0.0.0")
    assert res.exit_code == 2 and "pass --expose" in res.stderr
    res = _invoke(str(FILE), "--http", "--host", "0.0.0.0", "--expose")
    assert res.exit_code == 2 and "--token or URNA_TOKEN" in res.stderr


def test_a_corrupt_file_is_refused_before_serving(tmp_path: Path) -> None:
    bad = tmp_path / "bad.urna"
    data = bytearray(FILE.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    res = _invoke(str(bad))
    assert res.exit_code == 1
    assert "SectionChecksumMismatch" in res.stderr
