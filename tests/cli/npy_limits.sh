# tilejit run at the size limits (docs/limits.md, "Sizes and memory"): .npy
# files read from pipes, headers whose sizes overflow or break the size rule
# (every dim below 2^31), --shape beyond it. Each is a clear error before
# the memory the header claims is allocated: where `ulimit -v` works (not
# under ASan) the runs get 1 GB of address space, so an attempt would fail
# with "out of memory" instead of the message checked for.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
ADD=$EX/add.tj

# limited CMD...: CMD in at most 1 GB of address space when that can be set
if (ulimit -v 1000000 && "$T" --version) >/dev/null 2>&1; then
    limited() { (ulimit -v 1000000 && "$@"); }
else
    echo "(ulimit -v is not usable here: the size checks run unlimited)"
    limited() { "$@"; }
fi

npy write x.npy '<f4' 5 1 2 3 4 5
npy write y.npy '<f4' 5 10 20 30 40 50
npy write out.npy '<f4' 5 0
cp out.npy out.orig
header() { npy header "$1" "{'descr': '$2', 'fortran_order': False, 'shape': $3, }" "${4:-0}"; }
# piped STATUS FILE: run add with x read from FILE through a pipe
piped() {
    cat "$2" | limited "$T" run "$ADD" -k add --device cpu x=/dev/stdin y=y.npy out=out.npy >out 2>err
    got=$?
    [ "$got" -eq "$1" ] || { fail "$2 through a pipe: exit status $got, wanted $1"; sed 's/^/    /' err; }
}

# ---- pipes ------------------------------------------------------------------------------
# a whole array through a pipe is read
piped 0 x.npy
[ "$(npy read out.npy | tail -n +2 | tr '\n' ' ')" = "11.0 22.0 33.0 44.0 55.0 " ] || fail "x from a pipe: wrong sum"
cp out.orig out.npy

# a header claiming 4 GiB with 20 bytes behind it: the bytes that came
header big.npy '<f4' '(1073741824,)' 20
piped 1 big.npy
has err "/dev/stdin: error: argument 'x': array data truncated: the header promises 4294967296 bytes, the file holds 20"
same out.npy out.orig

# shapes whose element count wraps (this one to a few bytes) or breaks the rule
header wrap.npy '<f8' '(3, 6148914691236517195)'
piped 1 wrap.npy
has err "argument 'x': dim 1 is 6148914691236517195; sizes must be in [0, 2^31)"
header wrap.npy '<f8' '(2147483647, 2147483647, 2147483647)'
piped 1 wrap.npy
has err "argument 'x': the shape in the header is too large"
same out.npy out.orig

# ---- the size rule ------------------------------------------------------------------------
# --shape beyond it: refused before three tensors of 8 GiB are made
expect 1 limited "$T" run "$ADD" -k add --device cpu --random --shape N=2147483648
has err "--shape N=2147483648: sizes must be in [0, 2^31)"
lacks err "out of memory"

# a 2 GiB array (sparse here) of 2^31 bytes: refused at its header, unread
"$PYTHON" -I -S - <<'PY'
import struct
text = "{'descr': '|u1', 'fortran_order': False, 'shape': (2147483648,), }"
text += ' ' * ((64 - (10 + len(text) + 1) % 64) % 64) + '\n'
with open('two_gib.npy', 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(text)) + text.encode())
    f.truncate(f.tell() + (1 << 31))
PY
expect 1 limited "$T" run "$ADD" -k add --device cpu x=two_gib.npy y=y.npy out=out.npy
has err "two_gib.npy: error: argument 'x': dim 0 is 2147483648; sizes must be in [0, 2^31)"
same out.npy out.orig
rm -f two_gib.npy

# strides of empty arrays: no signed overflow (UBSan) on the way to the checks
cat >k.tj <<'TJ'
kernel k3(X: f32[P, Q, R], Y: f32[P])
    grid (1)
{
    store(Y[0:1], load(X[0:1, 0, 0]))
}
kernel k4(X: f32[P, Q, R, S], Y: f32[P])
    grid (1)
{
    store(Y[0:1], load(X[0:1, 0, 0, 0]))
}
TJ
npy write y0.npy '<f4' 0
header e3.npy '<f4' '(0, 4000000000, 4000000000)'
expect 1 "$T" run k.tj -k k3 --device cpu X=e3.npy Y=y0.npy
has err "e3.npy: error: argument 'X': dim 1 is 4000000000; sizes must be in [0, 2^31)"
lacks err "runtime error"
header e4.npy '<f4' '(0, 2147483647, 2147483647, 2147483647)'
expect 1 "$T" run k.tj -k k4 --device cpu X=e4.npy Y=y0.npy
has err "argument 'X': stride"
lacks err "runtime error"

finish
