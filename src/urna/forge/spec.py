"""The declarative build spec (``corpus.toml``): parse, expand, validate (04-surface §3.1-3.2).

Every violation is a ``SpecError`` whose message starts with the offending dotted key.
Unknown tables and keys are errors, never silently ignored. Image and media corpora
(``image_dir``, ``pdf_dir``, ``[media]``, image spaces) are recognised and refused with a
SpecError saying this implementation does not build them yet.

Beyond the reference: ``source.kind = "documents"`` (a folder or glob of .md/.txt/.html/.pdf
files, chunked) with the keys ``chunker``, ``max_chars``, ``overlap``, ``word_boundaries``,
``on_error``, ``include`` / ``exclude`` (globs), ``encoding`` and ``encoding_fallback``; and
``source.metadata = ["col", ...]`` (with optional ``source.metadata_types = {col = "timestamp"}``)
which stores those columns of a jsonl / csv / sqlite source as per-chunk metadata (section
0x18, filterable with ``where=``).
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from urna._cache_dir import user_cache_dir
from urna.errors import RegistryError, SpecError

__all__ = ["SpecError", "RegistryError", "CorpusSpec", "ModelSpec", "SourceSpec", "load_spec",
           "parse_spec", "validate", "expand", "cache_root",
           "user_cache_dir", "copy_with"]


TABLES = ("build", "corpus", "embedding", "media", "models", "output", "source")
SOURCE_KINDS = ("csv", "documents", "jsonl", "sqlite")
REFUSED_KINDS = ("image_dir", "pdf_dir")
MODEL_PRESETS = ("floor", "potion", "st")
MAX_SPACES = 15


@dataclass
class SourceJoin:
    """``[[source.joins]]``: extra columns merged by key."""

    query: str = ""
    on: str = ""


@dataclass
class SourceText:
    """``[source.text]``."""

    template: str = ""


@dataclass
class SourceImage:
    """``[source.image]`` (parsed so that it can be refused by name)."""

    path_template: str = ""
    label_template: str = ""


@dataclass
class SourceSpec:
    """``[source]``."""

    kind: str = ""
    path: str = ""
    db: str = ""
    query: str = ""
    order_by: list[str] = field(default_factory=list)
    derive: dict[str, str] = field(default_factory=dict)
    joins: list[SourceJoin] = field(default_factory=list)
    input_dir: str = ""
    labels: str = ""
    text: SourceText = field(default_factory=SourceText)
    image: SourceImage = field(default_factory=SourceImage)
    # documents kind (ours)
    chunker: str = "chars"
    max_chars: int = 512
    overlap: int = 0
    on_error: str = "skip"
    word_boundaries: bool = True
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    encoding: str = "utf-8"
    encoding_fallback: str = ""
    # per-chunk metadata columns (ours, issue #16); documents always get their file fields
    metadata: list[str] = field(default_factory=list)
    metadata_types: dict[str, str] = field(default_factory=dict)


@dataclass
class ModelSpec:
    """One ``[[models]]`` table."""

    preset: str = ""
    text: str = "none"
    image: str = "none"
    dims: list[int] = field(default_factory=list)
    space_dtype: str = "int8"
    model_path: str = ""
    device: str = ""
    dtype: str = ""
    batch_size: int = 32
    text_corpus_mode: str = ""
    text_query_mode: str = ""
    image_mode: str = ""
    image_prompt: str = ""
    preprocess_version: str = ""
    normalize: bool = True
    image_max_side: int = 0
    encode_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildSpec:
    """``[build]``: engine options for ``urna.build`` (forge defaults differ from build's)."""

    preset: str = "hybrid"
    dtype: str = ""
    with_graph: bool = True
    graph_top_m: int = 8
    graph_space: str = "default"
    mrl_dim: int = 0


@dataclass
class OutputSpec:
    """``[output]``."""

    mode: str = "single"
    dir: str = "out"
    provenance: str = "standard"
    allow_remote_code: list[str] = field(default_factory=list)
    embed_media: bool = False
    cache_dir: str = ""


@dataclass
class _CorpusTable:
    """The keys allowed inside ``[corpus]``."""

    name: str = ""
    chunker_version: str = ""
    title: str = ""
    version: str = "0.1.0"
    reproducible: bool = True


@dataclass
class CorpusSpec(_CorpusTable):
    """A parsed spec: ``[corpus]`` keys (first, in their order) plus the other tables."""

    source: SourceSpec = field(default_factory=SourceSpec)
    models: list[ModelSpec] = field(default_factory=list)
    build: BuildSpec = field(default_factory=BuildSpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    media: dict[str, Any] | None = None
    embedding: dict[str, Any] = field(default_factory=dict)
    spec_path: str = ""

    def default_model(self) -> ModelSpec:
        """The one ``text = "default"`` model (validated to exist)."""
        return next(m for m in self.models if m.text == "default")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the resolved spec (for the build lock)."""
        from dataclasses import asdict

        return asdict(self)


_NESTED = {"text", "image", "joins"}


def _table(cls: type, data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, refusing unknown keys and wrong types."""
    if not isinstance(data, dict):
        raise SpecError(f"{where}: must be a table")
    valid = [f.name for f in fields(cls)]
    for key in data:
        if key not in valid:
            raise SpecError(f"{where}: unknown key '{key}' (valid: {', '.join(sorted(valid))})")
    obj = cls(**data)
    for f in fields(cls):
        if f.name in data and f.name not in _NESTED:
            _check_type(getattr(obj, f.name), getattr(cls(), f.name), f"{where}.{f.name}")
    return obj


def _check_type(value: Any, default: Any, where: str) -> None:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, list):
        ok = isinstance(value, list)
    elif isinstance(default, dict):
        ok = isinstance(value, dict)
    else:
        ok = True
    if not ok:
        raise SpecError(f"{where}: expected {type(default).__name__}, got {type(value).__name__}")


_BRACED = re.compile(r"\$\{(\w+)\}")


def expand(node: Any, where: str = "") -> Any:
    """Expand ``${VAR}`` (braced only) then a leading ``~/`` in every string of ``node``."""
    if isinstance(node, str):
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            value = os.environ.get(name)
            if not value:
                state = "is empty" if value is not None else "is not set"
                raise SpecError(f"{where}: ${{{name}}} {state}; export {name}=/path "
                                "(spec paths stay portable)")
            return value

        out = _BRACED.sub(sub, node)
        return os.path.expanduser(out) if out.startswith("~/") else out
    if isinstance(node, dict):
        return {k: expand(v, f"{where}.{k}" if where else str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [expand(v, f"{where}[{i}]") for i, v in enumerate(node)]
    return node


def load_spec(path: str | Path) -> CorpusSpec:
    """Read a ``.toml`` / ``.json`` / ``.yaml`` spec, expand it and parse it (not validate)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise SpecError(f"spec: cannot read {p}: {e.strerror}") from e
    try:
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        elif p.suffix == ".json":
            data = json.loads(raw)
        elif p.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError as e:
                raise SpecError("spec: yaml specs need pyyaml (pip install pyyaml)") from e
            data = yaml.safe_load(raw)
        else:
            raise SpecError(f"spec: unsupported extension '{p.suffix}' (use .toml or .json)")
    except SpecError:
        raise
    except (ValueError, UnicodeDecodeError) as e:  # tomllib/json/yaml decode errors
        raise SpecError(f"spec: {p.name} does not parse: {e}") from e
    if not isinstance(data, dict):
        raise SpecError("spec: the document must be a table")
    spec = parse_spec(expand(data))
    spec.spec_path = str(p)
    return spec


def parse_spec(data: dict[str, Any]) -> CorpusSpec:
    """Turn an expanded spec document into a ``CorpusSpec`` (unknown keys refused)."""
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise SpecError(f"{unknown[0]}: unknown top-level table (valid tables: "
                        f"{', '.join(TABLES)})")
    raw_models = data.get("models", [])
    if not isinstance(raw_models, list) or not all(isinstance(m, dict) for m in raw_models):
        raise SpecError("models: must be an array of tables; write [[models]], not [models]")
    src = data.get("source", {})
    if not isinstance(src, dict):
        raise SpecError("source: must be a table")
    src = dict(src)
    text = _table(SourceText, src.pop("text", {}), "source.text")
    image = _table(SourceImage, src.pop("image", {}), "source.image")
    raw_joins = src.pop("joins", [])
    if not isinstance(raw_joins, list):
        raise SpecError("source.joins: must be an array of tables ([[source.joins]])")
    joins = [_table(SourceJoin, j, f"source.joins[{i}]") for i, j in enumerate(raw_joins)]
    if isinstance(src.get("order_by"), str):
        src["order_by"] = [src["order_by"]]
    source = _table(SourceSpec, src, "source")
    source.text, source.image, source.joins = text, image, joins
    models = [_table(ModelSpec, m, f"models[{i}]") for i, m in enumerate(raw_models)]
    build = _table(BuildSpec, data.get("build", {}), "build")
    output = _table(OutputSpec, data.get("output", {}), "output")
    head = _table(_CorpusTable, data.get("corpus", {}), "corpus")  # refuses a non-table
    spec = CorpusSpec(**{f.name: getattr(head, f.name) for f in fields(_CorpusTable)})
    spec.source, spec.models, spec.build, spec.output = source, models, build, output
    if "media" in data:
        spec.media = data["media"] if isinstance(data["media"], dict) else {}
    emb = data.get("embedding", {})
    spec.embedding = emb if isinstance(emb, dict) else {}
    return spec


def _validate_metadata(s: SourceSpec) -> None:
    """``source.metadata`` / ``source.metadata_types``: names, types, and where they apply."""
    from urna.format.sections.metadata import BUILTIN_FIELD_TYPES, METADATA_TYPES

    if not (s.metadata or s.metadata_types):
        return
    if s.kind == "documents":
        raise SpecError("source.metadata: documents always store path, folder, extension, "
                        "title and modified; metadata columns apply to jsonl, csv and sqlite")
    for col in s.metadata:
        if not isinstance(col, str) or not col:
            raise SpecError(f"source.metadata: column names must be non-empty strings, "
                            f"got {col!r}")
        if col in BUILTIN_FIELD_TYPES:
            raise SpecError(f"source.metadata: '{col}' is a built-in filter field; "
                            "derive it under another name")
    if len(set(s.metadata)) != len(s.metadata):
        raise SpecError("source.metadata: a column is listed twice")
    for col, type_ in s.metadata_types.items():
        if col not in s.metadata:
            raise SpecError(f"source.metadata_types.{col}: not listed in source.metadata")
        if type_ not in METADATA_TYPES:
            raise SpecError(f"source.metadata_types.{col}: must be one of "
                            f"{', '.join(sorted(METADATA_TYPES))}, got {type_!r}")


def validate(spec: CorpusSpec) -> None:
    """Check every rule of §3.2 this build supports; raise SpecError naming the key."""
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise SpecError(msg)

    need(bool(spec.name), "corpus.name: required")
    need(re.fullmatch(r"[A-Za-z0-9._-]+", spec.name) is not None and spec.name not in (".", ".."),
         "corpus.name: use letters, digits, '.', '_' or '-' (it names the output files)")
    need(bool(spec.chunker_version), "corpus.chunker_version: required")
    s = spec.source
    need(s.kind not in REFUSED_KINDS,
         f"source.kind: '{s.kind}' (image and PDF page corpora) is not supported by this "
         "build yet; use kind = \"documents\" for PDF text")
    need(s.kind in SOURCE_KINDS, f"source.kind: must be one of {', '.join(SOURCE_KINDS)}")
    need(not (s.image.path_template or s.image.label_template),
         "source.image: image rows are not supported by this build yet")
    need(spec.media is None, "media: media corpora are not supported by this build yet")
    need(not spec.embedding, "embedding: image input modes are not supported by this build yet")
    if s.kind == "sqlite":
        need(bool(s.db), "source.db: required for kind = \"sqlite\"")
        need(bool(s.query), "source.query: required for kind = \"sqlite\"")
    if s.kind in ("csv", "jsonl", "documents"):
        need(bool(s.path), f"source.path: required for kind = \"{s.kind}\"")
    if s.kind in ("sqlite", "csv", "jsonl"):
        need(bool(s.order_by), "source.order_by: required (a unique column list gives the "
             "rows a total order)")
    for col, expr in s.derive.items():
        need(isinstance(expr, str) and re.fullmatch(r"(basename_stem|lower)\(\w+\)", expr)
             is not None, f"source.derive.{col}: use basename_stem(col) or lower(col)")
    _validate_metadata(s)
    if s.kind == "documents":
        need(s.chunker in ("chars", "paragraph"), "source.chunker: chars | paragraph")
        need(s.max_chars > 0, "source.max_chars: must be > 0")
        need(0 <= s.overlap < s.max_chars, "source.overlap: must be >= 0 and < max_chars")
        need(s.on_error in ("skip", "stop"), "source.on_error: skip | stop")
        for key in ("include", "exclude"):
            need(all(isinstance(g, str) and g for g in getattr(s, key)),
                 f"source.{key}: must be a list of non-empty glob strings")
        from urna.forge.sources.text import check_encoding

        for key in ("encoding", "encoding_fallback"):
            name = getattr(s, key)
            if name or key == "encoding":
                why = check_encoding(name)
                need(why is None, f"source.{key}: {why}")
    need(len(spec.models) > 0, "models: at least one [[models]] required")
    defaults = [m for m in spec.models if m.text == "default"]
    need(len(defaults) == 1,
         f'models: exactly one text="default" required, found {len(defaults)}')
    seen: set[str] = set()
    for m in spec.models:
        need(m.preset not in seen, f"models: duplicate preset '{m.preset}'")
        seen.add(m.preset)
        if m.preset not in MODEL_PRESETS:
            raise RegistryError(f"models.preset: unknown or unsupported preset '{m.preset}' "
                                f"(valid here: {', '.join(MODEL_PRESETS)})")
        need(m.text in ("default", "space", "none"), f"models.{m.preset}.text: default|space|none")
        need(m.image == "none", f"models.{m.preset}.image: image spaces are not supported by "
             "this build yet")
        need(m.text != "none", f"models.{m.preset}: text=none and image=none emits nothing")
        need(not m.dims, f"models.{m.preset}.dims: preset is not MRL-trained; dims not allowed")
        need(m.space_dtype in ("float32", "float16", "int8", "int4"),
             f"models.{m.preset}.space_dtype: float32|float16|int8|int4")
        need(m.batch_size > 0, f"models.{m.preset}.batch_size: must be > 0")
        if m.preset == "st":
            need(bool(m.model_path), "models.st.model_path: required (a local "
                 "sentence-transformers directory)")
    spaces = [m for m in spec.models if m.text == "space"]
    need(len(spaces) <= MAX_SPACES, f"models: {len(spaces)} named spaces > max {MAX_SPACES}")
    b = spec.build
    need(b.graph_space == "default", 'build.graph_space: only "default" is supported')
    need(b.graph_top_m > 0, "build.graph_top_m: must be > 0")
    need(b.mrl_dim >= 0, "build.mrl_dim: must be >= 0 (0 = off)")
    o = spec.output
    need(o.mode in ("single", "per-model", "both"), "output.mode: single|per-model|both")
    need(o.provenance in ("minimal", "standard", "full"),
         "output.provenance: minimal|standard|full")
    need(not o.embed_media, "output.embed_media requires a [media] section (there is nothing "
         "to inline)")
    need(bool(o.dir), "output.dir: must not be empty")


def cache_root(spec: CorpusSpec, override: str | None = None) -> Path:
    """The embed-cache root: flag > ``output.cache_dir`` > URNA_CACHE_DIR > XDG cache."""
    chosen = override or spec.output.cache_dir
    return Path(chosen).expanduser() if chosen else user_cache_dir()


def copy_with(spec: CorpusSpec, *, out_dir: str | None = None) -> CorpusSpec:
    """A deep copy of ``spec``, ``output.dir`` replaced when given (builds never edit theirs)."""
    out = copy.deepcopy(spec)
    if out_dir:
        out.output.dir = out_dir
    return out
