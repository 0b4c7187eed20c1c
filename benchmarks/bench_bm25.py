"""BM25 side by side: urna's index vs tantivy, bm25s and rank-bm25 on a synthetic Zipf corpus.

Measures index build time and top-10 query latency (one query at a time, as a search call
is made). Builds alternate between the libraries over ``--build-rounds`` rounds (median
reported); queries alternate too: every library answers a query before the next query, for
three rounds. On a shared machine the absolute numbers move with the load; the ratios between
libraries measured this way are what to read. Not a test. Run:

    .venv/bin/python benchmarks/bench_bm25.py --docs 50000 --queries 200
    .venv/bin/python benchmarks/bench_bm25.py --only urna,tantivy     # the issue-20 comparison
    .venv/bin/python benchmarks/bench_bm25.py --file F.urna --question "..."  # a file's 0x08 open

The corpus: ``--vocab`` synthetic words drawn with Zipf exponent 1.1, document lengths
uniform in [20, 180]; queries are 2-5 words drawn from the same distribution (restricted to
the 5,000 most frequent words so that most queries hit something). Every library gets the
same documents and queries.

* urna runs its reference-exact Unicode tokenizer inside build and search. Its build is
  ``Bm25Index.build`` plus the first query (which builds the scoring tables); the row
  ``urna + 0x08 bytes`` adds ``to_bytes``, the payload a file stores (most of it is
  ``format.encodings.intpack.pack_u64s``). Queries run through ``Bm25Index.search`` twice:
  ``urna (numba)`` with the compiled top-k kernel, ``urna (numpy)`` with the numpy path a
  process that has not imported numba takes on an index under 4M postings (the CLI's case),
  and ``urna (numpy, per-term)`` the same on the index a verified file's open makes of the
  payload (``index.bm25_lazy``: terms looked up in place, postings decoded on first use).
* tantivy (Rust, via its Python binding) is an in-RAM index, one text field indexed with term
  frequencies only (``index_option="freq"``: BM25 needs no positions), BM25 with its fixed
  k1 = 1.2, b = 0.75; queries go through ``parse_query`` (its disjunction of the terms) and
  ``searcher.search(q, 10, count=False)``. Its build is the index writer from the first
  ``add_document`` to a committed, reloaded searcher, with one writer thread (``1 thread``)
  and with its default thread count (``default``: 0, one per core up to 8; 2 here).
  ``tantivy`` gets the raw text with its ``default`` tokenizer (splits on non-alphanumeric
  characters, lowercases, drops tokens over 40 bytes; it differs from ours: it keeps one-
  character tokens and lowercases differently); ``tantivy ws`` is the like-for-like point:
  our tokens, lowercased and joined by spaces, with its ``whitespace`` tokenizer, the query
  the same way (the tokenizing is then outside its timings, and inside ours).
* bm25s and rank-bm25 get the text pre-split on spaces (their own tokenizers differ); bm25s
  uses its "lucene" variant, k1 = 1.5, b = 0.75, numpy (default) and numba backends.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

LIBRARIES = ("urna", "tantivy", "bm25s", "rank-bm25")


def make_corpus(n_docs: int, vocab: int, seed: int) -> tuple[list[str], list[str]]:
    """Documents and queries over pseudo-words with a Zipf frequency profile."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}x" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    lens = rng.integers(20, 181, size=n_docs)
    ids = rng.choice(vocab, size=int(lens.sum()), p=p)
    docs, pos = [], 0
    for n in lens:
        docs.append(" ".join(words[i] for i in ids[pos:pos + n]))
        pos += n
    qp = p[:5000] / p[:5000].sum()
    queries = [" ".join(words[i] for i in rng.choice(5000, size=rng.integers(2, 6), p=qp))
               for _ in range(400)]
    return docs, queries


def interleaved(searches: dict[str, Callable[[str], object]], queries: list[str],
                rounds: int = 3) -> dict[str, tuple[float, float]]:
    """Median and p95 latency (ms) per library, the libraries taking turns on each query.

    Taking turns spreads a shared machine's load changes over every library alike.
    """
    times: dict[str, list[float]] = {name: [] for name in searches}
    for _ in range(rounds):
        for q in queries:
            for name, search in searches.items():
                t = time.perf_counter()
                search(q)
                times[name].append((time.perf_counter() - t) * 1000)
    out = {}
    for name, ts in times.items():
        ts.sort()
        out[name] = (statistics.median(ts), ts[int(0.95 * (len(ts) - 1))])
    return out


