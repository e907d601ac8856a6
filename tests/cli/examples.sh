# Every example of examples/examples.txt runs on random data and matches the
# reference interpreter (--check), as scripts/demo.sh runs them.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT

n=0
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    n=$((n + 1))
    # shellcheck disable=SC2086
    expect 0 "$T" run "$EX/$file" -k "$kernel" $args --random=$n --check
    has out "check: "
    lacks out "FAIL"
done <"$EX/examples.txt"
[ "$n" -gt 0 ] || fail "examples.txt lists no example"

# every kernel in examples/ is in the manifest
for f in "$EX"/*.tj; do
    grep -q "^$(basename "$f") " "$EX/examples.txt" || fail "$(basename "$f") is not in examples/examples.txt"
done

# the demo's table and status, on a manifest of its own
printf '%s\n' "# a comment" "$EX/add.tj add --shape N=100" "$EX/softmax.tj softmax --shape M=2,N=10 -D BLOCK=256" >ok.txt
expect 0 env TILEJIT="$T" sh "$SRC/scripts/demo.sh" ok.txt
has out "softmax"
has out "M=2,N=10"
has out "BLOCK=256"
has out "demo: all 2 examples ok"
printf '%s\n' "$EX/add.tj add --shape N=100" "$EX/add.tj nokernel --shape N=100" >bad.txt
expect 1 env TILEJIT="$T" sh "$SRC/scripts/demo.sh" bad.txt
has out "FAIL"
has out "no kernel named 'nokernel'"
has out "demo: 1 of 2 examples FAILED"
finish
