"""``urna.build``'s arguments converted as the reference binding (PyO3) converts them.

Each ``extract_*`` takes what the caller passed and returns the Rust-side value, or raises
the builtin class with the text the urna 0.5.1 wheel's PyO3 layer raises: a str parameter
takes only a ``str`` (``'int' object is not an instance of 'str'``), an integer goes through
``__index__`` (floats refused, bools accepted) then the width's range check (a u32 as a C
long then ``try_from``, a u64 as an unsigned long long), a bool is a ``bool`` or
``numpy.bool_``, a ``Vec`` is any sequence but a ``str``, a ``list`` or ``dict`` parameter is
that type or a subclass, and a float goes through ``PyFloat_AsDouble`` then rounds to f32.
``build`` converts its whole signature here first, in parameter order, as the wrapper does
before the body runs; the body (``build.build_bytes``) converts the records inside chunks,
media and spaces with the same functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from .argument_conversion import as_f64, as_sequence, downcast_error
from .argument_conversion import as_str as extract_str
from .argument_conversion import as_u32 as extract_u32
from .argument_conversion import as_u64 as extract_u64
from .errors import BuildError

T = TypeVar("T")

def extract_bool(value: object) -> bool:
    """A Rust ``bool``: a Python bool, or numpy's bool scalar (PyO3 accepts both)."""
    if type(value) is bool:
        return value
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):
        return bool(value)
    raise downcast_error(value, "bool")


def extract_list(value: object) -> list:
    """A ``&PyList`` parameter: a list or a subclass of it."""
    if not isinstance(value, list):
        raise downcast_error(value, "list")
    return value


def extract_dict(value: object) -> dict:
    """A ``&PyDict`` parameter: a dict or a subclass of it."""
    if not isinstance(value, dict):
        raise downcast_error(value, "dict")
    return value


def extract_vec(value: object, item: Callable[[Any], T]) -> list[T]:
    """A Rust ``Vec<T>``: the sequence's items, each converted by ``item``."""
    return [item(v) for v in as_sequence(value)]


def optional(value: object, extract: Callable[[Any], T]) -> T | None:
    """An ``Option<T>`` parameter: None stays None."""
    return None if value is None else extract(value)


_FAST_KINDS = frozenset("fiub")


def extract_f32_vec(value: object) -> np.ndarray:
    """A Rust ``Vec<f32>`` as a 1-d float32 array (each item as a double, then ``as f32``)."""
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in _FAST_KINDS:
        return _to_f32(value.astype(np.float64) if value.dtype.kind != "f" else value)
    if type(value) is list and all(type(v) is float for v in value):
        return _to_f32(np.array(value, dtype=np.float64))
    return _to_f32(np.array([as_f64(v) for v in as_sequence(value)], dtype=np.float64))


def _to_f32(array: np.ndarray) -> np.ndarray:
    # Rust's ``as f32`` rounds to nearest and saturates to +-inf, as numpy's cast does.
    with np.errstate(over="ignore"):
        return array.astype(np.float32).reshape(-1)


def extract_f32_rows(value: object) -> list[np.ndarray]:
    """A Rust ``Vec<Vec<f32>>`` as a list of float32 rows."""
    if isinstance(value, np.ndarray) and value.ndim == 2 and value.dtype.kind in _FAST_KINDS:
        return list(_to_f32(value.astype(np.float64)).reshape(value.shape))
    return [extract_f32_vec(row) for row in as_sequence(value)]


_MISSING = object()


def record(value: object, where: str) -> dict:
    """One record of a list argument (``chunks[i]``, ``spaces[i]``, ...): it must be a dict."""
    if not isinstance(value, dict):
        raise BuildError(f"{where} is not a dict")
    return value


def field(item: Mapping, key: str, where: str, extract: Callable[[Any], T]) -> T:
    """``item[key]`` converted by ``extract``; a missing key is ``<where> missing <key>``."""
    value = dict.get(item, key, _MISSING)  # type: ignore[call-overload]  # the C lookup PyO3 does
    if value is _MISSING:
        raise BuildError(f"{where} missing {key}")
    return extract(value)


def optional_field(item: Mapping, key: str, extract: Callable[[Any], T]) -> T | None:
    """``item[key]`` converted by ``extract`` if present (a present None is refused), else None."""
    value = dict.get(item, key, _MISSING)  # type: ignore[call-overload]
    return None if value is _MISSING else extract(value)


def extract_output_path(value: object) -> str:
    """The output path: a str as the reference takes it (and, beyond it, an os.PathLike)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return extract_str(value)


def _optional_str(value: object) -> str | None:
    return optional(value, extract_str)


def _optional_u32(value: object) -> int | None:
    return optional(value, extract_u32)


def _optional_bool(value: object) -> bool | None:
    return optional(value, extract_bool)


def _optional_list(value: object) -> list | None:
    return optional(value, extract_list)


def _optional_dict(value: object) -> dict | None:
    return optional(value, extract_dict)


def _optional_strings(value: object) -> list[str] | None:
    return optional(value, lambda v: extract_vec(v, extract_str))


def _as_given(value: T) -> T:
    return value


# The reference's signature, in its order: the wrapper converts these before the body runs,
# so the first bad argument in this order is the one reported.
SIGNATURE: dict[str, Callable[[Any], Any]] = {
    "output_path": extract_output_path, "embedding_model": extract_str,
    "embedding_dim": extract_u32, "chunker_version": extract_str, "model_hash": extract_str,
    "chunks": extract_list, "title": _optional_str, "version": _optional_str,
    "created": _optional_str, "description": _optional_str, "authors": _optional_strings,
    "license": _optional_str, "provenance": _optional_dict, "reproducible": extract_bool,
    "preset": extract_str, "text_encoding": _optional_str, "dtype": _optional_str,
    "mrl_dim": _optional_u32, "with_hnsw": _optional_bool, "with_bm25": _optional_bool,
    "with_graph": extract_bool, "graph_top_m": extract_u64, "blob_refs": _optional_list,
    "blob_data_paths": _optional_list, "chunk_blob_spans": _optional_list,
    "spaces": _optional_list, "hnsw_m": extract_u64, "hnsw_ef_construction": extract_u64,
    "hnsw_seed": extract_u64,
    # beyond the reference: checked by the 0x18 encoder
    "metadata": _as_given, "metadata_types": _as_given,
}


def convert_call(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Every argument of one ``urna.build`` call converted, in the signature's order."""
    return {name: extract(arguments[name]) for name, extract in SIGNATURE.items()}
