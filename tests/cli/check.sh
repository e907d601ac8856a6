# tilejit check: clean files pass silently; errors name FILE:LINE:COL with
# the source line; the exit status says whether any file had an error.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT

for f in "$EX"/*.tj; do
    expect 0 "$T" check "$f"
    empty err
    empty out
done
expect 0 "$T" check "$EX"/*.tj;  empty err

cat >bad.tj <<'TJ'
kernel bad(x: f32[N], out: f32[N])
    grid (cdiv(N, 64))
{
    i = program_id(0) * 64
    store(out[i:i+64], load(x[i:i+64]) + nope)
}
TJ
expect 1 "$T" check bad.tj
has err "bad.tj:5:"
has err "error:"
has err "nope"
has err "^"
empty out

# every file is checked, and the status reports any error
expect 1 "$T" check "$EX/add.tj" bad.tj
has err "bad.tj:5:"
expect 1 "$T" check missing.tj
has err "missing.tj: error: cannot read: No such file or directory"
expect 1 "$T" check missing.tj "$EX/add.tj"

# '-' reads stdin
expect 0 "$T" check - <"$EX/add.tj"
expect 1 "$T" check - <bad.tj
has err "<stdin>:5:"

# garbage never crashes
head -c 3000 "$TILEJIT" >garbage.tj
"$T" check garbage.tj >out 2>err
status=$?
[ "$status" -eq 1 ] || fail "check of binary garbage exited $status"
: >empty.tj
expect 1 "$T" check empty.tj
finish
