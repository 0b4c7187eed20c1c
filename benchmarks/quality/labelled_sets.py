"""Deterministic builders of real labelled retrieval sets from data the OS ships.

Each set is written to ``<cache>/<name>/``: ``corpus.urna`` (potion embeddings, the hybrid
preset: BM25 + HNSW) and ``queries.jsonl`` (``{"id", "text", "relevant": [source_uri]}``).
The data comes from Debian packages this script installs when missing (``manpages``,
``manpages-dev``, ``wordnet-base``); nothing downloaded or built goes into git.

Sets:
  manpages-page  one chunk per man page (first 2,000 characters of the rendered page, the
                 NAME section removed); query = the NAME line's one-line description.
  manpages-para  the same pages cut by the paragraph chunker (512 characters); a page is
                 relevant when any of its chunks is retrieved.
  wordnet-gloss  WordNet 3.0 synsets with usage examples: document = the synset's lemmas and
                 examples (the definition removed); query = the definition. Meaning matters
                 more than shared words (BM25 is weak).
  wordnet-word   the same synsets reversed: document = the definition alone; query = the
                 synset's lemmas. Almost no shared words: the embedder must know the words.
  pydoc-summary  docstrings of the running Python's standard library (a fixed list of
                 modules): document = the qualified name and the docstring without its
                 summary; query = the summary (its first paragraph). The set follows the
                 interpreter's version (the docstrings change between versions).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import urna
from urna.forge.embed import potion_embedder
from urna.forge.sources.chunk import chunk_paragraphs

CACHE = Path(os.environ.get("URNA_QUALITY_CACHE", Path.home() / ".cache" / "urna-quality"))
SETS = ("manpages-page", "manpages-para", "wordnet-gloss", "wordnet-word", "pydoc-summary")
PAGE_CHARS = 2000
PARA_CHARS = 512
WORDNET_DOCS = 5000
WORDNET_QUERIES = 1000


def ensure_packages(*names: str) -> None:
    """apt-get install the Debian packages that are missing (the data the sets are built from)."""
    missing = [n for n in names
               if subprocess.run(["dpkg", "-s", n], capture_output=True).returncode != 0]
    if missing:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run([*sudo, "apt-get", "install", "-y", "-q", *missing], check=True)


# ------------------------------------------------------------------------------ man pages

def _man_files() -> list[Path]:
    out = subprocess.run(["dpkg", "-L", "manpages", "manpages-dev"], capture_output=True,
                         text=True, check=True).stdout.split()
    files = []
    for p in sorted(set(out)):
        path = Path(p)
        if not re.match(r"^/usr/share/man/man[0-9]/.*\.gz$", p) or path.is_symlink():
            continue
        with gzip.open(path, "rt", errors="replace") as fh:
            if fh.read(4).startswith(".so"):
                continue  # a redirect to another page
        files.append(path)
    return files


def _render(path: Path) -> str:
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    raw = subprocess.run(["man", "-l", str(path)], capture_output=True, env=env).stdout
    return subprocess.run(["col", "-bx"], input=raw, capture_output=True).stdout.decode(
        "utf-8", "replace")


def _split_name(text: str) -> tuple[str, str] | None:
    """(the page with its NAME section removed, the NAME description) or None."""
    lines = text.split("\n")
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "NAME" and ln[:1] == "N")
    except StopIteration:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1].strip()), len(lines))
    name = " ".join(ln.strip() for ln in lines[start + 1:end]).strip()
    parts = re.split(r"\s+[-\u2010\u2012\u2013\u2014\u2212]\s+", name, maxsplit=1)
    if len(parts) != 2 or not parts[1].strip():
        return None
    body = "\n".join(lines[:start] + lines[end:]).strip()
    return body, parts[1].strip()


def man_pages() -> list[tuple[str, str, str]]:
    """(source_uri, page text without NAME, description) for every real page, sorted."""
    ensure_packages("man-db", "manpages", "manpages-dev")
    files = _man_files()
    with ThreadPoolExecutor(2) as pool:
        texts = list(pool.map(_render, files))
    pages = []
    for path, text in zip(files, texts, strict=True):
        split = _split_name(text)
        if split is None or not split[0]:
            continue
        uri = f"man://{path.parent.name}/{path.name.removesuffix('.gz')}"
        pages.append((uri, split[0], split[1]))
    return pages


# -------------------------------------------------------------------------------- wordnet

def _wordnet_synsets() -> list[tuple[str, list[str], str, list[str]]]:
    """(synset id, lemmas, definition, examples) of every synset with a usage example."""
    ensure_packages("wordnet-base")
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        data = Path(f"/usr/share/wordnet/data.{pos}").read_text("utf-8", "replace")
        for line in data.split("\n"):
            if not line or line.startswith(" ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            f = head.split()
            n_words = int(f[3], 16)
            lemmas = [re.sub(r"\(.*\)$", "", f[4 + 2 * i]).replace("_", " ")
                      for i in range(n_words)]
            examples = re.findall(r'"([^"]+)"', gloss)
            definition = re.sub(r"[;\s]+$", "", re.sub(r'"[^"]*"', "", gloss)).strip()
            if examples and definition:
                out.append((f"wn://{pos}/{f[0]}", lemmas, definition, examples))
    return out


# --------------------------------------------------------------------- Python docstrings

# Every top-level standard-library module but those with side effects on import, deprecated
# ones and platform-specific ones, plus a few submodules that carry most of their package.
PYDOC_SKIP = frozenset({
    "aifc", "antigravity", "asynchat", "asyncore", "audioop", "cgi", "cgitb", "chunk",
    "crypt", "curses", "distutils", "ensurepip", "idlelib", "imghdr", "imp", "lib2to3",
    "mailcap", "msilib", "msvcrt", "nis", "nntplib", "nt", "ossaudiodev", "pipes", "pty",
    "pydoc", "readline", "smtpd", "sndhdr", "spwd", "sunau", "telnetlib", "test", "this",
    "tkinter", "tty", "turtle", "turtledemo", "uu", "venv", "webbrowser", "winreg",
    "winsound", "xdrlib",
})
PYDOC_SUBMODULES = ("email.message", "email.utils", "html.parser", "http.client",
                    "http.cookies", "http.server", "urllib.parse", "urllib.request",
                    "xml.dom.minidom", "xml.etree.ElementTree")
PYDOC_DOCS = 4000
PYDOC_QUERIES = 1000
PYDOC_MIN_BODY = 80  # characters of docstring left once the summary is removed


def _documented(modname: str):  # type: ignore[no-untyped-def]
    """(qualified name, object) of the module's public functions, classes and their methods."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DeprecationWarnings of old modules
            mod = importlib.import_module(modname)
    except ImportError:  # built without it (no _ssl, _sqlite3...)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        members = sorted(vars(mod).items())
    for name, obj in members:
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isclass(obj):
            yield f"{modname}.{name}", obj
            for mname, meth in sorted(vars(obj).items()):
                if not mname.startswith("_") and callable(meth):
                    yield f"{modname}.{name}.{mname}", meth
        elif callable(obj):
            yield f"{modname}.{name}", obj


