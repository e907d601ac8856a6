#!/usr/bin/env bash
# A minimal lit: runs each `RUN:` line of a test file under bash with
# pipefail, %s replaced by the file's path, and the tools (tilejit, tj-opt,
# FileCheck) found on PATH. Exit 77 (skipped) with the reason when FileCheck
# is missing.
set -eu
file=$1
case "${FILECHECK:-}" in
  ""|*NOTFOUND*) echo "SKIP: FileCheck not found (apt-get install llvm-22-tools)"; exit 77 ;;
esac
FileCheck() { "$FILECHECK" "$@"; }
export -f FileCheck
export FILECHECK
export PATH="$(dirname "$TILEJIT"):$(dirname "$TJ_OPT"):$PATH"
grep -q 'RUN:' "$file" || { echo "no RUN: line in $file"; exit 1; }
while IFS= read -r cmd; do
  cmd=${cmd//%s/$file}
  echo "RUN: $cmd"
  bash -o pipefail -c "$cmd" || { echo "FAILED: $cmd"; exit 1; }
done < <(grep 'RUN:' "$file" | sed 's/^.*RUN:[[:space:]]*//')
