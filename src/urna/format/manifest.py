"""The manifest: typed read, validation and byte-exact compact JSON (01-container §7).

Reading follows serde derive over serde_json (required keys, u32/u64 ranges, duplicate and
missing field errors with serde's positions; ``null`` for an optional key is absent; unknown
top-level keys land in ``extra``, unknown keys inside ``capabilities``/``capabilities_ext`` are
dropped). Writing emits the declaration order of §7.1, omits unset optionals, then the
``extra`` keys sorted by code point. Strings are kept raw so they are written back byte for
byte; validation (§7.5) is a separate step, as in the reference.
"""

from __future__ import annotations

from ..errors import (
    InvalidModelHash,
    ManifestInvalid,
    UnsupportedDType,
    UnsupportedFormatVersion,
    UnsupportedIndexType,
    UnsupportedMetric,
    UnsupportedNormalize,
    UnsupportedRerankPolicy,
    UnsupportedSchemaVersion,
    UnsupportedScoreType,
)
from .dtypes import DTYPE_NAMES, DType
from .hashing import HASH_PREFIX
from .json_text import BOOL, STR, STR_SEQ, U32, U64, Opt, Struct, deserialize, dumps_compact
from .layout import URNA_FORMAT_VERSION, URNA_SCHEMA_VERSION
from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ALLOWED_DTYPES = DTYPE_NAMES
ALLOWED_SCORE_TYPES = ("cosine", "hybrid_rrf")
ALLOWED_INDEX_TYPES = ("exact", "hnsw", "hybrid")
ALLOWED_RERANK_POLICIES = ("none", "exact")
_HEX = frozenset("0123456789abcdefABCDEF")


class Capabilities(Record):
    """The five v1 capability flags (all required on read, always written)."""

    _fields = ("supports_exact", "supports_ann", "supports_bm25", "supports_citations",
               "supports_reproducible_build")

    def __init__(self, supports_exact: bool = True, supports_ann: bool = False,
                 supports_bm25: bool = False, supports_citations: bool = True,
                 supports_reproducible_build: bool = True) -> None:
        self.supports_exact = supports_exact
        self.supports_ann = supports_ann
        self.supports_bm25 = supports_bm25
        self.supports_citations = supports_citations
        self.supports_reproducible_build = supports_reproducible_build

    def to_dict(self) -> dict[str, bool]:
        """The flags in their JSON order."""
        return {name: getattr(self, name) for name in self._fields}


class CapabilitiesExt(Record):
    """Optional capability flags; each is written only when set (``{}`` when none is)."""

    _fields = ("supports_multimodal", "graph_present", "graph_entities_present",
               "supports_catalog", "blobs_present")

    def __init__(self, supports_multimodal: bool | None = None,
                 graph_present: bool | None = None, graph_entities_present: bool | None = None,
                 supports_catalog: bool | None = None, blobs_present: bool | None = None) -> None:
        self.supports_multimodal = supports_multimodal
        self.graph_present = graph_present
        self.graph_entities_present = graph_entities_present
        self.supports_catalog = supports_catalog
        self.blobs_present = blobs_present

    def to_dict(self) -> dict[str, bool]:
        """The set flags in their JSON order."""
        return {name: getattr(self, name) for name in self._fields
                if getattr(self, name) is not None}


_CAPS = Struct("Capabilities", tuple((name, BOOL) for name in Capabilities._fields))
_CAPS_EXT = Struct("CapabilitiesExt", tuple((name, Opt(BOOL)) for name in CapabilitiesExt._fields))
_SPEC = Struct("Manifest", (
    ("format_version", U32), ("schema_version", U32), ("embedding_model", STR),
    ("embedding_dim", U32), ("n_chunks", U64), ("dtype", STR), ("metric", STR),
    ("score_type", STR), ("normalize", STR), ("index_type", STR), ("rerank_policy", STR),
    ("model_hash", STR), ("chunker_version", STR), ("capabilities", _CAPS),
    ("title", Opt(STR)), ("version", Opt(STR)), ("created", Opt(STR)),
    ("description", Opt(STR)), ("authors", Opt(STR_SEQ)), ("license", Opt(STR)),
    ("mrl_dim", Opt(U32)), ("full_dim", Opt(U32)), ("capabilities_ext", Opt(_CAPS_EXT)),
), flatten=True)
_KEYS = tuple(key for key, _ in _SPEC.fields)


