"""Typed errors of urna: one class per reference error variant, same names, same text.

Every class derives from :class:`UrnaError`, itself a :class:`ValueError`, because the
reference's Python binding raises ``ValueError(<text>)``; code written against it keeps
working. ``str(e)`` renders the reference's Display text exactly (01-container §12.1,
03-runtime §1.4); callers read the fields, never parse the text.
"""

from __future__ import annotations


class UrnaError(ValueError):
    """Base of every urna error (a ValueError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else type(self).__name__

    def __reduce__(self):  # keep fields across pickling (process pools, Ray)
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[UrnaError], args: tuple, fields: dict) -> UrnaError:
    err = cls.__new__(cls)
    ValueError.__init__(err, *args)
    err.__dict__.update(fields)
    return err


def _bytes_list(b: bytes) -> str:
    return "[" + ", ".join(str(x) for x in b) + "]"


class Io(UrnaError):
    """An operating-system error while reading or writing a file."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, f"{detail}")


class MagicMismatch(UrnaError):
    """The first four bytes are neither URNA nor the legacy NEST."""

    def __init__(self, expected: bytes, got: bytes) -> None:
        self.expected, self.got = bytes(expected), bytes(got)
        ValueError.__init__(
            self, f"magic mismatch: expected {_bytes_list(self.expected)}, "
                  f"got {_bytes_list(self.got)}"
        )


class UnsupportedVersion(UrnaError):
    """Header version is not 1.0."""

    def __init__(self, major: int, minor: int) -> None:
        self.major, self.minor = major, minor
        ValueError.__init__(self, f"unsupported version: {major}.{minor}")


class UnsupportedFormatVersion(UrnaError):
    """Manifest format_version is newer than 1."""

    def __init__(self, version: int) -> None:
        self.version = version
        ValueError.__init__(self, f"unsupported format_version: {version}")


class UnsupportedSchemaVersion(UrnaError):
    """Manifest schema_version is newer than 1."""

    def __init__(self, version: int) -> None:
        self.version = version
        ValueError.__init__(self, f"unsupported schema_version: {version}")


class InvalidHeaderChecksum(UrnaError):
    """The header checksum does not match the header bytes."""

    def __init__(self) -> None:
        ValueError.__init__(self, "invalid header checksum")


class SectionOffsetOutOfBounds(UrnaError):
    """A section (or the table) lies outside the file body."""

    def __init__(self, section_id: int, offset: int) -> None:
        self.section_id, self.offset = section_id, offset
        ValueError.__init__(self, f"section {section_id} offset out of bounds: {offset}")


class SectionChecksumMismatch(UrnaError):
    """A section's payload does not match its table checksum."""

    def __init__(self, section_id: int) -> None:
        self.section_id = section_id
        ValueError.__init__(self, f"section {section_id} checksum mismatch")


class SectionNotFound(UrnaError):
    """A lookup asked for a section the file does not have."""

    def __init__(self, section_id: int) -> None:
        self.section_id = section_id
        ValueError.__init__(self, f"section {section_id} not found")


class UnsupportedSectionVersion(UrnaError):
    """A section payload carries a version this reader does not know."""

    def __init__(self, section_id: int, version: int) -> None:
        self.section_id, self.version = section_id, version
        ValueError.__init__(
            self, f"unsupported section payload version: section={section_id} version={version}"
        )


class UnsupportedSectionEncoding(UrnaError):
    """A section uses an encoding that is reserved, unknown or illegal for its class."""

    def __init__(self, section_id: int, encoding: int) -> None:
        self.section_id, self.encoding = section_id, encoding
        ValueError.__init__(
            self, f"unsupported section encoding: section={section_id} encoding={encoding}"
        )


class SectionMisaligned(UrnaError):
    """A section offset is not a multiple of 64."""

    def __init__(self, section_id: int, offset: int, alignment: int = 64) -> None:
        self.section_id, self.offset, self.alignment = section_id, offset, alignment
        ValueError.__init__(
            self, f"section {section_id} offset not aligned: offset={offset} alignment={alignment}"
        )


class MalformedSectionPayload(UrnaError):
    """A section payload fails its decoder's structural checks."""

    def __init__(self, section_id: int, reason: str) -> None:
        self.section_id, self.reason = section_id, reason
        ValueError.__init__(
            self, f"malformed section payload: section={section_id} reason={reason}"
        )

    def retag(self, section_id: int) -> MalformedSectionPayload:
        """Return the same failure attributed to ``section_id``."""
        return MalformedSectionPayload(section_id, self.reason)


class FooterHashMismatch(UrnaError):
    """The footer digest does not match the file body."""

    def __init__(self) -> None:
        ValueError.__init__(self, "footer hash mismatch")


