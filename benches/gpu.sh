#!/usr/bin/env bash
# Every CUDA check in one run on a GPU machine (issue 22): installs the abi3 `ember` wheel that
# `make gpu-wheel` built into .gpu/ (CUDA 13; one wheel for Python 3.11 and later), runs the
# core's CUDA tests (parity against the CPU and, where PyTorch is installed, against torch.cuda)
# and benches/cuda.py, and writes their logs to the folder named by $1 (default gpu-results).
# The machine needs the NVIDIA driver, NVIDIA's NVRTC and cuBLAS wheels (or a CUDA toolkit),
# numpy and pytest; nothing is built there.
set -uo pipefail
OUT=${1:-gpu-results}
PY=${PYTHON:-python3}
SITE=$(mktemp -d)
mkdir -p "$OUT"
$PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .gpu/ember-*.whl || exit 1
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1 EMBER_HOME=$SITE/home
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
$PY -c "import ember; print('ember', ember.__file__, 'devices:', ember.cuda.device_count(), ember.cuda.get_device_name())" | tee -a "$OUT/gpu.txt"
# The tests first, each file in its own process so one crash does not hide the others' results.
status=0
for f in core-py/tests/test_cuda*.py; do
  timeout 240 $PY -m pytest -q -p no:cacheprovider -rfE --tb=short "$f" 2>&1 | tail -60 | tee -a "$OUT/tests.txt" || status=1
done
timeout 240 $PY benches/cuda.py 2>&1 | tee "$OUT/bench.md" || status=1
exit $status
