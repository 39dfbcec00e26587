# Two entry points for a fresh machine (Python 3.11, pip, make):
#   make demo  — set up, then index a generated sample brochure and ask it a question, offline
#   make test  — set up with the test extras, then run the offline test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo

.PHONY: demo test setup setup-test clean results

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install --quiet -e .

setup-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'

demo: setup
	$(BIN)/python eval/sample_document.py $(OUT)/hf300-brochure.pdf
	$(BIN)/pixelrag index $(OUT)/hf300-brochure.pdf --index $(OUT)/index --backend local
	$(BIN)/pixelrag ask "What is the mounting hole spacing of the HydroFlow HF-300?" \
		--index $(OUT)/index --backend local --out $(OUT)/answer

# pytest exits 5 when it collects no tests; that must not pass silently, nor fail a run spuriously.
test: setup-test
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

# Regenerate eval/RESULTS.md: the evaluations (local backend, both page stores) and the benchmarks (about an hour on 2 cores).
results: setup-test
	$(BIN)/python eval/results.py

clean:
	rm -rf $(VENV) out
