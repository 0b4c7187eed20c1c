"""The agent verbs through click: ask / retrieve / search-text on reference files, build, doctor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import urna
from helpers.cli_runner import invoke
from urna.cli.forge_cmds import COMMANDS
from urna.forge.embed import FloorEmbedder, PotionEmbedder

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests" / "data" / "ref-0.5.1"
EXPECTED = json.loads((REF / "expected.json").read_text())["files"]
HYBRID = REF / "quickstart-hybrid.urna"
RETRIEVE_KEYS = {"chunk_id", "score", "score_type", "source_uri", "offset_start", "offset_end",
                 "citation_id", "text", "file_hash", "content_hash", "rerank_source"}


def run(*args: str):
    return invoke([str(a) for a in args], catch_exceptions=False)


def test_commands_have_help_and_examples() -> None:
    assert [c.name for c in COMMANDS] == ["build", "ask", "retrieve", "search-text", "doctor"]
    for c in COMMANDS:
        res = run(c.name, "--help")
        assert res.exit_code == 0 and c.help and "Usage:" in res.output


@pytest.mark.parametrize("qi", range(3))
def test_ask_returns_the_reference_top_hit(qi: int) -> None:
    q = EXPECTED["quickstart-hybrid.urna"]["queries"][qi]
    top = q["retrieve"][0]
    res = run("ask", HYBRID, q["text"], "-k", "1")
    assert res.exit_code == 0, res.output
    assert res.stdout == f"{top['text']}\n  -- {top['citation_id']} ({top['source_uri']})\n\n"


def test_ask_explain_discloses_the_route() -> None:
    res = run("ask", HYBRID, "can I use this offline", "-k", "2", "--disclose", "explain",
              "--rank", "cosine")
    lines = res.stdout.splitlines()
    assert lines[:5] == ["route:         hybrid",
                         "candidates:    exact=0 ann=12 bm25=12 graph=0 fusion=rrf",
                         "rerank_source: real cosine",
                         "recall:        (not computed; rerank guarantees real cosine)", ""]
    exact = run("ask", REF / "quickstart-exact.urna", "can I use this offline with no network",
                "-k", "1", "--disclose", "explain")
    assert exact.stdout.splitlines()[0] == "route:         exact"
    assert "recall:        1" in exact.stdout and "urna://sha256:" in exact.stdout
    int8 = run("ask", REF / "quickstart-int8_bm25.urna", "offline", "-k", "1", "--disclose",
               "explain")
    assert "rerank_source: real cosine at stored precision" in int8.stdout


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "quickstart-exact.urna",
                                  "quickstart-tiny.urna", "quickstart-mrl.urna",
                                  "quickstart-nano.urna", "quickstart-int8_bm25.urna",
                                  "quickstart-f16_hnsw.urna"])
def test_retrieve_jsonl_equals_the_reference_retrieve(name: str) -> None:
    for q in EXPECTED[name]["queries"]:
        want = q["retrieve"]
        res = run("retrieve", REF / name, q["text"], "-k", len(want), "--rank", "cosine")
        assert res.exit_code == 0, res.output
        got = [json.loads(line) for line in res.stdout.splitlines()]
        assert [h["chunk_id"] for h in got] == [h["chunk_id"] for h in want]
        for g, w in zip(got, want, strict=True):
            assert set(g) == RETRIEVE_KEYS
            assert g["score"] == pytest.approx(w["score"], abs=1e-6)
            assert {k: g[k] for k in RETRIEVE_KEYS - {"score"}} == {
                k: w[k] for k in RETRIEVE_KEYS - {"score"}}


def test_retrieve_json_is_one_array() -> None:
    res = run("retrieve", HYBRID, "how do citations work", "-k", "2", "--format", "json",
              "--rank", "cosine")
    hits = json.loads(res.stdout)
    assert [h["source_uri"] for h in hits] == ["demo/03-citations.md"] * 2
    assert hits[0]["score"] == pytest.approx(0.5005, abs=1e-4)


def test_search_text_prints_the_result_block() -> None:
    res = run("search-text", HYBRID, "how do citations work", "-k", "3")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "index_type:   hybrid"
    assert lines[2:5] == ["truncated:    true", "k_requested:  3", "k_returned:   3"]
    assert lines[7] == "hits:" and lines[8].startswith("  [  1] chunk_id=sha256:c26405dd")
    assert "score=0.500497 score_type=cosine source_uri=demo/03-citations.md" in lines[8]
    assert "reranked=true" in lines[8]
    as_json = json.loads(run("search-text", HYBRID, "offline", "-k", "2", "--json").stdout)
    assert as_json["k_returned"] == 2 and as_json["index_type"] == "hybrid"


def _potion_file(tmp_path: Path, model_hash: str) -> Path:
    texts = ["the database works offline", "citations name the content"]
    vecs = PotionEmbedder().embed(texts)
    out = tmp_path / "gate.urna"
    urna.build(str(out), "minishlab/potion-base-8M/v1", 256, "gate/1", model_hash,
               [{"canonical_text": t, "source_uri": f"doc{i}", "byte_start": 0,
                 "byte_end": len(t), "embedding": vecs[i].tolist()} for i, t in enumerate(texts)])
    return out


def test_model_hash_gate_fails_loudly(tmp_path: Path) -> None:
    ok = _potion_file(tmp_path, PotionEmbedder().model_hash())
    assert run("ask", ok, "offline", "-k", "1").exit_code == 0
    wrong = _potion_file(tmp_path, FloorEmbedder().model_hash())
    for verb in ("ask", "retrieve", "search-text"):
        res = run(verb, wrong, "offline")
        assert res.exit_code == 1 and res.stdout == ""
        last = res.stderr.splitlines()[-1]  # search-text logs the model it embeds with first
        assert last.startswith("Error: ModelHashMismatch: model_hash mismatch")
        assert FloorEmbedder().model_hash() in res.stderr


def test_a_model_without_a_local_embedder_is_named(tmp_path: Path) -> None:
    res = run("ask", ROOT / "tests" / "data" / "golden_v1_minimal.urna", "hi")
    assert res.exit_code == 1 and "'demo'" in res.stderr and "--model-path" in res.stderr


def test_a_corrupt_file_names_the_error_class(tmp_path: Path) -> None:
    bad = tmp_path / "bad.urna"
    data = bytearray(HYBRID.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the embeddings payload
    bad.write_bytes(bytes(data))
    res = run("ask", bad, "offline")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.stderr == "Error: SectionChecksumMismatch: section 4 checksum mismatch\n"
    assert run("ask", tmp_path / "missing.urna", "x").exit_code == 2


def test_quickstart_loop_build_then_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    built = run("build", "--spec", "examples/quickstart/corpus.toml", "--out-dir", out,
                "--cache-dir", tmp_path / "cache")
    assert built.exit_code == 0, built.output
    res = run("ask", out / "quickstart.urna", "can I use this offline", "-k", "1",
              "--rank", "cosine")
    text, cite = res.stdout.splitlines()[:2]
    assert text.startswith("to keep that promise for a brand-new user")
    assert cite.endswith("/sha256:eed9a60b68133464e91c831f8af5960491f6c444cf1645fc5e4864435ab4bd44"
                         " (demo/04-offline-sovereignty.md)")
    jl = run("retrieve", out / "quickstart.urna", "how do citations work", "-k", "2",
             "--rank", "cosine")
    hits = [json.loads(line) for line in jl.stdout.splitlines()]
    assert [(h["offset_start"], h["offset_end"]) for h in hits] == [(7, 8), (8, 9)]
    assert hits[0]["chunk_id"] == (
        "sha256:b5dfeb09a643f6f0afde3f361316dde3ea503ff86c525d297e6ba79b5781a4be")


def test_build_spec_error_exits_2_and_registry_error_exits_4(tmp_path: Path) -> None:
    spec = tmp_path / "c.toml"
    spec.write_text('[corpus]\nchunker_version = "x/1"\n[source]\nkind = "jsonl"\n'
                    'path = "r.jsonl"\norder_by = "id"\n[[models]]\npreset = "potion"\n'
                    'text = "default"\n')
    res = run("build", "--spec", spec)
    assert res.exit_code == 2 and res.stderr == "spec error: corpus.name: required\n"
    spec.write_text(spec.read_text().replace("[corpus]", '[corpus]\nname = "c"')
                    .replace('"potion"', '"wemm-2b"'))
    res = run("build", "--spec", spec)
    assert (res.exit_code == 4 and res.stderr.startswith("registry error: ")
            and "wemm-2b" in res.stderr)


def test_build_dry_run_loads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    res = run("build", "--spec", "examples/quickstart/corpus.toml", "--dry-run",
              "--out-dir", tmp_path / "o", "--cache-dir", tmp_path / "c")
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0] == "corpus: quickstart  (source=jsonl, image_input=source, output=single)"
    assert lines[1].startswith("model:  potion               "
                               "text=default image=none  dims=- deps=ok")
    assert "files:  quickstart.urna" in lines
    assert not (tmp_path / "o").exists()
    plan = json.loads(run("build", "--spec", "examples/quickstart/corpus.toml", "--dry-run",
                          "--json").stdout)
    assert plan["outputs"] == ["quickstart.urna"] and plan["models"][0]["preset"] == "potion"


def test_doctor_passes_on_this_install() -> None:
    res = invoke(["doctor"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "urna doctor" and lines[-1] == "urna doctor: ok"
    assert any(line.startswith("  ok       potion table:") and PotionEmbedder().model_hash()
               in line for line in lines)
    data = json.loads(invoke(["doctor", "--json"]).stdout)
    assert data["ok"] is True and data["exit_code"] == 0


@pytest.mark.parametrize("text", ["how do citations work", "can I use this offline"])
def test_retrieve_rank_cosine_is_the_python_api_and_the_default_is_fused(text: str) -> None:
    from urna.forge.query import embed_query, manifest_of

    with urna.open(HYBRID) as f:
        vec, _ = embed_query(manifest_of(f), text)
        cosine = [h.to_dict() for h in f.retrieve(vec, 4, query_text=text)]
        fused = f.retrieve(vec, 4, query_text=text, rank="fused")
    got = [json.loads(ln) for ln in run("retrieve", HYBRID, text, "-k", "4", "--rank",
                                        "cosine").stdout.splitlines()]
    assert [{k: h[k] for k in RETRIEVE_KEYS} for h in cosine] == got
    default = [json.loads(ln) for ln in run("retrieve", HYBRID, text, "-k", "4").stdout
               .splitlines()]
    assert [h["chunk_id"] for h in default] == [h.chunk_id for h in fused]
    assert all(h["score_type"] == "fused" and "fused_score" in h for h in default)
    assert [h["score"] for h in default] == [h.score for h in fused]  # the exact cosine
    explain = run("ask", HYBRID, text, "-k", "2", "--disclose", "explain").stdout
    assert "fusion=gated-z" in explain.splitlines()[1]