class FileSizeMismatch(UrnaError):
    """The header's file_size differs from the real length."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected, self.got = expected, got
        ValueError.__init__(self, f"file size mismatch: expected {expected}, got {got}")


class FileTruncated(UrnaError):
    """The file is too short for what its header describes."""

    def __init__(self) -> None:
        ValueError.__init__(self, "file truncated")


class ManifestInvalid(UrnaError):
    """The manifest breaks a validation rule."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, f"manifest invalid: {detail}")


class MissingRequiredSection(UrnaError):
    """One of the six canonical sections is absent."""

    def __init__(self, name: str) -> None:
        self.name = name
        ValueError.__init__(self, f"missing required section: {name}")


class EmbeddingSizeMismatch(UrnaError):
    """An embeddings section or band has the wrong byte size."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected, self.got = expected, got
        ValueError.__init__(self, f"embedding size mismatch: expected {expected}, got {got}")


class SectionCountMismatch(UrnaError):
    """A canonical section holds a different number of records than expected."""

    def __init__(self, section_id: int, expected: int, got: int) -> None:
        self.section_id, self.expected, self.got = section_id, expected, got
        ValueError.__init__(
            self, f"section count mismatch: section={section_id} expected={expected} got={got}"
        )


class _ValueNamed(UrnaError):
    _label = ""

    def __init__(self, value: str) -> None:
        self.value = value
        ValueError.__init__(self, f"{self._label}: {value}")


class UnsupportedDType(_ValueNamed):
    """The dtype (or its layout) is not one urna knows."""

    _label = "unsupported dtype"


class UnsupportedMetric(_ValueNamed):
    """The metric is not ``ip``."""

    _label = "unsupported metric"


class UnsupportedScoreType(_ValueNamed):
    """The score_type is not cosine or hybrid_rrf."""

    _label = "unsupported score_type"


class UnsupportedNormalize(_ValueNamed):
    """The normalize field is not ``l2``."""

    _label = "unsupported normalize"


class UnsupportedIndexType(_ValueNamed):
    """The index_type is not exact, hnsw or hybrid."""

    _label = "unsupported index_type"


class UnsupportedRerankPolicy(_ValueNamed):
    """The rerank_policy is not none or exact."""

    _label = "unsupported rerank_policy"


class InvalidModelHash(_ValueNamed):
    """The model_hash is not ``sha256:`` + 64 hex digits."""

    _label = "invalid model_hash"


class InvalidEmbeddingValue(UrnaError):
    """An embedding (or scale) is NaN or infinite."""

    def __init__(self) -> None:
        ValueError.__init__(self, "NaN or Inf detected in embeddings")


class Json(UrnaError):
    """A JSON document (manifest, contract, provenance) does not parse or has the wrong shape."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, f"JSON error: {detail}")


class QueryValidation(_ValueNamed):
    """A query failed validation."""

    _label = "query validation failed"


class DimensionMismatch(UrnaError):
    """A vector has the wrong number of components."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected, self.got = expected, got
        ValueError.__init__(self, f"dimension mismatch: expected {expected}, got {got}")


class InvalidK(UrnaError):
    """k is zero or negative."""

    def __init__(self, k: int) -> None:
        self.k = k
        ValueError.__init__(self, f"invalid k: {k}")


class EmptyQuery(UrnaError):
    """The query vector is empty."""

    def __init__(self) -> None:
        ValueError.__init__(self, "empty query")


class ZeroNormQuery(UrnaError):
    """The query vector has zero L2 norm (in f32)."""

    def __init__(self) -> None:
        ValueError.__init__(self, "zero-norm query")


class FileNotFound(_ValueNamed):
    """A named file does not exist."""

    _label = "file not found"


class UnexpectedEof(UrnaError):
    """A fixed-width field runs past the end of its buffer."""

    def __init__(self) -> None:
        ValueError.__init__(self, "unexpected end of file")


class UnsupportedFeature(_ValueNamed):
    """A feature this version does not implement."""

    _label = "unsupported feature"


class InvalidInput(_ValueNamed):
    """Builder input that cannot be written (bad span, oversized string, ...)."""

    _label = "invalid input"


# --- runtime (query-side) variants, 03-runtime §1.4 -------------------------------------


class InvalidQueryValue(UrnaError):
    """The query has a NaN or infinite component."""

    def __init__(self) -> None:
        ValueError.__init__(self, "NaN or Inf in query")


class SpaceNotFound(UrnaError):
    """search_space named a space the file does not have (or did not open)."""

    def __init__(self, name: str) -> None:
        self.name = name
        ValueError.__init__(self, f"embedding space not found: {name}")


class BlobNotInlined(UrnaError):
    """blob_bytes asked for a blob whose bytes are not inside this file."""

    def __init__(self, index: int) -> None:
        self.index = index
        ValueError.__init__(
            self,
            f"blob {index} is not inlined in this file: open the media sidecar named by its "
            "blob_refs uri, or rebuild with [output] embed_media",
        )


class SpaceModelMismatch(UrnaError):
    """The query's model hash differs from the space's."""

    def __init__(self, space: str, expected: str, actual: str) -> None:
        self.space, self.expected, self.actual = space, expected, actual
        ValueError.__init__(
            self,
            f"model_hash mismatch in space {space}: the query was embedded with {expected}, "
            f"but the space vectors were embedded with {actual}",
        )


class ModelHashMismatch(UrnaError):
    """A query embedder's model differs from the one the corpus was built with."""

    def __init__(self, expected: str, actual: str, *, bypass_hint: bool = True) -> None:
        self.expected, self.actual = expected, actual
        text = (f"model_hash mismatch: the query was embedded with {expected}, but the corpus was "
                f"built with {actual}. Results would be cosine-valid but semantically wrong.")
        if bypass_hint:  # UrnaFile.retrieve can skip the check; the CLI gate cannot
            text += " Pass expected_model_hash=None to bypass this check."
        ValueError.__init__(self, text)


