#!/bin/sh
# Everything the device machine does in one call: build, GPU tests (also under
# compute-sanitizer), every example on the GPU against the interpreter, and the
# benchmarks side by side with PyTorch and Triton.
#
#   sh bench/gpu/run_all.sh [OUT_DIR]     (logs and JSON land in OUT_DIR, default ./gpu-out)
#
# Steps can be skipped with TJ_SKIP="sanitizer bench ...".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/gpu-out}
build=$root/build-gpu
mkdir -p "$out"
skip() { case " ${TJ_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }
step() { echo; echo "======== $*"; }
status=0

step "build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTJ_TESTS=ON >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv

# NCCL for tests/gpu/nccl.c: PyTorch's copy (nvidia-nccl in site-packages) unless one is set.
if [ -z "${TILEJIT_NCCL:-}" ]; then
  site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null) &&
    TILEJIT_NCCL=$(find "$site/nvidia" "$site/torch/lib" -name 'libnccl.so*' 2>/dev/null | head -1) &&
    [ -n "$TILEJIT_NCCL" ] && export TILEJIT_NCCL && echo "NCCL: $TILEJIT_NCCL"
fi

step "GPU tests (ctest -L gpu)"
ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tee "$out/ctest-gpu.log" | tail -25 || status=1

if ! skip catalogue; then
  step "every SIMT op of the catalogue on the GPU against the SIMT interpreter (tests/unit/test_ptx_gpu.c)"
  cc -std=c11 -O1 -DTJ_PTX_GPU_MAIN -I"$root/include" -I"$root/tests/unit" -I"$root" \
    "$root/tests/unit/test_ptx_gpu.c" "$build/libtilejit.a" -lm -ldl -lpthread -o "$build/ptx_gpu_catalogue" &&
    "$build/ptx_gpu_catalogue" 2>&1 | tee "$out/catalogue.log" | tail -8 || status=1
fi

if ! skip examples; then
  step "examples on the GPU, checked against the interpreter"
  TILEJIT="$build/tilejit" TILEJIT_DEVICE=cuda sh "$root/scripts/demo.sh" 2>&1 | tee "$out/examples.log" || status=1
fi

if ! skip host; then
  step "host benchmarks (front end, PTX generation, interpreter)"
  "$build/bench/bench_host" "$root/examples" --json "$out/bench_host.json"
fi

if ! skip cache; then
  step "cache and tuner (cold compile, cache hits, launch cost, tuning time)"
  "$build/bench/cache_bench" "$root/examples" 2>&1 | tee "$out/cache_bench.log"
fi

if ! skip nvrtc; then
  step "CUDA C through NVRTC (cold compile beside NVRTC's time, disk hit in a fresh process)"
  "$build/bench/nvrtc_bench" 2>&1 | tee "$out/nvrtc_bench.log" || status=1
fi

if ! skip bench; then
  step "GPU benchmarks vs PyTorch and Triton"
  TILEJIT_LIB="$build/libtilejit.so" PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/bench.py" --json "$out/bench_gpu.json" ${TJ_BENCH_ARGS:-} 2>&1 | tee "$out/bench_gpu.log"
fi
if ! skip nccl; then
  step "NCCL all-reduce bus bandwidth beside torch.cuda.nccl (2 or more GPUs)"
  TILEJIT_LIB="$build/libtilejit.so" PYTHONPATH="$root/python" python3 "$root/bench/gpu/nccl_bench.py" 2>&1 |
    tee "$out/nccl_bench.log" || status=1
fi
if ! skip python; then
  step "Python: pytest on the GPU (tests/python) and the launch cost beside Triton and PyTorch"
  TJ_PYTHON=python3 sh "$root/tests/python/run.sh" "$root" "$build/libtilejit.so" 2>&1 | tee "$out/pytest.log" | tail -15 || status=1
  PYTHONPATH="$root/python" TILEJIT_LIB="$build/libtilejit.so" python3 "$root/bench/python_launch.py" \
    --json "$out/python_launch.json" 2>&1 | tee "$out/python_launch.log"
fi

if ! skip pip; then
  step "pip: the package builds from source with cmake alone (no network: --no-build-isolation)"
  rm -rf "$build/pip-target"
  python3 -m pip install -q --no-build-isolation --no-deps --target "$build/pip-target" "$root" >"$out/pip.log" 2>&1 &&
    (cd /tmp && PYTHONPATH="$build/pip-target" python3 -c "import tilejit, numpy as np; print('installed tilejit', tilejit.__version__, 'from', tilejit.__file__)") ||
    { tail -20 "$out/pip.log"; status=1; }
fi

if ! skip sanitizer; then
  step "compute-sanitizer memcheck"
  for t in "$build"/tests/gpu/gpu_*; do
    [ -x "$t" ] || continue
    echo "==== $(basename "$t")" >>"$out/memcheck.log"
    # API errors are off: gpu_smoke loads broken PTX on purpose and NCCL probes for kernel
    # images it lacks; memory errors are what this step is for.
    timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$t" >>"$out/memcheck.log" 2>&1
    echo "$(basename "$t"): exit $?"
  done
fi

exit $status
