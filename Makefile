# Every target builds its own venv so a fresh machine needs nothing but python3.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install venv lint system-packages quickstart test test-long bench quality pins fuzz fuzz-atheris clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The package alone (what the main job needs), and with its test extras.
install: $(BIN)/python
	$(BIN)/pip install -q -e .

venv: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

# The main job: build the quickstart corpus with the default embedder and ask it a question.
quickstart: install
	$(BIN)/urna build --spec examples/quickstart/corpus.toml
	$(BIN)/urna ask examples/quickstart/out/quickstart.urna "can I use this offline" -k 1

# System packages the suite drives for real: Debian's chromium + chromedriver (the serve browser
# test) and tmux (the terminal UI test). Only missing ones are installed, nothing is upgraded.
SYSTEM_PACKAGES := chromium chromium-driver tmux
system-packages:
	@tools/ensure-debian-packages.sh $(SYSTEM_PACKAGES)

# ruff over src/, tests/, benchmarks/ and tools/, mypy over src/ (pyproject.toml); a finding fails make test.
lint: venv
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/mypy

# The suite on TEST_WORKERS processes (pytest-xdist; a file's tests stay on one worker, in order).
TEST_WORKERS ?= 2
test: system-packages venv lint
	$(BIN)/python -m pytest tests -n $(TEST_WORKERS) --dist loadfile

# The same suite with every property test, fuzz budget and search at its long size (tests/helpers/budget.py).
test-long: system-packages venv
	URNA_LONG_TESTS=1 $(BIN)/python -m pytest tests -n $(TEST_WORKERS) --dist loadfile

# Side-by-side benchmarks (peers measured in the same run); figures go in the README.
bench: venv
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/sizes.py
	$(BIN)/python benchmarks/bench_exact.py
	$(BIN)/python benchmarks/bench_hnsw.py
	$(BIN)/python benchmarks/bench_bm25.py
	$(BIN)/python benchmarks/bench_embed.py

# Answer quality on real labelled sets (man pages, WordNet) built from Debian packages it
# installs when missing; the sets live in ~/.cache/urna-quality, never in git (README).
quality: venv
	$(BIN)/python benchmarks/quality/run.py

# The reference's two pinned HNSW digests (the 10000x384 one takes ~30 s).
pins: venv
	$(BIN)/python benchmarks/bench_hnsw.py --pins

# Long seeded mutation fuzz (the test suite runs a short, time-bounded share of it).
fuzz: venv
	URNA_MUTATION_ITERS=20000 $(BIN)/python -m pytest tests/robustness/test_mutation_fuzz.py -q

# Coverage-guided fuzzing of UrnaView and every decoder (atheris / libFuzzer).
fuzz-atheris: venv
	$(BIN)/python fuzz/fuzz_reader.py fuzz/corpus -max_total_time=600 -rss_limit_mb=2048

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
