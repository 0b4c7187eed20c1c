"""JSON text as serde_json 1.0.151 reads and writes it (01-container §7.2-7.4, §8.5-8.6).

The reference parses the manifest, the search contract and provenance with serde_json
(``from_slice``, features ``preserve_order``, no ``float_roundtrip``) and writes them with its
compact formatter. This module reproduces both sides: the same accepted language, the same
error texts with serde's ``at line L column C`` positions (``Json`` errors), the same f64 values
for float literals (serde's fast, not always correctly rounded, decimal conversion) and the same
float text on output (shortest round-trip digits in zmij's layout).

Typed reads (``deserialize``) follow what ``#[derive(Deserialize)]`` generates: required and
optional fields, duplicate and missing field errors, unknown keys ignored without UTF-8
validation, structs accepted as arrays, and a ``flatten`` catch-all for unknown keys.
"""

from __future__ import annotations

from .serde.numbers import format_float
from .serde.parse import deserialize, parse_exact, parse_json
from .serde.schema import BOOL, STR, STR_SEQ, U32, U64, Opt, Struct
from .serde.writer import dumps_compact

__all__ = ["parse_json", "parse_exact", "dumps_compact", "deserialize", "Struct", "Opt", "U32",
           "U64", "STR", "BOOL", "STR_SEQ", "format_float"]
