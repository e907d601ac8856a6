#!/bin/sh
# Builds the fuzz targets with clang-22 and runs one for a while, seeded with
# the examples and the test kernels (npy: small arrays of every dtype;
# cache_entry: entries of both kinds):
#   tests/fuzz/run.sh [frontend|codegen|lower|ir|npy|cache_entry] [SECONDS]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
which=${1:-frontend}
secs=${2:-60}
build=${TJ_FUZZ_BUILD:-$root/build-fuzz} # TJ_FUZZ_BUILD: another build directory
CC=${CC:-clang-22} cmake -S "$root" -B "$build" -DTJ_FUZZ=ON -DTJ_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target fuzz_$which >/dev/null
corpus=$root/tests/fuzz/corpus-$which
mkdir -p "$corpus"
case $which in
ir) find "$root/tests/lit" -name '*.tjir' -exec cp {} "$corpus"/ \; 2>/dev/null || true ;;
npy)
  for d in '|b1' '<i1' '<i2' '>i4' '<i8' '|u1' '<u2' '<u4' '<u8' '<f2' '>f4' '<f8'; do
    python3 "$root/tests/cli/npytool.py" write "$corpus/seed$(echo "$d" | tr -d '<>|').npy" "$d" 2,3 arange
  done ;;
cache_entry)
  # header, metadata, PTX, binary and a checksum the target puts right
  python3 - "$corpus" <<'PY'
import struct, sys
for kind, meta, ptx, bin in ((1, b'kernel add\narch sm_90a\nthreads 128\nsmem 0\nabi x:f32:1\n', b'.version 8.0\n', b'\x7fELF'),
                             (2, b'kernel softmax\nconfig BLOCK=1024\nstatus ok\nseconds 1e-05\n', b'', b'')):
    sections = [meta + b'\0', ptx + b'\0' if ptx else b'', bin]
    head = b'TJCACHE\x1a' + struct.pack('<II', 1, kind) + bytes(32) + struct.pack('<QQQ', *map(len, sections))
    open('%s/seed%d' % (sys.argv[1], kind), 'wb').write(head + b''.join(sections) + bytes(8))
PY
  ;;
*)
  cp "$root"/examples/*.tj "$root"/tests/errors/*.tj "$corpus"/ 2>/dev/null || true
  find "$root/tests/lit" -name '*.tj' -exec cp {} "$corpus"/ \; 2>/dev/null || true ;;
esac
cd "$root/tests/fuzz"
"$build/tests/fuzz/fuzz_$which" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 "$corpus"