def pydoc_entries() -> list[tuple[str, str, str]]:
    """(uri, document, summary) of every standard-library docstring with a real body."""
    top = (n for n in sys.stdlib_module_names if not n.startswith("_") and n not in PYDOC_SKIP)
    out = []
    for modname in sorted({*top, *PYDOC_SUBMODULES}):
        for qual, obj in _documented(modname):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated aliases warn when read (typing.re)
                doc = getattr(obj, "__doc__", None)
            doc = doc if isinstance(doc, str) else None
            if not doc:
                continue
            summary, _, body = inspect.cleandoc(doc).partition("\n\n")
            summary, body = " ".join(summary.split()), body.strip()
            if len(body) < PYDOC_MIN_BODY or not 15 <= len(summary) <= 200:
                continue
            out.append((f"py://{qual}", f"{qual}\n\n{body}", summary))
    seen: set[str] = set()  # a name reached twice is one entry
    return [e for e in out if not (e[0] in seen or seen.add(e[0]))]


def _sample(items: list, n: int) -> list:
    """A deterministic, content-keyed sample of ``n`` items (stable across machines)."""
    return sorted(items, key=lambda it: hashlib.sha256(it[0].encode()).hexdigest())[:n]


# ---------------------------------------------------------------------------------- build

def _write(name: str, docs: list[tuple[str, str]], queries: list[dict], chunker: str) -> Path:
    out = CACHE / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    emb = potion_embedder()
    chunks = []
    for uri, text in docs:
        pieces = (chunk_paragraphs(text, uri, max_chars=PARA_CHARS) if chunker == "paragraph"
                  else [(text[:PAGE_CHARS], uri)])
        for piece in pieces:
            body = piece[0] if isinstance(piece, tuple) else piece.canonical_text
            if not body.strip():
                continue
            start = 0 if isinstance(piece, tuple) else piece.byte_start
            chunks.append({"canonical_text": body, "source_uri": uri, "byte_start": start,
                           "byte_end": start + len(body.encode("utf-8"))})
    vecs = emb.embed([c["canonical_text"] for c in chunks])
    for c, v in zip(chunks, vecs, strict=True):
        c["embedding"] = v.tolist()
    urna.build(out / "corpus.urna", emb.embedding_model, emb.embedding_dim,
               f"urna-quality-{chunker}/1", emb.model_hash(), chunks, title=name,
               preset="hybrid", reproducible=True)
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{name}: {len(docs)} documents, {len(chunks)} chunks, {len(queries)} queries",
          file=sys.stderr)
    return out


