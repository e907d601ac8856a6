#!/bin/sh
# A minimal lit: runs each `RUN:` line of a test file through sh, with %s the
# file, and tool names resolved from the environment CTest sets.
# Exit 77 (skipped) with a reason when FileCheck is missing.
set -e
file=$1
case "$FILECHECK" in
  ""|*NOTFOUND*) echo "SKIP: FileCheck not found (apt-get install llvm-22-tools)"; exit 77 ;;
esac
grep -q 'RUN:' "$file" || { echo "no RUN: line in $file"; exit 1; }
grep 'RUN:' "$file" | sed 's/^.*RUN:[[:space:]]*//' | while IFS= read -r cmd; do
  cmd=$(printf '%s' "$cmd" | sed -e "s|%s|$file|g" \
      -e "s|\\btilejit\\b|$TILEJIT|g" -e "s|\\btj-opt\\b|$TJ_OPT|g" \
      -e "s|\\bFileCheck\\b|$FILECHECK|g")
  echo "RUN: $cmd"
  sh -c "set -o pipefail 2>/dev/null; $cmd" || { echo "FAILED: $cmd"; exit 1; }
done
