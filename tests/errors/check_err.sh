#!/bin/sh
# Error-message test: runs `tilejit check NAME.tj` (or NAME.mlir) from the file's directory
# (so the path prints as the bare name), expects exit status 1, and compares
# stderr with NAME.err exactly.
set -u
src=$1
if [ -z "${TILEJIT:-}" ] || [ ! -x "$TILEJIT" ]; then
    echo "FAIL: \$TILEJIT (${TILEJIT:-unset}) is not an executable"
    exit 1
fi
dir=$(dirname "$src")
name=$(basename "$src")
expected=${name%.*}.err
cd "$dir" || exit 1
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$TILEJIT" check "$name" 2>"$actual" >/dev/null
status=$?
if [ "$status" -ne 1 ]; then
    echo "FAIL: tilejit check $name exited with $status, expected 1; stderr:"
    cat "$actual"
    exit 1
fi
if ! diff -u "$expected" "$actual"; then
    echo "FAIL: stderr of tilejit check $name differs from $expected (diff above)"
    exit 1
fi
echo "ok: $name"
