# Isoscope: `make run` starts the dashboard on the embedded model; `make test` sets up and runs the tests.
# Both install the pinned versions of requirements.txt / requirements-dev.txt (what CI tested) into .venv, then Isoscope.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
COMPAT := .venv-compat
PEERS  := .venv-peers
MPEERS := .venv-migrate-peers
REMOTE := .venv-remote
LAB    := .venv-lab
RENDER := .venv-renderers
FRESH  := .venv-fresh

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# pip byte-compiles every file it installs (2 CPU-minutes for torch and the rest); Python compiles what it imports
PIP_FAST := --no-compile --disable-pip-version-check

.PHONY: wheel-gate-readme run test wheel-gate test-heavy test-ray test-fast test-compat test-remote test-lab test-fresh lint format bench bench-gpu bench-peers bench-migrate-peers bench-renderers bench-widget screenshots docs-numbers browser lock lock-peers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q $(PIP_FAST) -r requirements.txt
	$(BIN)/pip install -q $(PIP_FAST) --no-deps -e .
	@touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -q $(PIP_FAST) -r requirements-dev.txt
	@touch $@

# the dev tools, the map widget, nbclient, ipykernel; meanwhile scripts/warm_caches.py writes, on the CPU pip
# leaves idle, the bytecode and UMAP kernels every test process would otherwise compile at its start (then the
# bytecode of what these installs added)
$(VENV)/.notebook-installed: requirements-notebook.txt requirements-dev.txt $(VENV)/.installed
	@$(BIN)/python scripts/warm_caches.py > $(VENV)/warm-caches.log 2>&1 & warm=$$!; \
	$(BIN)/pip install -q $(PIP_FAST) -r requirements-dev.txt \
	&& $(BIN)/pip install -q $(PIP_FAST) -c requirements-dev.txt -r requirements-notebook.txt; \
	status=$$?; \
	wait $$warm || echo "cache warm-up failed (see $(VENV)/warm-caches.log): the first tests compile instead"; \
	test $$status -eq 0 && $(BIN)/python scripts/warm_caches.py --bytecode >> $(VENV)/warm-caches.log 2>&1; \
	cat $(VENV)/warm-caches.log; \
	test $$status -eq 0 && touch $(VENV)/.dev-installed $@

run: $(VENV)/.installed
	$(BIN)/isoscope app --port $(PORT)

browser:
	@bash scripts/ensure_browser.sh

# the gate CI runs: two workers (pytest-xdist), the browser tests share one; JupyterLab (its own venv, 10 s to
# install) for the map widget's lasso test
test: $(VENV)/.notebook-installed $(LAB)/.installed browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	ISOSCOPE_LAB=$(abspath $(LAB))/bin/jupyter-lab $(BIN)/pytest -n 2 --dist loadgroup -m "not heavy" --durations=40  # the slowest, in every CI log
	PYTHON=$(PYTHON) PYTEST=$(BIN)/pytest bash scripts/wheel_gate.sh

# the wheel alone in a new venv (the CPU torch first), used from an empty folder: every command, the README's
# blocks, every page of the app (tests/wheel); its time is its last line. `make test` runs it
wheel-gate: $(VENV)/.dev-installed
	PYTHON=$(PYTHON) PYTEST=$(BIN)/pytest bash scripts/wheel_gate.sh

wheel-gate-readme: $(VENV)/.dev-installed  # the gate with the README's blocks as written on the whole demo (+2 min)
	ISOSCOPE_WHEEL_README=1 PYTHON=$(PYTHON) PYTEST=$(BIN)/pytest bash scripts/wheel_gate.sh

test-heavy: $(VENV)/.notebook-installed browser  # the heavy tier (tests/heavy.py): whole-demo, server, notebook, docs runs
	$(BIN)/pytest -n 2 --dist loadgroup -m heavy

test-ray: $(VENV)/.dev-installed  # the atlas's ray engine on a two-node local Ray cluster, 8,000 and 200,000 rows (in the heavy tier too)
	$(BIN)/pytest -q tests/core/atlas/test_distributed.py tests/core/atlas/test_distributed_200k.py

test-fast: $(VENV)/.dev-installed  # the edit-test loop: no slow model runs, no browser
	$(BIN)/pytest -m "not slow and not e2e" -q -n 2

test-compat: requirements-dev.txt  # tests/core against the newest transformers 4.x, in a second venv
	test -x $(COMPAT)/bin/python || $(PYTHON) -m venv $(COMPAT)
	$(COMPAT)/bin/pip install -q -r requirements-dev.txt
	$(COMPAT)/bin/pip install -q "transformers>=4.40,<5" "sentence-transformers>=3,<6"  # ST 6 needs transformers 5
	$(COMPAT)/bin/pip install -q --no-deps -e .
	$(COMPAT)/bin/python -c "import transformers; print('transformers', transformers.__version__)"
	$(COMPAT)/bin/pytest tests/core -q

