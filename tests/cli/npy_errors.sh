# tilejit run with bad .npy files and bad arguments: each is an error that
# names the argument and the file, and no file is written.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
ADD=$EX/add.tj

npy write x.npy '<f4' 5 1 2 3 4 5
npy write y.npy '<f4' 5 10 20 30 40 50
npy write out.npy '<f4' 5 0
cp out.npy out.orig

# run ADD-ARGS...: `run add` that must fail, leaving out.npy untouched
bad_run() {
    expect 1 "$T" run "$ADD" -k add "$@"
    same out.npy out.orig
}

cp x.npy bad.npy && printf 'junk' | dd of=bad.npy bs=1 seek=0 conv=notrunc 2>/dev/null
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': not a .npy file (bad magic"

cp x.npy bad.npy && printf '\011' | dd of=bad.npy bs=1 seek=6 conv=notrunc 2>/dev/null
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': unsupported .npy format version 9.0"

head -c 140 x.npy >bad.npy
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': array data truncated: the header promises 20 bytes, the file holds 12"

head -c 50 x.npy >bad.npy
bad_run x=x.npy y=bad.npy out=out.npy
has err "bad.npy: error: argument 'y': truncated .npy header"

cat x.npy >bad.npy && printf 'extra' >>bad.npy
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': unexpected data after the array"

npy header bad.npy "{'descr': '<f4', 'fortran_order': True, 'shape': (5,), }" 20
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': bad .npy header: Fortran-order arrays are not supported"

npy header bad.npy "{'descr': '<f4', 'fortran_order': False, 'shape': (5,) garbage" 20
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': bad .npy header:"

npy header bad.npy "{'descr': '<c8', 'fortran_order': False, 'shape': (5,), }" 40
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': bad .npy header: unsupported dtype '<c8'"

npy header bad.npy "{'descr': '<f4', 'fortran_order': False, }" 20
bad_run x=bad.npy y=y.npy out=out.npy
has err "bad.npy: error: argument 'x': bad .npy header: the header lacks 'shape'"

# shapes and dtypes against the kernel's parameters
npy write bad.npy '<f4' 6 0
bad_run x=x.npy y=bad.npy out=out.npy
has err "bad.npy: error: argument 'y': dim N is 6 here but 5 in argument 'x' (x.npy)"
npy write bad.npy '<f4' 5,1 0
bad_run x=x.npy y=bad.npy out=out.npy
has err "bad.npy: error: argument 'y': the array has 2 dimensions but the parameter is y: f32[N]"
npy write bad.npy '<f8' 5 0
bad_run x=x.npy y=bad.npy out=out.npy
has err "bad.npy: error: argument 'y': the array's dtype is f64 but the parameter is y: f32[N]"
npy write bad.npy '<i4' 5 0
bad_run x=x.npy y=y.npy out=bad.npy
has err "argument 'out': the array's dtype is i32"

# literal dims in the declaration must match
cat >fixed.tj <<'TJ'
kernel rows(X: f32[M, 4], Y: f32[M, 4])
    grid (M)
{
    r = program_id(0)
    store(Y[r, 0:4], load(X[r, 0:4]) * 2.0)
}
TJ
npy write x2.npy '<f4' 3,4 arange
npy write y2.npy '<f4' 3,5 0
expect 1 "$T" run fixed.tj -k rows X=x2.npy Y=y2.npy
has err "y2.npy: error: argument 'Y': axis 1 has size 5 but the parameter is Y: f32[M, 4]"
npy write y2.npy '<f4' 3,4 0
expect 0 "$T" run fixed.tj -k rows X=x2.npy Y=y2.npy

# arguments missing, unknown, unreadable; several errors are all reported
bad_run x=x.npy y=y.npy
has err "missing argument 'out' (out: f32[N]: give out=PATH.npy, or use --random)"
bad_run x=x.npy y=y.npy out=out.npy z=z.npy
has err "unknown argument 'z' (parameters: x: f32[N], y: f32[N], out: f32[N])"
bad_run x=nothere.npy y=y.npy out=out.npy
has err "nothere.npy: error: argument 'x': cannot open: No such file or directory"
bad_run x=nothere.npy y=alsonot.npy out=out.npy
has err "argument 'x'"
has err "argument 'y'"
bad_run x=x.npy y=y.npy out=out.npy --shape N=4
has err "x.npy: error: argument 'x': dim N is 5 here but 4 in --shape N=4"

# fuzzed headers and bodies: errors, never a crash
i=0
while [ $i -lt 40 ]; do
    "$PYTHON" -I -S - "$i" <<'PY'
import random, sys
random.seed(int(sys.argv[1]))
b = bytearray(open('x.npy', 'rb').read())
for _ in range(random.randint(1, 8)):
    p = random.randrange(len(b))
    r = random.random()
    if r < 0.5:
        b[p] = random.randrange(256)
    elif r < 0.75:
        del b[p:p + random.randint(1, 30)]
    else:
        b[p:p] = bytes(random.randrange(256) for _ in range(random.randint(1, 12)))
open('fuzz.npy', 'wb').write(b)
PY
    "$T" run "$ADD" -k add x=fuzz.npy y=y.npy out=out.npy >out 2>err
    status=$?
    [ $status -le 1 ] || fail "fuzzed .npy #$i: exit status $status"
    if [ $status -eq 1 ]; then same out.npy out.orig; else cp out.orig out.npy; fi
    i=$((i + 1))
done
finish
