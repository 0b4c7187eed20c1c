# Every target builds its own venv so a fresh machine needs nothing but python3.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: venv quickstart test bench fuzz clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

# The main job: build the quickstart corpus with the default embedder and ask it a question.
quickstart: venv
	$(BIN)/urna build --spec examples/quickstart/corpus.toml
	$(BIN)/urna ask examples/quickstart/out/quickstart.urna "can I use this offline" -k 1

test: venv
	$(BIN)/python -m pytest tests

bench: venv
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/run_all.py

fuzz: venv
	URNA_MUTATION_ITERS=20000 $(BIN)/python -m pytest tests/robustness -q

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
