#!/bin/sh
# temporary (helper 'cache'): build and test the cache on the device machine
exec > "$OUT/log.txt" 2>&1
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJ_WERROR=OFF > "$OUT/cmake.log" 2>&1 || tail -30 "$OUT/cmake.log"
make -C /tmp/b -j16 -k tilejit-cli cache_bench > "$OUT/make.log" 2>&1; grep -E "error|warning:" "$OUT/make.log" | head -20
TILEJIT=/tmp/b/tilejit TJ_SOURCE_DIR=$PWD timeout 300 sh tests/cli/cache.sh > "$OUT/cli_cache.txt" 2>&1; echo cli rc=$?; tail -5 "$OUT/cli_cache.txt"
export TILEJIT_CACHE_DIR=/tmp/tjc
/tmp/b/tilejit tune examples/softmax.tj -k softmax --random --shape M=4096,N=1000
/tmp/b/tilejit tune examples/softmax.tj -k softmax --random --shape M=4096,N=1000 | tail -2
/tmp/b/tilejit run examples/softmax.tj -k softmax --random --shape M=4096,N=1000 --time --check
/tmp/b/tilejit cache stats
timeout 400 /tmp/b/bench/cache_bench examples > "$OUT/bench.txt" 2>&1; echo bench rc=$?
cat "$OUT/bench.txt"
