# Two entry points for a fresh machine (Python 3.11, pip, make):
#   make demo  — set up, then index a generated sample brochure and ask it a question, offline
#   make test  — set up with the test extras, then run the offline test suite
#   make test-minimums — the chat adapters' tests again, on the oldest versions pyproject.toml allows
#   make check — ruff (lint, format) over all the Python here, mypy over core/ and bot/ (pyproject.toml)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo
CLIENTS_VENV ?= .venv-clients

.PHONY: demo test test-minimums check setup setup-test clean results

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install --quiet -e .

setup-test: $(BIN)/python $(CLIENTS_VENV)/installed
	$(BIN)/pip install --quiet -e '.[test]'

# The official PixelRAG's LangChain client, which the compatibility route is tested with, in a virtualenv of
# its own: it pins an httpx older than the one google-genai needs.
$(CLIENTS_VENV)/installed:
	$(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/pip install --quiet 'pixelrag-langchain==0.2.1'
	touch $@

demo: setup
	$(BIN)/python eval/sample_document.py $(OUT)/hf300-brochure.pdf
	$(BIN)/pixelrag index $(OUT)/hf300-brochure.pdf --index $(OUT)/index --backend local
	$(BIN)/pixelrag ask "What is the mounting hole spacing of the HydroFlow HF-300?" \
		--index $(OUT)/index --backend local --out $(OUT)/answer

# pytest exits 5 when it collects no tests; that must not pass silently, nor fail a run spuriously.
test: setup-test
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

check: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[check]'
	$(BIN)/ruff check core bot eval tests
	$(BIN)/ruff format --check core bot eval tests
	$(BIN)/mypy

# Every dependency at exactly its declared floor (.ci/minimums.py), in a virtualenv of its own: a floor
# below what the code calls fails here, not at a user's install.
MIN_VENV ?= .venv-min
ADAPTER_TESTS := tests/adapters/test_slack.py tests/adapters/test_slack_stream.py tests/adapters/test_slack_agent.py \
	tests/adapters/test_discord.py tests/adapters/test_discord_stream.py tests/adapters/test_document_text_is_shown.py
test-minimums:
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MIN_VENV)/bin/python .ci/minimums.py > $(MIN_VENV)/constraints.txt
	$(MIN_VENV)/bin/pip install --quiet -c $(MIN_VENV)/constraints.txt -e '.[test]'
	$(MIN_VENV)/bin/python -m pytest -q -p no:cacheprovider $(ADAPTER_TESTS)

# Regenerate eval/RESULTS.md: the evaluations (local backend, both page stores) and the benchmarks (about an hour on 2 cores).
results: setup-test
	$(BIN)/python eval/results.py

clean:
	rm -rf $(VENV) $(MIN_VENV) $(CLIENTS_VENV) out