def alternating_builds(builders: dict[str, Callable[[], Callable[[str], object]]],
                       rounds: int) -> tuple[dict[str, float], dict[str, Callable[[str], object]]]:
    """Median build seconds per library over ``rounds`` alternating rounds, and a search each.

    Each builder returns its index's top-10 search function; the last round's is kept.
    """
    times: dict[str, list[float]] = {name: [] for name in builders}
    searches: dict[str, Callable[[str], object]] = {}
    for _ in range(rounds):
        for name, build in builders.items():
            searches.pop(name, None)  # free the previous round's index before building again
            t = time.perf_counter()
            searches[name] = build()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}, searches


def tantivy_builder(texts: list[str], tokenizer: str, threads: int,
                    to_query: Callable[[str], str]) -> Callable[[], Callable[[str], object]]:
    """A build of an in-RAM tantivy index of ``texts`` with ``threads`` writer threads."""
    import tantivy

    def build() -> Callable[[str], object]:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name=tokenizer, index_option="freq")
        index = tantivy.Index(sb.build())
        writer = index.writer(heap_size_per_thread * max(threads, 2), threads)
        for text in texts:
            writer.add_document(tantivy.Document(body=text))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()

        def search(q: str) -> object:
            return searcher.search(index.parse_query(to_query(q), ["body"]), 10,
                                   count=False).hits

        return search

    heap_size_per_thread = 128_000_000
    return build


