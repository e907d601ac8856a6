#!/bin/sh
# scripts/demo.sh [MANIFEST]: runs every example of examples/examples.txt (or
# MANIFEST) on random data on the default device, checks it against the
# reference interpreter and times it:
#   tilejit run examples/FILE -k KERNEL ARGS... --random --check --time
# Prints one row per example; exits 1 when any failed. $TILEJIT overrides the
# binary (default build/tilejit).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tilejit=${TILEJIT:-$root/build/tilejit}
manifest=${1:-$root/examples/examples.txt}
if [ ! -x "$tilejit" ]; then
    echo "demo: $tilejit is not built (run ./scripts/setup.sh first)" >&2
    exit 1
fi

row() { printf '%-15s %-12s %-22s %-20s %-6s %11s %10s  %s\n' "$@"; }
row example kernel shapes "-D" device time "max error" result
failed=0
total=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    total=$((total + 1))
    # $args is split into words on purpose: the manifest holds no quoting.
    # shellcheck disable=SC2086
    (cd "$root/examples" && "$tilejit" run "$file" -k "$kernel" $args --random --check --time) >"$log" 2>&1
    rc=$?
    shapes=$(printf '%s\n' $args | awk 'prev == "--shape" { s = s (s ? "," : "") $0 } { prev = $0 } END { print s }')
    defines=$(printf '%s\n' $args | awk 'prev == "-D" { s = s (s ? "," : "") $0 } { prev = $0 } END { print s }')
    time=$(sed -n 's/^time: \([^ ]* [^ ]*\) .*/\1/p' "$log")
    device=$(sed -n 's/^time: .*device \([a-z0-9]*\)).*/\1/p' "$log")
    maxerr=$(awk '/^check: / { v = $0; sub(/.*max abs error /, "", v); sub(/,.*/, "", v); if (v + 0 > m + 0 || m == "") m = v }
                  END { print (m == "" ? "-" : m) }' "$log")
    result=ok
    [ "$rc" -eq 0 ] || { result=FAIL; failed=$((failed + 1)); }
    row "$file" "$kernel" "${shapes:--}" "${defines:--}" "${device:--}" "${time:--}" "$maxerr" "$result"
    [ "$rc" -eq 0 ] || sed 's/^/    | /' "$log"
done <"$manifest"

echo
if [ "$failed" -ne 0 ]; then
    echo "demo: $failed of $total examples FAILED"
    exit 1
fi
echo "demo: all $total examples ok"
