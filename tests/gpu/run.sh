#!/bin/sh
# Builds the library and the GPU tests and runs them, on a machine with a
# CUDA device (needs cmake >= 3.20, a C compiler and the CUDA driver; the
# cubin test also uses nvJitLink from the CUDA 13 toolkit when present):
#
#   sh tests/gpu/run.sh [BUILD_DIR]      (default: build-gpu in the source tree)
#
# Exits non-zero when a GPU test fails. Without a device the tests are
# reported skipped, with the reason.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
echo "== configure ($build)"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJ_TESTS=ON
echo "== build"
cmake --build "$build" --target gpu-tests -j "$jobs"
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "(no nvidia-smi)"
echo "== ctest -L gpu"
ctest --test-dir "$build" -L gpu --output-on-failure -V
