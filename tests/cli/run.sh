# tilejit run: results written back in place (same shape and dtype),
# dtype conversion, bf16 bits, byte order, scalars, --random, --check,
# --time, -D/--shape, devices.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
ADD=$EX/add.tj

# values FILE: the values of an .npy file on one line
values() { npy read "$1" | tail -n +2 | tr '\n' ' '; }

# ---- write-back -------------------------------------------------------------------
npy write x.npy '<f4' 5 1 2 3 4 5
npy write y.npy '<f4' 5 0.5 0.25 -1 8 100
npy write out.npy '<f4' 5 0
cp x.npy x.orig
expect 0 "$T" run "$ADD" -k add x=x.npy y=y.npy out=out.npy
empty out
empty err
[ "$(values out.npy)" = "1.5 2.25 2.0 12.0 105.0 " ] || fail "add: out.npy holds $(values out.npy)"
[ "$(npy read out.npy | sed -n 1p)" = "<f4 5" ] || fail "add: out.npy header changed"
same x.npy x.orig
ls ./*.tmp.* ./*tilejit-tmp* >/dev/null 2>&1 && fail "temporary files left behind"

# the output may be larger than a tile and need not be a multiple of it
npy write x.npy '<f4' 3000 arange
npy write y.npy '<f4' 3000 1
npy write out.npy '<f4' 3000 0
expect 0 "$T" run "$ADD" -k add x=x.npy y=y.npy out=out.npy -D BLOCK=256
[ "$(npy read out.npy | sed -n '2p;3001p' | tr '\n' ' ')" = "1.0 3000.0 " ] || fail "add of 3000 elements"

# big-endian files are read and written back big-endian
npy write x.npy '>f4' 3 1 2 3
npy write y.npy '<f4' 3 1 1 1
npy write out.npy '>f4' 3 0
expect 0 "$T" run "$ADD" -k add x=x.npy y=y.npy out=out.npy
[ "$(npy read out.npy | sed -n 1p)" = ">f4 3" ] || fail "big-endian output header"
[ "$(values out.npy)" = "2.0 3.0 4.0 " ] || fail "big-endian add: $(values out.npy)"

# ---- dtype conversion --------------------------------------------------------------
cat >half.tj <<'TJ'
kernel addh(x: f16[N], y: f16[N], out: f16[N])
    grid (cdiv(N, 64))
{
    i = program_id(0) * 64
    store(out[i:i+64], load(x[i:i+64]) + load(y[i:i+64]))
}
kernel addb(x: bf16[N], y: bf16[N], out: bf16[N])
    grid (cdiv(N, 64))
{
    i = program_id(0) * 64
    store(out[i:i+64], load(x[i:i+64]) + load(y[i:i+64]))
}
TJ
npy write x.npy '<f4' 3 1 2 0.1
npy write y.npy '<f2' 3 0.5 0.5 0.5
npy write out.npy '<f4' 3 0
expect 0 "$T" run half.tj -k addh x=x.npy y=y.npy out=out.npy
has err "x.npy: note: argument 'x': converting the f32 array to f16 for the kernel"
has err "out.npy: note: argument 'out': converting the f32 array to f16"
lacks err "y.npy"
lacks err "error"
[ "$(npy read out.npy | sed -n 1p)" = "<f4 3" ] || fail "f16 result not written back as f32"
f16sum=$("$PYTHON" -c "import struct; h = lambda v: struct.unpack('e', struct.pack('e', v))[0]; print(repr(h(h(0.1) + 0.5)))")
[ "$(values out.npy)" = "1.5 2.5 $f16sum " ] || fail "f16 add: $(values out.npy), wanted 1.5 2.5 $f16sum"

# f32 -> bf16, and bf16 as raw bits in '<u2' and '|V2' arrays (no conversion)
npy write x.npy '<f4' 2 1 2
npy write y.npy '<f4' 2 0.5 0.5
npy write out.npy '<f4' 2 0
expect 0 "$T" run half.tj -k addb x=x.npy y=y.npy out=out.npy
has err "converting the f32 array to bf16"
[ "$(values out.npy)" = "1.5 2.5 " ] || fail "bf16 add: $(values out.npy)"
npy write x.npy '<u2' 2 "$(npy bits 1 bf16)" "$(npy bits 2 bf16)"
npy write y.npy '<u2' 2 "$(npy bits 0.5 bf16)" "$(npy bits 0.5 bf16)"
npy write out.npy '<u2' 2 0
expect 0 "$T" run half.tj -k addb x=x.npy y=y.npy out=out.npy
lacks err "converting"
[ "$(values out.npy)" = "$(npy bits 1.5 bf16) $(npy bits 2.5 bf16) " ] || fail "bf16 bits: $(values out.npy)"
npy header out.npy "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }" 4
expect 0 "$T" run half.tj -k addb x=x.npy y=y.npy out=out.npy
[ "$(npy read out.npy | sed -n 1p)" = "|V2 2" ] || fail "a |V2 output must stay |V2"
[ "$(values out.npy)" = "$(npy bits 1.5 bf16) $(npy bits 2.5 bf16) " ] || fail "|V2 bits: $(values out.npy)"
# u16 is only taken as bits for bf16, never converted to f16
expect 1 "$T" run half.tj -k addh x=x.npy y=x.npy out=x.npy
has err "the array's dtype is u16 but the parameter is x: f16[N]"

# ---- scalars -----------------------------------------------------------------------
cat >axpy.tj <<'TJ'
kernel axpy(x: f32[N], y: f32[N], a: f32, n: i32, flip: bool)
    grid (cdiv(N, 64))
{
    i = program_id(0) * 64
    v = a * load(x[i:i+64]) + load(y[i:i+64])
    store(y[i:i+64], where(flip, -v, v), mask = (i + arange(64)) < n)
}
TJ
npy write x.npy '<f4' 4 1 2 3 4
npy write y.npy '<f4' 4 1 1 1 1
expect 0 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=2.5 n=3 flip=false
[ "$(values y.npy)" = "3.5 6.0 8.5 1.0 " ] || fail "axpy: $(values y.npy)"
expect 0 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=-1 n=4 flip=true
[ "$(values y.npy)" = "-2.5 -4.0 -5.5 3.0 " ] || fail "axpy flip: $(values y.npy)"
cp y.npy y.orig
expect 1 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=abc n=3 flip=0
has err "argument 'a': 'abc' is not a valid f32 value"
expect 1 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=1 n=3000000000 flip=0
has err "argument 'n': '3000000000' is not a valid i32 value"
expect 1 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=1 n=1.5 flip=0
has err "argument 'n': '1.5' is not a valid i32 value"
expect 1 "$T" run axpy.tj -k axpy x=x.npy y=y.npy a=1 n=1 flip=maybe
has err "argument 'flip': 'maybe' is not a valid bool value"
expect 1 "$T" run axpy.tj -k axpy x=x.npy y=y.npy n=1 flip=1
has err "missing argument 'a' (a: f32: give a=NUMBER)"
same y.npy y.orig

# ---- --random, -o, --check, --time ---------------------------------------------------
SOFTMAX=$EX/softmax.tj
expect 0 "$T" run "$SOFTMAX" -k softmax --random --shape M=4,N=10 -o rnd
[ "$(npy read rnd/Y.npy | sed -n 1p)" = "<f4 4,10" ] || fail "--random -o: rnd/Y.npy"
[ -e rnd/X.npy ] && fail "--random -o wrote the input X"
"$PYTHON" - <<'PY' || fail "softmax rows do not sum to 1"
import struct
d = open('rnd/Y.npy', 'rb').read()
v = struct.unpack('<40f', d[-160:])
assert all(abs(sum(v[r * 10:(r + 1) * 10]) - 1) < 1e-5 for r in range(4)), v
PY
cp rnd/Y.npy seed0.npy
expect 0 "$T" run "$SOFTMAX" -k softmax --random=0 --shape M=4,N=10 -o rnd
same rnd/Y.npy seed0.npy
expect 0 "$T" run "$SOFTMAX" -k softmax --random=7 --shape M=4,N=10 -o rnd
cmp -s rnd/Y.npy seed0.npy && fail "--random=7 gave the same data as seed 0"
expect 1 "$T" run "$SOFTMAX" -k softmax --random --shape M=4
has err "argument 'X': no size for dim N (give --shape N=INT or X=PATH.npy)"

# arrays given and random ones mixed: the random one takes its dims from the array
npy write x.npy '<f4' 3,5 arange
expect 0 "$T" run "$SOFTMAX" -k softmax X=x.npy --random -o rnd2
[ "$(npy read rnd2/Y.npy | sed -n 1p)" = "<f4 3,5" ] || fail "mixed --random: rnd2/Y.npy"

expect 0 "$T" run "$SOFTMAX" -k softmax --random --shape M=4,N=300 --check --time
has out "check: Y: max abs error"
has out ": ok"
has out "time: "
has out "(median of"
has out "runs after warm-up, device "
empty err
expect 0 "$T" run "$SOFTMAX" -k softmax --random --shape M=4,N=300 -D BLOCK=2048 --check
has out ": ok"
expect 1 "$T" run "$SOFTMAX" -k softmax --random --shape M=4,N=300 -D BLOCK=256
has err "where BLOCK >= N"

# atomics: the tensor updated by atomic_add is written back; duplicates add up
npy write src.npy '<f4' 4,2 1 2 3 4 5 6 7 8
npy write idx.npy '<i4' 4 0 2 0 9
npy write acc.npy '<f4' 3,2 100
expect 0 "$T" run "$EX/scatter_add.tj" -k scatter_add src=src.npy idx=idx.npy out=acc.npy --check --time
[ "$(values acc.npy)" = "106.0 108.0 100.0 100.0 103.0 104.0 " ] || fail "scatter_add: $(values acc.npy)"
has out "check: out:"

# ---- devices -----------------------------------------------------------------------
expect 0 "$T" devices
has out "interp (reference interpreter)"
has out "cpu ("
has out "cuda"
has out "metal: not available"
cp out devices
expect 0 "$T" run "$ADD" -k add --device cpu --random --shape N=10 --time
has out "device cpu)"
if grep -q "^cuda: not available" devices; then
    expect 1 "$T" run "$ADD" -k add --device cuda --random --shape N=10
    has err "error: device 'cuda' is not available: "
    expect 0 "$T" run "$ADD" -k add --random --shape N=10 --time
    has out "device cpu)"
else # a GPU: the default device, checked against the interpreter
    expect 0 "$T" run "$ADD" -k add --device cuda --random --shape N=5000 --check --time
    has out "device cuda)"
    has out "check: out:"
    expect 0 "$T" run "$ADD" -k add --random --shape N=10 --time
    has out "device cuda)"
fi
expect 1 "$T" run "$ADD" -k add --device metal --random --shape N=10
has err "error: device 'metal' is not available: "
finish
