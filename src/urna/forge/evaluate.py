"""Answer-quality evaluation of a built file: labelled queries -> nDCG / MRR / recall per mode.

Queries come in two forms (:func:`load_queries`):

* urna JSONL: one ``{"id", "text", "relevant"}`` object a line; ``relevant`` is a list of
  ids (grade 1) or an ``{id: grade}`` object;
* BEIR: ``queries.jsonl`` (``{"_id", "text"}``) plus a qrels TSV (``query-id  corpus-id
  score``, header line optional) or a directory of them; only judged queries are kept.

Matching rule: when every judged id of the set is a chunk id of the file, hits are judged
per chunk; otherwise ids are source_uris and hits are judged per document: a chunk hit
counts for its source_uri, a document ranks where its best chunk ranks (later chunks of the
same document are dropped). Queries with no relevant id are kept out of the means.

Modes: ``cosine`` (exact search), ``bm25`` (lexical), ``hybrid`` (the reference's
``retrieve``: RRF-ordered union, exact-cosine rerank) and ``fused`` (the same ``retrieve``
with ``rank="fused"``: ``runtime.fused`` orders the same candidate pool).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..index import metrics
from ..runtime.file import open_file
from .query import default_candidates, embed_query, manifest_of

MODES = ("cosine", "bm25", "hybrid", "fused")
RECALL_DEPTH = 100


@dataclass(frozen=True)
class EvalQuery:
    """One labelled query: its text and graded relevant ids (chunk ids or source_uris)."""

    id: str
    text: str
    relevant: dict[str, float]


@dataclass(frozen=True)
class ModeScores:
    """The mean metrics and latency of one mode over the judged queries."""

    mode: str
    ndcg: float
    mrr: float
    recall_1: float
    recall_k: float
    recall_100: float
    ms_per_query: float


@dataclass
class EvalReport:
    """Every mode's scores on one file and query set."""

    k: int
    level: str
    n_queries: int
    n_judged: int
    modes: list[ModeScores] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN becomes None)."""
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and math.isnan(v) else v
        return {"k": self.k, "level": self.level, "n_queries": self.n_queries,
                "n_judged": self.n_judged,
                "modes": [{key: clean(v) for key, v in m.__dict__.items()} for m in self.modes]}


def _grades(raw: Any, where: str) -> dict[str, float]:
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = [(r, 1.0) for r in raw]
    else:
        raise InvalidInput(f"{where}: 'relevant' must be a list of ids or an {{id: grade}} object")
    out: dict[str, float] = {}
    for key, grade in items:
        numeric = isinstance(grade, int | float) and not isinstance(grade, bool)
        if not isinstance(key, str) or not numeric:
            raise InvalidInput(f"{where}: relevant ids are strings, grades are numbers")
        if not math.isfinite(float(grade)):
            raise InvalidInput(f"{where}: relevance grades must be finite")
        out[key] = float(grade)
    return out


def _json_lines(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise InvalidInput(f"{path}:{n}: each line must be a JSON object")
            yield n, obj


def _read_qrels(path: Path) -> dict[str, dict[str, float]]:
    files = sorted(path.glob("*.tsv")) if path.is_dir() else [path]
    if not files:
        raise InvalidInput(f"{path}: no qrels .tsv file")
    out: dict[str, dict[str, float]] = {}
    for file in files:
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            cols = line.split("\t")
            if not line.strip() or (n == 1 and cols[0] == "query-id"):
                continue
            if len(cols) != 3:
                raise InvalidInput(f"{file}:{n}: a qrels line is query-id, corpus-id, score")
            try:
                grade = float(cols[2])
            except ValueError:
                raise InvalidInput(f"{file}:{n}: score {cols[2]!r} is not a number") from None
            if not math.isfinite(grade):
                raise InvalidInput(f"{file}:{n}: score must be finite")
            out.setdefault(cols[0], {})[cols[1]] = grade
    return out


def load_queries(path: str | Path, qrels: str | Path | None = None) -> list[EvalQuery]:
    """Read labelled queries: urna JSONL, or BEIR queries.jsonl + qrels (file or directory)."""
    path = Path(path)
    judged = _read_qrels(Path(qrels)) if qrels is not None else None
    out: list[EvalQuery] = []
    for n, obj in _json_lines(path):
        where = f"{path}:{n}"
        qid = obj.get("_id", obj.get("id"))
        text = obj.get("text")
        if not isinstance(qid, str | int) or isinstance(qid, bool) or not isinstance(text, str):
            raise InvalidInput(f"{where}: a query needs a string 'id' (or '_id') and 'text'")
        if judged is not None:
            if str(qid) in judged:
                out.append(EvalQuery(str(qid), text, judged[str(qid)]))
        else:
            if "relevant" not in obj:
                raise InvalidInput(f"{where}: no 'relevant' ids (or pass the qrels)")
            out.append(EvalQuery(str(qid), text, _grades(obj["relevant"], where)))
    return out


def judging_level(chunk_ids: Iterable[str], queries: Sequence[EvalQuery]) -> str:
    """``chunk`` when every judged id is a chunk id of the file, else ``document``."""
    ids = set(chunk_ids)
    keys = {key for q in queries for key in q.relevant}
    return "chunk" if keys and keys <= ids else "document"


def ranked_keys(hits: Iterable[Any], level: str) -> list[str]:
    """Hit order as judged ids: chunk ids, or source_uris at each document's best chunk."""
    if level == "chunk":
        return [h.chunk_id for h in hits]
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.source_uri not in seen:
            seen.add(h.source_uri)
            out.append(h.source_uri)
    return out


