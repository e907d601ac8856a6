#!/bin/sh
# temporary (helper 'cache'): build and test the cache on the device machine
exec > "$OUT/log.txt" 2>&1
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
gcc --version | head -1; cmake --version | head -1
ls /usr/include/criterion 2>/dev/null | head -2
ldconfig -p | grep -i -E "jitlink|libcuda.so" | head
nproc
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJ_WERROR=OFF > "$OUT/cmake.log" 2>&1 || tail -30 "$OUT/cmake.log"
make -C /tmp/b -j16 -k > "$OUT/make.log" 2>&1; grep -E "error|warning:" "$OUT/make.log" | head -20
ls /tmp/b/tests | grep -E "cache|autotune"
for t in /tmp/b/tests/test_cache_* /tmp/b/tests/test_autotune; do [ -x "$t" ] && "$t" --jobs=1 2>&1 | tail -3; done
TILEJIT=/tmp/b/tilejit TJ_SOURCE_DIR=$PWD timeout 300 sh tests/cli/cache.sh > "$OUT/cli_cache.txt" 2>&1; echo cli rc=$?; tail -40 "$OUT/cli_cache.txt"
timeout 400 /tmp/b/bench/cache_bench examples > "$OUT/bench.txt" 2>&1; echo bench rc=$?
cat "$OUT/bench.txt"