class CitationError(UrnaError):
    """A citation is malformed, names another corpus, or a chunk the file lacks."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


class SpecError(UrnaError):
    """A corpus.toml build spec is invalid; the message names the key."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)




class BuildError(UrnaError):
    """urna.build was given an option or chunk list it cannot use (the binding's own checks)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


class CatalogError(UrnaError):
    """A catalog is malformed, altered, does not match its shards, or cannot run a search."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


class CatalogLocked(CatalogError):
    """Another writer holds the living catalog's lock (or a dead writer left it behind)."""


class CitationRemoved(CitationError):
    """A citation names a chunk removed from the living catalog whose segment file is gone
    (``removed_in`` None: removed in a version a squash folded away)."""

    def __init__(self, detail: str, removed_in: int | None) -> None:
        self.removed_in = removed_in
        CitationError.__init__(self, detail)


# metadata and filters ---------------------------------------------------------------------


class FilterError(UrnaError):
    """Base of every filter failure: the ``where`` expression cannot be compiled or applied."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


class UnknownFilterField(FilterError):
    """The filter names a field that is neither built in nor in the file's metadata."""

    def __init__(self, field: str) -> None:
        self.field = field
        FilterError.__init__(self, f"filter: unknown field {field!r}")


class UnknownFilterOperator(FilterError):
    """The filter uses an operator the language does not have."""

    def __init__(self, operator: str, field: str | None = None) -> None:
        self.operator, self.field = operator, field
        where = "" if field is None else f" on field {field!r}"
        FilterError.__init__(self, f"filter: unknown operator {operator!r}{where}")


class FilterTypeError(FilterError):
    """An operator or operand does not fit the type of the field it is applied to."""

    def __init__(self, field: str, operator: str, detail: str) -> None:
        self.field, self.operator = field, operator
        FilterError.__init__(self, f"filter: field {field!r} operator {operator!r}: {detail}")


class InvalidFilterJson(FilterError):
    """The text given as a JSON filter is not JSON (or not a JSON object)."""

    def __init__(self, detail: str) -> None:
        FilterError.__init__(self, f"filter: invalid JSON: {detail}")


class SerdeSyntax(Exception):  # noqa: N818 - an internal signal, never raised to callers
    """Internal to ``format/serde``: a serde_json error whose position is not yet worded.

    ``at`` is the byte index serde's ``line/column`` is computed from (None: the reader's
    current index). The parser turns it into :class:`Json`; it never escapes ``format/``.
    """

    def __init__(self, msg: str, at: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.at = at


# forge


class ForgeError(UrnaError):
    """A build step failed for a reason other than the spec (no rows, a missing cache...)."""


class IngestError(UrnaError):
    """A source file cannot be read (bad JSON line, unreadable file, SQL error)."""


class EmbedderError(UrnaError):
    """An embedder cannot be loaded (missing table, LFS pointer, missing package)."""


class RegistryError(UrnaError):
    """A ``[[models]] preset`` this build cannot provide (the forge exits 4 on it)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        ValueError.__init__(self, detail)


# command line


class CommandLineError(UrnaError):
    """A command-line failure shown as one line, ``<prefix>: <message>``, exiting ``exit_code``."""

    def __init__(self, message: str, exit_code: int = 1, prefix: str = "Error") -> None:
        self.message, self.exit_code, self.prefix = message, exit_code, prefix
        ValueError.__init__(self, message)


class UsageError(CommandLineError):
    """Bad usage of a verb (exit 2); ``command`` is the command whose help to see, if any."""

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message, 2)
        self.command = command


class BadParameter(UsageError):
    """A value its parameter's type refuses; the parser names the parameter."""


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and issubclass(obj, UrnaError) and not name.startswith("_")]
