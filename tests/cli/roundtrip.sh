#!/bin/sh
# The IR text round trip on real kernels: for every kernel of examples/*.tj,
# `tilejit emit --target ir` prints the front end's IR, and tj-opt, which
# parses and verifies it, must print the same text back.
#
# Bindings: the --shape and -D options of the kernel's first line in
# examples/examples.txt, else every dim name of the kernel's header (which
# must be on its `kernel NAME(...)` line) bound to 64.
set -u
for tool in TILEJIT TJ_OPT; do
    eval "path=\${$tool:-}"
    if [ -z "$path" ] || [ ! -x "$path" ]; then
        echo "SKIP: \$$tool (${path:-unset}) is not built"
        exit 77
    fi
done
SRC=${TJ_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
checked=0

# The --shape/-D options examples.txt gives FILE KERNEL; "-" when it has no line.
listed_options() {
    awk -v f="$1" -v k="$2" '
        $1 == f && $2 == k {
            for (i = 3; i < NF; i++)
                if ($i == "--shape" || $i == "-D") { printf "%s %s ", $i, $(i + 1); i++ }
            found = 1
            exit
        }
        END { if (!found) print "-" }' "$SRC/examples/examples.txt" 2>/dev/null || echo -
}

# --shape binding every dim name of KERNEL's parameters in FILE to 64.
all_dims_options() {
    dims=$(sed -n "s/^[[:space:]]*kernel[[:space:]]\{1,\}$2[[:space:]]*(\(.*\)).*/\1/p" "$1" |
        grep -o '\[[^]]*\]' | tr -d '[] ' | tr ',' '\n' | grep '^[A-Za-z_]' | sort -u |
        sed 's/$/=64/' | paste -sd, -)
    [ -n "$dims" ] && echo "--shape $dims"
}

check_kernel() {
    file=$1 kernel=$2
    checked=$((checked + 1))
    opts=$(listed_options "$(basename "$file")" "$kernel")
    [ "$opts" = "-" ] && opts=$(all_dims_options "$file" "$kernel")
    # shellcheck disable=SC2086 # opts is a list of options
    if ! "$TILEJIT" emit "$file" -k "$kernel" --target ir $opts >"$WORK/emitted" 2>"$WORK/err"; then
        echo "FAIL: tilejit emit $file -k $kernel --target ir $opts"
        sed 's/^/    /' "$WORK/err"
        failures=$((failures + 1))
        return
    fi
    if ! "$TJ_OPT" - <"$WORK/emitted" >"$WORK/printed" 2>"$WORK/err"; then
        echo "FAIL: tj-opt rejects the IR of $kernel ($file $opts)"
        sed 's/^/    /' "$WORK/err"
        failures=$((failures + 1))
    elif ! cmp -s "$WORK/emitted" "$WORK/printed"; then
        echo "FAIL: the IR of $kernel ($file $opts) does not round trip"
        diff "$WORK/emitted" "$WORK/printed" | sed 's/^/    /' | head -20
        failures=$((failures + 1))
    fi
}

for file in "$SRC"/examples/*.tj; do
    for kernel in $(sed -n 's/^[[:space:]]*kernel[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$file"); do
        check_kernel "$file" "$kernel"
    done
done
if [ "$checked" -eq 0 ]; then
    echo "FAIL: no kernel found under $SRC/examples"
    exit 1
fi
echo "$checked kernels checked, $failures failed"
[ "$failures" -eq 0 ]
