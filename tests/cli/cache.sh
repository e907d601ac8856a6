# tilejit cache stats|list|clear, tilejit tune, run --tune: on the cpu
# here, and on a GPU when there is one (compiling once, then loading from
# the disk cache in a later process; tuning once, then reusing the times).
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
export TILEJIT_CACHE_DIR="$WORK/cache"
unset TILEJIT_CACHE TILEJIT_CACHE_MAX

# ---- cache: an empty one, usage ------------------------------------------------------
expect 0 "$T" cache stats
has out "directory: $WORK/cache/v1"
has out "entries: 0 (0 kernels, 0 tuning records)"
empty err
expect 0 "$T" cache list
has out "KEY"
expect 0 "$T" cache clear
has out "removed 0 entries"
expect 2 "$T" cache
has err "expected one of: stats, list, clear"
expect 2 "$T" cache frobnicate
expect 2 "$T" cache stats list
expect 0 "$T" cache --help
has out "TILEJIT_CACHE_MAX"

# turned off: no directory, no warning
expect 0 env TILEJIT_CACHE=off "$T" cache stats
has out "memory only"
empty err

# a directory that cannot be made: memory only, one warning
echo x >notadir
expect 0 env TILEJIT_CACHE_DIR="$WORK/notadir/cache" "$T" cache stats
has out "memory only"
has err "warning: tilejit cache: cannot use directory"
[ "$(grep -c warning err)" = 1 ] || fail "more than one warning"

# ---- tune on the cpu: the dispatcher's tuner times every valid configuration -----------
expect 0 "$T" tune "$EX/softmax.tj" -k softmax --device cpu --random --shape M=16,N=1000
has out "kernel softmax on cpu"
has out "pruned-where: where BLOCK >= N"
has out "12 built, 12 timed"
has out "; best: BLOCK="
expect 0 "$T" cache stats
has out " 14 tuning records" # the 12 timed configurations', the winner, the generation
# a second process times nothing: every outcome comes from its record
expect 0 "$T" tune "$EX/softmax.tj" -k softmax --device cpu --random --shape M=16,N=1000
has out "0 built, 0 timed"
has out "ok (stored)"

expect 2 "$T" tune "$EX/softmax.tj" --random
has err "missing -k KERNEL"
expect 2 "$T" tune "$EX/softmax.tj" -k softmax --device metal --random
expect 1 "$T" tune "$EX/softmax.tj" -k softmax --device cpu
has err "missing argument 'X'"
expect 1 "$T" tune "$EX/softmax.tj" -k softmax --device cpu --random --shape M=16,N=100000
has err "no configuration of kernel 'softmax'"

# run --tune on the cpu: the stored winner for these shapes, else the first valid
# configuration (the cpu times only through tilejit tune)
expect 0 "$T" run "$EX/softmax.tj" -k softmax --device cpu --tune --random --shape M=4,N=100 --check
has out "check: Y"

# ---- on a GPU -------------------------------------------------------------------------------
if "$T" devices | grep -q '^cuda:[0-9]'; then
    "$T" cache clear >/dev/null
    expect 0 "$T" run "$EX/add.tj" -k add --device cuda --random --shape N=5000 --check
    expect 0 "$T" cache stats
    has out "(1 kernels, 0 tuning records)"
    # a later process loads it (same result, nothing new stored)
    expect 0 "$T" run "$EX/add.tj" -k add --device cuda --random --shape N=5000 --check
    expect 0 "$T" cache stats
    has out "(1 kernels, 0 tuning records)"
    expect 0 "$T" cache list
    has out "add"
    has out "cubin"

    expect 0 "$T" tune "$EX/softmax.tj" -k softmax --random --shape M=512,N=1000
    has out "GB/s"
    has out "* BLOCK="
    lacks out "0 timed"
    cp out tune1
    expect 0 "$T" tune "$EX/softmax.tj" -k softmax --random --shape M=512,N=1000
    has out " 0 timed"
    has out "(stored)"
    best=$(sed -n 's/.*best: //p' tune1)
    has out "best: $best"
    # run uses the winner (and checks it against the interpreter)
    expect 0 "$T" run "$EX/softmax.tj" -k softmax --random --shape M=512,N=1000 --check
    # --tune with every time stored times nothing more
    expect 0 "$T" run "$EX/softmax.tj" -k softmax --tune --random --shape M=512,N=1000 --check

    # a read-only cache: still runs, one warning
    chmod -R a-w "$WORK/cache"
    if ! touch "$WORK/cache/v1/probe" 2>/dev/null; then
        expect 0 "$T" run "$EX/add.tj" -k add --device cuda --random --shape N=7000 --check
        has err "read-only"
        [ "$(grep -c warning err)" = 1 ] || fail "more than one warning"
    fi
    chmod -R u+w "$WORK/cache"
else
    echo "(no GPU: the cuda part is skipped)"
fi

finish
