"""``urna benchmark`` as a library: queries, timed passes, percentiles, ANN recall vs exact.

A pass times ``n`` queries after one untimed-in-the-figures first query: the first call of a
path pays page faults and kernel compilation, so it is reported on its own
(``BenchmarkReport.first_query_ms``) and never folded into a ``[hot]`` mean. Percentiles use
the reference's nearest-rank rule. ``--madvise-cold`` passes drop the mapped pages before each
query (a hint to the OS, not a guarantee). Recall is the overlap of the ANN and exact top-k on
the same queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import SpaceNotFound
from .file import UrnaFile

COLD_NOTE = ("  (note: posix_madvise(MADV_DONTNEED) is a hint, not a guarantee. "
             "Treat as an upper bound on cold-cache latency, not absolute cold.)")
NO_ANN_NOTE = "(no HNSW section — ANN bench skipped)"


@dataclass(frozen=True)
class Latency:
    """One pass's figures in milliseconds, and its queries per second."""

    name: str
    mean: float
    p50: float
    p95: float
    p99: float
    qps: float

    def to_dict(self) -> dict[str, Any]:
        """The pass as the JSON document lists it."""
        return asdict(self)


def latency(name: str, times_ms: list[float]) -> Latency:
    """Mean, nearest-rank p50/p95/p99 and QPS of ``times_ms`` (at least one time)."""
    t = sorted(times_ms)

    def pick(q: float) -> float:
        return t[int(round((len(t) - 1) * q))]  # the reference's nearest-rank rule
    total = sum(t)
    return Latency(name, total / len(t), pick(0.5), pick(0.95), pick(0.99),
                   len(t) / (total / 1000.0) if total > 0 else float("inf"))


def unit_queries(n: int, dim: int, seed: int) -> np.ndarray:
    """``n`` random unit vectors at ``dim`` (components in [0, 1), as the reference draws)."""
    q = np.random.default_rng(seed).random((n, dim), dtype=np.float32)
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    return np.where(norms > 0, q / np.maximum(norms, 1e-30), q).astype(np.float32)


def own_queries(f: UrnaFile, n: int, seed: int) -> np.ndarray:
    """``n`` of the file's own (non-zero) rows, drawn with replacement: realistic queries."""
    rng = np.random.default_rng(seed)
    picks = f.vectors(rng.integers(0, f.n_embeddings, size=4 * n))
    picks = picks[np.linalg.norm(picks, axis=1) > 0][:n]
    if len(picks) < n:  # a (crafted) file of zero rows: fall back to random unit queries
        return unit_queries(n, f.embedding_dim, seed)
    return np.ascontiguousarray(picks, dtype=np.float32)


def timed(f: UrnaFile, queries: np.ndarray, call: Callable[[np.ndarray], object],
          cold: bool) -> list[float]:
    """Milliseconds of ``call`` per query (pages dropped before each one when ``cold``)."""
    times = []
    for q in queries:
        if cold:
            f.madvise_cold()
        t0 = time.perf_counter()
        call(q)
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def recall_vs_exact(f: UrnaFile, queries: np.ndarray, k: int, ef: int) -> float:
    """Mean overlap of the ANN top-k with the exact top-k (recall@k)."""
    overlap = 0.0
    for q in queries:
        want = {h.chunk_id for h in f.search(q, k)}
        overlap += sum(h.chunk_id in want for h in f.search_ann(q, k, ef)) / k
    return overlap / len(queries)


@dataclass
class BenchmarkReport:
    """The passes in run order, with notes between them, the first queries and the recall."""

    queries: int
    k: int
    events: list[Latency | str] = field(default_factory=list)
    first_query_ms: dict[str, float] = field(default_factory=dict)
    recall_ann_vs_exact: float | None = None

    @property
    def passes(self) -> list[Latency]:
        """The timed passes in run order."""
        return [e for e in self.events if isinstance(e, Latency)]


def _passes(report: BenchmarkReport, f: UrnaFile, label: str, head: str, qs: np.ndarray,
            call: Callable[[np.ndarray], object], madvise_cold: bool) -> None:
    t0 = time.perf_counter()
    call(qs[0])  # the cold first query: reported apart, not in the [hot] figures
    report.first_query_ms[label] = (time.perf_counter() - t0) * 1000.0
    report.events.append(latency(f"{head} [hot]", timed(f, qs, call, False)))
    if madvise_cold:
        report.events.append(latency(f"{head} [madvise-cold]", timed(f, qs, call, True)))


def run_benchmark(f: UrnaFile, n_queries: int, k: int, *, ann_ef: int | None = None,
                  madvise_cold: bool = False, space: str | None = None, seed: int = 0,
                  source: str = "own") -> BenchmarkReport:
    """Time exact (and ANN at ``ann_ef``) or one space's search over ``n_queries`` queries.

    ``source`` is ``own`` (the file's rows) or ``random`` (unit vectors, the reference's).
    """
    report = BenchmarkReport(n_queries, k)
    if space is not None:
        entry = next((s for s in f.spaces() if s["name"] == space), None)
        if entry is None:
            raise SpaceNotFound(space)
        dim, dtype = entry["dim"], entry["dtype"]
        qs = unit_queries(n_queries, dim, seed)
        head = f"Space '{space}' ({n_queries} queries, dim={dim}, dtype={dtype})"
        _passes(report, f, "space", head, qs, lambda q: f.search_space(space, q, k),
                madvise_cold)
        return report
    qs = (own_queries(f, n_queries, seed) if source == "own"
          else unit_queries(n_queries, f.embedding_dim, seed))
    head = (f"Exact ({n_queries} queries, dim={f.embedding_dim}, dtype={f.dtype}, "
            f"simd={f.simd_backend})")
    _passes(report, f, "exact", head, qs, lambda q: f.search(q, k), madvise_cold)
    if madvise_cold:
        report.events.append(COLD_NOTE)
    if ann_ef is not None and not f.has_ann:
        report.events.append(NO_ANN_NOTE)
    elif ann_ef is not None:
        ef = ann_ef
        _passes(report, f, "ann", f"ANN ef={ef} ({n_queries} queries)", qs,
                lambda q: f.search_ann(q, k, ef), madvise_cold)
        report.recall_ann_vs_exact = recall_vs_exact(f, qs, k, ef)
    return report

