#!/bin/sh
# Builds the fuzz targets with clang-22 and runs one for a while, seeded with
# the examples and the test kernels:  tests/fuzz/run.sh [frontend|codegen|lower|ir] [SECONDS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
which=${1:-frontend}
secs=${2:-60}
build=$root/build-fuzz
CC=${CC:-clang-22} cmake -S "$root" -B "$build" -DTJ_FUZZ=ON -DTJ_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target fuzz_$which >/dev/null
corpus=$root/tests/fuzz/corpus-$which
mkdir -p "$corpus"
if [ "$which" != ir ]; then
  cp "$root"/examples/*.tj "$root"/tests/errors/*.tj "$corpus"/ 2>/dev/null || true
  find "$root/tests/lit" -name '*.tj' -exec cp {} "$corpus"/ \; 2>/dev/null || true
else
  find "$root/tests/lit" -name '*.tjir' -exec cp {} "$corpus"/ \; 2>/dev/null || true
fi
cd "$root/tests/fuzz"
"$build/tests/fuzz/fuzz_$which" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 "$corpus"