def _unique_queries(pairs: list[tuple[str, str]], prefix: str) -> list[dict]:
    """One query per (uri, text) whose text no other document shares (a clear label)."""
    counts = Counter(t.lower() for _, t in pairs)
    return [{"id": f"{prefix}{i}", "text": t, "relevant": [uri]}
            for i, (uri, t) in enumerate(pairs) if counts[t.lower()] == 1]


def build_set(name: str) -> Path:
    """Build one named set into the cache; returns its directory."""
    if name.startswith("manpages"):
        pages = man_pages()
        queries = _unique_queries([(u, d) for u, _, d in pages], "man")
        return _write(name, [(u, t) for u, t, _ in pages], queries,
                      "paragraph" if name == "manpages-para" else "page")
    if name.startswith("wordnet"):
        synsets = _sample(_wordnet_synsets(), WORDNET_DOCS)
        if name == "wordnet-gloss":
            docs = [(sid, ", ".join(lem) + ": " + " / ".join(ex)) for sid, lem, _, ex in synsets]
            pairs = [(sid, d) for sid, _, d, _ in synsets]
        else:
            docs = [(sid, d) for sid, _, d, _ in synsets]
            pairs = [(sid, ", ".join(lem)) for sid, lem, _, _ in synsets]
        queries = _unique_queries(pairs, "wn")[:WORDNET_QUERIES]
        return _write(name, docs, queries, "page")
    if name == "pydoc-summary":
        entries = _sample(pydoc_entries(), PYDOC_DOCS)
        queries = _unique_queries([(u, q) for u, _, q in entries], "py")[:PYDOC_QUERIES]
        return _write(name, [(u, d) for u, d, _ in entries], queries, "page")
    raise SystemExit(f"unknown set {name!r} (known: {', '.join(SETS)})")


def main(argv: list[str]) -> None:
    """Build the named sets (all when none is named)."""
    for name in argv or SETS:
        build_set(name)


if __name__ == "__main__":
    main(sys.argv[1:])
