# Isoscope: `make run` starts the dashboard on the embedded model; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test lint format bench screenshots browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	@touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -q -r requirements-dev.txt
	@touch $@

run: $(VENV)/.installed
	$(BIN)/streamlit run dashboard/app.py --server.port $(PORT)

browser:
	@bash scripts/ensure_browser.sh

test: $(VENV)/.dev-installed browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.dev-installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(VENV)/.dev-installed
	$(BIN)/python bench/run_all.py

screenshots: $(VENV)/.dev-installed browser
	CI=true ISOSCOPE_SCREENSHOTS=1 $(BIN)/pytest tests/e2e -q  # CI=true: no browser is a failure, not a skip

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