def _run_mode(f: Any, mode: str, vec: np.ndarray, text: str, depth: int, cand: int,
              model_hash: str) -> list[Any]:
    if mode == "cosine":
        return list(f.search(vec, depth))
    if mode == "bm25":
        return list(f.search_bm25(text, depth))
    if mode == "hybrid":
        return list(f.retrieve(vec, depth, candidates=cand, expected_model_hash=model_hash,
                               query_text=text))
    if mode == "fused":  # the runtime's fused order over the same pool as hybrid
        return list(f.retrieve(vec, depth, candidates=cand, expected_model_hash=model_hash,
                               query_text=text, rank="fused"))
    raise InvalidInput(f"unknown mode {mode!r} (valid: {', '.join(MODES)})")


def evaluate(f: Any, queries: Sequence[EvalQuery], *, k: int = 10,
             modes: Sequence[str] | None = None, candidates: int | None = None,
             model_path: str | None = None) -> EvalReport:
    """Run each mode (default: all the file supports) over the queries and average the metrics."""
    if modes is None:
        modes = MODES if f.has_bm25 else ("cosine", "fused")
    if k <= 0:
        raise InvalidInput("k must be > 0")
    for mode in modes:
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r} (valid: {', '.join(MODES)})")
    if not f.has_bm25 and any(m in ("bm25", "hybrid") for m in modes):
        raise InvalidInput("the bm25 and hybrid modes need a file with a BM25 section")
    manifest = manifest_of(f)
    level = judging_level(f.chunk_ids(), queries)
    depth = min(max(k, RECALL_DEPTH), int(f.n_embeddings))
    cand = candidates or default_candidates(k)
    vecs = []
    model_hash = ""
    for q in queries:
        vec, emb = embed_query(manifest, q.text, model_path=model_path)
        model_hash = emb.model_hash()
        vecs.append(vec)
    report = EvalReport(k, level, len(queries),
                        sum(1 for q in queries if any(g > 0 for g in q.relevant.values())))
    for mode in modes:
        per: dict[str, list[float]] = {"ndcg": [], "mrr": [], "r1": [], "rk": [], "r100": []}
        spent = 0.0
        for q, vec in zip(queries, vecs, strict=True):
            t0 = time.perf_counter()
            hits = _run_mode(f, mode, vec, q.text, depth, cand, model_hash)
            spent += time.perf_counter() - t0
            ranked = ranked_keys(hits, level)
            per["ndcg"].append(metrics.ndcg_at_k(ranked, q.relevant, k))
            per["mrr"].append(metrics.mrr_at_k(ranked, q.relevant, k))
            per["r1"].append(metrics.recall_at_k(ranked, q.relevant, 1))
            per["rk"].append(metrics.recall_at_k(ranked, q.relevant, k))
            per["r100"].append(metrics.recall_at_k(ranked, q.relevant, RECALL_DEPTH))
        report.modes.append(ModeScores(
            mode, metrics.mean(per["ndcg"]), metrics.mean(per["mrr"]), metrics.mean(per["r1"]),
            metrics.mean(per["rk"]), metrics.mean(per["r100"]),
            spent * 1000.0 / len(queries) if queries else 0.0))
    return report


def evaluate_path(path: str | Path, queries_path: str | Path, qrels: str | Path | None = None,
                  **kw: Any) -> EvalReport:
    """Open ``path``, load the queries and :func:`evaluate` them."""
    queries = load_queries(queries_path, qrels)
    with open_file(path) as f:
        return evaluate(f, queries, **kw)