class Manifest(Record):
    """Every §7.1 field under its JSON name; ``extra`` holds unknown top-level keys."""

    _fields = (*_KEYS, "extra")

    def __init__(self, format_version: int = URNA_FORMAT_VERSION,
                 schema_version: int = URNA_SCHEMA_VERSION, embedding_model: str = "",
                 embedding_dim: int = 0, n_chunks: int = 0, dtype: str = DType.FLOAT32.value,
                 metric: str = "ip", score_type: str = "cosine", normalize: str = "l2",
                 index_type: str = "exact", rerank_policy: str = "none", model_hash: str = "",
                 chunker_version: str = "", capabilities: Capabilities | None = None,
                 title: str | None = None, version: str | None = None,
                 created: str | None = None, description: str | None = None,
                 authors: list[str] | None = None, license: str | None = None,
                 mrl_dim: int | None = None, full_dim: int | None = None,
                 capabilities_ext: CapabilitiesExt | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self.format_version = format_version
        self.schema_version = schema_version
        self.embedding_model = embedding_model
        self.embedding_dim = embedding_dim
        self.n_chunks = n_chunks
        self.dtype = dtype
        self.metric = metric
        self.score_type = score_type
        self.normalize = normalize
        self.index_type = index_type
        self.rerank_policy = rerank_policy
        self.model_hash = model_hash
        self.chunker_version = chunker_version
        self.capabilities = Capabilities() if capabilities is None else capabilities
        self.title = title
        self.version = version
        self.created = created
        self.description = description
        self.authors = authors
        self.license = license
        self.mrl_dim = mrl_dim
        self.full_dim = full_dim
        self.capabilities_ext = capabilities_ext
        self.extra: dict[str, Any] = {} if extra is None else extra

    @classmethod
    def new(cls, embedding_model: str, embedding_dim: int, n_chunks: int, chunker_version: str,
            model_hash: str) -> Manifest:
        """A manifest with the given identity and the reference's defaults for the rest."""
        return cls(embedding_model=embedding_model, embedding_dim=embedding_dim,
                   n_chunks=n_chunks, chunker_version=chunker_version, model_hash=model_hash)

    @classmethod
    def from_json_bytes(cls, data: bytes | bytearray | memoryview | str) -> Manifest:
        """Parse manifest JSON as the reference does; raises ``Json`` with serde's text."""
        vals = deserialize(data, _SPEC)
        extra: dict[str, Any] = {}
        for key, value in vals.pop("\0extra"):
            extra[key] = value  # a repeated unknown key keeps its last value, as a BTreeMap does
        caps = Capabilities(**vals.pop("capabilities"))
        ext = vals.pop("capabilities_ext")
        return cls(capabilities=caps,
                   capabilities_ext=None if ext is None else CapabilitiesExt(**ext),
                   extra=extra, **vals)

    def to_dict(self) -> dict[str, Any]:
        """The manifest as the JSON object it serialises to (same keys, same order)."""
        out: dict[str, Any] = {}
        for key in _KEYS:
            value = getattr(self, key)
            if key == "capabilities":
                value = value.to_dict()
            elif value is None:
                continue
            elif key == "capabilities_ext":
                value = value.to_dict()
            elif key == "authors":
                value = list(value)
            out[key] = value
        for key in sorted(self.extra):
            if key not in out:  # serde would write a shadowing key twice; we never make one
                out[key] = self.extra[key]
        return out

    def to_json_bytes(self) -> bytes:
        """Compact JSON in the reference's key order (the bytes stored in the file)."""
        return dumps_compact(self.to_dict()).encode("utf-8")

    def validate(self) -> None:
        """Apply the v1 rules of §7.5 in the reference's order; the first failure raises."""
        if self.format_version > URNA_FORMAT_VERSION:
            raise UnsupportedFormatVersion(self.format_version)
        if self.schema_version > URNA_SCHEMA_VERSION:
            raise UnsupportedSchemaVersion(self.schema_version)
        if self.embedding_model == "":
            raise ManifestInvalid("embedding_model must not be empty")
        if self.embedding_dim == 0:
            raise ManifestInvalid("embedding_dim must be > 0")
        if self.n_chunks == 0:
            raise ManifestInvalid("n_chunks must be > 0")
        if self.chunker_version == "":
            raise ManifestInvalid("chunker_version must not be empty")
        _check_model_hash(self.model_hash)
        if self.dtype not in ALLOWED_DTYPES:
            raise UnsupportedDType(self.dtype)
        if self.metric != "ip":
            raise UnsupportedMetric(self.metric)
        if self.score_type not in ALLOWED_SCORE_TYPES:
            raise UnsupportedScoreType(self.score_type)
        if self.normalize != "l2":
            raise UnsupportedNormalize(self.normalize)
        if self.index_type not in ALLOWED_INDEX_TYPES:
            raise UnsupportedIndexType(self.index_type)
        if self.rerank_policy not in ALLOWED_RERANK_POLICIES:
            raise UnsupportedRerankPolicy(self.rerank_policy)
        if self.index_type in ("hnsw", "hybrid") and self.rerank_policy != "exact":
            raise ManifestInvalid(f'index_type={self.index_type} requires rerank_policy="exact"')
        caps = self.capabilities
        if not caps.supports_exact:
            raise ManifestInvalid(
                "capabilities.supports_exact must be true (exact path is the ground truth)")
        if not caps.supports_reproducible_build:
            raise ManifestInvalid("capabilities.supports_reproducible_build must be true")
        if self.index_type == "hnsw" and not caps.supports_ann:
            raise ManifestInvalid("index_type=hnsw requires capabilities.supports_ann=true")
        if self.index_type == "hybrid" and not caps.supports_bm25:
            raise ManifestInvalid("index_type=hybrid requires capabilities.supports_bm25=true")
        self._validate_matryoshka()

    def _validate_matryoshka(self) -> None:
        m, f = self.mrl_dim, self.full_dim
        if m is None and f is None:
            return
        if m == 0:
            raise ManifestInvalid("mrl_dim must be > 0 when set")
        if f is None:
            raise ManifestInvalid("mrl_dim requires full_dim (the source dim) to be set")
        if m is None:
            raise ManifestInvalid("full_dim requires mrl_dim to be set")
        if m > f:
            raise ManifestInvalid(f"mrl_dim ({m}) must be <= full_dim ({f})")
        if m != self.embedding_dim:
            raise ManifestInvalid(f"mrl_dim ({m}) must equal embedding_dim ({self.embedding_dim}); "
                                  "the runtime strides by embedding_dim")
        if DType.parse(self.dtype) is DType.INT4 and not DType.INT4.dim_supported(m):
            raise ManifestInvalid(f"int4 requires mrl_dim divisible by 64, got {m}")


def _check_model_hash(s: str) -> None:
    if not s.startswith(HASH_PREFIX):
        raise InvalidModelHash(f"expected 'sha256:<hex>' prefix, got '{s}'")
    rest = s[len(HASH_PREFIX):]
    # Rust compares the UTF-8 byte length; with non-hex characters it fails either way.
    if len(rest) != 64 or not set(rest) <= _HEX:
        raise InvalidModelHash(f"expected 64 hex chars after 'sha256:', got '{rest}'")
