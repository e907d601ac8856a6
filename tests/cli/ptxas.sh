#!/bin/sh
# Every example of examples/examples.txt, emitted as PTX for sm_80 and sm_90a
# with its shapes and tile parameters, and every kernel of the PTX lit tests
# must assemble with ptxas. Skips (77) with the reason when ptxas is not
# installed.
. "$(dirname "$0")/testlib.inc"
PTXAS=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
if [ -z "$PTXAS" ]; then
    echo "SKIP: ptxas not found (install the CUDA toolkit)"
    exit 77
fi
count=0
# assemble WHAT ARCH FILE EMIT-OPTIONS...: `tilejit emit` of FILE for ptx:ARCH, then ptxas
# (its variables are apart from the loops' own: sh has no locals)
assemble() {
    as_what=$1 as_arch=$2 as_file=$3
    shift 3
    if ! "$TILEJIT" emit "$as_file" --target "ptx:$as_arch" "$@" -o k.ptx 2>err; then
        fail "$as_what: emit ptx:$as_arch: $(head -3 err)"
        return
    fi
    "$PTXAS" -arch="$as_arch" k.ptx -o k.cubin 2>err || fail "$as_what: ptxas -arch=$as_arch: $(head -5 err)"
    count=$((count + 1))
}
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    # keep only the options emit takes: --shape and -D (scalars are launch values)
    opts=$(printf '%s\n' $args | awk '/^(--shape|-D)$/ { o = $0; next } o { printf "%s %s ", o, $0; o = "" }')
    for arch in sm_80 sm_90a; do
        # shellcheck disable=SC2086
        assemble "$file $kernel $opts" "$arch" "$EX/$file" -k "$kernel" $opts
    done
done <"$EX/examples.txt"
# The PTX lit tests (tests/lit/ptx) check the text with FileCheck; ptxas
# checks here that what they emit assembles (all but the error tests).
TJ_PTX=$(dirname "$TILEJIT")/tj-ptx
[ -x "$TJ_PTX" ] || fail "tj-ptx is not built next to $TILEJIT"
for file in "$SRC"/tests/lit/ptx/*.tjir; do
    [ -x "$TJ_PTX" ] && grep -q 'RUN: tj-ptx %s |' "$file" || continue
    for arch in sm_80 sm_90a; do
        if ! "$TJ_PTX" "$file" --arch "$arch" >k.ptx 2>err; then
            fail "tj-ptx $file --arch $arch: $(head -3 err)"
            continue
        fi
        "$PTXAS" -arch="$arch" k.ptx -o k.cubin 2>err || fail "$file: ptxas -arch=$arch: $(head -5 err)"
        count=$((count + 1))
    done
done
# The .tj PTX lit tests: each RUN line's `tilejit emit` (its own target) assembled.
for file in "$SRC"/tests/lit/ptx/*.tj; do
    grep 'RUN: tilejit emit %s' "$file" | sed 's/.*RUN: tilejit emit %s \(.*\) |.*/\1/' | while read -r opts; do
        arch=$(printf '%s\n' "$opts" | sed -n 's/.*--target ptx:\([a-z0-9_]*\).*/\1/p')
        # shellcheck disable=SC2086
        "$TILEJIT" emit "$file" $opts -o k.ptx 2>err || { echo "FAIL: emit $file $opts: $(head -3 err)"; exit 1; }
        "$PTXAS" -arch="$arch" k.ptx -o k.cubin 2>err || { echo "FAIL: $file $opts: ptxas: $(head -5 err)"; exit 1; }
    done || fail "a .tj PTX lit test does not assemble"
    count=$((count + 1))
done
# The library's look-back scan (ordered accesses in a while loop), as lib/scan.c substitutes it.
for tu in f32:u32 f64:u64 i64:u64; do
    t=${tu%:*} u=${tu#*:}
    sed -e "s/\$T/$t/g" -e "s/\$U/$u/g" -e 's/\$COMBINE/a + b/g' \
        -e "s/\$AGGREGATE/$t(sum(where(arange(B) < n, x, 0)))/g" -e 's/\$NEAREST/sum(where(m <= last, v, 0))/g' \
        "$SRC/lib/kernels/scan.tj" >scan.tj
    for arch in sm_80 sm_90a; do
        assemble "scan_lookback ($t)" "$arch" scan.tj -k scan_lookback --shape P=3,N=100000,G=39
    done
done
echo "$count PTX files assembled"
[ "$count" -gt 0 ] || fail "no example was emitted"
exit $((failures > 0))
