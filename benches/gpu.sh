#!/usr/bin/env bash
# Every CUDA check in one run on a GPU machine (issue 22): installs the abi3 `ember` wheel that
# `make gpu-wheel` built into .gpu/ (CUDA 13; one wheel for Python 3.11 and later), runs the
# core's CUDA tests (parity against the CPU and, where PyTorch is installed, against torch.cuda)
# and benches/cuda.py, and writes their logs to the folder named by $1 (default gpu-results):
# gpu.txt (the device), tests.txt (every test file's output), bench.md (the benchmark tables).
# The machine needs the NVIDIA driver, NVIDIA's NVRTC, cuBLAS and cuDNN wheels (or a CUDA
# toolkit), numpy and pytest; nothing is built there.
set -uo pipefail
OUT=${1:-gpu-results}
PY=${PYTHON:-python3}
SITE=$(mktemp -d)
mkdir -p "$OUT"
$PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .gpu/ember-*.whl || exit 1
# Kernels compiled by the first test file are cached for the others.
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1 EMBER_HOME=$SITE/home
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
$PY -c "import ember; print('ember from', ember.__file__, '| devices:', ember.cuda.device_count(), ember.cuda.get_device_name(), '| cuDNN', ember.backends.cudnn.version())" 2>&1 | tee -a "$OUT/gpu.txt"
# NVRTC compiles each kernel family on its first use, one after another: compile them all at once
# first, one process per family (each op below needs one family; the disk cache keeps them).
for op in "x.t().contiguous()" "x.fill_(2)" "x.exp()" "x + x" "ember.where(x > 0, x, x)" "x.sum(0)" \
          "x.softmax(-1)" "ember.rand(3, device='cuda')" "x[ember.tensor([0], device='cuda')]" "ember.lerp(x, x, 0.5)" \
          "ember.nn.functional.max_pool2d(x[None, None], 2)" \
          "ember.nn.functional.pad(x, (1, 1))" "ember.nn.functional.interpolate(x[None, None], scale_factor=2.0)" \
          "ember.nn.functional.conv2d(x[None, None], x[None, None, :3, :3])"; do
  $PY -c "import ember; x = ember.zeros(4, 4, device='cuda'); $op; ember.cuda.synchronize()" > /dev/null 2>&1 &
done
wait
# One process per test file, so a crash in one does not hide the others' results; a per-test
# limit where pytest-timeout is installed, so a hung kernel costs one test.
LIMIT=$($PY -c "import pytest_timeout" 2>/dev/null && echo "--timeout=${TEST_LIMIT:-90}")
status=0
for f in core-py/tests/test_cuda*.py; do
  echo "=== $f" >> "$OUT/tests.txt"
  timeout ${FILE_LIMIT:-300} $PY -m pytest -q -p no:cacheprovider -rfE --tb=short $LIMIT "$f" >> "$OUT/tests.txt" 2>&1 || status=1
  echo "$f: $(tail -1 "$OUT/tests.txt")"
done
grep -E "^(FAILED|ERROR) " "$OUT/tests.txt" | cut -c1-300 | head -60
timeout ${BENCH_LIMIT:-300} $PY benches/cuda.py > "$OUT/bench.md" 2>&1 || status=1
cat "$OUT/bench.md"
exit $status