def _fastest(fn: Callable[[], object], runs: int = 25) -> str:
    """"fastest / median" ms of ``runs`` calls."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return f"{min(times) * 1e3:.2f} / {statistics.median(times) * 1e3:.2f}"


def open_of_file(path: str, questions: list[str]) -> None:
    """A file's 0x08 payload opened as a verified body's is (``index.bm25_lazy``) and as a first
    open's (the whole decode), alone and with each question's BM25 and stem-group work (what
    ``urna ask`` does with it), in this process: fastest and median of 25."""
    from urna.format.layout import SECTION_BM25_INDEX
    from urna.format.reader import UrnaView
    from urna.index.bm25 import Bm25Index
    from urna.index.bm25_lazy import lazy_index
    from urna.index.stemmed_bm25 import query_stems

    with open(path, "rb") as f:
        raw = bytes(UrnaView.from_bytes(f.read()).decoded(SECTION_BM25_INDEX))
    first = lazy_index(raw)
    assert first is not None, "this payload is decoded whole by every open"
    first.search_arrays(questions[0], 50)  # load the tokenizer and logf
    print(f"{path}: 0x08 payload {len(raw) / 1e6:.2f} MB, {first.n_terms} terms, "
          f"{first.n_docs} docs; ms, fastest / median of 25, in one process")
    print(f"  per-term open (verified body)   {_fastest(lambda: lazy_index(raw))}")
    print(f"  whole decode (first open)       "
          f"{_fastest(lambda: Bm25Index.from_bytes(raw), 9)}")
    for q in questions:
        def asked(q: str = q) -> None:
            index = lazy_index(raw)
            assert index is not None
            index.search_arrays(q, 50)
            query_stems(index, q)
        print(f"  per-term open + {q!r}: {_fastest(asked)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--build-rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(LIBRARIES),
                    help=f"comma-separated subset of {', '.join(LIBRARIES)}")
    ap.add_argument("--file", default=None,
                    help="instead: time the 0x08 open of this .urna file (see open_of_file)")
    ap.add_argument("--question", action="append", default=None,
                    help="with --file: a question (repeatable)")
    args = ap.parse_args()
    if args.file:
        open_of_file(args.file, args.question or ["how do I list files sorted by size"])
        return
    only = set(args.only.split(","))

    docs, queries = make_corpus(args.docs, args.vocab, args.seed)
    queries = queries[:args.queries]
    tokens = sum(len(d.split()) for d in docs)
    print(f"corpus: {len(docs)} docs, {tokens} tokens, vocab {args.vocab}; "
          f"{len(queries)} queries, top-10; builds: median of {args.build_rounds} "
          "alternating rounds; queries: libraries alternate per query, 3 rounds")
    builders: dict[str, Callable[[], Callable[[str], object]]] = {}

    import urna.index.bm25 as ub
    from urna.index.bm25 import Bm25Index
    from urna.index.bm25_lazy import lazy_index
    from urna.index.tokenize import tokenize

    Bm25Index.build(docs[:2000]).search(queries[0], 10)  # load numba's kernel before timing
    encode_times: list[float] = []

    def urna_build() -> Callable[[str], object]:
        idx = Bm25Index.build(docs)
        idx.search(queries[0], 10)  # the scoring tables are built on the first query (~40 ms)
        t = time.perf_counter()
        idx.to_bytes()  # the 0x08 payload a file stores
        encode_times.append(time.perf_counter() - t)
        urna_index.append(idx)
        return lambda q: idx.search(q, 10)

    urna_index: list = []
    urna_name = "urna (numba)"
    builders[urna_name] = urna_build

    if "tantivy" in only:
        def ws(q: str) -> str:
            return " ".join(tokenize(q))

        pre = [ws(d) for d in docs]
        for threads, label in ((1, "1 thread"), (0, "default")):
            builders[f"tantivy ({label})"] = tantivy_builder(docs, "default", threads, str)
            builders[f"tantivy ws ({label})"] = tantivy_builder(pre, "whitespace", threads, ws)

    if "bm25s" in only:
        import bm25s

        split = [d.split() for d in docs]
        for backend in ("numpy", "numba"):
            def bm25s_build(backend: str = backend) -> Callable[[str], object]:
                r = bm25s.BM25(k1=1.5, b=0.75, backend=backend)
                r.index(split, show_progress=False)
                return lambda q: r.retrieve([q.split()], k=10, show_progress=False,
                                            n_threads=1)

            builders[f"bm25s ({backend})"] = bm25s_build

    builds, searches = alternating_builds(builders, args.build_rounds)
    idx = urna_index[-1]
    t_enc = statistics.median(encode_times)
    builds[urna_name] -= t_enc  # the index alone; with its payload bytes in the next row
    payload = idx.to_bytes()
    t = time.perf_counter()
    Bm25Index.from_bytes(payload).search(queries[0], 10)
    t_open = time.perf_counter() - t
    print(f"urna: 0x08 payload {len(payload) / 1e6:.1f} MB ({len(idx.docs)} postings), "
          f"encode {t_enc:.2f} s (median), decode+prepare {t_open:.2f} s")

    t = time.perf_counter()
    per_term = lazy_index(payload)
    t_lazy = time.perf_counter() - t
    assert per_term is not None
    print(f"urna: per-term open of the same payload (a verified file's) {t_lazy * 1e3:.1f} ms")

    def numpy_search(q: str, index: Bm25Index = idx) -> object:
        # what a process that has not imported numba runs on an index under 4M postings
        saved = ub.NUMBA_MIN_POSTINGS, ub.NUMBA_LOADED_MIN_POSTINGS
        ub.NUMBA_MIN_POSTINGS = ub.NUMBA_LOADED_MIN_POSTINGS = 1 << 62
        try:
            return index.search(q, 10)
        finally:
            ub.NUMBA_MIN_POSTINGS, ub.NUMBA_LOADED_MIN_POSTINGS = saved

    ub.NUMBA_MIN_POSTINGS = 0  # the kernel for "urna (numba)"
    searches = {urna_name: searches[urna_name], "urna (numpy)": numpy_search,
                "urna (numpy, per-term)": lambda q: numpy_search(q, per_term),
                **{k: v for k, v in searches.items() if k != urna_name}}
    bytes_name = "urna + 0x08 bytes"

    for search in searches.values():  # compile / warm up
        search(queries[0])
    stats = interleaved(searches, queries)

    if "rank-bm25" in only:
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        rb = BM25Okapi([d.split() for d in docs])
        name = f"rank-bm25 ({max(10, len(queries) // 10)} q)"
        builds[name] = time.perf_counter() - t
        few = queries[: max(10, len(queries) // 10)]  # it scores every doc per query term
        stats.update(interleaved(
            {name: lambda q: np.argsort(rb.get_scores(q.split()))[::-1][:10]}, few, rounds=1))

    print(f"{'library':<26}{'build s':>10}{'query p50 ms':>15}{'query p95 ms':>15}")
    for name, (m, p) in stats.items():
        b = f"{builds[name]:10.3f}" if name in builds else f"{'(same)':>10}"
        print(f"{name:<26}{b}{m:>15.3f}{p:>15.3f}")
        if name == urna_name:
            print(f"{bytes_name:<26}{builds[urna_name] + t_enc:>10.3f}")
    print("\nurna / peer (below 1: urna faster); build: index alone / with its 0x08 bytes")
    print(f"{'peer':<26}{'build':>16}{'p50 numba':>12}{'p50 numpy':>12}{'p95 numba':>12}"
          f"{'p95 numpy':>12}")
    ub_b = builds[urna_name]
    (nb_m, nb_p), (np_m, np_p) = stats[urna_name], stats["urna (numpy)"]
    for name, b in builds.items():
        if name != urna_name:
            m, p = stats[name]
            print(f"{name:<26}{ub_b / b:>8.2f} /{(ub_b + t_enc) / b:>6.2f}{nb_m / m:>12.2f}"
                  f"{np_m / m:>12.2f}{nb_p / p:>12.2f}{np_p / p:>12.2f}")


if __name__ == "__main__":
    main()
