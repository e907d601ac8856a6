#!/bin/sh
# FILE.cu through NVRTC on the command line, no GPU needed: `emit --target
# ptx` prints NVRTC's PTX (a template kernel, a header beside the file, -D,
# shared memory; assembled by ptxas where installed), `check` prints NVRTC's
# errors as FILE:LINE:COL with the line quoted. Skips (77) when libnvrtc
# cannot be loaded.
. "$(dirname "$0")/testlib.inc"
cat >probe.cu <<'CU'
extern "C" __global__ void probe() {}
CU
if ! "$TILEJIT" check probe.cu 2>err; then
    grep -q "no NVRTC" err && { echo "SKIP: $(head -1 err)"; exit 77; }
    fail "check probe.cu: $(cat err)"
fi
cat >cfg.h <<'CU'
#define OFFSET 0.5f
CU
cat >scale.cu <<'CU'
#include "cfg.h"
template <typename T, int BLOCK>
__global__ void scale(T *y, const T *x, T alpha, int n)
{
    __shared__ T tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    if (i < n)
        y[i] = alpha * tile[threadIdx.x] + OFFSET * SCALE;
}
CU
expect 0 "$TILEJIT" emit scale.cu -k 'scale<float, 128>' --target ptx:sm_80 -D SCALE=2 -o scale.ptx
grep -q '^.target sm_80' scale.ptx || fail "emit: no .target sm_80"
grep -q '.entry _Z5scaleIfLi128EEvPT_PKS0_S0_i(' scale.ptx || fail "emit: no entry for scale<float, 128>"
grep -q '.shared .align 4 .b8 .*tile\[512\]' scale.ptx || fail "emit: no 512-byte shared tile"
PTXAS=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
[ -z "$PTXAS" ] || "$PTXAS" -arch=sm_80 scale.ptx -o scale.cubin 2>err || fail "ptxas: $(head -3 err)"
expect 0 "$TILEJIT" emit scale.cu -k 'scale<double, 64>' --target ptx -D SCALE=1
grep -q '^.target sm_90a' out || fail "emit: the default arch is not sm_90a"
# without -D SCALE the macro is undefined: an error at its column
expect 1 "$TILEJIT" emit scale.cu -k 'scale<float, 128>' --target ptx
grep -q '^scale.cu:10:53: error: identifier "SCALE" is undefined$' err || fail "emit without -D: $(cat err)"
expect 2 "$TILEJIT" emit scale.cu -k 'scale<float, 128>' --target ir
grep -q 'has one target: ptx' err || fail "emit --target ir: $(cat err)"
expect 1 "$TILEJIT" emit scale.cu -k nope --target ptx -D SCALE=1
grep -q "error: no kernel 'nope' in scale.cu" err || fail "emit -k nope: $(cat err)"
printf 'extern "C" __global__ void k(float *y)\n{\n\ty[0] = oops;\n}\n' >bad.cu
expect 1 "$TILEJIT" check bad.cu
printf 'bad.cu:3:9: error: identifier "oops" is undefined\n  \ty[0] = oops;\n  \t       ^\n' >want
cmp -s err want || fail "check bad.cu: $(cat err)"
expect 0 "$TILEJIT" check probe.cu
[ -s err ] && fail "check probe.cu is not silent: $(cat err)"
# the rest works without NVRTC, which says why it is missing
expect 1 env TILEJIT_NVRTC=/nonexistent "$TILEJIT" check probe.cu
grep -q 'probe.cu: error: cannot compile CUDA C: no NVRTC: $TILEJIT_NVRTC (/nonexistent) is not a file' err ||
    fail "without NVRTC: $(cat err)"
exit $((failures > 0))