test-remote: $(VENV)/.dev-installed requirements-remote.txt  # the endpoint client against a real local server
	test -x $(REMOTE)/bin/python || $(PYTHON) -m venv $(REMOTE)
	$(REMOTE)/bin/pip install -q -r requirements-remote.txt  # infinity-emb pins numpy<2: its own venv
	ISOSCOPE_TEST_REMOTE=$(abspath $(REMOTE))/bin/infinity_emb $(BIN)/pytest tests/remote -q

test-fresh: $(VENV)/.dev-installed  # the Python and bash blocks of README.md and docs/*.md in a new venv holding only the wheel with its notebook extra
	PYTHON=$(PYTHON) bash scripts/wheel_venv.sh $(FRESH) notebook  # the CPU torch first, as the README says; then the wheel, its ranges resolved anew
	ISOSCOPE_README_PYTHON=$(abspath $(FRESH))/bin/python $(BIN)/pytest tests/docs/test_readme.py tests/docs/test_bash.py -q

$(LAB)/.installed: requirements-lab.txt
	test -x $(LAB)/bin/python || $(PYTHON) -m venv $(LAB)
	$(LAB)/bin/pip install -q $(PIP_FAST) -r requirements-lab.txt
	@touch $@

test-lab: $(VENV)/.notebook-installed $(LAB)/.installed browser  # the map widget in a real JupyterLab alone (tests/lab; make test runs it too)
	ISOSCOPE_LAB=$(abspath $(LAB))/bin/jupyter-lab $(BIN)/pytest tests/lab -q

bench-widget: $(VENV)/.notebook-installed $(LAB)/.installed browser  # the map widget's first draw and pan frame rates in JupyterLab
	ISOSCOPE_LAB=$(abspath $(LAB))/bin/jupyter-lab $(BIN)/python bench/widget.py $(ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.dev-installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(VENV)/.dev-installed
	$(BIN)/python bench/run_all.py

bench-gpu: $(VENV)/.dev-installed  # on a CUDA GPU: fp32 and bf16 against sentence-transformers, a 1M atlas (says so and exits 0 without one)
	$(BIN)/python bench/gpu.py $(ARGS)

$(PEERS)/.installed: bench/peers/requirements.lock pyproject.toml  # its own venv: optimum-onnx pins transformers 4.x
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q torch==2.13.0  # the CPU wheel on disk first: nothing may resolve a CUDA build
	$(PEERS)/bin/pip install -q -r bench/peers/requirements.lock
	$(PEERS)/bin/pip install -q --no-deps -e .
	@touch $@

bench-peers: $(PEERS)/.installed  # Isoscope against sentence-transformers' ONNX backends and fastembed (not in make test)
	$(PEERS)/bin/python bench/encode_peers.py $(ARGS)

$(MPEERS)/.installed: bench/migrate_peers/requirements.lock  # its own venv: isotrieve is no dependency of Isoscope
	test -x $(MPEERS)/bin/python || $(PYTHON) -m venv $(MPEERS)
	$(MPEERS)/bin/pip install -q $(PIP_FAST) -r bench/migrate_peers/requirements.lock
	@touch $@

bench-migrate-peers: $(VENV)/.dev-installed $(MPEERS)/.installed  # the model-migration bench with isotrieve's maps side by side (not in make test)
	$(BIN)/python bench/migrate.py $(ARGS)

$(RENDER)/.installed: bench/renderers/requirements.txt requirements.txt requirements-dev.txt pyproject.toml  # its own venv: datashader is not a dependency
	test -x $(RENDER)/bin/python || $(PYTHON) -m venv $(RENDER)
	$(RENDER)/bin/pip install -q $(PIP_FAST) torch==2.13.0  # the CPU wheel on disk first: nothing may resolve a CUDA build
	$(RENDER)/bin/pip install -q $(PIP_FAST) -r requirements.txt -r bench/renderers/requirements.txt -c requirements-dev.txt
	$(RENDER)/bin/pip install -q $(PIP_FAST) --no-deps -e .
	@touch $@

bench-renderers: $(RENDER)/.installed browser  # the Atlas map's renderers side by side: ours, datashader, deck.gl (not in make test)
	$(RENDER)/bin/python bench/atlas_renderers.py $(ARGS)

screenshots: $(VENV)/.dev-installed browser
	CI=true ISOSCOPE_SCREENSHOTS=1 $(BIN)/pytest tests/e2e -q  # CI=true: no browser is a failure, not a skip

docs-numbers: $(VENV)/.installed  # the tables of docs/ that commands print, rerun where docs/numbers.json lacks them (scripts/docs_numbers.py; hours on 2 cores from cold, resumable: ARGS=--list, --rerun NAME, --tables)
	$(BIN)/python scripts/docs_numbers.py $(ARGS)

lock:  # re-resolve pyproject.toml's ranges and pin them (scripts/lock.sh)
	PYTHON=$(PYTHON) bash scripts/lock.sh

lock-peers:  # re-resolve bench/peers/requirements.in (bench/peers/lock.sh)
	PYTHON=$(PYTHON) bash bench/peers/lock.sh

clean:
	rm -rf $(VENV) $(COMPAT) $(PEERS) $(MPEERS) $(REMOTE) $(LAB) $(RENDER) $(FRESH) .pytest_cache .ruff_cache build *.egg-info
